"""Answer keys of chapter 11 (conclusion): problems that cross chapters. Plan a training run and
count its days, serve the trained model, price a collective found in a compiled program against
the matmul beside it, and weigh the training bill against the serving bill.

Each key chains functions from several chapters' modules; the statement on the problem page
names the choice to make (which constraint binds, which tensor-parallel degree, which bandwidth).
"""
from __future__ import annotations

from ... import collectives, hardware, roofline, topology, training, xla
from ... import inference as inf
from ... import transformer as tr
from ...errors import Error
from ...models import preset
from ..problem import problem

D = inf.Deployment

#: 11.1 and 11.4: LLaMA-3 70B on 15T tokens, a 4M-token batch of 2048-token sequences, H100s at 40% MFU.
TRAIN = dict(model="llama3-70b", chip="h100", tokens=15e12, batch_tokens=2**22, seq_len=2048, mfu=0.4,
             gpus_per_node=8, candidates=tuple(2**i for i in range(3, 14)))

#: 11.2 and 11.4: serve 32 requests whose caches hold 8192 tokens, fp8 weights and cache, on H100s.
SERVE = dict(model="llama3-70b", chip="h100", batch=32, context=8192, dtype="fp8", candidates=(1, 2, 4, 8))

#: 11.3: the mesh of the compiled program, the HLO line found in it, the slice it will run on, and
#: the per-chip matmul [rows, D] x [D, F] that consumes the gathered array.
MESH = {"fsdp": 4, "tp": 2}
HLO_11_3 = ("%all-gather.12 = bf16[8192,4096]{1,0} all-gather(bf16[2048,4096]{1,0} %fusion.41), channel_id=7, "
            "replica_groups=[2,4]<=[4,2]T(1,0), dimensions={0}, use_global_device_ids=true")
MATMUL_11_3 = dict(batch=2048, d_model=4096, d_ff=8192)


def training_gpus(model, chip, batch_tokens, seq_len, gpus_per_node, candidates) -> int:
    """11.1's choice: the most GPUs (whole nodes, a power of two) at which FSDP's weight traffic over
    InfiniBand hides by chapter 5's rule, and every GPU still gets at least one whole sequence."""
    rule = training.rule_of_thumb_batch_per_chip(chip, link="infiniband", chips_sharing=gpus_per_node)
    seqs = batch_tokens // seq_len
    ok = [n for n in candidates if n % gpus_per_node == 0 and batch_tokens / n >= rule and n <= seqs]
    if not ok:
        raise Error("no candidate GPU count keeps FSDP compute-bound")
    return max(ok)


def training_gpu_seconds(model, chip, tokens, mfu) -> float:
    """Chip-seconds of a run: 6 P D model FLOPs (P parameters, D tokens) over the FLOP/s one chip
    achieves (the chip count cancels)."""
    flops = tr.training_flops(preset(model), tokens=tokens).six_nd_flops
    return flops / (hardware.chip(chip).peak_flops_per_s("bf16") * mfu)


def serving_tp(model, chip, batch, context, dtype, candidates) -> int:
    """11.2's choice: the smallest tensor-parallel degree whose HBM holds the weights and every cache."""
    need = inf.chips_to_hold(preset(model), chip=chip, weights=dtype, kv=dtype, batch=batch, context=context)
    fits = [t for t in candidates if t >= need]
    if not fits:
        raise Error("no candidate degree holds the weights and the cache")
    return min(fits)


def decode_floor_seconds(model, chip, batch, context, dtype, candidates) -> float:
    """Per-token decode floor at that degree: each chip streams its weights and its caches once per step."""
    m = preset(model)
    d = D(tp=serving_tp(model, chip, batch, context, dtype, candidates), weights=dtype, kv=dtype)
    per_chip = inf.weights_per_chip(m, d) + batch * inf.kv_bytes_per_sequence_per_chip(m, d, context)
    return per_chip / hardware.chip(chip).hbm_bytes_per_s


@problem("11.1", title="Feed the batch, then count the days", unit="days", **TRAIN,
         slips={0.5: "2048 GPUs would each get one whole sequence, but only 2048 tokens: below FSDP's threshold "
                     "across nodes, where a node's 8 GPUs share its InfiniBand cards (C / (8 W_ib) per GPU)",
                8.0: "each GPU sends only its own share over its own network card: the condition is on the tokens "
                     "per node, C / W_ib, so per GPU it is C / (8 W_ib), not C / W_ib"},
         hint="two caps on the GPU count: tokens per GPU >= C / (8 W_ib) (FSDP across nodes, chapter 5) and "
              "GPUs <= sequences; take the largest power of two under both, then 6 P D / (GPUs x peak x MFU)")
