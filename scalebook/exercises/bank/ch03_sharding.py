"""Problems of chapter 3 (Sharded matrices and collectives): keys from `collectives` and `topology`."""
from __future__ import annotations

import math

from ... import collectives, sharding, topology, units
from ...hardware import chip
from ..problem import problem

_MS, _US = 1e-3, 1e-6


@problem("3.1", title="Gathering an activation along one axis", unit="ms", chips=16,
         rows=8192, cols=16384, dtype="bf16", chip_name="tpu-v5e", shape="16x16", axis="X",
         hint="V is the gathered array's bytes; on a ring with a wraparound T = V (N - 1) / (N W_bidi), about V / W_bidi")
def allgather_one_axis(rows, cols, dtype, chip_name, shape, axis):
    v = rows * cols * units.dtype_bytes(dtype)
    return collectives.all_gather(topology.slice(chip_name, shape), axes=axis, bytes_=v).seconds / _MS


@problem("3.2", title="Summing gradients over a whole pod", unit="ms", chips=256,
         params=1.5e9, dtype="bf16", chip_name="tpu-v5e", shape="16x16", axes=("X", "Y"),
         slips={2: "off by 2: an AllReduce is a ReduceScatter followed by an AllGather, each costing V / W"},
         hint="AllReduce over k equal axes of N chips in all: 2 V (N - 1) / (N k W), plus both phases' hops")
def allreduce_gradients(params, dtype, chip_name, shape, axes):
    v = params * units.dtype_bytes(dtype)
    return collectives.all_reduce(topology.slice(chip_name, shape), axes=axes, bytes_=v).seconds / _MS


@problem("3.3", title="Where latency stops mattering", unit="kB",
         chip_name="tpu-v5e", shape="8x16", axis="X",
         slips={8 / 7: "that treats the axis of 8 as a ring (N/2 hops at the bidirectional W); it has no "
                       "wraparound: N - 1 hops at the one-way W"},
         hint="set V (N - 1) / (N W) equal to (hops x 1 us); an axis of 8 without a wraparound needs N - 1 hops, "
              "at the one-way bandwidth")
def latency_crossover(chip_name, shape, axis):
    topo = topology.slice(chip_name, shape)
    one = collectives.all_gather(topo, axes=axis, bytes_=1.0)  # 1 byte: bandwidth time per byte
    return one.latency_seconds / one.bandwidth_seconds / 1e3


@problem("3.4", title="The link a model width needs to hide its AllReduce", unit="GB/s",
         chip_name="tpu-v5e", shape="16x16", axis="X", d_model=8192, dtype="bf16",
         slips={2: "off by 2: count 2 FLOPs per multiply-add and the AllReduce as 2V / W",
                16 / 15: "that is the large-N rule 2 N C / D; the statement asks for the exact 2 (N - 1) C / D"},
         hint="compute 2BDF / (N C) against AllReduce 2 (2BF bytes) (N - 1) / (N W); B and F cancel: W = 2 (N - 1) C / D")
def link_to_hide_allreduce(chip_name, shape, axis, d_model, dtype):
    # the chapter's threshold D > 2 N C / W turned round: the W at which a given D just hides the AllReduce.
    # Priced at the slice's own W (any B, F: they cancel), then scaled: the needed W is W x comm / compute.
    topo = topology.slice(chip_name, shape)
    n, b, f = topo.axis(axis).size, 4096, 4096
    comm = collectives.all_reduce(topo, axes=axis, bytes_=b * f * units.dtype_bytes(dtype)).bandwidth_seconds
    compute = 2 * b * d_model * f / (n * chip(chip_name).peak_flops_per_s(dtype))
    return topo.axis(axis).bytes_per_s * comm / compute / 1e9


@problem("3.5", title="Routing tokens along a line", unit="ms",
         bytes_=3e9, chip_name="tpu-v5e", shape="8x16", axis="X",
         slips={4: "off by 4: an AllToAll moves a quarter of the array across the middle of the line, not all of it",
                2: "off by 2: the axis of 8 has no wraparound, so only one link in each direction crosses "
                   "its middle (a ring would have two)"},
         hint="without a wraparound, the one link across the middle carries V / 4 in each direction")
def alltoall_tokens(bytes_, chip_name, shape, axis):
    return collectives.all_to_all(topology.slice(chip_name, shape), axes=axis, bytes_=bytes_).seconds / _MS


@problem("3.6", title="Gathering weights over both axes of a pod", unit="us", chips=256,
         d_model=4096, d_ff=16384, dtype="bf16", chip_name="tpu-v5e", shape="16x16", axes=("X", "Y"),
         slips={2: "off by 2: gathering over two axes uses the links of both, so it runs twice as fast as one axis"},
         hint="over k equal axes of N chips in all, T = V (N - 1) / (N k W)")
