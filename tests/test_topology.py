"""scalebook.topology: TPU slices, multislice, GPU nodes and clusters, chips_to_hold."""
import pytest
from hypothesis import given, strategies as st

from scalebook import Error, chip, topology


def test_v5e_8x16_slice_has_128_chips_on_16_hosts():
    t = topology.slice("tpu-v5e", "8x16")
    assert t.axis_sizes == {"X": 8, "Y": 16}
    assert (t.num_chips, t.num_hosts) == (128, 16)


def test_v5e_wraps_around_only_along_axes_of_16():
    assert topology.slice("tpu-v5e", "8x16").wraparound == {"X": False, "Y": True}
    assert topology.slice("tpu-v5e", "16x16").wraparound == {"X": True, "Y": True}
    assert topology.slice("tpu-v6e", "4x4").wraparound == {"X": False, "Y": False}


def test_v5p_wraps_around_only_in_full_4x4x4_cubes():
    assert all(topology.slice("tpu-v5p", "4x4x8").wraparound.values())
    assert not any(topology.slice("tpu-v5p", "2x4x4").wraparound.values())
    assert not any(topology.slice("tpu-v4p", "2x2x4").wraparound.values())


def test_axis_with_wraparound_carries_bidi_ici_and_without_one_way():
    t = topology.slice("tpu-v5e", "8x16")
    c = chip("tpu-v5e")
    assert t.axis("Y").bytes_per_s == c.ici_bidi_bytes_per_s
    assert t.axis("X").bytes_per_s == c.ici_one_way_bytes_per_s


def test_slice_accepts_custom_names():
    t = topology.slice("tpu-v5p", "2x2x2", names=["data", "fsdp", "model"])
    assert t.axis_sizes == {"data": 2, "fsdp": 2, "model": 2}


@pytest.mark.parametrize("shape, token", [("8x1a", "1a"), ("8xx16", "''"), ("0x4", "0"), ("-4x4", "-4")])
def test_bad_slice_string_names_the_bad_token(shape, token):
    with pytest.raises(Error, match=token):
        topology.slice("tpu-v5e", shape)


def test_slice_with_more_dimensions_than_the_torus_is_refused():
    with pytest.raises(Error, match="2D torus"):
        topology.slice("tpu-v5e", "4x4x4")


def test_slice_larger_than_the_pod_is_refused():
    with pytest.raises(Error, match="16x16"):
        topology.slice("tpu-v5e", "32x16")


def test_slice_of_a_gpu_is_refused_with_the_gpu_constructors_named():
    with pytest.raises(Error, match="gpu_node"):
        topology.slice("h100", "8")


def test_multislice_adds_a_dcn_axis_at_the_per_chip_dcn_bandwidth():
    t = topology.multislice("tpu-v5p", "4x4x4", slices=4)
    assert t.names == ("X", "Y", "Z", "D")
    assert t.axis("D").link == "dcn"
    assert t.axis("D").bytes_per_s == chip("tpu-v5p").dcn_bytes_per_s == 6.25e9
    assert t.num_chips == 256


def test_h100_node_is_an_8_gpu_nvlink_domain_at_450_gb_s():
    t = topology.gpu_node("h100")
    assert t.axis_sizes == {"X": 8}
    assert t.axis("X").bytes_per_s == 450e9


def test_gb200_nvlink_domain_has_72_gpus():
    assert topology.gpu_node("gb200").num_chips == 72


def test_superpod_cluster_has_node_leaf_and_spine_axes():
    t = topology.gpu_cluster("h100", nodes=128)
    assert t.axis_sizes == {"X": 8, "Y": 32, "Z": 4}
    assert t.num_chips == 1024
    assert t.axis("Y").bytes_per_s * 8 == pytest.approx(400e9)  # node egress over InfiniBand


def test_cluster_with_partial_leaves_is_refused():
    with pytest.raises(Error, match="32"):
        topology.gpu_cluster("h100", nodes=40)


def test_for_mesh_puts_inner_gpu_axes_in_nvlink_and_outer_on_infiniband():
    t = topology.for_mesh("h100", {"D": 4, "T": 8})
    assert (t.axis("T").link, t.axis("D").link) == ("nvlink", "infiniband")


def test_for_mesh_refuses_a_gpu_axis_straddling_the_node():
    with pytest.raises(Error, match="straddles"):
        topology.for_mesh("h100", {"X": 4, "Y": 4})


def test_chips_to_hold_rounds_up_hbm():
    assert topology.chips_to_hold(16e9, "tpu-v5e") == 1
    assert topology.chips_to_hold(16e9 + 1, "tpu-v5e") == 2
    assert topology.chips_to_hold(140e9, "h100") == 2


def test_chips_to_hold_refuses_non_positive_bytes():
    with pytest.raises(Error, match="bytes_"):
        topology.chips_to_hold(0, "h100")


@given(st.text(max_size=8))
def test_any_bad_slice_string_raises_scalebook_error_or_gives_a_slice(text):
    try:
        t = topology.slice("tpu-v5p", text)
    except Error:
        return
    assert t.num_chips >= 1


