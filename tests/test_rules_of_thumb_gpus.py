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