def allgather_two_axes(d_model, d_ff, dtype, chip_name, shape, axes):
    v = d_model * d_ff * units.dtype_bytes(dtype)
    return collectives.all_gather(topology.slice(chip_name, shape), axes=axes, bytes_=v).seconds / _US


@problem("3.7", title="AllReduce inside an H100 node", unit="ms", chips=8,
         params=0.7e9, dtype="bf16", chip_name="h100",
         slips={8 / 7: "off by 8/7: each GPU sends (N - 1)/N of the array, not all of it",
                2: "off by 2: an AllReduce moves twice what an AllGather does"},
         hint="NVSwitch node: AllReduce = 2 V (N - 1) / (N W), W = one GPU's NVLink egress")
def gpu_node_allreduce(params, dtype, chip_name):
    v = params * units.dtype_bytes(dtype)
    return collectives.all_reduce(topology.gpu_node(chip_name), axes="X", bytes_=v).seconds / _MS


@problem("3.8", title="What each device receives in an AllGather", unit="MB", chips=4,
         rows=2048, cols=1024, dtype="fp32", mesh_axis_size=4,
         slips={4 / 3: "off by 4/3: each device already holds its own shard, so it receives (N - 1)/N of the array"},
         hint="bytes received = V (N - 1) / N")
def allgather_bytes_per_device(rows, cols, dtype, mesh_axis_size):
    v = rows * cols * units.dtype_bytes(dtype)
    topo = topology.for_mesh("tpu-v5e", {"X": mesh_axis_size})
    return collectives.all_gather(topo, axes="X", bytes_=v).bytes_per_device / 1e6


@problem("3.9", title="The link a line needs to keep pace with a ring", unit="GB/s",
         rows=8192, cols=16384, dtype="bf16", chip_name="tpu-v5e", ring_shape="16x16", line_shape="8x16", axis="X",
         slips={2: "the line has no wraparound: all of V (N - 1) / N crosses one direction of its links, so the "
                   "answer is the one-way W_1, neither the both-directions W nor half of what one direction needs",
                16 / 15: "that is the large-N rule (V / W on both); the statement keeps the exact (N - 1) / N, "
                         "7/8 on the line against 15/16 on the ring"},
         hint="ring: 8 hops + V (15/16) / W; line: 7 hops + V (7/8) / W_1; set them equal and solve for W_1")
def line_link_to_match_ring(rows, cols, dtype, chip_name, ring_shape, line_shape, axis):
    # 3.1's gather on the ring fixes the time; the line's time is latency + bandwidth term, the latter
    # inversely proportional to W_1: scale the slice's own W_1 by (bandwidth term) / (time left after hops)
    v = rows * cols * units.dtype_bytes(dtype)
    target = collectives.all_gather(topology.slice(chip_name, ring_shape), axes=axis, bytes_=v).seconds
    line = topology.slice(chip_name, line_shape)
    on_line = collectives.all_gather(line, axes=axis, bytes_=v)
    return line.axis(axis).one_way_bytes_per_s * on_line.bandwidth_seconds / (target - on_line.latency_seconds) / 1e9


@problem("3.10", title="What one device stores", unit="MB", mesh={"X": 4, "Y": 2, "Z": 2},
         array="W[D_XZ, F]", dims={"D": 8192, "F": 28672}, dtype="bf16",
         slips={2: "off by 2: Y is not named, so each block is a copy and the array divides by 8, not 16"},
         hint="divide each dimension by the sizes of the axes under it; unnamed axes hold copies")
def bytes_per_device(mesh, array, dims, dtype):
    return sharding.layout(array, mesh=mesh, dims=dims, dtype=dtype).bytes_per_device / 1e6


@problem("3.11", title="Hops to a distant chip", unit="hop", rel_tol=1e-9, chip_name="tpu-v5e", shape="16x16",
         src=(1, 2), dst=(14, 11),
         hint="along each axis of a wraparound ring of N, the distance is min(|a - b|, N - |a - b|)")
def hops_to_chip(chip_name, shape, src, dst):
    return topology.hops(topology.slice(chip_name, shape), src, dst)


@problem("3.12", title="When borrowing an idle axis pays", unit="MB", chip_name="tpu-v5e", shape="16x16",
         axis="X", idle="Y",
         slips={2: "off by 2: over both axes the bytes move at W_X + W_Y = 2 W, and the hops double"},
         hint="plain: hops_X x 1 us + V (15/16) / W; borrowed: (hops_X + hops_Y) x 1 us + V (255/256) / (2 W); "
              "equal where the extra hops' latency equals the bandwidth time saved")