def test_far_corner_of_a_wrapped_16x16_is_two_hops_and_the_centre_sixteen():
    t = topology.slice("tpu-v5e", "16x16")
    assert topology.hops(t, (0, 0), (15, 15)) == 2
    assert topology.hops(t, (0, 0), {"X": 8, "Y": 8}) == 16


def test_hops_without_a_wraparound_walk_the_line():
    t = topology.slice("tpu-v5e", "4x4")
    assert topology.hops(t, (0, 0), (3, 3)) == 6


def test_hops_refuse_a_coordinate_off_the_slice():
    with pytest.raises(Error, match="0..3"):
        topology.hops(topology.slice("tpu-v5e", "4x4"), (0, 0), (4, 0))


def test_bisection_of_a_16x16_v5e_torus():
    # cut across X: 16 rings, each crossing twice, 45 GB/s each way per link
    assert topology.bisection_bytes_per_s(topology.slice("tpu-v5e", "16x16")) == pytest.approx(16 * 2 * 45e9)


def test_bisection_of_a_slice_takes_the_narrowest_cut():
    # 8x16 v5e: across X (no wrap) 16 links; across Y (wrap) 8 rings x 2 = 16 links
    assert topology.bisection_bytes_per_s(topology.slice("tpu-v5e", "8x16")) == pytest.approx(16 * 45e9)
    # 4x4x8 v5p (full cubes, all wrap): across Z 16 rings x 2 = 32 links, the narrowest
    v5p = topology.slice("tpu-v5p", "4x4x8")
    assert topology.bisection_bytes_per_s(v5p) == pytest.approx(32 * v5p.chip.ici_one_way_bytes_per_s)


def test_bisection_refuses_gpu_networks():
    with pytest.raises(Error, match="ICI torus"):
        topology.bisection_bytes_per_s(topology.gpu_node("h100"))


# --- published slice shapes and per-network latency (issue 18, items 3 and 4) ------------------
# Cloud TPU docs: v5e slices 1x1, 2x2, 2x4, 4x4, 4x8, 8x8, 8x16, 16x16; v5p 2x2x1, 2x2x2, 2x4x4,
# 4x4x4 and whole cubes up to 16x16x24. NCCL 2.30.7 (tuning.cc): 3.4 us per NVLink ring step,
# 14 us per network ring step; an ICI hop 1 us (Austin et al. 2025, part 3).

def test_v5e_offers_exactly_the_eight_documented_shapes():
    assert topology.published_shapes("tpu-v5e") == ["1x1", "2x2", "2x4", "4x4", "4x8", "8x8", "8x16", "16x16"]


def test_sixteen_v5e_chips_are_a_4x4_without_wraparound_not_a_1x16_ring():
    t = topology.for_chips("tpu-v5e", 16)
    assert t.axis_sizes == {"X": 4, "Y": 4} and not any(t.wraparound.values())


def test_the_largest_v5p_slice_is_16x16x24():
    assert topology.published_shapes("tpu-v5p")[-1] == "16x16x24"
    assert topology.slice_sizes("tpu-v5p")[-1] == 6144


def test_each_network_carries_its_own_step_latency():
    cluster = topology.gpu_cluster("h100", nodes=2)
    assert [a.latency_seconds for a in cluster.axes] == [3.4e-6, 14e-6]
    multi = topology.multislice("tpu-v5p", "4x4x4", slices=2)
    assert [a.latency_seconds for a in multi.axes] == [1e-6, 1e-6, 1e-6, 14e-6]


def test_the_topology_hop_latency_stays_the_ici_hop_on_every_network():
    assert topology.gpu_cluster("h100", nodes=2).hop_latency_seconds == 1e-6


def test_nvlink_collectives_reach_nccls_usable_share_of_the_link():
    assert topology.gpu_node("h100").axis("X").bandwidth_efficiency == pytest.approx(20.6 / 25)
    assert topology.gpu_node("gb200").axis("X").bandwidth_efficiency == pytest.approx(40.1 / 50)
    assert topology.slice("tpu-v5e", "4x4").axis("X").bandwidth_efficiency == 1.0


def test_one_or_two_v5p_chips_are_part_of_one_host():
    assert topology.for_chips("tpu-v5p", 1).num_chips == 1
    t = topology.for_chips("tpu-v5p", 2)
    assert t.axis_sizes == {"X": 2} and not any(t.wraparound.values())


def test_an_axis_cut_from_another_keeps_its_networks_latency_and_efficiency():
    # strategy placements build sub-axes without naming them: NVLink 3.4 us and 20.6 / 25 on H100
    a = topology.Axis(name="tp/4", size=4, link="nvlink", wraparound=False, bytes_per_s=450e9,
                      one_way_bytes_per_s=450e9)
    assert (a.latency_seconds, a.bandwidth_efficiency) == (3.4e-6, pytest.approx(20.6 / 25, abs=5e-4))


def test_a_count_that_is_no_slice_nor_equal_slices_names_the_valid_counts():
    # 3 v5p chips: not part of a 4-chip host evenly, not a slice, not slices of one
    with pytest.raises(Error, match="valid counts: 4, 8, 16, 32, 64"):
        topology.for_chips("tpu-v5p", 3)
