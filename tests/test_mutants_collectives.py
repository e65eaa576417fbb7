"""Collective costs pinned by hand, written to kill mutants `make mutate` found surviving.

Bytes each device sends, from the ring/all-to-all arguments of Chapter 3, for V = 1 GB over N
devices: AllGather and ReduceScatter V (N-1)/N, AllReduce twice that, AllToAll V (N-1)/N^2,
a permute V/N. On an NVLink switch (H100, W = 450 GB/s one way) a ring AllGather takes N-1
hops and V (N-1)/N / W seconds; an AllToAll or permute goes through the switch in one hop.
The default hop latency is 1 us.
"""
import pytest

from scalebook import Error, collectives as col, topology

V = 1e9
TPU = topology.slice("tpu-v5e", "4x4")  # axis X: N = 4
GPU = topology.gpu_node("h100")  # axis X: N = 8, switched


@pytest.mark.parametrize("kind, sent", [
    ("all-gather", 0.75e9), ("reduce-scatter", 0.75e9), ("all-reduce", 1.5e9),
    ("all-to-all", 0.1875e9), ("collective-permute", 0.25e9),
])
def test_bytes_each_device_sends_on_a_ring_of_four(kind, sent):
    c = col.cost(kind, TPU, axes="X", bytes_=V)
    assert (c.kind, c.axes, c.group_size, c.array_bytes) == (kind, ("X",), 4, V)
    assert c.bytes_per_device == pytest.approx(sent, rel=1e-12)


@pytest.mark.parametrize("kind, sent, hops", [
    ("all-gather", 0.875e9, 7), ("reduce-scatter", 0.875e9, 7), ("all-reduce", 1.75e9, 14),
    ("all-to-all", 0.109375e9, 1), ("collective-permute", 0.125e9, 1),
])
def test_an_nvlink_switch_moves_each_devices_bytes_at_w(kind, sent, hops):
    c = col.cost(kind, GPU, axes="X", bytes_=V)
    assert c.group_size == 8 and c.hops == hops
    assert c.bytes_per_device == pytest.approx(sent, rel=1e-12)
    assert c.bytes_per_link == pytest.approx(sent, rel=1e-12)
    # NCCL 2.30.7: NVLink moves 20.6 of 25 GB/s per link and takes 3.4 us per ring step
    assert c.bandwidth_seconds == pytest.approx(sent / (450e9 * 0.824), rel=1e-9)
    assert c.latency_seconds == pytest.approx(hops * 3.4e-6, rel=1e-9)
    assert c.seconds == pytest.approx(c.bandwidth_seconds + c.latency_seconds, rel=1e-9)
    assert c.max_convention_seconds == pytest.approx(max(c.bandwidth_seconds, c.latency_seconds), rel=1e-9)


def test_on_a_tpu_ring_allreduce_is_two_allgathers_and_reducescatter_one():
    ag, rs, ar = (col.cost(k, TPU, axes="X", bytes_=V) for k in ("all-gather", "reduce-scatter", "all-reduce"))
    assert (ag.hops, rs.hops, ar.hops) == (3, 3, 6)  # N - 1 steps each way round a ring of 4
    assert rs.bandwidth_seconds == pytest.approx(ag.bandwidth_seconds)
    assert ar.bandwidth_seconds == pytest.approx(2 * ag.bandwidth_seconds)
    assert ar.bytes_per_link == pytest.approx(2 * ag.bytes_per_link)


def test_gathering_over_two_axes_is_one_group_of_sixteen():
    c = col.cost("all-gather", TPU, axes=["X", "Y"], bytes_=V)
    assert c.group_size == 16 and c.bytes_per_device == pytest.approx(V * 15 / 16)
    assert c.hops == 6  # 3 hops along X, then 3 along Y


def test_nothing_to_move_costs_nothing():
    c = col.cost("all-gather", TPU, axes="X", bytes_=0)
    assert (c.kind, c.axes, c.group_size, c.array_bytes) == ("all-gather", ("X",), 4, 0)
    assert (c.bytes_per_device, c.bytes_per_link, c.hops, c.seconds) == (0, 0, 0, 0)
    assert c.bandwidth_seconds == 0 and c.latency_seconds == 0