def idle_axis_crossover(chip_name, shape, axis, idle):
    # both times are linear in V (latency + V x time per byte); the crossover is where the lines meet
    topo = topology.slice(chip_name, shape)

    def times(v):
        staged = collectives.with_idle_axes("all-gather", topo, axes=axis, idle=idle, bytes_=v)
        return staged.plain.seconds, staged.seconds

    (p1, s1), (p2, s2) = times(1e6), times(2e6)
    slope_plain, slope_staged = (p2 - p1) / 1e6, (s2 - s1) / 1e6
    return (1e6 + (s1 - p1) / (slope_plain - slope_staged)) / 1e6


@problem("3.13", title="How sparse an AllToAll must be", unit="", rel_tol=1e-9, chip_name="tpu-v5e",
         shape="16x16", axis="X", bytes_=256e6, seconds=250e-6,
         slips={6 / 5: "round down: one destination more overruns the budget"},
         hint="a sparse AllToAll with k of the N - 1 destinations carries k / (N - 1) of the dense V / (4 W); "
              "the hops' latency stays: the largest whole k with latency + k V / (4 W (N - 1)) <= budget")
def sparse_alltoall_budget(chip_name, shape, axis, bytes_, seconds):
    # the chapter's sparse AllToAll turned round: the most destinations per sender that fit the time
    topo = topology.slice(chip_name, shape)
    fits = [k for k in range(1, topo.axis(axis).size)
            if collectives.sparse_all_to_all(topo, axes=axis, bytes_=bytes_, destinations=k).seconds <= seconds]
    if not fits:
        raise ValueError("the budget is too short for even one destination per sender")
    return max(fits)


MIN_LATENCY_OPTIONS = ("In[B, D_X] @ W[D_X, F_Y] -> Out[B, F_Y]",
                       "In[B_X, D] @ W[D_X, F_Y] -> Out[B_X, F_Y]",
                       "In[B, D_X] @ W[D_X, F_Y] -> Out[B_X, F_Y]")


@problem("3.14", title="The fastest layout for one layer", unit="us", chip_name="tpu-v5e",
         mesh={"X": 4, "Y": 2}, dims={"B": 256, "D": 8192, "F": 16384}, dtype="bf16", options=MIN_LATENCY_OPTIONS,
         hint="price each option: its collectives (exact (N - 1)/N, no wraparound on a 4x2 slice) plus the local "
              "matmul's roofline time, and keep the smallest")
def min_latency_layout(chip_name, mesh, dims, dtype, options):
    return min(sharding.plan(o, mesh=mesh, dims=dims, chip=chip_name, dtype=dtype).seconds for o in options) / _US


@problem("3.15", title="The backward pass of a weight gather", unit="ms", chip_name="tpu-v5e", shape="16x16",
         axis="X", d_model=8192, d_ff=32768, dtype="bf16",
         slips={2: "off by 2: the transpose of an AllGather is a ReduceScatter, not an AllReduce"},
         hint="the gradient of an AllGather is a ReduceScatter of the same V: the same time as the forward gather")
def backward_of_gather(chip_name, shape, axis, d_model, d_ff, dtype):
    v = d_model * d_ff * units.dtype_bytes(dtype)
    return collectives.reduce_scatter(topology.slice(chip_name, shape), axes=axis, bytes_=v).seconds / _MS


@problem("3.16", title="What XLA sends", unit="kB", spec="A[I_X, J_Y] @ B[J, K] -> O[I_X, K]",
         mesh={"X": 4, "Y": 2}, dims={"I": 512, "J": 1024, "K": 640}, dtype="fp32",
         slips={0.8: "that is what gathering A sends; XLA compares the sizes of the arrays, and O's block is "
                     "smaller than A's gathered block, so it reduces O"},
         hint="XLA picks the decomposition whose gathered or reduced arrays are smaller in total; then count "
              "what each device sends for it (an AllReduce sends 2 V (N - 1) / N)")
def xla_sends(spec, mesh, dims, dtype):
    p = sharding.plan(spec, mesh=mesh, dims=dims, chip="tpu-v5e", dtype=dtype)
    return p.cheapest.comm_bytes_per_device / 1e3


MLP_LAYOUTS = {"over X only": ("In[B, D] @ Win[D, F_X] -> H[B, F_X]", "H[B, F_X] @ Wout[F_X, D] -> Out[B_X, D]"),
               "over XY, AllReduce": ("In[B, D] @ Win[D, F_XY] -> H[B, F_XY]", "H[B, F_XY] @ Wout[F_XY, D] -> Out[B, D]"),
               "over XY, ReduceScatter": ("In[B, D] @ Win[D, F_XY] -> H[B, F_XY]",
                                          "H[B, F_XY] @ Wout[F_XY, D] -> Out[B_XY, D]")}


def _mlp_weight_bytes_per_chip(specs, mesh, dims, dtype) -> float:
    return sum(sharding.layout(s.split("@")[1].split("->")[0], mesh=mesh, dims=dims, dtype=dtype).bytes_per_device
               for s in specs)


