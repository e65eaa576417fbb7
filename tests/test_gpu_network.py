"""gpu_network: fat trees, SHARP, hierarchical collectives, GPU parallelism limits (chapter 2b)."""
import pytest

from scalebook import Error, gpu_network as gn


def test_superpod_reference_design_counts():
    t = gn.superpod("h100")
    assert (t.nodes, t.gpus, t.leaf_switches, t.spine_switches) == (128, 1024, 32, 16)


def test_fat_tree_bisection_is_half_the_nodes_egress():
    # 128 nodes / 2 x 400 GB/s = 25.6 TB/s one way
    assert gn.superpod("h100").bisection_bytes_per_s == pytest.approx(64 * 400e9)


def test_oversubscribed_tree_divides_cross_leaf_bisection():
    assert gn.superpod("h100", oversubscription=2).bisection_bytes_per_s == pytest.approx(64 * 400e9 / 2)


def test_nvlink_bisection_of_an_h100_node_counts_one_direction():
    assert gn.nvlink_bisection_bytes_per_s("h100") == pytest.approx(4 * 450e9)


def test_sharp_all_reduce_sends_each_byte_once():
    # 1 GB in an 8-GPU H100 node: ring 2 x 1e9 x 7/8 / 450e9; SHARP 1e9 / 450e9
    assert gn.all_reduce_seconds("h100", 1e9) == pytest.approx(2 * 1e9 * 7 / 8 / 450e9)
    assert gn.all_reduce_seconds("h100", 1e9, sharp=True) == pytest.approx(1e9 / 450e9)


def test_all_reduce_of_more_gpus_than_a_domain_raises():
    with pytest.raises(Error, match="hierarchical"):
        gn.all_reduce_seconds("h100", 1e9, gpus=16)


def test_all_to_all_in_a_node():
    # 8 H100s: V x 7 / 64 / 450e9
    assert gn.all_to_all_seconds("h100", 1e9, gpus=8) == pytest.approx(1e9 * 7 / 64 / 450e9)


def test_all_to_all_across_nodes_is_set_by_infiniband():
    # 4 nodes of 8: V x (32 - 8) / 32^2 over 50 GB/s per GPU
    assert gn.all_to_all_seconds("h100", 1e9, gpus=32) == pytest.approx(1e9 * 24 / 1024 / 50e9)


def test_hierarchical_all_reduce_stages():
    # 16 H100 nodes, 1 GB: RS and AG in node 1e9 x 7/8 / 450e9 each;
    # across nodes 2 x (1e9 / 8) x 15/16 / 50e9
    h = gn.hierarchical_all_reduce("h100", 1e9, nodes=16)
    rs, cross, ag = (s.seconds for s in h.stages)
    assert rs == ag == pytest.approx(1e9 * 7 / 8 / 450e9)
    assert cross == pytest.approx(2 * 1e9 / 8 * 15 / 16 / 50e9)
    assert h.seconds == pytest.approx(rs + cross + ag)


def test_hierarchical_beats_a_single_flat_ring_through_one_nic_by_about_the_node_size():
    flat = gn.flat_ring_all_reduce_seconds("h100", 1e9, nodes=16, rings=1)
    assert flat == pytest.approx(2 * 1e9 * 127 / 128 / 50e9)
    assert gn.hierarchical_all_reduce("h100", 1e9, nodes=16).seconds < flat / 4


def test_nccl_runs_one_flat_ring_per_nic_and_moves_the_nodes_whole_egress():
    # 8 rings of V/8, each through its own 50 GB/s NIC: 2 x 1e9 x 127/128 / (8 x 50e9)
    flat = gn.flat_ring_all_reduce_seconds("h100", 1e9, nodes=16)
    assert flat == pytest.approx(2 * 1e9 * 127 / 128 / 400e9)
    # about the hierarchical form's InfiniBand stage, 2 x (1e9/8) x 15/16 / 50e9
    assert flat == pytest.approx(gn.hierarchical_all_reduce("h100", 1e9, nodes=16).stages[1].seconds, rel=0.07)


def test_more_rings_than_nics_are_refused():
    with pytest.raises(Error, match="at most the 8 NICs"):
        gn.flat_ring_all_reduce_seconds("h100", 1e9, nodes=2, rings=9)


def test_hierarchical_all_gather_crosses_infiniband_with_one_eighth():
    h = gn.hierarchical_all_gather("h100", 8e9, nodes=4)
    assert h.stages[0].seconds == pytest.approx(1e9 * 3 / 4 / 50e9)


def test_parallelism_limits_of_an_h100():
    lim = gn.parallelism_limits("h100", d_model=8192)
    assert lim.dp_batch_in_node == pytest.approx(990e12 / 450e9)
    assert lim.dp_batch_across_nodes == pytest.approx(990e12 / (8 * 50e9))



def test_tp_limit_of_an_h100_is_the_forward_pass_bound():
    # forward pass of a standard layer: 24 D^2 / tp FLOPs per token against two AllReduces of
    # 2 D b bytes each (large-N), so tp <= 6 D W / (b C) = 6 x 8192 x 450e9 / (2 x 990e12) = 11.17
    lim = gn.parallelism_limits("h100", d_model=8192)
    assert lim.tp_max_degree_in_node == pytest.approx(6 * 8192 * 450e9 / (2 * 990e12))
    assert int(lim.tp_max_degree_in_node) == 11


def test_ep_limits_of_an_h100_are_the_forward_pass_bounds():
    # forward pass: dispatch + combine, 2 k D b / W, against 6 k D F_e / C: F_e >= (b / 3) C / W
    lim = gn.parallelism_limits("h100", d_model=8192)
    assert lim.ep_min_expert_width_in_node == pytest.approx(2 / 3 * 990e12 / 450e9)  # 1,467
    assert lim.ep_min_expert_width_across_nodes == pytest.approx(2 / 3 * 990e12 / 50e9)  # 13,200


def test_nvl72_cross_rack_dp_is_bound_by_its_nvlink_stage():
    # GB200: 2.5e15 bf16, NVLink 900 GB/s, 72 GPUs x 50 GB/s of InfiniBand per rack.
    # NVLink stage: 2.5e15 / 900e9 = 2778 tokens; InfiniBand stage: 2.5e15 / 3.6e12 = 694
    lim = gn.parallelism_limits("gb200", d_model=8192)
    assert lim.dp_batch_across_nodes == pytest.approx(2.5e15 / 900e9)


def test_h100_cross_node_dp_is_bound_by_its_infiniband_stage():
    # 990e12 / (8 x 50e9) = 2475 > 990e12 / 450e9 = 2200
    assert gn.parallelism_limits("h100", d_model=8192).dp_batch_across_nodes == pytest.approx(990e12 / 400e9)


def test_pipeline_needs_a_fraction_of_a_layer_per_stage():
    # 2 x 990e12 / (24 x 8192 x 50e9) = 0.2 layers
    assert gn.pipeline_min_layers_per_stage("h100", d_model=8192) == pytest.approx(2 * 990e12 / (24 * 8192 * 50e9))


def test_gpu_network_rejects_a_tpu():
    with pytest.raises(Error, match="TPU"):
        gn.superpod("tpu-v5e")
