"""The data files against their sources: published figures pinned, parts consistent with peaks.

Each pin names the document that states the figure (keys of book/references.bib). The
consistency tests rebuild a headline figure from the parts a vendor publishes
(units x rate per unit x clock), so a mistyped part cannot hide behind a correct peak.
"""
import re
from pathlib import Path

import pytest

from scalebook import Error, chip, chips, hardware
from scalebook.models import reported_training
from scalebook.runs import published_run

BIB = (Path(__file__).resolve().parents[1] / "book" / "references.bib").read_text()
BIB_KEYS = set(re.findall(r"^@\w+\{([^,]+),", BIB, flags=re.M))
SPECS = hardware.spec_data()


def _boost_hz(name):
    return SPECS["gpu"][chip(name).display_name]["clock_hz_base_boost"][1]


# --- every hardware figure names a document ------------------------------------------------------

def _sources():
    for family in ("tpu", "gpu"):
        for key, record in SPECS[family].items():
            for group, text in record.get("sources", {}).items():
                yield key, group, text


@pytest.mark.parametrize("key, group, text", list(_sources()))
def test_each_hardware_source_names_a_cited_document_or_a_derivation(key, group, text):
    vendor_keys = set(re.findall(r"\b(nvidia\w+|googletpu\w+|cudaguide)\b", text))
    named = vendor_keys | {w for w in re.findall(r"\w+", text) if w in BIB_KEYS}
    assert named or text.startswith(("book", "derived", "the H100 record")), (key, group, text)
    assert vendor_keys <= BIB_KEYS, (key, group, vendor_keys - BIB_KEYS)


# --- figures pinned to their published values ----------------------------------------------------

def test_a100_has_432_tensor_cores_on_108_sms():
    # NVIDIA A100 Tensor Core GPU Architecture whitepaper (2020): 108 SMs, 432 third-generation tensor cores
    m = chip("a100").micro
    assert (m.cores_per_chip, m.matrix_units_per_core, m.matrix_units_per_chip) == (108, 4, 432)


def test_a100_cuda_cores_give_its_19_5_tflops_fp32_peak():
    # A100 whitepaper: 6,912 FP32 CUDA cores, 19.5 TFLOP/s FP32 = 108 SMs x 64 lanes x 2 (FMA) x 1.41 GHz
    m = chip("a100").micro
    assert m.vector_lanes == 108 * 64
    assert m.vector_flops_per_s == 19.5e12
    assert 108 * 64 * 2 * 1.41e9 == pytest.approx(19.5e12, rel=0.001)


@pytest.mark.parametrize("name, both_directions", [
    ("a100", 64e9),    # A100 datasheet: PCIe Gen4 64 GB/s
    ("h100", 128e9),   # H100 datasheet: PCIe Gen5 128 GB/s
    ("h200", 128e9),   # H200 datasheet (2024): PCIe Gen5 128 GB/s
])
def test_gpu_pcie_is_the_datasheet_figure_counted_one_way(name, both_directions):
    assert chip(name).pcie_bytes_per_s == both_directions / 2


def test_h200_hbm_is_141_gb_at_4_8_tb_per_s():
    # H200 datasheet (2024): 141 GB HBM3e at 4.8 TB/s; same GH100 compute as the H100 SXM
    c = chip("h200")
    assert (c.hbm_bytes, c.hbm_bytes_per_s) == (141e9, 4.8e12)
    assert c.peak_flops_per_s("bf16") == chip("h100").peak_flops_per_s("bf16")


@pytest.mark.parametrize("name", ["a100", "h100", "h200", "b200"])
def test_smem_reads_32_banks_of_4_bytes_per_clock_per_sm(name):
    # CUDA C++ Programming Guide, shared memory: 32 banks, each 32 bits wide per clock cycle
    assert SPECS["gpu"][chip(name).display_name]["smem_bytes_per_cycle_per_sm"] == 32 * 4


def test_gb200_per_gpu_hbm_bandwidth_and_fp4_come_from_the_rack_datasheet():
    # GB200 NVL72 datasheet: 576 TB/s of HBM for 72 GPUs; fp4 1,440 PFLOP/s with 2:4 sparsity for 72 GPUs
    c = chip("gb200")
    assert c.hbm_bytes_per_s == 576e12 / 72
    assert c.peak_flops_per_s("fp4") == 1440e15 / 72 / 2