# A TPU v5e link moves 45 GB/s each way. On a 16-chip axis with wraparound (a ring) a collective
# uses both directions, W = 90 GB/s, and the farthest chip is 16 / 2 = 8 hops away; on an open
# 4-chip axis (no wraparound) only 45 GB/s counts and the ends are 3 hops apart. Each device
# receives the (N-1)/N of V it lacks (Chapter 3 keeps that factor exactly).
TORUS = topology.slice("tpu-v5e", "16x16")


@pytest.mark.parametrize("kind, seconds, hops", [
    ("all-gather", 1e9 * 15 / 16 / 90e9, 8), ("reduce-scatter", 1e9 * 15 / 16 / 90e9, 8),
    ("all-reduce", 2e9 * 15 / 16 / 90e9, 16),
    ("all-to-all", 1e9 / (4 * 90e9), 8),  # V N_axis / (4 N W): a quarter of V crosses the bisection
    ("collective-permute", 1e9 / (16 * 45e9), 1),  # V/N to the next chip, one way, one hop
])
def test_one_torus_axis_of_sixteen(kind, seconds, hops):
    c = col.cost(kind, TORUS, axes="X", bytes_=V)
    assert c.bandwidth_seconds == pytest.approx(seconds, rel=1e-9) and c.hops == hops
    assert c.bytes_per_link == pytest.approx(seconds * 45e9, rel=1e-9)  # through one link, one way


def test_an_all_to_all_over_a_16x16_torus_is_limited_by_one_axis_bisection():
    c = col.cost("all-to-all", TORUS, axes=["X", "Y"], bytes_=V)
    assert c.bandwidth_seconds == pytest.approx(1e9 * 16 / (4 * 256 * 90e9), rel=1e-9)
    assert c.hops == 16


def test_an_open_axis_of_four_counts_one_direction():
    c = col.cost("all-gather", TPU, axes="X", bytes_=V)
    assert c.bandwidth_seconds == pytest.approx(1e9 * 3 / 4 / 45e9, rel=1e-9) and c.hops == 3
    assert c.regime == "bandwidth" and c.latency_seconds == pytest.approx(3e-6)


def test_the_notebook_table_shows_what_the_reader_reads():
    html = col.cost("all-gather", TPU, axes="X", bytes_=V)._repr_html_()
    rows = [("collective", "AllGather"), ("axes", "X"), ("N", "4"), ("V (array)", "1 GB"),
            ("sent per device", "750 MB"), ("per link", "750 MB"), ("bandwidth time", "16.7 ms"),
            ("latency time", "3 µs (3 steps)"), ("time (latency + bandwidth)", "<b>16.7 ms</b> (bandwidth-bound)"),
            ("max of the two (Austin et al.)", "16.7 ms")]
    assert html == "<table>" + "".join(f"<tr><th style='text-align:left'>{k}</th><td>{v}</td></tr>"
                                       for k, v in rows) + "</table>"


def test_a_permute_takes_one_hop_only_around_a_single_ring():
    assert col.cost("collective-permute", TORUS, axes="X", bytes_=V).hops == 1
    assert col.cost("collective-permute", TORUS, axes=["X", "Y"], bytes_=V).hops == 16  # 8 + 8
    assert col.cost("collective-permute", TPU, axes="X", bytes_=V).hops == 3  # open: the wrap crosses 3 links


def test_two_gpus_on_nvlink_are_one_hop_apart():
    assert col.cost("all-gather", topology.gpu_node("h100", "2"), axes="X", bytes_=V).hops == 1


def test_a_non_string_kind_or_axis_is_refused_with_the_valid_names():
    with pytest.raises(Error, match="must be a string; valid: all-gather, reduce-scatter"):
        col.cost(3, TPU, axes="X", bytes_=V)
    with pytest.raises(Error, match="list of names.*valid: X, Y"):
        col.cost("all-gather", TPU, axes=[1], bytes_=V)
    with pytest.raises(Error, match="AllReduce, AllToAll, ppermute"):
        col.cost("scatter", TPU, axes="X", bytes_=V)


def test_labels_and_aliases_name_the_same_collective():
    assert [col.label(k) for k in col.KINDS] == ["AllGather", "ReduceScatter", "AllReduce", "AllToAll", "Permute"]
    assert col.canonical_kind(" All_Gather ") == "all-gather" and col.canonical_kind("ppermute") == "collective-permute"


