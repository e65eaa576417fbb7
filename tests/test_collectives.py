"""scalebook.collectives: hand-worked cases (chapter 3) and properties."""
import math
import pytest
from hypothesis import assume, given, settings, strategies as st

from scalebook import Error, collectives as col, topology

V5E = topology.slice("tpu-v5e", "16x16")
W = 9e10  # v5e bidirectional ICI per axis
US = 1e-6  # one ICI hop (Austin et al. 2025, part 3)
NVL_EFF = 20.6 / 25  # NCCL 2.30.7 topo.h: usable GB/s per NVLink 4 link over its 25 GB/s


def test_allgather_over_one_wrapped_axis_is_v_n_minus_1_over_n_bidi_ici():
    c = col.all_gather(V5E, axes="X", bytes_=1e9)
    assert c.bandwidth_seconds == pytest.approx(1e9 * 15 / 16 / W)
    assert c.seconds == pytest.approx(8 * US + 1e9 * 15 / 16 / W)  # 8 hops of 1 us, then the bytes
    assert c.regime == "bandwidth"


def test_allgather_time_depends_on_axis_size_only_through_n_minus_1_over_n():
    t8 = col.all_gather(topology.slice("tpu-v5p", "4x4x8"), axes="Z", bytes_=1e10)
    t4 = col.all_gather(topology.slice("tpu-v5p", "4x4x8"), axes="X", bytes_=1e10)
    assert t8.bandwidth_seconds / t4.bandwidth_seconds == pytest.approx((7 / 8) / (3 / 4))


def test_allgather_over_two_axes_takes_half_the_time():
    one = col.all_gather(V5E, axes="X", bytes_=1e9)
    two = col.all_gather(V5E, axes=["X", "Y"], bytes_=1e9)
    # each chip takes in 255/256 of V through the links of both axes: 2 W
    assert two.bandwidth_seconds == pytest.approx(1e9 * 255 / 256 / (2 * W))


def test_axis_without_wraparound_is_twice_as_slow():
    t = topology.slice("tpu-v5e", "8x16")
    assert col.all_gather(t, axes="X", bytes_=1e9).bandwidth_seconds == pytest.approx(2e9 * 7 / 8 / W)


def test_allreduce_is_two_allgathers():
    # twice the bytes and twice the steps (a ReduceScatter then an AllGather, 8 hops each)
    assert col.all_reduce(V5E, axes="X", bytes_=1e9).seconds == pytest.approx(16 * US + 2e9 * 15 / 16 / W)


def test_reduce_scatter_costs_an_allgather():
    assert col.reduce_scatter(V5E, axes="Y", bytes_=3e8).seconds == col.all_gather(V5E, axes="Y", bytes_=3e8).seconds


def test_alltoall_on_a_bidirectional_ring_is_a_quarter_of_an_allgather():
    assert col.all_to_all(V5E, axes="X", bytes_=1e9).bandwidth_seconds == pytest.approx(1e9 / (4 * W))


def test_permute_sends_one_shard_over_one_link_one_way():
    c = col.permute(V5E, axes="X", bytes_=16e6)
    assert c.bandwidth_seconds == pytest.approx(1e6 / 4.5e10)
    assert c.hops == 1


def test_small_allgather_is_latency_bound_at_one_us_per_hop():
    c = col.all_gather(V5E, axes="X", bytes_=1e3)
    assert c.hops == 8  # 16 chips, both directions round the ring
    assert c.seconds == pytest.approx(8e-6 + 1e3 * 15 / 16 / W)  # latency plus 10 ns of bytes
    assert c.max_convention_seconds == pytest.approx(8e-6)  # Austin et al. keep only the larger term
    assert c.regime == "latency"


def test_hop_latency_can_be_overridden():
    assert col.all_gather(V5E, axes="X", bytes_=1.0, hop_latency_seconds=2e-6).seconds == pytest.approx(16e-6)


def test_bytes_per_device_of_an_allgather_is_v_times_n_minus_1_over_n():
    assert col.all_gather(V5E, axes="X", bytes_=16e6).bytes_per_device == pytest.approx(15e6)


def test_gpu_allgather_in_a_node_is_v_n_minus_1_over_n_egress():
    c = col.all_gather(topology.gpu_node("h100"), axes="X", bytes_=8e9)
    assert c.bandwidth_seconds == pytest.approx(8e9 * 7 / 8 / (450e9 * NVL_EFF))


def test_gpu_alltoall_in_a_node_is_v_n_minus_1_over_n_squared_egress():
    c = col.all_to_all(topology.gpu_node("h100"), axes="X", bytes_=8e9)
    assert c.bandwidth_seconds == pytest.approx(8e9 * 7 / 64 / (450e9 * NVL_EFF))


