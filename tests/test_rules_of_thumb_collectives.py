"""The original's large-N collective rules and the exact forms beside them, each pinned by hand."""
import math

import pytest

from scalebook import Error, collectives, topology
from scalebook.rules_of_thumb import collectives as rc

V = 1e9
W1 = 45e9  # one ICI link one way (v5e)


@pytest.mark.parametrize("kind, factor", [("all-gather", 1), ("reduce-scatter", 1), ("all-reduce", 2), ("all-to-all", 0.25)])
def test_large_n_rule_is_a_multiple_of_v_over_bidirectional_w(kind, factor):
    assert rc.large_n_seconds(kind, bytes_=V, bidirectional_bytes_per_s=2 * W1) == pytest.approx(factor * V / (2 * W1))


def test_large_n_allgather_drops_the_n_minus_1_over_n_of_the_exact_ring():
    # 16-chip ring both ways: V (N-1) / (2 N W1) = 15/16 of V / (2 W1)
    exact = collectives.ring("all-gather", size=16, bytes_=V, one_way_bytes_per_s=W1).bandwidth_seconds
    assert exact == pytest.approx(V * 15 / (2 * 16 * W1))
    assert exact / rc.large_n_seconds("all-gather", bytes_=V, bidirectional_bytes_per_s=2 * W1) == pytest.approx(15 / 16)


def test_max_form_keeps_the_larger_term():
    assert rc.max_form_seconds(bandwidth_seconds=3e-6, latency_seconds=5e-6) == 5e-6


def test_rules_reject_bad_input():
    with pytest.raises(Error, match="broadcast"):
        rc.large_n_seconds("broadcast", bytes_=V, bidirectional_bytes_per_s=1e9)
    with pytest.raises(Error, match="kind must be"):
        rc.large_n_seconds("permute", bytes_=V, bidirectional_bytes_per_s=1e9)
    with pytest.raises(Error, match="bidirectional_bytes_per_s"):
        rc.large_n_seconds("all-gather", bytes_=V, bidirectional_bytes_per_s=0)


# --- exact forms at the end of scalebook.collectives


def test_ring_all_to_all_both_ways_is_v_over_8_w1_for_even_rings():
    # N = 8: sum of min(d, 8-d) over d = 1..7 = 1+2+3+4+3+2+1 = 16 = N^2/4; per direction V 16 / (2 x 64) = V/8
    r = collectives.ring_all_to_all(size=8, bytes_=V, one_way_bytes_per_s=W1)
    assert r.bytes_per_link == pytest.approx(V / 8)
    assert r.bandwidth_seconds == pytest.approx(rc.large_n_seconds("all-to-all", bytes_=V, bidirectional_bytes_per_s=2 * W1))
    assert r.steps == 4


def test_ring_all_to_all_one_way_is_v_n_minus_1_over_2n():
    # one way, N = 8: the link carries V (1+...+7) / 64 / 8 x 8 ... = V 7 / 16
    r = collectives.ring_all_to_all(size=8, bytes_=V, one_way_bytes_per_s=W1, bidirectional=False)
    assert r.bytes_per_link == pytest.approx(V * 7 / 16)
    assert r.steps == 7
    both = collectives.ring_all_to_all(size=8, bytes_=V, one_way_bytes_per_s=W1)
    assert r.bandwidth_seconds / both.bandwidth_seconds == pytest.approx(3.5)


def test_ring_all_to_all_odd_ring():
    # N = 5: min(d, 5-d) = 1, 2, 2, 1 -> 6 = (25-1)/4; per direction V 6 / 50
    r = collectives.ring_all_to_all(size=5, bytes_=V, one_way_bytes_per_s=W1)
    assert r.bytes_per_link == pytest.approx(V * 6 / 50)


def test_gather_to_chip_on_a_line_depends_on_the_receiver():
    # 8 chips in a line: chip 0 takes 7 shards through one link, chip 3 takes max(3, 4) = 4 through its right link
    end = collectives.gather_to_chip(size=8, receiver=0, bytes_=V, one_way_bytes_per_s=W1, wraparound=False)
    mid = collectives.gather_to_chip(size=8, receiver=3, bytes_=V, one_way_bytes_per_s=W1, wraparound=False)
    assert end.bandwidth_seconds == pytest.approx(7 * V / 8 / W1)
    assert mid.bandwidth_seconds == pytest.approx(4 * V / 8 / W1)
    assert (end.hops, mid.hops) == (7, 4)


def test_gather_to_chip_on_a_ring_is_the_same_for_every_receiver():
    # ring of 8: ceil(7/2) = 4 shards through the busier link
    for r in range(8):
        g = collectives.gather_to_chip(size=8, receiver=r, bytes_=V, one_way_bytes_per_s=W1, wraparound=True)
        assert g.bandwidth_seconds == pytest.approx(4 * V / 8 / W1)


def test_gather_to_chip_rejects_a_receiver_outside_the_axis():
    with pytest.raises(Error, match="receiver"):
        collectives.gather_to_chip(size=4, receiver=4, bytes_=V, one_way_bytes_per_s=W1, wraparound=True)


def test_point_to_point_over_two_routes_halves_the_bandwidth_term():
    t = topology.slice("tpu-v5e", "16x16")
    w = t.axes[0].one_way_bytes_per_s
    one = collectives.point_to_point(t, (0, 0), (3, 0), bytes_=V)
    two = collectives.point_to_point_routes(t, (0, 0), (3, 0), bytes_=V, routes=2)
    assert one.bandwidth_seconds == pytest.approx(V / w)
    assert two.bandwidth_seconds == pytest.approx(V / (2 * w))
    assert two.hops == 3 + 2
    assert two.latency_seconds == pytest.approx(5 * 1e-6)


def test_point_to_point_routes_limited_by_the_senders_links():
    t = topology.slice("tpu-v5e", "16x16")  # wrapped 2D torus: 4 links per chip
    with pytest.raises(Error, match="at most 4"):
        collectives.point_to_point_routes(t, (0, 0), (3, 0), bytes_=V, routes=5)


def test_tp_forward_limit_is_11_for_h100_at_d_8192():
    # 6 D W / (b C) = 6 x 8192 x 450e9 / (2 x 990e12) = 11.17
    lim = collectives.tp_forward_max_degree(d_model=8192, flops_per_s=990e12, link_bytes_per_s=450e9)
    assert lim == pytest.approx(6 * 8192 * 450e9 / (2 * 990e12))
    assert math.floor(lim) == 11


def test_ep_forward_width_is_b_over_3_c_over_w():
    # B200 across nodes: (2/3) x 2.3e15 / 50e9 = 30,667
    assert collectives.ep_forward_min_expert_width(flops_per_s=2.3e15, link_bytes_per_s=50e9) == pytest.approx(
        2 / 3 * 2.3e15 / 50e9)