# An H100 cluster of 4 nodes: X = 8 GPUs on NVLink (450 GB/s), Y = 4 nodes on InfiniBand
# (50 GB/s per GPU). A collective over both runs one stage per network; the IB stage carries
# V / 8 per GPU (the node's 8 GPUs share the array), and the slower stage sets the time.
# AllGather and ReduceScatter run NCCL's flat ring over all 32 ranks: N - 1 = 31 steps, of
# which nodes - 1 = 3 cross InfiniBand and 28 stay on NVLink (NCCL 2.30.7 tuning.cc).
CLUSTER = topology.gpu_cluster("h100", nodes=4)


@pytest.mark.parametrize("kind, seconds, w, hops", [
    # NVLink at NCCL's usable 0.824 of 450 GB/s: stage 2.36 ms > IB 0.94 ms
    ("all-gather", 1e9 * 7 / (8 * 450e9 * 0.824), 450e9 * 0.824, 31),
    ("reduce-scatter", 1e9 * 7 / (8 * 450e9 * 0.824), 450e9 * 0.824, 31),
    ("all-reduce", 2e9 * 7 / (8 * 450e9 * 0.824), 450e9 * 0.824, 14 + 6),
    ("all-to-all", (1e9 / 8) * 3 / (16 * 50e9), 50e9, 1 + 1),  # IB stage 0.47 ms > NVLink 0.24 ms
    ("collective-permute", (1e9 / 8) / (4 * 50e9), 50e9, 1 + 1),
])
def test_a_cluster_collective_is_as_slow_as_its_slowest_network(kind, seconds, w, hops):
    c = col.cost(kind, CLUSTER, axes=["X", "Y"], bytes_=V)
    assert c.group_size == 32 and c.hops == hops and isinstance(c.hops, int)
    assert c.seconds == pytest.approx(c.bandwidth_seconds + c.latency_seconds, rel=1e-12)
    assert c.bandwidth_seconds == pytest.approx(seconds, rel=1e-9)
    assert c.bytes_per_link == pytest.approx(seconds * w, rel=1e-9)


def test_hops_are_whole_numbers_on_a_torus():
    c = col.cost("all-gather", TORUS, axes="X", bytes_=V)
    assert type(c.hops) is int and f"of {c.hops} steps" in repr(c)


def test_an_axis_of_two_chips_still_costs_time():
    c = col.cost("all-gather", topology.slice("tpu-v5e", "2x4"), axes="X", bytes_=V)
    assert c.group_size == 2 and c.hops == 1
    assert c.bandwidth_seconds == pytest.approx(1e9 / 2 / 45e9, rel=1e-9)  # half of V crosses the one link


@pytest.mark.parametrize("fn", [col.all_gather, col.reduce_scatter, col.all_reduce, col.all_to_all, col.permute])
def test_the_named_collectives_pass_the_hop_latency_on(fn):
    c = fn(TPU, axes="X", bytes_=V, hop_latency_seconds=1e-3)
    assert c.latency_seconds == pytest.approx(c.hops * 1e-3)


def test_repr_reads_as_one_line_of_numbers():
    assert repr(col.cost("all-gather", TPU, axes=["X", "Y"], bytes_=V)) == (
        "CollectiveCost(AllGather over XY (N=16): V=1 GB, 938 MB sent per device, 10.4 ms "
        "(bandwidth; bandwidth 10.4 ms + latency 6 µs of 6 steps))")


def test_errors_list_what_is_valid():
    with pytest.raises(Error, match="valid: all-gather, reduce-scatter, all-reduce, all-to-all"):
        col.cost("broadcast", TPU, axes="X", bytes_=V)
    with pytest.raises(Error, match="valid: X, Y"):
        col.cost("all-gather", TPU, axes="Q", bytes_=V)
    with pytest.raises(Error, match="valid: X, Y"):
        col.cost("all-gather", TPU, axes=["X", "X"], bytes_=V)
    with pytest.raises(Error, match="Topology"):
        col.cost("all-gather", "tpu-v5e", axes="X", bytes_=V)


