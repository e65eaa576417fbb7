"""The original book's inference rules of thumb against hand derivations (chapter 7).

Every expected value is worked here with literal numbers, not with the package.
"""
import math

import pytest

import scalebook
from scalebook.rules_of_thumb import inference as rt


def test_memory_bound_limit_is_f_over_b_times_bandwidth_ratio():
    # The original's example: F = 16,384, B = 32, W_hbm / W_ici = 8 -> 64-way model parallelism.
    assert rt.decode_model_parallel_limit_memory_bound_rule(d_ff=16384, batch=32, hbm_bytes_per_s=8e11,
                                                            ici_bytes_per_s=1e11) == pytest.approx(64)


def test_memory_bound_limit_exact_adds_one_for_the_ring_factor():
    # 2 matrices of 28,672 x D bf16 on Y chips: 2 D F 2 / (Y 8.2e11) = 2 x 2 B D (Y-1) / (Y 9e10)
    # -> Y - 1 = 28,672 x 9e10 / (32 x 8.2e11) = 98.34...
    hand = 1 + 28672 * 9e10 / (32 * 8.2e11)
    got = rt.decode_model_parallel_limit_memory_bound(d_ff=28672, batch=32, hbm_bytes_per_s=8.2e11,
                                                      ici_bytes_per_s=9e10)
    assert got == pytest.approx(hand)
    assert got - rt.decode_model_parallel_limit_memory_bound_rule(
        d_ff=28672, batch=32, hbm_bytes_per_s=8.2e11, ici_bytes_per_s=9e10) == pytest.approx(1)


def test_memory_bound_limit_of_a_gated_mlp_with_int8_weights():
    # 3 matrices, 1-byte weights, bf16 activations, two axes: Y - 1 = 3 x 2 x F x 1 x W / (2 B 2 W_hbm).
    hand = 1 + 3 * 2 * 28672 * 1 * 9e10 / (2 * 64 * 2 * 8.2e11)
    assert rt.decode_model_parallel_limit_memory_bound(
        d_ff=28672, batch=64, hbm_bytes_per_s=8.2e11, ici_bytes_per_s=9e10, n_axes=2, weight_bytes=1,
        matrices=3) == pytest.approx(hand)


def test_memory_bound_limit_halves_when_the_batch_doubles():
    a = rt.decode_model_parallel_limit_memory_bound_rule(d_ff=8192, batch=16, hbm_bytes_per_s=1, ici_bytes_per_s=1)
    b = rt.decode_model_parallel_limit_memory_bound_rule(d_ff=8192, batch=32, hbm_bytes_per_s=1, ici_bytes_per_s=1)
    assert a == 512 and b == 256


def test_compute_bound_limit_is_axes_times_f_over_alpha():
    # TPU v5e-like: C = 1.97e14, W = 9e10 -> alpha = 2,188.9; F = 28,672 over 2 axes -> 26.2.
    rule = rt.model_parallel_limit_compute_bound_rule(d_ff=28672, n_axes=2, flops_per_s=1.97e14,
                                                      ici_bytes_per_s=9e10)
    assert rule == pytest.approx(2 * 28672 * 9e10 / 1.97e14)
    assert rt.model_parallel_limit_compute_bound(d_ff=28672, n_axes=2, flops_per_s=1.97e14,
                                                 ici_bytes_per_s=9e10) == pytest.approx(rule + 1)


def test_2d_best_split_is_root_n_over_8_when_f_is_4d():
    assert rt.weight_stationary_2d_best_x(d_model=1024, d_ff=4096, chips=128) == pytest.approx(4)


def test_2d_traffic_at_the_best_split_is_root_128_bd_over_root_n_w():
    # F = 4D: 2BD/(XW) + 4BF/(YZ W) at X = sqrt(N/8) is sqrt(128) B D / (sqrt(N) W).
    B, Dm, N, W = 64, 8192, 256, 9e10
    hand = math.sqrt(128) * B * Dm / (math.sqrt(N) * W)
    assert rt.weight_stationary_2d_comm_seconds(batch=B, d_model=Dm, d_ff=4 * Dm, chips=N,
                                                ici_bytes_per_s=W) == pytest.approx(hand)


def test_2d_traffic_is_lowest_at_the_best_split():
    kw = dict(batch=8, d_model=4096, d_ff=14336, chips=64, ici_bytes_per_s=1e11)
    best = rt.weight_stationary_2d_comm_seconds(**kw)
    for x in (1, 2, 4, 8, 16):
        assert rt.weight_stationary_2d_comm_seconds(**kw, x=x) >= best * (1 - 1e-12)


def test_1d_traffic_over_three_axes():
    assert rt.weight_stationary_1d_comm_seconds(batch=3, d_model=10, ici_bytes_per_s=1) == pytest.approx(40)


def test_2d_threshold_is_72_chips_for_f_4d_and_three_axes():
    # sqrt(128)/sqrt(N) < 4/3  <=>  N > 128 x 9/16 = 72 (the original prints 81).
    assert rt.weight_stationary_2d_threshold_rule() == pytest.approx(72)
    assert rt.weight_stationary_2d_threshold(d_model=8192, d_ff=4 * 8192) == pytest.approx(72)


def test_at_the_threshold_1d_and_2d_move_the_same():
    Dm, Fm = 8192, 28672
    n = rt.weight_stationary_2d_threshold(d_model=Dm, d_ff=Fm)  # 2 x 9 x 3.5 = 63
    assert n == pytest.approx(63)
    one = rt.weight_stationary_1d_comm_seconds(batch=1, d_model=Dm, ici_bytes_per_s=1)
    two = rt.weight_stationary_2d_comm_seconds(batch=1, d_model=Dm, d_ff=Fm, chips=n, ici_bytes_per_s=1)
    assert two == pytest.approx(one)


@pytest.mark.parametrize("call", [
    lambda: rt.decode_model_parallel_limit_memory_bound_rule(d_ff=0, batch=1, hbm_bytes_per_s=1, ici_bytes_per_s=1),
    lambda: rt.decode_model_parallel_limit_memory_bound(d_ff=1, batch=-1, hbm_bytes_per_s=1, ici_bytes_per_s=1),
    lambda: rt.model_parallel_limit_compute_bound_rule(d_ff=1, n_axes=0, flops_per_s=1, ici_bytes_per_s=1),
    lambda: rt.weight_stationary_2d_comm_seconds(batch=1, d_model=1, d_ff=1, chips=4, ici_bytes_per_s=1, x=0),
])
def test_bad_input_names_the_argument(call):
    with pytest.raises(scalebook.Error, match="must be a positive"):
        call()
