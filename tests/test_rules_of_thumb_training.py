"""The original book's training rules of thumb against hand derivations with literal numbers."""
import math

import pytest

import scalebook
from scalebook import models, training
from scalebook.rules_of_thumb import training as rot

V5P_BF16 = 459e12  # dense bf16 FLOP/s (spec table)
V5P_ICI = 180e9  # one axis, both directions, with wraparound
H100_BF16 = 990e12
H100_HBM = 80e9
ALPHA_V5P = V5P_BF16 / V5P_ICI  # 2,550


def test_alpha_is_2550_on_v5p():
    assert rot.alpha("tpu-v5p") == pytest.approx(2550)


def test_fsdp_rule_is_alpha_over_axes():
    assert rot.fsdp_min_batch_per_chip("tpu-v5p", fsdp_axes=3) == pytest.approx(2550 / 3)


def test_fsdp_rule_matches_the_chapter_rule_for_bf16():
    assert rot.fsdp_min_batch_per_chip("tpu-v5p") == pytest.approx(training.rule_of_thumb_batch_per_chip("tpu-v5p"))


def test_tp_limit_counts_the_mlp_only():
    # LLaMA-3 70B's F = 28,672 on one v5p axis: 28,672 / 2,550 = 11.2 (the whole layer allows more)
    assert rot.tp_max_degree_mlp("tpu-v5p", d_ff=28672) == pytest.approx(28672 / 2550)
    assert rot.tp_max_degree_mlp("tpu-v5p", d_ff=28672, tp_axes=2) == pytest.approx(2 * 28672 / 2550)


def test_x_opt_balances_the_two_collectives():
    # The original's example: F = 32,768 on 64 chips, M_X = 2, M_Y = 1.
    B, N, F = 48_000, 64, 32768
    x = rot.fsdp_tp_best_fsdp_degree(batch_tokens=B, chips=N, d_ff=F)
    assert x == pytest.approx(math.sqrt(B * N * 2 / F))
    y = N / x
    assert F / (y * 2) == pytest.approx(B / (x * 1))  # FSDP time = TP time, in units of D / W


def test_fsdp_tp_threshold_is_about_100_tokens_on_v5p():
    # alpha^2 / (M_X M_Y F) with F = 32,768, M_X M_Y = 2: 2550^2 / 65,536 = 99.2
    assert rot.fsdp_tp_min_batch_per_chip("tpu-v5p", d_ff=32768) == pytest.approx(2550**2 / 65536)
    assert 95 < rot.fsdp_tp_min_batch_per_chip("tpu-v5p", d_ff=32768) < 105


def test_at_the_threshold_compute_equals_the_max_of_the_collectives():
    F, N = 28672, 4096
    b = rot.fsdp_tp_min_batch_per_chip("tpu-v5p", d_ff=F)
    B = b * N
    x = rot.fsdp_tp_best_fsdp_degree(batch_tokens=B, chips=N, d_ff=F)
    comm = max(F / (N / x * 2), B / x)  # units of D / W
    math_ = B * F / (N * ALPHA_V5P)
    assert comm == pytest.approx(math_)


def test_collective_times_without_the_ring_factor():
    # 8B parameters of bf16 gradients over 450 GB/s: AllReduce 2 x 16 GB / 450 GB/s; FSDP 3 x
    assert rot.dp_allreduce_seconds(params=8e9, bytes_per_s=450e9) == pytest.approx(2 * 2 * 8e9 / 450e9)
    assert rot.fsdp_collectives_seconds(params=8e9, bytes_per_s=450e9) == pytest.approx(3 * 2 * 8e9 / 450e9)


def test_training_days_at_forty_percent():
    # 6 x 70e9 x 15e12 FLOPs on 4096 H100s at 40%: 6.3e24 / (4096 x 990e12 x 0.4) / 86,400
    flops = 6 * 70e9 * 15e12
    assert rot.training_days(model_flops=flops, chips=4096, chip="h100") == pytest.approx(
        flops / (4096 * H100_BF16 * 0.4) / 86400)


def test_fewest_chips_by_memory():
    # 16 bytes x 70.55e9 parameters = 1,129 GB over 80 GB: 14.1 -> 15 chips
    p = 70_553_706_496
    assert rot.fewest_chips_by_memory(params=p, chip="h100") == math.ceil(16 * p / H100_HBM) == 15


@pytest.mark.parametrize("call", [
    lambda: rot.fsdp_min_batch_per_chip("tpu-v5p", fsdp_axes=0),
    lambda: rot.tp_max_degree_mlp("tpu-v5p", d_ff=0),
    lambda: rot.fsdp_tp_best_fsdp_degree(batch_tokens=-1, chips=64, d_ff=1024),
    lambda: rot.fsdp_tp_min_batch_per_chip("tpu-v5p", d_ff=1024, tp_axes=True),
    lambda: rot.training_days(model_flops=1e24, chips=8, chip="h100", mfu=1.5),
    lambda: rot.fewest_chips_by_memory(params=0, chip="h100"),
    lambda: rot.alpha("h100", link="ici"),
])
def test_bad_input_raises_scalebook_error(call):
    with pytest.raises(scalebook.Error):
        call()