@pytest.mark.parametrize("topo, axes, seconds, hops", [
    # one H100 node as a "cluster": the InfiniBand axis of one node adds nothing
    # (NVLink at NCCL's usable 20.6 of 25 GB/s per link: 0.824 of 450 GB/s)
    (topology.gpu_cluster("h100", nodes=1), ["X", "Y"], 1e9 * 7 / (8 * 450e9 * 0.824), 7),
    # an axis of one chip adds neither bandwidth nor hops: a logical 4x1 mesh, one open ICI axis
    (topology.for_mesh("tpu-v5e", {"X": 4, "Y": 1}), ["X", "Y"], 1e9 * 3 / 4 / 45e9, 3),
    # four single-chip slices over DCN (3.125 GB/s per chip): V (N-1)/N / W, N - 1 hops
    (topology.multislice("tpu-v5e", "1x1", slices=4), ["X", "Y", "D"], 1e9 * 3 / (4 * 3.125e9), 3),
])
def test_axes_of_size_one_add_nothing(topo, axes, seconds, hops):
    c = col.cost("all-gather", topo, axes=axes, bytes_=V)
    assert c.bandwidth_seconds == pytest.approx(seconds, rel=1e-9) and c.hops == hops


def test_axes_may_have_long_names():
    topo = topology.slice("tpu-v5e", "4x4", names=["data", "model"])
    c = col.cost("all-gather", topo, axes="data", bytes_=V)
    assert c.axes == ("data",) and c.group_size == 4


def test_kind_names_may_be_written_with_spaces():
    assert col.canonical_kind("All Gather") == "all-gather" and col.canonical_kind("all to all") == "all-to-all"


def test_each_stage_pays_its_own_networks_step_latency():
    # AllGather over 4 H100 nodes, NCCL's flat ring: 28 NVLink steps of 3.4 us, 3 InfiniBand of 14 us
    c = col.cost("all-gather", CLUSTER, axes=["X", "Y"], bytes_=V)
    assert c.latency_seconds == pytest.approx(28 * 3.4e-6 + 3 * 14e-6, rel=1e-12)


def test_a_given_hop_latency_prices_every_step_alike():
    c = col.cost("all-gather", CLUSTER, axes=["X", "Y"], bytes_=V, hop_latency_seconds=1e-6)
    assert c.latency_seconds == pytest.approx(31e-6, rel=1e-12)  # the flat ring's N - 1 steps


def test_small_fsdp_gathers_across_nodes_are_latency_bound_and_take_nccls_ll_protocol():
    # 64 KB over 4 nodes x 8 GPUs. LL (NCCL 2.30.7: 0.6 us per NVLink step, 2.7 us per network step,
    # half the bandwidth): NVLink bytes 64e3 * 7/8 / (0.824 * 450e9) / 0.5 = 0.30 us (> InfiniBand
    # 64e3/8 * 3/4 / 50e9 / 0.5 = 0.24 us); the flat ring's 31 steps, 28 on NVLink and 3 across
    # nodes: 28 x 0.6 + 3 x 2.7 = 24.9 us. Simple would take 28 x 3.4 + 3 x 14 = 137.2 us of
    # latency, LL128 28 x 1.9 + 3 x 4.0 = 65.2 us.
    c = col.cost("all-gather", CLUSTER, axes=["X", "Y"], bytes_=64e3)
    assert (c.regime, c.protocol) == ("latency", "LL")
    assert c.seconds == pytest.approx(24.9e-6 + 64e3 * 7 / 8 / (0.824 * 450e9) / 0.5, rel=1e-9)


def test_a_mid_sized_allreduce_in_a_node_takes_ll128():
    # 8 MB AllReduce over 8 H100s, bytes term 8e6 * 2 * 7/8 / (0.824 * 450e9) = 37.8 us at full rate:
    # LL 14 x 0.6 + 37.8 / 0.5 = 83.9 us; LL128 14 x 1.9 + 37.8 / 0.92 = 67.6 us; Simple 14 x 3.4 + 37.8 = 85.4 us
    c = col.cost("all-reduce", GPU, axes="X", bytes_=8e6)
    bw = 8e6 * 2 * 7 / 8 / (0.824 * 450e9)
    assert c.protocol == "LL128"
    assert c.seconds == pytest.approx(14 * 1.9e-6 + bw / 0.92, rel=1e-9)


def test_a_large_allreduce_takes_simple_at_the_full_usable_rate():
    c = col.cost("all-reduce", GPU, axes="X", bytes_=V)  # 1 GB
    assert c.protocol == "Simple"
    assert c.seconds == pytest.approx(14 * 3.4e-6 + 1e9 * 2 * 7 / 8 / (0.824 * 450e9), rel=1e-9)


def test_a_tpu_collective_has_one_protocol():
    assert col.cost("all-gather", TPU, axes="X", bytes_=1e3).protocol == "Simple"
