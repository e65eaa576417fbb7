"""scalebook.collectives: hand-worked cases (chapter 3) and properties."""
import math
import pytest
from hypothesis import given, settings, strategies as st

from scalebook import Error, collectives as col, topology

V5E = topology.slice("tpu-v5e", "16x16")
W = 9e10  # v5e bidirectional ICI per axis


def test_allgather_over_one_wrapped_axis_is_v_over_bidi_ici():
    c = col.all_gather(V5E, axes="X", bytes_=1e9)
    assert c.bandwidth_seconds == pytest.approx(1e9 / W)
    assert c.seconds == c.bandwidth_seconds
    assert c.regime == "bandwidth"


def test_allgather_time_does_not_depend_on_axis_size_in_bandwidth_regime():
    t8 = col.all_gather(topology.slice("tpu-v5p", "4x4x8"), axes="Z", bytes_=1e10)
    t4 = col.all_gather(topology.slice("tpu-v5p", "4x4x8"), axes="X", bytes_=1e10)
    assert t8.bandwidth_seconds == t4.bandwidth_seconds


def test_allgather_over_two_axes_takes_half_the_time():
    one = col.all_gather(V5E, axes="X", bytes_=1e9)
    two = col.all_gather(V5E, axes=["X", "Y"], bytes_=1e9)
    assert two.bandwidth_seconds == pytest.approx(one.bandwidth_seconds / 2)


def test_axis_without_wraparound_is_twice_as_slow():
    t = topology.slice("tpu-v5e", "8x16")
    assert col.all_gather(t, axes="X", bytes_=1e9).bandwidth_seconds == pytest.approx(2e9 / W)


def test_allreduce_is_two_allgathers():
    assert col.all_reduce(V5E, axes="X", bytes_=1e9).seconds == pytest.approx(2e9 / W)


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
    assert c.seconds == pytest.approx(8e-6)
    assert c.regime == "latency"


def test_hop_latency_can_be_overridden():
    assert col.all_gather(V5E, axes="X", bytes_=1.0, hop_latency_seconds=2e-6).seconds == pytest.approx(16e-6)


def test_bytes_per_device_of_an_allgather_is_v_times_n_minus_1_over_n():
    assert col.all_gather(V5E, axes="X", bytes_=16e6).bytes_per_device == pytest.approx(15e6)


def test_gpu_allgather_in_a_node_is_v_n_minus_1_over_n_egress():
    c = col.all_gather(topology.gpu_node("h100"), axes="X", bytes_=8e9)
    assert c.bandwidth_seconds == pytest.approx(8e9 * 7 / 8 / 450e9)


def test_gpu_alltoall_in_a_node_is_v_n_minus_1_over_n_squared_egress():
    c = col.all_to_all(topology.gpu_node("h100"), axes="X", bytes_=8e9)
    assert c.bandwidth_seconds == pytest.approx(8e9 * 7 / 64 / 450e9)


def test_gpu_allgather_across_nodes_runs_at_node_egress():
    c = col.all_gather(topology.gpu_cluster("h100", nodes=32), axes=["X", "Y"], bytes_=4e9)
    assert c.bandwidth_seconds == pytest.approx(4e9 * 31 / 32 / 400e9)  # slower than NVLink's 7/8 V / 450 GB/s


def test_dcn_allreduce_across_slices_uses_each_chips_dcn_share():
    t = topology.multislice("tpu-v5p", "4x4x4", slices=2)
    c = col.all_reduce(t, axes="D", bytes_=1e9)
    assert c.bandwidth_seconds == pytest.approx(2 * 1e9 * 0.5 / 6.25e9)


def test_collective_over_an_axis_of_size_1_costs_nothing():
    t = topology.slice("tpu-v5p", "1x4x4")
    c = col.all_reduce(t, axes="X", bytes_=1e9)
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
    t = data.draw(topologies)
    axes = data.draw(axis_sets(t))
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
    assert json.loads(capsys.readouterr().out)["bandwidth_seconds"] == pytest.approx(1e9 / W)


def test_cli_bad_topology_exits_2_with_one_line(capsys):
    from scalebook import cli

    assert cli.main(["collective", "AllGather", "--chip", "tpu-v5e", "--topology", "16xq", "--axes", "X",
                     "--bytes", "1e9"]) == 2
    assert capsys.readouterr().err.count("\n") == 1