def test_gpu_allgather_across_nodes_runs_at_node_egress():
    c = col.all_gather(topology.gpu_cluster("h100", nodes=32), axes=["X", "Y"], bytes_=4e9)
    assert c.bandwidth_seconds == pytest.approx(4e9 * 31 / 32 / 400e9)  # slower than NVLink's 7/8 V / 450 GB/s


def test_gpu_allgather_across_nodes_is_one_flat_nccl_ring_of_n_minus_1_steps():
    # NCCL 2.30.7 tuning.cc, Ring, Simple: base 8.4 us (not modelled) + (nsteps - nInterSteps) x
    # NVLink 3.4 us + nInterSteps x network 14 us, nsteps = nRanks - 1 = 255, nInterSteps =
    # nNodes - 1 = 31: 224 NVLink steps and 31 InfiniBand steps for 32 nodes of 8 GPUs.
    c = col.all_gather(topology.gpu_cluster("h100", nodes=32), axes=["X", "Y"], bytes_=4e9)
    assert c.hops == 255
    assert c.protocol == "Simple"
    assert c.latency_seconds == pytest.approx(224 * 3.4e-6 + 31 * 14e-6)


def test_gpu_reduce_scatter_across_nodes_counts_the_same_ring_steps():
    c = col.reduce_scatter(topology.gpu_cluster("a100", nodes=4), axes=["X", "Y"], bytes_=4e9)
    assert c.hops == 4 * 8 - 1
    assert c.latency_seconds == pytest.approx(4 * 7 * 3.4e-6 + 3 * 14e-6)


def test_gpu_allreduce_across_nodes_keeps_the_hierarchical_step_count():
    c = col.all_reduce(topology.gpu_cluster("h100", nodes=32), axes=["X", "Y"], bytes_=4e9)
    assert c.hops == 2 * 7 + 2 * 31


def test_dcn_allreduce_across_slices_uses_each_chips_dcn_share():
    t = topology.multislice("tpu-v5p", "4x4x4", slices=2)
    c = col.all_reduce(t, axes="D", bytes_=1e9)
    assert c.bandwidth_seconds == pytest.approx(2 * 1e9 * 0.5 / 6.25e9)


def test_collective_over_an_axis_of_size_1_costs_nothing():
    t = topology.slice("tpu-v5p", "2x2x1")
    c = col.all_reduce(t, axes="Z", bytes_=1e9)
    assert (c.seconds, c.bytes_per_device, c.group_size) == (0.0, 0.0, 1)


def test_kind_accepts_book_and_hlo_names():
    assert col.canonical_kind("AllGather") == col.canonical_kind("all_gather") == "all-gather"
    assert col.canonical_kind("ppermute") == "collective-permute"


def test_repr_names_the_collective_and_its_time():
    assert "AllGather over X" in repr(col.all_gather(V5E, axes="X", bytes_=1e9))


@pytest.mark.parametrize("kwargs, message", [
    (dict(kind="allgatherz", axes="X", bytes_=1.0), "allgatherz"),
    (dict(kind="all-gather", axes="Q", bytes_=1.0), "'Q'"),
    (dict(kind="all-gather", axes=["X", "X"], bytes_=1.0), "repeat"),
    (dict(kind="all-gather", axes="X", bytes_=-1.0), "bytes_"),
    (dict(kind="all-gather", axes=[], bytes_=1.0), "at least one"),
])
def test_bad_input_raises_an_error_naming_it(kwargs, message):
    with pytest.raises(Error, match=message):
        kwargs = dict(kwargs)  # the parametrized dict is shared between runs
        col.cost(kwargs.pop("kind"), V5E, **kwargs)


TOPOLOGIES = [topology.slice("tpu-v5e", "16x16"), topology.slice("tpu-v5e", "8x16"),
              topology.slice("tpu-v5p", "4x4x16"), topology.multislice("tpu-v5p", "4x4x4", slices=4),
              topology.gpu_node("h100", "4x2"), topology.gpu_cluster("h100", nodes=64)]
topologies = st.sampled_from(TOPOLOGIES)
kinds = st.sampled_from(col.KINDS)
sizes = st.floats(min_value=1.0, max_value=1e12)


@st.composite
def axis_sets(draw, t):
    return draw(st.lists(st.sampled_from(t.names), min_size=1, unique=True))


@given(st.data(), kinds, sizes, sizes)
def test_time_never_falls_as_bytes_grow(data, kind, a, b):
    t = data.draw(topologies)
    axes = data.draw(axis_sets(t))
    lo, hi = sorted((a, b))
    assert col.cost(kind, t, axes=axes, bytes_=lo).seconds <= col.cost(kind, t, axes=axes, bytes_=hi).seconds


