"""roofline: times from three budgets, intensities, matmuls in mixed precision."""
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scalebook import Error, chip, chip_names, roofline

pos = st.floats(min_value=1.0, max_value=1e18, allow_nan=False, allow_infinity=False)


def test_op_times_are_work_over_rate():
    r = roofline.op("tpu-v5e", flops=1.97e14, hbm_bytes=8.2e11)
    assert r.compute_seconds == pytest.approx(1.0)
    assert r.memory_seconds == pytest.approx(1.0)


def test_lower_bound_is_the_max_and_upper_bound_the_sum():
    r = roofline.op("h100", flops=9.9e14, hbm_bytes=3.4e12 / 2, comm_bytes=4.5e11 / 4)
    assert r.lower_seconds == pytest.approx(1.0)
    assert r.upper_seconds == pytest.approx(1.75)
    assert r.bound == "compute"


def test_a_small_batch_matmul_is_memory_bound():
    assert roofline.matmul("tpu-v5e", batch=8, d_model=8192, d_ff=8192).bound == "memory"


def test_a_large_batch_matmul_is_compute_bound():
    assert roofline.matmul("tpu-v5e", batch=1024, d_model=8192, d_ff=8192).bound == "compute"


def test_matmul_flops_and_bytes_follow_2bdf_and_one_pass_over_each_array():
    assert roofline.matmul_flops(2, 3, 5) == 60
    assert roofline.matmul_bytes(2, 3, 5) == 2 * (6 + 15 + 10)
    assert roofline.matmul_bytes(2, 3, 5, weight_dtype="int8") == 2 * 6 + 15 + 2 * 10


def test_critical_intensity_of_v5e_in_bf16_is_about_240():
    assert roofline.critical_intensity("tpu-v5e") == pytest.approx(1.97e14 / 8.2e11)
    assert round(roofline.critical_intensity("tpu-v5e")) == 240


def test_critical_batch_halves_with_int8_weights_and_bf16_compute():
    full = roofline.critical_batch("tpu-v5e")
    assert roofline.critical_batch("tpu-v5e", weight_dtype="int8") == pytest.approx(full / 2)


def test_int8_by_int8_doubles_the_peak_and_the_critical_batch_follows():
    assert roofline.critical_batch("tpu-v5e", dtype="int8") == pytest.approx(3.94e14 / 8.2e11 / 2)


def test_intensity_of_bf16_matmul_approaches_batch_when_batch_is_small():
    r = roofline.matmul("h100", batch=64, d_model=16384, d_ff=65536)
    assert r.intensity_flops_per_byte == pytest.approx(64, rel=0.01)


def test_mixed_precision_computes_in_the_wider_dtype():
    assert roofline.matmul_compute_dtype("h100", "bf16", "int4") == "bf16"
    assert roofline.matmul_compute_dtype("h100", "fp8", "fp8") == "fp8"
    assert roofline.matmul_compute_dtype("h100", "int8", "fp8") == "bf16"


def test_comm_time_uses_the_named_link():
    r = roofline.op("tpu-v5p", flops=1, hbm_bytes=1, comm_bytes=1.8e11, comm_link="ici")
    assert r.comm_seconds == pytest.approx(1.0)
    assert r.bound == "communication"


def test_split_matmul_is_balanced_at_d_of_twice_peak_over_one_way_link():
    r = roofline.split_matmul("tpu-v5e", batch=64, d_model=2 * 197e12 / 45e9, d_ff=1024)
    assert r.compute_seconds == pytest.approx(r.comm_seconds)
    assert r.comm_bytes == 64 * 1024 * 2


def test_split_matmul_critical_d_model_is_twice_peak_over_one_way_link_in_bf16():
    assert roofline.split_matmul_critical_d_model("h100") == pytest.approx(2 * 990e12 / 450e9)
    d = roofline.split_matmul_critical_d_model("tpu-v5e")
    r = roofline.split_matmul("tpu-v5e", batch=32, d_model=d, d_ff=512)
    assert r.compute_seconds == pytest.approx(r.comm_seconds)


