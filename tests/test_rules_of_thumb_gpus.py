"""The original's GPU rules (part 12), pinned by hand against its own worked numbers."""
import pytest

from scalebook import Error, collectives
from scalebook.rules_of_thumb import gpus as rg


def test_dp_batch_in_an_h100_node_is_about_2200():
    # the original: 990e12 / 450e9 = 2200 tokens per GPU
    assert rg.dp_min_batch_per_gpu(flops_per_s=990e12, collective_bytes_per_s=450e9) == pytest.approx(2200)


def test_tp_mlp_only_is_about_11_way_for_llama3_f():
    # the original: F = 28,000 over 2475 (node egress 400 GB/s) -> about 11
    assert rg.tp_max_degree_mlp_only(d_ff=28000, flops_per_s=990e12, collective_bytes_per_s=400e9) == pytest.approx(
        28000 * 400e9 / 990e12)


def test_mlp_only_rule_is_four_thirds_of_the_whole_layer_rule_when_f_is_4d():
    d = 8192
    orig = rg.tp_max_degree_mlp_only(d_ff=4 * d, flops_per_s=990e12, collective_bytes_per_s=450e9)
    ours = collectives.tp_forward_max_degree(d_model=d, flops_per_s=990e12, link_bytes_per_s=450e9)
    assert orig / ours == pytest.approx(4 / 3)


def test_bad_input_raises():
    with pytest.raises(Error, match="d_ff"):
        rg.tp_max_degree_mlp_only(d_ff=0, flops_per_s=1.0, collective_bytes_per_s=1.0)


def test_moe_inflates_the_dp_batch_by_e_over_k():
    # the original: k = 4, E = 128 -> 32 x 2475 = 79,200 tokens per GPU across nodes (400 GB/s per node)
    assert rg.dp_min_batch_per_gpu_moe(experts=128, experts_per_token=4, flops_per_s=990e12,
                                       collective_bytes_per_s=400e9) == pytest.approx(32 * 2475)


def test_two_nodes_halve_the_scale_out_bound():
    # (2 - 1) / 2 x 990e12 / 400e9 = 1237.5; many nodes tend to 2475
    assert rg.dp_min_batch_per_gpu_few_nodes(nodes=2, flops_per_s=990e12, node_bytes_per_s=400e9) == pytest.approx(1237.5)
    assert rg.dp_min_batch_per_gpu_few_nodes(nodes=1000, flops_per_s=990e12, node_bytes_per_s=400e9) == pytest.approx(2475 * 0.999)
    assert rg.dp_min_batch_per_gpu_few_nodes(nodes=1, flops_per_s=990e12, node_bytes_per_s=400e9) == 0


def test_model_parallel_spanning_nodes_divides_the_scale_out_bound():
    kw = dict(gpus_per_node=8, flops_per_s=990e12, gpu_bytes_per_s=450e9, node_bytes_per_s=400e9)
    # m = 8 (TP filling the node): max(990e12 / (450e9 * 8), 990e12 * 8 / (400e9 * 8)) = max(275, 2475)
    assert rg.dp_min_batch_per_gpu_model_parallel(model_parallel=8, **kw) == pytest.approx(2475)
    # m = 128 (TP 8 x PP 16, Llama 3 405B): max(275, 990e12 * 8 / (400e9 * 128)) = max(275, 154.7) = 275
    assert rg.dp_min_batch_per_gpu_model_parallel(model_parallel=128, **kw) == pytest.approx(275)
    # m = 2 inside a node: max(990e12 / 900e9, 2475) = 2475 (the node stage shrinks, the bound does not)
    assert rg.dp_min_batch_per_gpu_model_parallel(model_parallel=2, **kw) == pytest.approx(2475)


def test_ragged_all_to_all_share_rule_and_exact():
    # the original: 4 of 8 entries non-zero -> half the dense cost
    assert rg.ragged_all_to_all_fraction(experts_per_token=4, group=8) == 0.5
    assert rg.ragged_all_to_all_fraction(experts_per_token=16, group=8) == 1.0
    # exact, 8 experts over 8 chips, k = 1: one chip of 8 -> 1/8
    assert rg.ragged_destination_fraction(experts=8, experts_per_token=1, group=8) == pytest.approx(1 / 8)
    # 8 experts over 4 chips (2 each), k = 2: P(chip missed) = C(6,2)/C(8,2) = 15/28 -> 13/28
    assert rg.ragged_destination_fraction(experts=8, experts_per_token=2, group=4) == pytest.approx(13 / 28)
    # every expert chosen: every chip is hit
    assert rg.ragged_destination_fraction(experts=8, experts_per_token=8, group=4) == 1.0


def test_new_rules_reject_bad_counts():
    with pytest.raises(Error, match="experts_per_token"):
        rg.dp_min_batch_per_gpu_moe(experts=4, experts_per_token=8, flops_per_s=1.0, collective_bytes_per_s=1.0)
    with pytest.raises(Error, match="nodes"):
        rg.dp_min_batch_per_gpu_few_nodes(nodes=0, flops_per_s=1.0, node_bytes_per_s=1.0)
    with pytest.raises(Error, match="model_parallel"):
        rg.dp_min_batch_per_gpu_model_parallel(model_parallel=1.5, gpus_per_node=8, flops_per_s=1.0,
                                               gpu_bytes_per_s=1.0, node_bytes_per_s=1.0)
    with pytest.raises(Error, match="group must divide"):
        rg.ragged_destination_fraction(experts=10, experts_per_token=2, group=4)


def test_ep_bound_has_two_regimes():
    kw = dict(experts_per_token=8, gpus_per_node=8, flops_per_s=990e12, node_bytes_per_s=400e9)
    alpha = 990e12 / 400e9  # 2475
    # Z = 64 <= g k = 64: alpha (64 - 8) / 8 = 7 alpha = 17,325
    assert rg.ep_min_expert_width(ep=64, **kw) == pytest.approx(7 * alpha)
    # Z = 1024 >> g k: alpha (1024 - 8) x (64 / 1024) / 8 = 8 alpha x 1016 / 1024, close to 8 alpha
    assert rg.ep_min_expert_width(ep=1024, **kw) == pytest.approx(8 * alpha * 1016 / 1024)
    # inside one node nothing crosses InfiniBand
    assert rg.ep_min_expert_width(ep=8, **kw) == 0.0
