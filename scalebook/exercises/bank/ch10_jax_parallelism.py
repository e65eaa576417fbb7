"""Answer keys of chapter 10 (Parallelism in JAX): hand-written rings, resharding, collective
matmuls and the FSDP x TP step, from `jax_collectives`, `collectives`, `training` and
`jax_training` (pure Python: no key compiles anything). The page and the keys share the inputs."""
from __future__ import annotations

from ... import collectives, jax_collectives as jc, jax_training as jt, topology, training, units
from ..problem import problem

_MS, _US = 1e-3, 1e-6


def _slice(chip: str, shape: str):
    return topology.slice(chip, shape)


def _additive(c: jc.RingCost) -> float:
    """Chapter 3's additive time of a ring: its bytes' time plus its steps' hop latency
    (`RingCost.seconds` is the original book's max of the two)."""
    return c.bandwidth_seconds + c.latency_seconds


@problem("10.1", title="Permutes in a hand-written AllReduce", unit="", n=16,
         slips={30 / 16: "that counts steps; both ways, each step runs two permutes, one per direction "
                         "(except where only one direction has blocks left)",
                2.0: "an AllReduce is a ReduceScatter followed by an AllGather: two rings of N - 1 permutes"})
def allreduce_permutes(n):
    # one collective-permute per step and direction that has a block to send
    return len({(t.step, t.direction) for row in jc.ring_steps("all-reduce", n, bidirectional=True) for t in row})


def _split_block(kind: str, topo, axis: str, array_bytes: float) -> float:
    """The fastest ring on an axis with a wraparound, in chapter 3's additive form: both ways, with
    the block for the chip opposite split in two halves, one sent each way, so the bytes take
    V (N - 1) / (N W) (`collectives.cost`'s exact bandwidth term) over N/2 steps of one hop each."""
    c = collectives.cost(kind, topo, axes=axis, bytes_=array_bytes)
    return c.bandwidth_seconds + c.latency_seconds


@problem("10.2", title="Which way round?", unit="us", chip_name="tpu-v5e", shape="16x16", axis="X",
         array_bytes=128e6,
         slips={2682.7 / 1341.3: "that is the one-way ring: sending both ways halves the steps on a ring with a "
                                 "wraparound",
                1430.2 / 1341.3: "that is the whole-block ring both ways; split the block for the chip opposite "
                                 "in two halves, one each way, and the last step takes half as long"},
         hint="both ways round, with the opposite chip's block split between the two directions: the bytes take "
              "V (N - 1) / (N W) with W both directions of a link, plus N/2 hops of latency")
def fastest_ring_allgather(chip_name, shape, axis, array_bytes):
    topo = _slice(chip_name, shape)
    whole = min(_additive(jc.ring_cost("all-gather", topo, axis=axis, bytes_=array_bytes, bidirectional=b))
                for b in (False, True))
    split = _split_block("all-gather", topo, axis, array_bytes)
    return min(whole, split) / _US


@problem("10.3", title="The largest array a line gathers in time", unit="MB", chip_name="tpu-v5e", shape="8x8",
         axis="X", seconds=200e-6,
         slips={2: "an 8x8 v5e slice has no wraparound: the ring's closing edge runs back along the line, so "
                   "both ways still moves N - 1 blocks over each link direction, not N/2",
                1.163: "the steps' hops take their latency off the budget first (chapter 3's additive form)",
                0.878: "that is the one-way ring; both ways needs fewer steps (N/2 instead of N - 1), so less "
                       "latency, and gathers more in the same budget"},
         hint="a ring's time is its steps' hop latency plus V (N - 1) / (N W_1), both ways or one way alike on a "
              "line; solve for V with the ring that has less latency")
def largest_gather_on_a_line(chip_name, shape, axis, seconds):
    # the chapter's line case reversed: the time is latency + V x (time per byte), solved for V, for the
    # one-way and the two-way ring; the larger V wins (the same bytes' time, less latency both ways)
    topo = _slice(chip_name, shape)

    def largest(bidirectional):
        one = jc.ring_cost("all-gather", topo, axis=axis, bytes_=1.0, bidirectional=bidirectional)
        return (seconds - one.latency_seconds) / one.bandwidth_seconds

    return max(largest(False), largest(True)) / 1e6


@problem("10.4", title="Latency or bandwidth?", unit="us", chip_name="tpu-v5e", shape="16x16", axis="X",
         array_bytes=256e3,
         slips={0.2623: "that is the bandwidth term alone; each of the 8 steps also costs a hop of latency, "
                        "which chapter 3 adds to it",
                0.7377: "that is the larger term alone (the original book's max approximation); chapter 3 adds "
                        "the bandwidth term to the latency"},
         hint="chapter 3's additive form: N/2 steps, each moving a V/N block one way over a link and crossing "
              "one hop of latency; add the two terms")