@problem("3.17", title="The largest batch an MLP's collectives allow", unit="token", rel_tol=1e-9,
         chip_name="tpu-v5e", mesh={"X": 4, "Y": 2}, dims={"D": 4096, "F": 16384}, dtype="bf16", cap_bytes=50e6,
         seconds=100e-6, layouts=MLP_LAYOUTS,
         slips={2: "off by 2: that layout AllReduces the output; a ReduceScatter onto the batch sends half"},
         hint="keep the layouts whose two weights fit under the cap; each one's collectives take latency + k B; "
              "the largest B, a multiple of the 8 chips, with latency + k B <= the budget, over the layouts that fit")
def memory_capped_mlp_batch(chip_name, mesh, dims, dtype, cap_bytes, seconds, layouts):
    # the chapter's memory-capped MLP turned round: given a time budget for its collectives, the largest batch
    best = None
    for specs in layouts.values():
        if _mlp_weight_bytes_per_chip(specs, mesh, {**dims, "B": 1}, dtype) > cap_bytes:
            continue  # the weights do not depend on the batch

        def comm(b, specs=specs):
            return sum(sharding.plan(s, mesh=mesh, dims={**dims, "B": b}, chip=chip_name, dtype=dtype).comm_seconds
                       for s in specs)
        per_token = (comm(2048) - comm(1024)) / 1024  # the collectives are latency + per_token x B
        n = math.prod(mesh.values())  # the batch is a whole multiple of the chips (it may end up cut over all)
        b_max = n * math.floor((seconds - (comm(1024) - 1024 * per_token)) / per_token / n + 1e-9)
        best = b_max if best is None else max(best, b_max)
    if best is None or best < 1:
        raise ValueError("no layout fits the cap with a batch of one token within the time")
    return best


@problem("3.18", title="When to move weights instead of activations", unit="token", rel_tol=1e-9,
         chip_name="tpu-v5e", mesh={"X": 4, "Y": 2}, d_model=8192, d_ff=32768, dtype="bf16",
         gather="In[B_XY, D] @ W[D_XY, F] -> Out[B_XY, F]", reduce="In[B, D_XY] @ W[D_XY, F] -> Out[B_XY, F]",
         hint="the gather moves V = D F bytes x 2, the ReduceScatter V = B F x 2, over the same axes: equal at B = D")
def weights_or_activations(chip_name, mesh, d_model, d_ff, dtype, gather, reduce):
    def comm(spec, b):
        dims = {"B": b, "D": d_model, "F": d_ff}
        return sharding.plan(spec, mesh=mesh, dims=dims, chip=chip_name, dtype=dtype).comm_seconds
    # the ReduceScatter's time is latency + k B (its hops do not depend on B); find where it meets the gather's
    b0 = 1024
    k = (comm(reduce, 2 * b0) - comm(reduce, b0)) / b0
    return round(b0 + (comm(gather, b0) - comm(reduce, b0)) / k)


@problem("3.19", title="The largest array a time budget gathers", unit="MB", chip_name="tpu-v5e", shape="16x16",
         axis="X", seconds=100e-6,
         slips={100 / 92: "that spends the whole budget on bytes: the hops' latency comes off the budget first"},
         hint="additive form: hops x 1 us + V (N - 1) / (N W) <= budget, so V = (budget - hops x 1 us) N W / (N - 1)")
def largest_gather_in_budget(chip_name, shape, axis, seconds):
    # the reverse of 3.1: the AllGather's time is latency + V x (time per byte); solve it for V
    topo = topology.slice(chip_name, shape)
    per_byte = collectives.all_gather(topo, axes=axis, bytes_=1.0)  # 1 byte: the bandwidth time per byte
    room = seconds - per_byte.latency_seconds
    if room <= 0:
        raise ValueError("the budget must exceed the hops' latency for any array to fit")
    return room / per_byte.bandwidth_seconds / 1e6


@problem("3.20", title="Which axis for the gradient AllReduce?", unit="ms", chip_name="tpu-v5e", shape="8x16",
         params=1e9, dtype="bf16", axes=("X", "Y"),
         slips={(2 * 2e9 * 7 / 8 / 45e9 + 14e-6) / (2 * 2e9 * 15 / 16 / 90e9 + 16e-6):
                "that is the axis of 8: it has no wraparound, so it runs at the one-way W over N - 1 hops; the "
                "longer axis wraps and is faster"},
         hint="price the AllReduce 2 V (N - 1) / (N W) on each axis: X (8, a line, one-way W) and Y (16, a ring, "
              "bidirectional W); keep the faster")
def gradient_allreduce_axis(chip_name, shape, params, dtype, axes):
    topo = topology.slice(chip_name, shape)
    v = params * units.dtype_bytes(dtype)
    return min(collectives.all_reduce(topo, axes=a, bytes_=v).seconds for a in axes) / _MS
