"""Rooflines pinned by hand, written to kill mutants `make mutate` found surviving.

Figures of the published tables (Austin et al. 2025): TPU v5e 197 TFLOP/s bf16, 394 TOP/s
int8, HBM 820 GB/s, ICI 45 GB/s one way per link and 90 GB/s both ways; TPU v5p HBM 2.8 TB/s,
ICI 90 / 180 GB/s, PCIe 16 GB/s, DCN 6.25 GB/s per chip (25 GB/s per host of 4). The v5e's
critical intensity is 197e12 / 820e9 = 240.2 FLOP/B.
"""
import pytest

from scalebook import Error, roofline

V5E_PEAK, V5E_INT8, V5E_HBM = 197e12, 394e12, 820e9


# --- op: the three budgets --------------------------------------------------------------------

def test_a_copy_does_no_flops_and_is_memory_bound():
    r = roofline.op("tpu-v5e", flops=0, hbm_bytes=820e9)  # 820 GB at 820 GB/s
    assert (r.compute_seconds, r.memory_seconds, r.bound) == (0.0, 1.0, "memory")
    assert r.utilization == 0.0


@pytest.mark.parametrize("field", ["flops", "hbm_bytes", "comm_bytes"])
def test_negative_work_is_refused_naming_the_argument(field):
    work = {"flops": 1.0, "hbm_bytes": 1.0, "comm_bytes": 1.0, field: -1.0}
    with pytest.raises(Error, match=f"^{field} must be a number >= 0, got -1.0$"):
        roofline.op("tpu-v5e", **work)


def test_an_op_without_work_says_what_must_be_positive():
    with pytest.raises(Error, match="^an op must do some work: flops, hbm_bytes or comm_bytes must be > 0$"):
        roofline.op("tpu-v5e", flops=0, hbm_bytes=0, comm_bytes=0)


def test_communication_runs_at_the_named_link_and_reports_it():
    # 6.25 GB over the v5p's 6.25 GB/s of DCN per chip: 1 s
    r = roofline.op("tpu-v5p", flops=1, hbm_bytes=1, comm_bytes=6.25e9, comm_link="dcn")
    assert r.comm_seconds == pytest.approx(1.0)
    assert r.comm_bytes_per_s == 6.25e9


def test_an_op_without_communication_needs_no_link():
    # TPU7x publishes no PCIe figure; naming it does not matter when nothing is sent
    r = roofline.op("tpu-7x", flops=1e12, hbm_bytes=1e9, comm_link="pcie")
    assert (r.comm_seconds, r.comm_bytes_per_s) == (0.0, None)


@pytest.mark.parametrize("link, bytes_per_s", [
    ("hbm", 2.8e12), ("ici", 180e9), ("ici_one_way", 90e9), ("dcn", 6.25e9), ("pcie", 16e9),
])
def test_each_link_of_a_v5p(link, bytes_per_s):
    assert roofline.link_bytes_per_s("tpu-v5p", link) == bytes_per_s


def test_an_unknown_link_lists_the_five_links():
    with pytest.raises(Error) as e:
        roofline.link_bytes_per_s("tpu-v5p", "nvlink")
    assert str(e.value) == "unknown link 'nvlink'; valid: hbm, ici, ici_one_way, dcn, pcie"


def test_a_link_the_chip_lacks_lists_the_links_it_has():
    with pytest.raises(Error) as e:
        roofline.link_bytes_per_s("tpu-7x", "pcie")
    assert str(e.value) == "tpu-7x has no pcie bandwidth in the spec table; valid: hbm, ici, ici_one_way, dcn"


def test_arithmetic_intensity_is_flops_per_byte_and_needs_bytes():
    assert roofline.arithmetic_intensity(6e9, 2e9) == 3.0
    with pytest.raises(Error, match="bytes_"):
        roofline.arithmetic_intensity(6e9, 0)
    with pytest.raises(Error, match="flops"):
        roofline.arithmetic_intensity(-1, 2e9)


# --- matmuls in mixed precision ---------------------------------------------------------------

@pytest.mark.parametrize("field", ["batch", "d_model", "d_ff"])
def test_matmul_bytes_refuses_a_size_of_zero(field):
    sizes = {"batch": 8, "d_model": 8, "d_ff": 8, field: 0}
    with pytest.raises(Error, match=f"^{field} must be a positive number"):
        roofline.matmul_bytes(**sizes)