def test_h800_bf16_is_half_its_dense_fp8_peak():
    # book: H800 fp8 3.026e15 with 2:4 sparsity -> 1.513e15 dense; Hopper tensor cores run bf16 at half the fp8 rate
    c = chip("h800")
    assert c.peak_flops_per_s("bf16") == 3.026e15 / 2 / 2


def test_v6e_mxu_count_is_unpublished_and_not_guessed():
    # neither the book nor a v6e clock fixes the count: 4 MXUs would mean 1.75 GHz, 2 would mean 3.5 GHz
    m = chip("tpu-v6e").micro
    assert m.mxu_side == 256 and m.cores_per_chip == 1
    assert m.matrix_units_per_core is None
    with pytest.raises(Error, match="not publish"):
        m.peak_from_parts_flops_per_s()


def test_b200_four_tensor_cores_per_sm_reproduce_the_books_estimate():
    # book (GPU chapter footnote): 148 SMs x 4 tensor cores x 2048 FLOPs/cycle x 1.86 GHz ~ 2.25 PFLOP/s
    m = chip("b200").micro
    assert m.matrix_units_per_chip * m.matrix_unit_flops_per_cycle * 1.86e9 == pytest.approx(2.25e15, rel=0.005)


# --- every chip whose parts are all published: peak = units x rate per unit x clock --------------

def _complete(c):
    m = c.micro
    return None not in (m.matrix_units_per_chip, m.matrix_unit_flops_per_cycle, m.clock_hz)


def test_the_chips_with_every_part_published_are_known():
    # a figure newly filled in (or set to null) must come with its consistency check below
    assert [c.name for c in chips() if _complete(c)] == ["tpu-v5e", "tpu-v5p", "a100", "h100", "h200"]


@pytest.mark.parametrize("name", ["tpu-v5e", "tpu-v5p"])
def test_tpu_peak_is_mxus_times_cells_times_two_times_clock(name):
    # v5e: 4 x 128^2 x 2 x 1.5 GHz = 196.6 TFLOP/s; v5p: 2 cores x 4 x 128^2 x 2 x 1.75 GHz = 458.8 TFLOP/s
    c = chip(name)
    assert c.micro.peak_from_parts_flops_per_s() == pytest.approx(c.peak_flops_per_s("bf16"), rel=0.005)


@pytest.mark.parametrize("name", ["a100", "h100", "h200"])
def test_gpu_peak_needs_a_clock_between_base_and_boost(name):
    # A100: 312e12 / (432 x 512) = 1.41 GHz; H100/H200: 990e12 / (528 x 1024) = 1.83 GHz, within 1.59-1.98
    base, boost = SPECS["gpu"][chip(name).display_name]["clock_hz_base_boost"]
    assert base <= chip(name).micro.implied_clock_hz() <= boost * 1.001


@pytest.mark.parametrize("name", ["a100", "h100", "h200"])
def test_cuda_core_fp32_peak_is_lanes_times_two_times_boost_clock(name):
    # H100 SXM: 16,896 lanes x 2 x 1.98 GHz = 66.9 TFLOP/s (datasheet 67); A100 above
    m = chip(name).micro
    assert m.vector_lanes * 2 * _boost_hz(name) == pytest.approx(m.vector_flops_per_s, rel=0.015)


def test_v5p_vpu_peak_is_its_alus_times_clock():
    # book: 4,096 VPU ALUs per TensorCore at 1.75 GHz ~ 7e12 FLOP/s per core
    m = chip("tpu-v5p").micro
    assert m.vector_lanes * m.clock_hz == pytest.approx(m.vector_flops_per_s, rel=0.03)


# --- published runs: figures that must agree with each other ---------------------------------------

@pytest.mark.parametrize("run_id", ["llama3-405b-h100-8k", "llama3-405b-h100-16k", "llama3-405b-h100-16k-128k-ctx"])
def test_llama3_tflops_per_gpu_over_the_h100_peak_is_its_mfu(run_id):
    # Llama 3 Herd (2024) Table 4: 430 / 400 / 380 TFLOP/s per GPU at 43% / 41% / 38% bf16 MFU
    r = published_run(run_id)
    assert r.reported_flops_per_s_per_chip / chip("h100").peak_flops_per_s("bf16") == pytest.approx(
        r.reported_mfu, abs=0.01)