@given(st.data(), sizes)
def test_allreduce_takes_twice_an_allgather(data, v):
    # except on GPU groups across nodes, where the AllGather is NCCL's flat ring (more steps)
    t = data.draw(topologies)
    axes = data.draw(axis_sets(t))
    nets = {t.axis(a).network for a in axes if t.axis(a).size > 1}
    assume(not {"nvlink", "dcn"} <= nets)
    assert col.all_reduce(t, axes=axes, bytes_=v).seconds == pytest.approx(2 * col.all_gather(t, axes=axes, bytes_=v).seconds)


@given(st.sampled_from(["tpu-v5p", "tpu-v4p", "tpu-7x"]), sizes)
def test_gathering_over_two_axes_beats_one_axis_of_the_same_size(name, v):
    t = topology.slice(name, "4x4x16")  # full cubes: every axis wraps around
    two = col.all_gather(t, axes=["X", "Y"], bytes_=v)
    one = col.all_gather(t, axes="Z", bytes_=v)
    assert two.seconds < one.seconds


@settings(max_examples=50)
@given(st.text(max_size=12), st.one_of(st.text(max_size=3), st.lists(st.text(max_size=2), max_size=3)),
       st.one_of(st.floats(allow_nan=True), st.integers(), st.text(max_size=3)))
def test_bad_input_always_raises_scalebook_error(kind, axes, bytes_):
    try:
        r = col.cost(kind, V5E, axes=axes, bytes_=bytes_)
    except Error:
        return
    assert math.isfinite(r.seconds) and r.seconds >= 0


