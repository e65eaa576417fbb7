"""Collective costs pinned by hand, written to kill mutants `make mutate` found surviving.

Bytes each device sends, from the ring/all-to-all arguments of Chapter 3, for V = 1 GB over N
devices: AllGather and ReduceScatter V (N-1)/N, AllReduce twice that, AllToAll V (N-1)/N^2,
a permute V/N. On an NVLink switch (H100, W = 450 GB/s one way) a ring AllGather takes N-1
hops and V (N-1)/N / W seconds; an AllToAll or permute goes through the switch in one hop.
The default hop latency is 1 us.
"""
import pytest

from scalebook import collectives as col, topology

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
    assert c.bandwidth_seconds == pytest.approx(sent / 450e9, rel=1e-9)
    assert c.latency_seconds == pytest.approx(hops * 1e-6, rel=1e-9)
    assert c.seconds == pytest.approx(max(c.bandwidth_seconds, c.latency_seconds), rel=1e-9)


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