def test_op_without_any_work_raises():
    with pytest.raises(Error):
        roofline.op("h100", flops=0, hbm_bytes=0)


def test_missing_link_raises_error_naming_valid_links():
    with pytest.raises(Error, match="pcie"):
        roofline.link_bytes_per_s("tpu-7x", "pcie")  # TPU7x: no published PCIe figure


@settings(max_examples=60, deadline=None)
@given(flops=pos, extra=pos, hbm=pos, name=st.sampled_from(chip_names()))
def test_more_flops_never_take_less_time(flops, extra, hbm, name):
    a = roofline.op(name, flops=flops, hbm_bytes=hbm)
    b = roofline.op(name, flops=flops + extra, hbm_bytes=hbm)
    assert b.lower_seconds >= a.lower_seconds and b.upper_seconds >= a.upper_seconds


@settings(max_examples=60, deadline=None)
@given(b=st.integers(1, 4096), d=st.integers(1, 8192), f=st.integers(1, 8192), db=st.integers(1, 4096))
def test_more_tokens_never_make_a_matmul_faster(b, d, f, db):
    small = roofline.matmul("tpu-v5e", batch=b, d_model=d, d_ff=f)
    big = roofline.matmul("tpu-v5e", batch=b + db, d_model=d, d_ff=f)
    assert big.lower_seconds >= small.lower_seconds


@settings(max_examples=60, deadline=None)
@given(value=st.one_of(st.floats(max_value=0.0), st.just(math.nan), st.just(math.inf), st.text(max_size=3)),
       field=st.sampled_from(["batch", "d_model", "d_ff"]))
def test_bad_sizes_always_raise_error(value, field):
    sizes = {"batch": 8, "d_model": 8, "d_ff": 8, field: value}
    with pytest.raises(Error):
        roofline.matmul("tpu-v5e", **sizes)


@settings(max_examples=30, deadline=None)
@given(name=st.text(min_size=1, max_size=12).filter(lambda s: s.strip().lower() not in {"v5e"}))
def test_any_chip_name_gives_a_known_chip_or_raises_error(name):
    try:
        found = chip(name)
    except Error:
        return
    assert found.name in chip_names()


def test_vector_unit_peak_replaces_the_matrix_peak_when_given():
    # 1e12 FLOPs at 50 TFLOP/s take 20 ms, whatever the chip's matrix-unit peak
    r = roofline.op("h100", flops=1e12, hbm_bytes=1.0, peak_flops_per_s=50e12)
    assert r.compute_seconds == pytest.approx(0.02)
    assert r.critical_intensity_flops_per_byte == pytest.approx(50e12 / 3.4e12)


def test_vector_unit_peak_must_be_positive():
    with pytest.raises(Error, match="peak_flops_per_s"):
        roofline.op("h100", flops=1.0, hbm_bytes=1.0, peak_flops_per_s=0)


def test_tokens_per_expert_is_batch_times_top_k_over_experts():
    assert roofline.tokens_per_expert(4096, 64, 2) == 128        # 4096 x 2 / 64
    with pytest.raises(Error, match="experts_per_token"):
        roofline.tokens_per_expert(4096, 4, 8)


def test_moe_critical_batch_scales_the_dense_one_by_experts_over_top_k():
    # H100 bf16: 990e12 / 3.4e12 = 291.2 tokens per expert; 256 experts, 8 per token: x 32
    assert roofline.moe_critical_batch("h100", routed_experts=256, experts_per_token=8) == pytest.approx(
        990e12 / 3.4e12 * 32)
    # Mixtral-like: 8 experts, 2 per token on a v5e (240 per expert): x 4
    assert roofline.moe_critical_batch("tpu-v5e", routed_experts=8, experts_per_token=2) == pytest.approx(
        197e12 / 820e9 * 4)