def train_days(model, chip, tokens, batch_tokens, seq_len, mfu, gpus_per_node, candidates):
    n = training_gpus(model, chip, batch_tokens, seq_len, gpus_per_node, candidates)
    return training_gpu_seconds(model, chip, tokens, mfu) / n / 86400


@problem("11.2", title="Serve it: the smallest tensor-parallel group and its floor", unit="ms", **SERVE,
         slips={2.0: "each of the tensor-parallel GPUs streams only its share of the weights and of every cache: "
                     "divide the bytes by the degree",
                # leaving out the cache (x 0.62) and bf16 weights (x 1.62) land on nearly reciprocal ratios
                (70.5537 + 42.9497) / 70.5537: "check two things: every decode step reads the whole KV cache as "
                                               "well as the weights, and fp8 weights take one byte per parameter"},
         hint="chips to hold = ceil((weights + 32 caches of 8192 tokens) / 80 GB), rounded up to a degree in "
              "{1, 2, 4, 8}; then (weights + caches) / degree / HBM bandwidth")
def serve_floor(model, chip, batch, context, dtype, candidates):
    return decode_floor_seconds(model, chip, batch, context, dtype, candidates) * 1e3


@problem("11.3", title="A collective in the compiled step: which bound?", unit="", line=HLO_11_3, mesh=MESH,
         chip="tpu-v5e", shape="4x2", **MATMUL_11_3,
         slips={0.5: "a 4x2 slice of v5e has no wraparound links (they exist only on full 16-chip axes): "
                     "the ring sends one way, at half the bidirectional bandwidth",
                0.25: "V is the gathered output, bf16[8192,4096], not the operand shard",
                4 / 3: "keep the exact (N - 1) / N factor of chapter 3: each chip already holds its own "
                       "quarter, so the ring carries 3/4 of V",
                4.872: "you priced the matmul at its memory time; with 2048 rows it is compute-bound"},
         hint="read the replica groups for the axis (N = 4 over fsdp), take V from the result shape, price the "
              "AllGather at V (N - 1) / (N W) + (N - 1) hops x 1 us on that axis of the slice, then divide by the matmul's roofline time")
def gather_over_matmul(line, mesh, chip, shape, batch, d_model, d_ff):
    (c,) = xla.collectives_in_hlo(line, mesh)
    topo = topology.slice(chip, shape, names=tuple(mesh))
    comm = collectives.cost(c.kind, topo, axes=c.axes, bytes_=c.array_bytes).seconds
    mm = roofline.matmul(chip, batch=batch, d_model=d_model, d_ff=d_ff).lower_seconds
    return comm / mm


@problem("11.4", title="Train or serve: where the money goes", unit="token",
         train={k: TRAIN[k] for k in ("model", "chip", "tokens", "mfu")}, serve=SERVE,
         slips={2.0: "the serving deployment of 11.2 occupies two GPUs for every step",
                32.0: "each decode step produces one token for each of the 32 requests"},
         hint="both bills are H100-hours, so the price cancels: training GPU-seconds / (GPUs x floor / batch)")
def breakeven_tokens(train, serve):
    per_token = (serving_tp(**{k: serve[k] for k in ("model", "chip", "batch", "context", "dtype", "candidates")})
                 * decode_floor_seconds(**serve) / serve["batch"])
    return training_gpu_seconds(**train) / per_token


@problem("11.5", title="Does the MLP's collective matmul hide on a TPU v6e?", unit="", model="llama3-70b",
         chip_name="tpu-v6e", shape="16x16", axis="X", dtype="bf16",
         slips={0.5: "that uses the one-way hiding width; on a torus axis with a wraparound both ways sends two "
                     "blocks per round, which halves the width needed"},
         hint="the width per chip is F / N; a bidirectional collective matmul hides its sends above "
              "beta C / (4 W_1) columns per chip (chapter 10); divide the first by the second")
def v6e_mlp_hiding(model, chip_name, shape, axis, dtype):
    from ... import jax_collectives as jc

    topo = topology.slice(chip_name, shape)
    width = preset(model).d_ff / topo.axis(axis).size
    return width / jc.hiding_width(topo, axis=axis, dtype=dtype, bidirectional=True)