def test_matmul_compute_dtype_defaults_to_bf16():
    assert roofline.matmul_compute_dtype("tpu-v5e") == "bf16"


def test_int8_activations_meeting_bf16_weights_compute_in_bf16():
    assert roofline.matmul_compute_dtype("tpu-v5e", "int8", "bf16") == "bf16"


@pytest.mark.parametrize("dtype, weight_dtype", [("int4", "fp4"), ("fp4", "int4"), ("int8", "fp8")])
def test_an_integer_and_a_float_of_the_same_width_meet_in_bf16(dtype, weight_dtype):
    # fp4 values such as 0.5 and 1.5 are not integers, so int8 cannot hold them; B200 has
    # int8, fp8 and fp4 peaks, and none of them takes both operands
    assert roofline.matmul_compute_dtype("b200", dtype, weight_dtype) == "bf16"


def test_matmul_reads_each_array_in_its_own_dtype():
    # [4, 8] bf16 x [8, 16] int8 -> [4, 16] fp32: 4*8*2 + 8*16*1 + 4*16*4 = 64 + 128 + 256 bytes
    r = roofline.matmul("tpu-v5e", batch=4, d_model=8, d_ff=16, weight_dtype="int8", out_dtype="fp32")
    assert r.hbm_bytes == 448
    assert r.peak_flops_per_s == V5E_PEAK  # the int8 weights are upcast to bf16


def test_an_all_int8_matmul_reads_one_byte_per_element_at_the_int8_peak():
    # 4*8 + 8*16 + 4*16 = 224 bytes; 2*4*8*16 = 1024 OPs at 394 TOP/s
    r = roofline.matmul("tpu-v5e", batch=4, d_model=8, d_ff=16, dtype="int8")
    assert r.hbm_bytes == 224
    assert r.peak_flops_per_s == V5E_INT8
    assert r.compute_seconds == pytest.approx(1024 / V5E_INT8)


def test_a_matmul_of_int8_activations_and_bf16_weights_runs_at_the_bf16_peak():
    r = roofline.matmul("tpu-v5e", batch=4, d_model=8, d_ff=16, dtype="int8", weight_dtype="bf16")
    assert r.peak_flops_per_s == V5E_PEAK
    assert r.hbm_bytes == 4 * 8 + 8 * 16 * 2 + 4 * 16  # activations and output int8, weights bf16


def test_critical_batch_of_int8_activations_and_bf16_weights_is_the_bf16_one():
    # computed in bf16, weights 2 bytes: B* = 197e12 / 820e9 x 2 / 2 = 240.2
    assert roofline.critical_batch("tpu-v5e", dtype="int8", weight_dtype="bf16") == pytest.approx(240.24, abs=0.01)


# --- two chips splitting a matmul along D ------------------------------------------------------

def test_split_matmul_refuses_a_d_model_that_is_not_a_number():
    with pytest.raises(Error, match="^d_model must be a number"):
        roofline.split_matmul("tpu-v5e", batch=64, d_model="8192", d_ff=512)


def test_an_int8_split_matmul_counts_bytes_and_peak_in_int8():
    # each chip: [64, 512] x [512, 512] (its half of D = 1024) in int8, then sends [64, 512] int8
    r = roofline.split_matmul("tpu-v5e", batch=64, d_model=1024, d_ff=512, dtype="int8")
    assert r.flops == 2 * 64 * 512 * 512
    assert r.hbm_bytes == 64 * 512 + 512 * 512 + 64 * 512
    assert r.comm_bytes == 64 * 512
    assert r.compute_seconds == pytest.approx(2 * 64 * 512 * 512 / V5E_INT8)
    assert r.comm_seconds == pytest.approx(64 * 512 / 45e9)  # one way over one link


# --- mixture of experts ------------------------------------------------------------------------

@pytest.mark.parametrize("field", ["batch", "routed_experts", "experts_per_token"])
def test_tokens_per_expert_refuses_a_count_of_zero(field):
    counts = {"batch": 4096, "routed_experts": 64, "experts_per_token": 2, field: 0}
    with pytest.raises(Error, match=f"^{field} must be a positive number"):
        roofline.tokens_per_expert(**counts)


