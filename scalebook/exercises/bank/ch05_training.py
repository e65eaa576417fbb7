"""Answer keys of chapter 5 (training in parallel): thresholds, memory, pipelines, experts, plans.

Every key calls `scalebook.training` (or `planner`, `topology`, `strategy`); where a problem asks
for the large-N rule of thumb the key uses `training.rule_of_thumb_batch_per_chip`, and where it
asks what the step model says, `training.estimate`. The page and the key share the inputs below.
"""
from __future__ import annotations

import math

from ... import hardware, planner, strategy, topology, training
from ...errors import Error
from ...models import preset
from ..problem import problem

Strategy = training.Strategy


def _powers_of_two_down(n: int) -> list[int]:
    out, p = [], 1
    while p <= n:
        out.append(p)
        p *= 2
    return out[::-1]


@problem("5.1", title="Data parallelism with fp32 gradients", unit="token", chip="h100", grad_dtype="fp32",
         slips={2.0: "off by 2: fp32 gradients are 4 bytes, and the AllReduce hides behind the backward pass "
                     "(4 P b FLOPs), not the whole step"})
def dp_fp32_threshold(chip, grad_dtype):
    return training.rule_of_thumb_batch_per_chip(chip, link="nvlink", grad_dtype=grad_dtype)


@problem("5.2", title="FSDP over a whole TPU v5e slice", unit="token", chip="tpu-v5e", shape="16x16",
         slips={2.0: "off by 2: the FSDP group spans both axes of the 16x16 torus, and both wrap around, so "
                     "each chip gathers over two axes' worth of bandwidth"})
def fsdp_v5e_threshold(chip, shape):
    topo = topology.slice(chip, shape)
    s = Strategy(fsdp=topo.num_chips)
    axes = len(strategy.place(s, topo).groups["fsdp"])
    return training.rule_of_thumb_batch_per_chip(chip, link="ici") / axes


@problem("5.3", title="Small slices over DCN: which bound binds?", unit="token", chip="tpu-v5p", shape="4x4x4",
         slices=16,
         slips={1.35: "that is the in-slice ICI bound: check the DCN bound too, per slice, and take the larger",
                16.0: "off by the number of slices: the DCN condition is on the batch per slice"})
def multislice_min_batch(chip, shape, slices):
    inner = topology.slice(chip, shape)
    per_slice = inner.num_chips
    ici = training.rule_of_thumb_batch_per_chip(chip, link="ici") / len(inner.axes) * per_slice * slices
    dcn = training.rule_of_thumb_batch_per_chip(chip, link="dcn") * slices
    return max(ici, dcn)


@problem("5.4", title="Tensor parallelism for a narrow model", unit="", model="gpt3-xl", chip="h100",
         slips={2.0: "the bound is on the collectives against the compute (max_tp_degree), and the degree must "
                     "divide the heads",
                1.5: "the degree must divide the 24 heads and stay under the width bound"})
def tp_narrow(model, chip):
    m = preset(model)
    bound = training.max_tp_degree(m, chip=chip)
    width = m.d_ff or m.expert_d_ff
    ok = [t for t in range(1, hardware.chip(chip).nvlink_domain + 1)
          if t <= bound and m.heads % t == 0 and width % t == 0
          and (t % m.kv_heads == 0 if t > m.kv_heads else m.kv_heads % t == 0)]
    return max(ok)


@problem("5.5", title="State per GPU under TP with ZeRO-1", unit="GB", model="llama3-70b", chip="h100", dp=64, tp=8,
         slips={3.8221: "that is the state without ZeRO-1: the Adam moments and master weights are sharded over the "
                        "64 data-parallel replicas too",
                1.0449: "ZeRO-1 shards only the optimizer state; the bf16 weights and gradients stay whole in each "
                        "TP shard"})
def zero1_tp_state(model, chip, dp, tp):
    e = training.estimate(preset(model), strategy=Strategy(dp=dp, tp=tp, zero=1, sequence_parallel=True),
                          seq_len=4096, batch_seqs=dp, chip=chip, chips=dp * tp)
    m = e.memory
    return (m.params_bytes + m.grads_bytes + m.optimizer_bytes) / 1e9


def _largest_microbatch(model, pp, virtual, seqs, chip, target):
    m = preset(model)
    for mb in _powers_of_two_down(seqs):
        e = training.estimate(m, strategy=Strategy(pp=pp, virtual_stages=virtual, microbatch=mb), seq_len=4096,
                              batch_seqs=seqs, chip=chip, chips=pp)
        if e.bubble_seconds / e.step_seconds <= target:
            return mb
    raise Error("no microbatch size keeps the bubble under the target")  # pragma: no cover


