"""Chapter 10: collectives written by hand with ppermute, checked against the library and the HLO.

Every hand-written ring (AllGather, ReduceScatter, AllReduce, one way and both ways) must return
what `jax.lax.all_gather` / `psum_scatter` / `psum` return, for random shapes the mesh divides;
each collective matmul must equal the plain sharded matmul. The compiled HLO of a ring must hold
exactly the collective-permutes the chapter counts (N - 1 per collective, k to the right and
m to the left both ways), each moving one block, and none of the collectives the ring replaces.
The schedules and costs (pure Python) are checked against chapter 3's formulas.
"""
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from scalebook import Error, collectives, topology, xla

xla.use_cpu_devices(8)  # before any JAX computation

from scalebook import jax_collectives as jc  # noqa: E402

MESHES = [({"X": 8}, "X"), ({"X": 4, "Y": 2}, "X"), ({"X": 4, "Y": 2}, "Y")]
_MESH_CACHE: dict = {}
_FN_CACHE: dict = {}


def mesh_of(shape):
    key = tuple(shape.items())
    if key not in _MESH_CACHE:
        _MESH_CACHE[key] = xla.mesh(shape)
    return _MESH_CACHE[key]


def program(kind, shape, axis, impl, bidirectional=True):
    key = (kind, tuple(shape.items()), axis, impl, bidirectional)
    if key not in _FN_CACHE:
        _FN_CACHE[key] = jc.build(kind, mesh_of(shape), axis=axis, impl=impl, bidirectional=bidirectional)
    return _FN_CACHE[key]