def test_cli_prints_collective_time_as_json(capsys):
    import json

    from scalebook import cli

    assert cli.main(["collective", "AllGather", "--chip", "tpu-v5e", "--topology", "16x16", "--axes", "X",
                     "--bytes", "1e9", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["bandwidth_seconds"] == pytest.approx(1e9 * 15 / 16 / W)


def test_cli_bad_topology_exits_2_with_one_line(capsys):
    from scalebook import cli

    assert cli.main(["collective", "AllGather", "--chip", "tpu-v5e", "--topology", "16xq", "--axes", "X",
                     "--bytes", "1e9"]) == 2
    assert capsys.readouterr().err.count("\n") == 1


# --- point to point, gathering onto one chip, rings, idle axes, sparse and multi-axis AllToAll


def test_point_to_point_to_the_centre_of_a_16x16_torus_crosses_16_hops():
    t = col.point_to_point(V5E, (0, 0), (8, 8), bytes_=1e3)
    assert t.hops == 16  # 8 along each axis, either way round
    assert t.seconds == pytest.approx(16e-6 + 1e3 / 4.5e10)  # 16 hops of 1 us, then 22 ns of bytes
    assert t.max_convention_seconds == pytest.approx(16e-6)


def test_point_to_point_of_a_large_message_runs_at_one_links_one_way_bandwidth():
    t = col.point_to_point(V5E, (0, 0), (0, 1), bytes_=9e9)
    assert (t.hops, t.seconds) == (1, pytest.approx(US + 9e9 / 4.5e10))


def test_gathering_onto_one_chip_is_no_faster_than_an_allgather():
    # mid-ring receiver: two neighbours at 45 GB/s each take in 15/16 of 1.6 GB
    g = col.gather_to_one(V5E, axes="X", bytes_=1.6e9)
    assert g.bandwidth_seconds == pytest.approx(1.5e9 / 9e10)
    assert g.bandwidth_seconds == pytest.approx(col.all_gather(V5E, axes="X", bytes_=1.6e9).bandwidth_seconds)
    assert g.hops == 8


def test_gathering_onto_one_gpu_runs_at_its_nvlink_ingress():
    g = col.gather_to_one(topology.gpu_node("h100"), axes="X", bytes_=8e9)
    assert g.bandwidth_seconds == pytest.approx(7e9 / (450e9 * NVL_EFF))


def test_unidirectional_ring_is_twice_as_slow_as_bidirectional():
    one = col.ring("all-gather", size=8, bytes_=8e9, one_way_bytes_per_s=1e9, bidirectional=False)
    both = col.ring("all-gather", size=8, bytes_=8e9, one_way_bytes_per_s=1e9)
    assert (one.steps, one.bandwidth_seconds) == (7, pytest.approx(7.0))  # 7 steps of 1 GB at 1 GB/s
    assert (both.steps, both.bandwidth_seconds) == (4, pytest.approx(3.5))  # half of each shard each way


def test_bidirectional_ring_matches_the_collective_on_a_wrapped_axis():
    r = col.ring("all-reduce", size=16, bytes_=1e9, one_way_bytes_per_s=4.5e10)
    assert r.bandwidth_seconds == pytest.approx(col.all_reduce(V5E, axes="X", bytes_=1e9).bandwidth_seconds)


def test_idle_axis_nearly_halves_an_allgather():
    s = col.with_idle_axes("all-gather", V5E, axes="X", idle="Y", bytes_=1e9)
    # one gather over both axes' links: 8 + 8 hops, then the bytes at 2 W
    assert s.seconds == pytest.approx(16 * US + 1e9 * 255 / 256 / (2 * W))
    assert s.plain.seconds == pytest.approx(8 * US + 1e9 * 15 / 16 / W)


def test_idle_axis_allreduce_scatters_a_sixteenth_then_gathers_over_both_axes():
    s = col.with_idle_axes("all-reduce", V5E, axes="X", idle="Y", bytes_=1.6e9)
    rs = 1e8 * 15 / 16 / W  # each Y copy reduces its own 1/16 slice over X
    ag = 1.6e9 * 255 / 256 / (2 * W)
    # steps: the ReduceScatter's 8 hops, the AllGather's 8 + 8
    assert s.seconds == pytest.approx(rs + ag + 24 * US)


def test_idle_axes_must_differ_from_the_busy_ones():
    with pytest.raises(Error, match="both busy and idle"):
        col.with_idle_axes("all-gather", V5E, axes="X", idle="X", bytes_=1.0)


def test_sparse_alltoall_to_3_of_15_destinations_costs_a_fifth_of_the_dense_one():
    dense = col.all_to_all(V5E, axes="X", bytes_=1e9)
    sparse = col.sparse_all_to_all(V5E, axes="X", bytes_=1e9, destinations=3)
    assert sparse.bandwidth_seconds == pytest.approx(dense.bandwidth_seconds / 5)
    assert sparse.bytes_per_device == pytest.approx(3 * 1e9 / 256)


def test_sparse_alltoall_refuses_more_destinations_than_chips():
    with pytest.raises(Error, match="N - 1 = 15"):
        col.sparse_all_to_all(V5E, axes="X", bytes_=1e9, destinations=16)


def test_alltoall_over_two_axes_of_a_torus_is_bounded_by_the_bisection():
    # the cut across X severs 16 X-rings, each crossing it twice at 45 GB/s each way; V/4 crosses each way
    c = col.all_to_all(V5E, axes=["X", "Y"], bytes_=1e9)
    assert c.bandwidth_seconds == pytest.approx(1e9 / 4 / (16 * 2 * 4.5e10))


def test_alltoall_on_an_odd_ring_counts_the_pairs_across_the_cut():
    t = topology.for_mesh("tpu-v5p", {"X": 4, "Y": 4, "Z": 3})  # a logical mesh: lines, no wraparound
    c = col.all_to_all(t, axes="Z", bytes_=9e9)
    # 1 x 2 of 9 pieces of V/9 cross the one link between chip 0 and chips 1, 2 (and 2 x 1 back)
    assert c.bandwidth_seconds == pytest.approx(9e9 * 2 / 9 / t.axis("Z").one_way_bytes_per_s)


@pytest.mark.parametrize("kwargs, message", [
    (dict(kind="all-to-all", size=8), "all-gather, reduce-scatter and all-reduce"),
    (dict(kind="all-gather", size=0), "positive integer"),
    (dict(kind="all-gather", size=8, one_way_bytes_per_s=0.0), "one_way_bytes_per_s"),
])
def test_ring_refuses_what_it_cannot_price(kwargs, message):
    args = dict(bytes_=1e9, one_way_bytes_per_s=1e9)
    args.update(kwargs)
    with pytest.raises(Error, match=message):
        col.ring(args.pop("kind"), **args)


def test_gather_to_one_refuses_a_group_spanning_two_networks():
    t = topology.multislice("tpu-v5p", "4x4x4", slices=2)
    with pytest.raises(Error, match="one network"):
        col.gather_to_one(t, axes=["X", "D"], bytes_=1e9)


def test_point_to_point_between_the_same_chip_is_free():
    t = col.point_to_point(V5E, (3, 4), (3, 4), bytes_=1e9)
    assert (t.hops, t.seconds) == (0, 0.0)


@settings(max_examples=60, deadline=None)
@given(v=st.one_of(st.just(0.0), st.floats(min_value=1e-30, max_value=1e12)), kind=st.sampled_from(col.KINDS))
def test_the_additive_time_is_between_the_larger_term_and_twice_it(v, kind):
    # T = latency + bandwidth, so max(l, b) <= T <= 2 max(l, b): Austin et al.'s rule is off by at most 2
    c = col.cost(kind, topology.gpu_cluster("h100", nodes=4), axes=["X", "Y"], bytes_=v)
    assert c.max_convention_seconds <= c.seconds <= 2 * c.max_convention_seconds + 1e-18