def small_ring_allgather(chip_name, shape, axis, array_bytes):
    return _additive(jc.ring_cost("all-gather", _slice(chip_name, shape), axis=axis, bytes_=array_bytes)) / _US


@problem("10.5", title="Moving a cut with reshard", unit="MB", chip_name="tpu-v5p", shape="8x8x8", axis="X",
         rows=8192, cols=8192, dtype="bf16", chips=8,
         slips={8.0: "that is an AllGather (then keeping a slice): reshard moves the cut with an AllToAll, in "
                     "which each device sends only (N - 1) / N^2 of the array"})
def reshard_bytes(chip_name, shape, axis, rows, cols, dtype):
    v = rows * cols * units.dtype_bytes(dtype)
    return collectives.all_to_all(_slice(chip_name, shape), axes=axis, bytes_=v).bytes_per_device / 1e6


@problem("10.6", title="How many chips before the sends show", unit="chip", rel_tol=1e-9, chip_name="tpu-v5p",
         shapes=("4x4x4", "8x8x8", "16x16x16"), axis="X", k=32768, dtype="bf16",
         slips={2.0: "a ring twice too large leaves K / N below the hiding width C / W, and the sends set the pace; "
                     "one half as large is the one-way ring's limit: both ways, two blocks arrive per step and "
                     "the width halves"})
def largest_hiding_group(chip_name, shapes, axis, k, dtype):
    # chapter 10's hiding width turned round: the largest ring (among the slices' axes) with K / N >= the width
    fits = [topology.slice(chip_name, s).axis(axis).size for s in shapes
            if k / topology.slice(chip_name, s).axis(axis).size
            >= jc.hiding_width(_slice(chip_name, s), axis=axis, dtype=dtype, bidirectional=True)]
    if not fits:
        raise ValueError("no listed axis is small enough for its sends to hide")
    return max(fits)


_CM = dict(I=16384, J=8192, K=32768)


@problem("10.7", title="An AllGather matmul that cannot hide its sends", unit="ms", chip_name="tpu-v5e",
         shape="16x16", axis="X", dims=_CM, dtype="bf16",
         slips={1.4537: "that is the sequential time (gather, then multiply); with overlap, each step costs the "
                        "longer of its send and its block matmul",
                0.4839: "that is the compute alone: K / N = 2048 is below the one-way hiding width, so the sends, "
                        "not the matmuls, set the pace"})
def allgather_matmul_time(chip_name, shape, axis, dims, dtype):
    c = jc.collective_matmul_cost("allgather-matmul", _slice(chip_name, shape), axis=axis, dims=dims, dtype=dtype)
    return c.overlapped_seconds / _MS


_MLP = dict(T=16384, F=32768, D=8192)


@problem("10.8", title="The second matmul of the MLP", unit="ms", chip_name="tpu-v5e", shape="16x16", axis="X",
         dims=_MLP, dtype="bf16",
         slips={1.8287: "that is the sequential time: multiply, then ReduceScatter; overlap the two",
                3.8343: "that treats it as the AllGather variant; here the contracting dimension F is cut on both "
                        "sides, so running sums of the output's rows travel, not blocks of h"})
def mlp_down_matmul(chip_name, shape, axis, dims, dtype):
    # out[T_X, D] = h[T, F_X] @ W[F_X, D]: the contracting dim is cut on both sides and the output
    # is cut on its rows, so the partial sums are reduce-scattered: matmul-reducescatter.
    c = jc.collective_matmul_cost("matmul-reducescatter", _slice(chip_name, shape), axis=axis,
                                  dims=dict(I=dims["T"], J=dims["F"], K=dims["D"]), dtype=dtype, bidirectional=True)
    return c.overlapped_seconds / _MS


def _small_estimate(fsdp: int, tp: int):
    mesh = {"fsdp": fsdp, "tp": tp}
    s = training.Strategy(fsdp=fsdp, tp=tp, placement={"fsdp": ("fsdp",), "tp": ("tp",)}, remat="none",
                          param_dtype="fp32", grad_dtype="fp32", optimizer_dtype="fp32", master_dtype=None,
                          activation_dtype="fp32", flash_attention=False)
    return training.estimate(jt.SMALL, topology=topology.for_mesh("tpu-v5e", mesh), strategy=s,
                             batch_tokens=16 * 64, seq_len=64)


@problem("10.9", title="State per device under FSDP x TP", unit="kB", fsdp=4, tp=2, chips=8,
         slips={16 / 12: "that counts the gradients too: they are temporaries, computed and consumed inside the "
                         "step, and gone between steps",
                2.0: "tensor parallelism divides the stored weights and moments too: every weight is cut over "
                     "both mesh axes",
                4.0: "FSDP shards the weights and both Adam moments, not only the moments"})
def state_per_device(fsdp, tp):
    m = _small_estimate(fsdp, tp).memory
    return (m.params_bytes + m.optimizer_bytes) / 1e3