@problem("5.6", title="Microbatch size for an 8-stage pipeline", unit="", model="llama3-8b", pp=8, seqs=256,
         chip="h100", target=0.10,
         slips={2.0: "count the slots: (p - 1) / (m + p - 1) with m = 256 / microbatch must be at most 10%"})
def pipeline_microbatch(model, pp, seqs, chip, target):
    return _largest_microbatch(model, pp, 1, seqs, chip, target)


@problem("5.7", title="The same pipeline, interleaved", unit="", model="llama3-8b", pp=8, virtual=4, seqs=256,
         chip="h100", target=0.10,
         slips={4.0: "that is the answer without interleaving: with v chunks per chip the bubble is (p - 1) / v "
                     "slots",
                2.0: "with v = 4 the bubble is (p - 1) / 4 slots against m: solve 1.75 / (m + 1.75) <= 0.1"})
def interleaved_microbatch(model, pp, virtual, seqs, chip, target):
    return _largest_microbatch(model, pp, virtual, seqs, chip, target)


def _ep_alltoall_ms(e) -> float:
    return [c for c in e.collectives if c.parallelism == "ep"][0].seconds * 1e3


@problem("5.8", title="One expert dispatch inside a node", unit="ms", model="mixtral-8x7b", chip="h100",
         seqs_per_gpu=2, seq_len=4096,
         slips={8.0: "each token goes to k = 2 experts, and only (N - 1) / N of the bytes leave the GPU; "
                     "check also bytes per element",
                1.1429: "only (N - 1) / N = 7/8 of each GPU's bytes leave it"})
def ep_in_node(model, chip, seqs_per_gpu, seq_len):
    e = training.estimate(preset(model), strategy=Strategy(fsdp=8, ep=8), seq_len=seq_len,
                          batch_seqs=8 * seqs_per_gpu, chip=chip, chips=8)
    return _ep_alltoall_ms(e)


@problem("5.9", title="The same dispatch across nodes", unit="ms", model="mixtral-8x7b", chip="h100", nodes=8,
         seq_len=4096,
         slips={9.0: "that is the NVLink time: across nodes each GPU sends over its own InfiniBand share "
                     "(50 GB/s), not NVLink"})
def ep_across_nodes(model, chip, nodes, seq_len):
    topo = topology.gpu_cluster(chip, nodes=nodes)
    # TP8 inside each node; the 8 FSDP replicas (one per node) carry EP8; 8192 tokens per GPU.
    e = training.estimate(preset(model), strategy=Strategy(fsdp=nodes, tp=8, ep=8, sequence_parallel=True),
                          seq_len=seq_len, batch_seqs=nodes * 16, topology=topo)
    return _ep_alltoall_ms(e)


@problem("5.10", title="FSDP across H100 nodes", unit="token", chip="h100",
         slips={1.125: "that is the NVLink bound; across nodes the node's 8 GPUs share 400 GB/s of InfiniBand",
                8.0: "each GPU sends only its eighth of the weights over its own card: divide by the 8 GPUs"})
def fsdp_across_nodes(chip):
    c = hardware.chip(chip)
    nvl = training.rule_of_thumb_batch_per_chip(c, link="nvlink")
    ib = training.rule_of_thumb_batch_per_chip(c, link="infiniband") / c.nvlink_domain
    return max(nvl, ib)


@problem("5.11", title="How many chips can the batch feed?", unit="chip", model="llama3-70b", chip="tpu-v5p",
         tp=4, batch_tokens=2 ** 21, seq_len=4096,
         slips={2.0: "also count sequences: FSDP replicas cannot split a sequence, so chips / tp <= 512"})
def max_chips(model, chip, tp, batch_tokens, seq_len):
    # TP on one torus axis, FSDP over the other two (large-N rule).
    need = training.rule_of_thumb_batch_per_chip(chip, link="ici", tp=tp) / 2
    seqs = batch_tokens // seq_len
    best = 0
    for n in (2 ** i for i in range(4, 17)):
        if batch_tokens / n >= need and n // tp <= seqs:
            best = n
    return best


@problem("5.12", title="Accumulation under FSDP", unit="", model="llama3-70b", chip="tpu-v5p", n_chips=256,
         seq_len=512, seqs_per_chip=16,
         slips={2.0: "FSDP regathers the weights for every microbatch: each microbatch needs about C / (3 W) "
                     "tokens per chip on a full 3D torus"})