def test_mt_nlg_mfu_counts_its_model_flops_without_recompute():
    # PaLM (2022) Table 3 gives MT-NLG 30.2% MFU; Megatron's count without recompute is
    # 72 B s l h^2 (1 + s/6h + V/12lh) per step; 60.1 s per step on 2,240 A100s at 312 TFLOP/s
    r = published_run("mt-nlg-530b-a100-2240")
    B, s, l, h, V = 1920, 2048, 105, 20480, 51200
    model_flops = 72 * B * s * l * h**2 * (1 + s / (6 * h) + V / (12 * l * h))
    assert model_flops / (r.reported_step_seconds * r.chips * 312e12) == pytest.approx(r.reported_mfu, abs=0.003)


def test_llama3_405b_compute_is_six_n_d():
    # Llama 3 Herd section 1: 405B parameters, 15.6T tokens, 3.8e25 FLOPs
    r = reported_training("llama3-405b")
    assert 6 * 405e9 * r.tokens == pytest.approx(r.flops, rel=0.01)


def test_llama3_405b_gpu_hours_cover_its_flops_at_the_reported_mfu():
    # model card: 30.84M H100 hours; at Table 4's 38-43% MFU the 3.8e25 FLOPs need 24.8M-28.1M hours,
    # so the card's hours are that plus at most about a quarter (restarts, later training stages)
    r = reported_training("llama3-405b")
    peak = chip("h100").peak_flops_per_s("bf16")
    for mfu in (0.38, 0.43):
        needed_hours = r.flops / (mfu * peak) / 3600
        assert 1.0 <= r.chip_hours / needed_hours <= 1.3


# --- slice shapes and network figures (tpu_slices.json) -----------------------------------------

def _network_records():
    from scalebook._data import load

    data = load("tpu_slices")
    for family, rows in (("slices", data["slices"]), ("links", data["links"])):
        for key, record in rows.items():
            yield family, key, record["source"]


@pytest.mark.parametrize("family, key, text", list(_network_records()))
def test_each_slice_table_and_network_figure_names_its_document(family, key, text):
    named = set(re.findall(r"\b(googletpudocs|nccl|austin2025scaling)\b", text.replace("Austin et al. 2025", "austin2025scaling").lower()))
    assert named and named <= BIB_KEYS, (family, key, text)


def test_nccl_latencies_are_its_ring_simple_protocol_figures():
    # NVIDIA/nccl 2.30.7, src/graph/tuning.cc: hwLatencies[NVLINK][Ring][Simple] = 3.4 us,
    # hwLatencies[NET][Ring][Simple] = 14 us; topo.h: SM90_NVLINK_BW 20.6 GB/s per 25 GB/s link
    from scalebook import topology

    assert topology.link_latency_seconds("nvlink") == 3.4e-6
    assert topology.link_latency_seconds("infiniband") == 14e-6
    assert topology.link_efficiency("nvlink", "h100") == pytest.approx(20.6 / 25, abs=5e-4)


def test_nccl_protocol_table_is_its_ring_latencies_and_bandwidth_shares():
    # tuning.cc (2.30.7): Ring LL / LL128 / Simple = 0.6 / 1.9 / 3.4 us on NVLink, 2.7 / 4.0 / 14 us on
    # the network; LL keeps half the bus bandwidth, LL128 0.92 of it
    from scalebook import topology

    nvl, net = topology.link_protocols("nvlink"), topology.link_protocols("infiniband")
    assert {p: (round(r * 3.4e-6, 12), f) for p, (r, f) in nvl.items()} == {
        "LL": (0.6e-6, 0.5), "LL128": (1.9e-6, 0.92), "Simple": (3.4e-6, 1.0)}
    assert {p: (round(r * 14e-6, 12), f) for p, (r, f) in net.items()} == {
        "LL": (2.7e-6, 0.5), "LL128": (4.0e-6, 0.92), "Simple": (14e-6, 1.0)}
    assert topology.link_protocols("ici") == {"Simple": (1.0, 1.0)}