@problem("10.10", title="One layer's weights after the FSDP gather", unit="MB", fsdp=4, tp=2,
         slips={2.0: "the gather is over fsdp only: the gathered copy is still cut over tp"})
def gathered_layer(fsdp, tp):
    e = _small_estimate(fsdp, tp)
    (c,) = [c for c in e.collectives if c.parallelism == "fsdp" and "before the forward" in c.purpose]
    return c.array_bytes / 1e6


@problem("10.11", title="Sum or scatter?", unit="ms", chip_name="tpu-v5p", shape="8x8x8", axis="X",
         array_bytes=1e9,
         slips={2.0: "twice the key: either an AllReduce (each device needs only its own shard of the sum: a "
                     "ReduceScatter ring, without the AllGather an AllReduce adds) or a one-way ring (write the "
                     "ring both ways: the axis wraps around)",
                8 / 7: "that is the whole-block ring both ways; split the running sum for the chip opposite in "
                       "two halves, one each way"})
def sum_or_scatter(chip_name, shape, axis, array_bytes):
    topo = _slice(chip_name, shape)
    whole = _additive(jc.ring_cost("reduce-scatter", topo, axis=axis, bytes_=array_bytes))
    return min(whole, _split_block("reduce-scatter", topo, axis, array_bytes)) / _MS


@problem("10.12", title="Bytes a collective matmul sends", unit="MB", n=8, rows=4096, cols=8192, dtype="bf16",
         chips=8,
         slips={8 / 7: "a device sends N - 1 blocks, not N: the last block's sum ends at its owner",
                2.0: "the running sums travel as rows of the product O, (I / N) x K elements of 2 bytes each step"})
def collective_matmul_bytes(n, rows, cols, dtype):
    # The ReduceScatter matmul sends what a ReduceScatter of O[I, K] sends: N - 1 blocks of O's rows.
    topo = topology.slice("tpu-v5p", "8x8x8")
    assert topo.axis("X").size == n
    return jc.ring_cost("reduce-scatter", topo, axis="X", bytes_=rows * cols * units.dtype_bytes(dtype),
                        bidirectional=False).bytes_per_device / 1e6


@problem("10.13", title="The most the overlap can win", unit="", chip_name="tpu-v5p", shape="8x8x8", axis="X",
         rows=8192, inner=8192, dtype="bf16", rel_tol=0.02,
         slips={(9 / 16) ** 2: "that is overlapped / sequential; the question asks how many times faster"})
def best_overlap_speedup(chip_name, shape, axis, rows, inner, dtype):
    # below the hiding width the speedup grows with K (more matmul to hide), above it it falls (the sends are
    # gone and only the matmuls remain): the best K puts K / N exactly at the width
    topo = _slice(chip_name, shape)
    k = topo.axis(axis).size * jc.hiding_width(topo, axis=axis, dtype=dtype, bidirectional=True)
    c = jc.collective_matmul_cost("allgather-matmul", topo, axis=axis, dims=dict(I=rows, J=inner, K=k), dtype=dtype,
                                  bidirectional=True)
    return c.speedup


@problem("10.14", title="A ppermute ring inside an NVLink node", unit="us", chip_name="h100", array_bytes=256e6,
         slips={(4 * 32e6 / 450e9 + 4e-6) / (7 * 32e6 / 450e9 + 4e-6):
                "too small: both ways halves the steps, but a GPU's two sends share its NVLink bandwidth, so the "
                "bytes take as long as one way"},
         hint="the switches close the ring in one crossing; each GPU sends N - 1 blocks of V/N through its own "
              "NVLink bandwidth either way, in ceil((N - 1)/2) steps of one hop")
def nvlink_ring(chip_name, array_bytes):
    c = jc.ring_cost("all-gather", topology.gpu_node(chip_name), axis="X", bytes_=array_bytes, bidirectional=True)
    return _additive(c) / _US


@problem("10.15", title="The bytes of an expert-parallel dispatch", unit="MB", chip_name="tpu-v5p",
         shape="16x16x16", axis="X", experts=64, tokens_per_device=4096, d_model=4096, dtype="bf16",
         capacity_factor=1.25,
         slips={16 / 15: "that counts the whole outbound buffer; the block for the device's own experts stays home",
                0.8: "the buffer has capacity_factor x T / N slots for every destination, not T / N"},
         hint="each device packs N blocks of capacity_factor x T / N slots of D values; the AllToAll sends N - 1 of "
              "those blocks")
def moe_dispatch_bytes(chip_name, shape, axis, experts, tokens_per_device, d_model, dtype, capacity_factor):
    topo = _slice(chip_name, shape)
    n = topo.axis(axis).size
    slots = capacity_factor * tokens_per_device / n
    local = n * slots * d_model * units.dtype_bytes(dtype)          # one device's outbound buffer
    return collectives.all_to_all(topo, axes=axis, bytes_=n * local).bytes_per_device / 1e6