def test_when_every_token_picks_every_expert_each_sees_the_whole_batch():
    assert roofline.tokens_per_expert(4096, 8, 8) == 4096


def test_a_token_cannot_pick_more_experts_than_there_are():
    message = "^experts_per_token=9 exceeds routed_experts=8; a token picks at most every expert once$"
    with pytest.raises(Error, match=message):
        roofline.tokens_per_expert(4096, 8, 9)
    with pytest.raises(Error, match=message):
        roofline.moe_critical_batch("tpu-v5e", routed_experts=8, experts_per_token=9)


@pytest.mark.parametrize("field", ["routed_experts", "experts_per_token"])
def test_moe_critical_batch_refuses_a_count_of_zero(field):
    counts = {"routed_experts": 8, "experts_per_token": 2, field: 0}
    with pytest.raises(Error, match=f"^{field} must be a positive number"):
        roofline.moe_critical_batch("tpu-v5e", **counts)


def test_moe_critical_batch_with_every_expert_active_is_the_dense_one():
    assert roofline.moe_critical_batch("tpu-v5e", routed_experts=8, experts_per_token=8) == pytest.approx(
        V5E_PEAK / V5E_HBM)


def test_int8_expert_weights_halve_the_moe_critical_batch():
    # 240.2 / 2 tokens per expert (1-byte weights), times 8 experts / 2 per token = 480.5
    assert roofline.moe_critical_batch("tpu-v5e", routed_experts=8, experts_per_token=2,
                                       weight_dtype="int8") == pytest.approx(V5E_PEAK / V5E_HBM / 2 * 4)


# --- repr and notebook table -------------------------------------------------------------------

# v5e: 197 TFLOP in 1 s; 410 GB of HBM in 0.5 s; 45 GB over 90 GB/s of ICI in 0.5 s.
# Intensity 197e12 / 410e9 = 480.5 against the critical 240.2.
BUSY = dict(flops=197e12, hbm_bytes=410e9, comm_bytes=45e9)
# v5e: a quarter of the peak's work (250 ms) against 820 GB (1 s): intensity 49.25e12 / 820e9 = 60.1
COPYISH = dict(flops=197e12 / 4, hbm_bytes=820e9)


def test_repr_of_a_compute_bound_op_that_communicates():
    assert repr(roofline.op("tpu-v5e", **BUSY)) == (
        "Roofline(compute-bound: compute 1 s, memory 500 ms, comm 500 ms; between 1 s and 2 s; "
        "intensity 480 vs critical 240 FLOP/B)")


def test_repr_of_a_memory_bound_op_leaves_out_communication():
    assert repr(roofline.op("tpu-v5e", **COPYISH)) == (
        "Roofline(memory-bound: compute 250 ms, memory 1 s; between 1 s and 1.25 s; "
        "intensity 60.1 vs critical 240 FLOP/B)")


def _table(rows):
    return "<table>" + "".join(f"<tr><th style='text-align:left'>{k}</th><td>{v}</td></tr>" for k, v in rows) + "</table>"


def test_notebook_table_of_a_compute_bound_op_that_communicates():
    assert roofline.op("tpu-v5e", **BUSY)._repr_html_() == _table([
        ("FLOPs", "197 TFLOP"), ("HBM bytes", "410 GB"), ("compute time", "1 s"), ("memory time", "500 ms"),
        ("comm bytes", "45 GB"), ("comm time", "500 ms"), ("bound", "<b>compute</b>"),
        ("time (overlapped .. serial)", "1 s .. 2 s"), ("intensity / critical", "480 / 240 FLOP/B"),
    ])


def test_notebook_table_of_a_memory_bound_op_has_no_communication_rows():
    assert roofline.op("tpu-v5e", **COPYISH)._repr_html_() == _table([
        ("FLOPs", "49.2 TFLOP"), ("HBM bytes", "820 GB"), ("compute time", "250 ms"), ("memory time", "1 s"),
        ("bound", "<b>memory</b>"), ("time (overlapped .. serial)", "1 s .. 1.25 s"),
        ("intensity / critical", "60.1 / 240 FLOP/B"),
    ])