SLOW = settings(max_examples=10, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


# ------------------------------------------------------------------ equal to the library


@pytest.mark.xla
@SLOW
@given(which=st.integers(0, len(MESHES) - 1), kind=st.sampled_from(jc.COLLECTIVES), bidirectional=st.booleans(),
       rows=st.integers(1, 3), cols=st.integers(1, 4), seed=st.integers(0, 2**16))
def test_ring_collectives_equal_the_library(which, kind, bidirectional, rows, cols, seed):
    shape, axis = MESHES[which]
    n = shape[axis]
    args = jc.random_inputs(kind, mesh_of(shape), axis=axis, shape=(n * rows, cols), seed=seed)
    ring = np.asarray(program(kind, shape, axis, "ring", bidirectional)(*args))
    lib = np.asarray(program(kind, shape, axis, "library")(*args))
    assert ring.shape == lib.shape == (n * rows, cols)
    np.testing.assert_allclose(ring, lib, rtol=1e-5, atol=1e-5)
    # and what the collective means, in numpy
    x = np.asarray(args[0])
    want = x if kind == "all-gather" else x.sum(axis=0)
    np.testing.assert_allclose(ring, want, rtol=1e-5, atol=1e-5)


@pytest.mark.xla
@SLOW
@given(which=st.integers(0, len(MESHES) - 1), kind=st.sampled_from(jc.MATMULS), bidirectional=st.booleans(),
       i=st.integers(1, 2), j=st.integers(1, 3), k=st.integers(1, 3), seed=st.integers(0, 2**16))
def test_collective_matmuls_equal_the_plain_sharded_matmul(which, kind, bidirectional, i, j, k, seed):
    shape, axis = MESHES[which]
    n = shape[axis]
    dims = (n * i, n * j, n * k)
    a, b = jc.random_inputs(kind, mesh_of(shape), axis=axis, shape=dims, seed=seed)
    ring = program(kind, shape, axis, "ring", bidirectional)(a, b)
    plain = program(kind, shape, axis, "xla")(a, b)
    assert ring.shape == plain.shape == (dims[0], dims[2])
    assert ring.sharding.is_equivalent_to(plain.sharding, 2)
    np.testing.assert_allclose(np.asarray(ring), np.asarray(plain), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(np.asarray(ring), np.asarray(a) @ np.asarray(b), rtol=1e-4, atol=1e-4)


# ------------------------------------------------------------------ what XLA compiled

F32 = 4


@pytest.mark.xla
@pytest.mark.parametrize("bidirectional", [False, True])
@pytest.mark.parametrize("kind", jc.KINDS)
def test_a_ring_compiles_to_the_counted_permutes_and_nothing_else(kind, bidirectional):
    mesh, axis, n = {"X": 8}, "X", 8
    shape = (n * 2, 3) if kind in jc.COLLECTIVES else (n * 2, 24, n * 3)
    text = jc.hlo(kind, mesh_shape=mesh, axis=axis, shape=shape, bidirectional=bidirectional)
    found = xla.collectives_in_hlo(text, mesh)
    assert {c.kind for c in found} == {"collective-permute"}  # no all-gather, all-reduce, reduce-scatter
    rounds = 2 if kind == "all-reduce" else 1
    k, m = jc.ring_split(n, bidirectional)
    assert (k, m) == ((4, 3) if bidirectional else (7, 0))
    assert len(found) == rounds * (n - 1)
    shifts = jc.permute_shifts(text, mesh, axis)
    assert shifts.count(+1) == rounds * k and shifts.count(-1) == rounds * m
    # each permute moves one block per device: V/N of the whole array
    if kind in jc.COLLECTIVES:
        block = shape[0] // n * shape[1] * F32
    elif kind == "allgather-matmul":
        block = shape[0] // n * shape[1] * F32  # a block of A's rows
    else:
        block = shape[0] // n * shape[2] * F32  # a block of C's running sum
    assert {c.bytes_per_device for c in found} == {block}
    assert {c.axes for c in found} == {("X",)}


@pytest.mark.xla
def test_a_ring_over_the_minor_axis_of_a_2d_mesh_stays_on_it():
    mesh = {"X": 4, "Y": 2}
    text = jc.hlo("all-reduce", mesh_shape=mesh, axis="X", shape=(8, 2))
    found = xla.collectives_in_hlo(text, mesh)
    assert len(found) == 6 and {c.axes for c in found} == {("X",)}
    assert jc.permute_shifts(text, mesh, "X").count(-1) == 2  # N = 4 both ways: k = 2, m = 1, twice


@pytest.mark.xla
@pytest.mark.parametrize("kind, impl, want", [
    ("all-gather", "library", ["all-gather"]),
    ("reduce-scatter", "library", ["reduce-scatter"]),  # psum_scatter in shard_map stays a reduce-scatter on CPU
    ("all-reduce", "library", ["all-reduce"]),
    ("allgather-matmul", "library", ["all-gather"]),
    ("matmul-reducescatter", "library", ["reduce-scatter"]),
    ("allgather-matmul", "xla", ["all-gather"]),
    ("matmul-reducescatter", "xla", ["all-reduce"]),  # jit's ReduceScatter: AllReduce + dynamic-slice on CPU
])
def test_the_library_and_the_compiler_use_one_collective(kind, impl, want):
    shape = (16, 3) if kind in jc.COLLECTIVES else (16, 24, 16)
    found = jc.compiled_collectives(kind, mesh_shape={"X": 8}, axis="X", shape=shape, impl=impl)
    assert [c.kind for c in found] == want


# ------------------------------------------------------------------ the schedule (pure Python)


@pytest.mark.parametrize("n", range(2, 10))
@pytest.mark.parametrize("bidirectional", [False, True])
def test_ring_schedules_finish_and_send_one_block_per_direction_per_step(n, bidirectional):
    k, m = jc.ring_split(n, bidirectional)
    assert k + m == n - 1 and k == (math.ceil((n - 1) / 2) if bidirectional else n - 1)
    for kind, final in (("all-gather", lambda d, t: 1), ("reduce-scatter", lambda d, t: n if d == t else None)):
        steps = jc.ring_steps(kind, n, bidirectional=bidirectional)
        assert len(steps) == k
        for s, row in enumerate(steps, 1):
            assert len(row) == n * (2 if s <= m else 1)
            for direction in (+1, -1):
                sends = [t for t in row if t.direction == direction]
                assert len({t.src for t in sends}) == len(sends)  # one block per device per direction
                assert all(t.dst == (t.src + direction) % n for t in sends)
        last = jc.ring_holdings(kind, n, bidirectional=bidirectional)[-1]
        for d in range(n):
            for t in range(n):
                if final(d, t) is not None:
                    assert last[d][t] == final(d, t)
    ar = jc.ring_steps("all-reduce", n, bidirectional=bidirectional)
    assert len(ar) == 2 * k


def test_a_four_device_ring_both_ways_step_by_step():
    # AllGather: step 1 brings the left and right neighbours' blocks, step 2 the opposite one
    first, second = jc.ring_steps("all-gather", 4)
    assert sorted((t.src, t.dst, t.block) for t in first if t.dst == 0) == [(1, 0, 1), (3, 0, 3)]
    assert [(t.src, t.block) for t in second if t.dst == 0] == [(3, 2)]
    # ReduceScatter: device 0's block travels right from device 2 (2 hops) and left from 1 (1 hop)
    states = jc.ring_holdings("reduce-scatter", 4)
    assert [s[0][0] for s in states] == [1, 2, 4]


# ------------------------------------------------------------------ costs against chapter 3

V = 64e6


@pytest.mark.parametrize("kind", jc.COLLECTIVES)
def test_both_ways_on_a_wraparound_axis_is_chapter_3s_large_n_cost(kind):
    topo = topology.slice("tpu-v5e", "16x16")  # 16-long axes wrap around
    ring = jc.ring_cost(kind, topo, axis="X", bytes_=V)
    book = collectives.cost(kind, topo, axes="X", bytes_=V)
    # whole blocks: the opposite chip's block goes one way, so the ring takes V / W, N / (N - 1) times
    # chapter 3's exact V (N - 1) / (N W), which splits that block between the two directions
    assert ring.bandwidth_seconds == pytest.approx(book.bandwidth_seconds * 16 / 15, rel=1e-12)
    assert ring.latency_seconds == pytest.approx(book.latency_seconds, rel=1e-12)
    rounds = 2 if kind == "all-reduce" else 1
    # by hand: N/2 steps of V/N over one direction of a 90 GB/s (both ways) link
    assert ring.bandwidth_seconds == pytest.approx(rounds * 8 * (V / 16) / 45e9)
    one_way = jc.ring_cost(kind, topo, axis="X", bytes_=V, bidirectional=False)
    assert one_way.steps == rounds * 15 and one_way.permutes == ring.permutes == rounds * 15
    assert one_way.bandwidth_seconds / ring.bandwidth_seconds == pytest.approx(2 * 15 / 16)


def test_without_a_wraparound_going_both_ways_buys_nothing():
    topo = topology.slice("tpu-v5e", "4x4")  # no wraparound below 16
    assert not topo.axis("X").wraparound
    both = jc.ring_cost("all-gather", topo, axis="X", bytes_=V)
    one = jc.ring_cost("all-gather", topo, axis="X", bytes_=V, bidirectional=False)
    assert both.bandwidth_seconds == pytest.approx(one.bandwidth_seconds)
    assert both.link_blocks == one.link_blocks == 3 and both.hops_per_step == 3 and both.steps == 2
    # chapter 3 uses the one-way bandwidth there, with the same (N - 1)/N
    book = collectives.all_gather(topo, axes="X", bytes_=V)
    assert one.bandwidth_seconds == pytest.approx(book.bandwidth_seconds)


def test_collective_matmul_cost_by_hand():
    topo = topology.slice("tpu-v5e", "16x16")
    peak = topo.chip.peak_flops_per_s("bf16")
    I, J, K, n = 4096, 8192, 16 * 2048, 16
    c = jc.collective_matmul_cost("allgather-matmul", topo, axis="X", dims=dict(I=I, J=J, K=K))
    block = 2 * (I / n) * J * (K / n) / peak
    send = (I / n) * J * 2 / 45e9
    assert c.block_compute_seconds == pytest.approx(block)
    assert c.round_comm_seconds == pytest.approx(send)
    assert c.arrivals == (1,) * 16
    assert c.overlapped_seconds == pytest.approx(15 * max(block, send) + block)
    assert c.sequential_seconds == pytest.approx(15 * send + 16 * block)
    assert c.overlapped_seconds <= c.sequential_seconds
    # the hiding width: K/N at which one block's matmul equals its send
    w = jc.hiding_width(topo, axis="X")
    assert w == pytest.approx(2 * peak / (2 * 45e9))
    at = jc.collective_matmul_cost("allgather-matmul", topo, axis="X", dims=dict(I=I, J=J, K=int(w * n)))
    assert at.block_compute_seconds == pytest.approx(at.round_comm_seconds, rel=1e-3)
    both = jc.hiding_width(topo, axis="X", bidirectional=True)
    assert both == pytest.approx(w / 2)
    rs = jc.collective_matmul_cost("matmul-reducescatter", topo, axis="X", dims=dict(I=I, J=J, K=K),
                                   bidirectional=True)
    assert sum(rs.arrivals) == n and rs.arrivals[0] == 2
    assert rs.round_comm_seconds == pytest.approx((I / n) * K * 2 / 45e9)


def test_bad_inputs_are_refused_with_a_reason():
    with pytest.raises(Error, match="divisible"):
        jc.hlo("all-gather", mesh_shape={"X": 8}, axis="X", shape=(12, 2))
    with pytest.raises(Error, match="not in"):
        jc.hlo("all-gather", mesh_shape={"X": 8}, axis="Z", shape=(16, 2))
    with pytest.raises(Error, match="impl='xla'"):
        jc.build("all-gather", mesh_of({"X": 8}), axis="X", impl="xla")
    with pytest.raises(Error):
        jc.ring_steps("all-to-all", 4)
    with pytest.raises(Error, match="I, J and K"):
        jc.collective_matmul_cost("allgather-matmul", topology.slice("tpu-v5e", "16x16"), axis="X", dims={"I": 8})
    with pytest.raises(Error, match="ICI axis or an NVLink domain"):
        jc.ring_cost("all-gather", topology.gpu_cluster("h100", nodes=2), axis="Y", bytes_=V)
    assert "block 3" in repr(jc.ring_steps("all-gather", 4, bidirectional=False)[0][0].__class__(1, 3, 0, 3, 1))


H100_NVLINK_ONE_WAY = 450e9  # B/s a GPU sends over NVLink (900 GB/s both directions), the spec table's
H100_BF16 = 990e12           # FLOP/s dense bf16 peak in the spec table


def test_a_ppermute_ring_runs_on_an_nvlink_domain_without_a_torus():
    # Hand derivation: 8 GPUs behind NVSwitches; any GPU reaches any other in one crossing, so the
    # ring closes (one hop per step), but a GPU's sends share its 450 GB/s. One way: 7 steps of a
    # V/8 block. Both ways: 4 steps, yet still 7 blocks through the same 450 GB/s.
    node = topology.gpu_node("h100")
    assert node.axis("X").one_way_bytes_per_s == H100_NVLINK_ONE_WAY
    one = jc.ring_cost("all-gather", node, axis="X", bytes_=V, bidirectional=False)
    both = jc.ring_cost("all-gather", node, axis="X", bytes_=V, bidirectional=True)
    assert (one.steps, both.steps) == (7, 4)
    assert one.bandwidth_seconds == pytest.approx(7 * (V / 8) / H100_NVLINK_ONE_WAY)
    assert both.bandwidth_seconds == pytest.approx(one.bandwidth_seconds)
    assert both.hops_per_step == 1 and both.wraparound
    assert both.latency_seconds == pytest.approx(4 * node.hop_latency_seconds)


def test_hiding_width_on_nvlink_gains_nothing_from_both_ways():
    # A block's matmul 2 (I/N) J (K/N) / C against its send (I/N) J x 2 bytes / W_1: K/N >= C / W_1,
    # and two sends per round share W_1, so both ways needs the same width.
    node = topology.gpu_node("h100")
    assert jc.hiding_width(node, axis="X") == pytest.approx(H100_BF16 / H100_NVLINK_ONE_WAY)
    assert jc.hiding_width(node, axis="X", bidirectional=True) == pytest.approx(H100_BF16 / H100_NVLINK_ONE_WAY)