def accumulation_steps(model, chip, n_chips, seq_len, seqs_per_chip):
    # FSDP hides each layer's gathers while every microbatch holds the critical batch per chip
    # (only each microbatch's first gather, which nothing precedes, stays exposed)
    need = training.critical_batch_per_chip(preset(model), strategy=Strategy(fsdp=n_chips), seq_len=seq_len,
                                            chip=chip, chips=n_chips, efficiency=1.0)
    best = 1
    for mb in _powers_of_two_down(seqs_per_chip):
        if mb * seq_len >= need:
            best = seqs_per_chip // mb
    return best


@problem("5.13", title="Tensor-parallel traffic of one step", unit="ms", model="llama3-70b", chip="h100", tp=8,
         seq_len=8192,
         slips={2.0: "an AllReduce costs twice an AllGather: 2 V (N - 1) / (N W), and there are four per layer "
                     "(two forward, two backward)",
                8.0: "V is the whole activation of the sequence, 8192 x D values in bf16, not one GPU's eighth"})
def tp_traffic(model, chip, tp, seq_len):
    e = training.estimate(preset(model), strategy=Strategy(tp=tp, sequence_parallel=True), seq_len=seq_len,
                          batch_seqs=1, chip=chip, chips=tp)
    # The collectives inside the layers (not the vocabulary-parallel embedding and loss).
    return sum(c.total_seconds for c in e.collectives if c.parallelism == "tp" and c.per_layer) * 1e3


@problem("5.14", title="Fewest H100s that can train LLaMA-3 70B", unit="chip", model="llama3-70b", chip="h100",
         seqs=16, seq_len=4096,
         slips={0.5: "8 GPUs cannot hold the training state: 16 bytes per parameter over 8 GPUs is more than 80 GB",
                2.0: "16 GPUs suffice once the planner may shard everything and recompute activations"})
def fewest_gpus(model, chip, seqs, seq_len):
    m = preset(model)
    for n in (8, 16, 32, 64, 128):
        try:
            planner.plan(m, chip=chip, chips=n, batch_seqs=seqs, seq_len=seq_len, top=1)
        except Error:
            continue
        return n
    raise Error("no chip count up to 128 fits")  # pragma: no cover


@problem("5.15", title="The original's FSDP x TP split on 8192 v5p chips", unit="", model="llama3-70b",
         chip="tpu-v5p", chip_count=8192, batch_tokens=2 ** 21, fsdp_axes=2, tp_axes=1,
         slips={2.0: "X_opt = sqrt(B N M_X / (F M_Y)) is the FSDP degree; the TP degree is N / X_opt",
                1.4142: "M_X = 2: FSDP spans two axes, TP one"})
def original_tp_degree(model, chip, chip_count, batch_tokens, fsdp_axes, tp_axes):
    from ...rules_of_thumb import training as rot
    f = preset(model).d_ff
    x = rot.fsdp_tp_best_fsdp_degree(batch_tokens=batch_tokens, chips=chip_count, d_ff=f, fsdp_axes=fsdp_axes,
                                     tp_axes=tp_axes)
    return chip_count / x


@problem("5.16", title="How far can DP accumulate on a v5p cube?", unit="", model="llama3-8b", chip="tpu-v5p",
         shape="4x4x4", seqs_per_chip=16, seq_len=512,
         slips={2.0: "the AllReduce hides only behind the last microbatch's backward (4 P b / C): each microbatch "
                     "needs C / W tokens per chip, with W summed over the three wrapped axes"})
def dp_accumulation(model, chip, shape, seqs_per_chip, seq_len):
    topo = topology.slice(chip, shape)
    need = training.rule_of_thumb_batch_per_chip(chip, link="ici") / len(topo.axes)
    best = 1
    for per_mb in _powers_of_two_down(seqs_per_chip):
        if per_mb * seq_len >= need:
            best = seqs_per_chip // per_mb
    return best


@problem("5.17", title="Chips for a deadline, against chips for memory", unit="chip", params=405e9, tokens=15e12,
         chip="h100", days=90, mfu=0.40,
         slips={1 / 146: "that is the memory floor (16 P / HBM); the deadline asks for FLOPs"})
def chips_for_deadline_rule(params, tokens, chip, days, mfu):
    from ...rules_of_thumb import training as rot
    one_chip_days = rot.training_days(model_flops=6 * params * tokens, chips=1, chip=chip, mfu=mfu)
    return math.ceil(one_chip_days / days)
