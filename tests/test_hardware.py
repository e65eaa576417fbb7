"""hardware: the spec table and how its bandwidths are counted."""
import pytest

from scalebook import Error, chip, chip_names, chips

ALL = ["tpu-v4p", "tpu-v5e", "tpu-v5p", "tpu-v6e", "tpu-7x", "a100", "h100", "h200", "b200", "gb200"]


def test_every_chip_of_the_issue_is_in_the_table():
    assert chip_names() == ALL


@pytest.mark.parametrize("name", ALL)
def test_every_chip_has_positive_core_figures_and_a_source(name):
    c = chip(name)
    assert c.hbm_bytes > 0 and c.hbm_bytes_per_s > 0 and c.peak_flops_per_s("bf16") > 0
    assert c.collective_bytes_per_s > 0
    assert c.sources and all(c.sources.values())


def test_v5e_figures_match_the_published_table():
    c = chip("tpu-v5e")
    assert c.peak_flops_per_s("bf16") == 1.97e14
    assert c.peak_flops_per_s("int8") == 3.94e14
    assert c.hbm_bytes_per_s == 8.2e11
    assert c.hbm_bytes == 16e9


def test_tpu_collective_bandwidth_is_the_bidirectional_link_figure():
    c = chip("tpu-v5p")
    assert c.ici_bidi_bytes_per_s == 2 * c.ici_one_way_bytes_per_s
    assert c.collective_bytes_per_s == c.ici_bidi_bytes_per_s


def test_gpu_collective_bandwidth_is_one_way_nvlink_egress():
    assert chip("h100").collective_bytes_per_s == 450e9
    assert chip("b200").collective_bytes_per_s == 900e9


def test_h200_takes_hopper_nvlink_and_says_so():
    c = chip("h200")
    assert c.ici_one_way_bytes_per_s == chip("h100").ici_one_way_bytes_per_s
    assert "NVLink" in c.sources


def test_gb200_is_a_72_gpu_nvlink_domain():
    c = chip("gb200")
    assert c.nvlink_domain == 72 and c.node_egress_bytes_per_s == 3.6e12


@pytest.mark.parametrize("alias", ["v5e", "TPU v5e", "tpu_v5e", "TPU-V5E"])
def test_chip_accepts_common_spellings(alias):
    assert chip(alias).name == "tpu-v5e"


def test_unknown_chip_raises_error_listing_valid_names():
    with pytest.raises(Error, match="valid: tpu-v4p"):
        chip("tpu-v9")


def test_compute_dtype_falls_back_to_a_wider_dtype():
    assert chip("tpu-v5e").compute_dtype("fp8") == "bf16"
    assert chip("tpu-v5e").compute_dtype("int4") == "int8"
    assert chip("h100").compute_dtype("fp8") == "fp8"


def test_peak_of_a_missing_dtype_raises_error():
    with pytest.raises(Error, match="valid: bf16"):
        chip("tpu-v5e").peak_flops_per_s("fp32")


def test_chips_lists_tpus_before_gpus():
    vendors = [c.vendor for c in chips()]
    assert vendors == sorted(vendors, key=lambda v: v != "Google")


def test_a100_has_int8_but_no_fp8_tensor_cores():
    c = chip("a100")
    assert "int8" in c.flops_per_s and "fp8" not in c.flops_per_s
    assert c.compute_dtype("fp8") == "bf16"


# --- review fixes (issue 10) and micro-architecture -------------------------------------------

def test_tpu7x_has_native_fp8_and_no_int8_peak():
    c = chip("tpu-7x")
    assert c.peak_flops_per_s("fp8") == 4.614e15
    assert "int8" not in c.flops_per_s


@pytest.mark.parametrize("name, gib", [("tpu-v5p", 95), ("tpu-7x", 192)])
def test_hbm_published_in_gib_is_stored_as_bytes(name, gib):
    # 95 GiB = 95 x 1024^3 bytes = 102.0 GB, not 95 GB
    assert chip(name).hbm_bytes == gib * 1024**3


def test_a100_node_has_eight_200_gbit_hdr_nics():
    # 8 NICs x 200 Gbit/s / 8 bits per byte = 200 GB/s per node, 25 GB/s per GPU
    c = chip("a100")
    assert c.node_egress_bytes_per_s == 8 * 200e9 / 8
    assert c.dcn_bytes_per_s == 25e9


def test_gb200_has_its_own_peaks_and_hbm_not_b200s():
    # GB200 superchip datasheet: 10 PFLOP/s bf16 with sparsity for 2 GPUs -> 2.5 PFLOP/s dense per GPU
    c = chip("gb200")
    assert c.peak_flops_per_s("bf16") == 10e15 / 2 / 2
    assert c.peak_flops_per_s("fp8") == 20e15 / 2 / 2
    assert c.hbm_bytes == 13.4e12 / 72 // 1e9 * 1e9
    assert c.peak_flops_per_s("bf16") != chip("b200").peak_flops_per_s("bf16")


def test_h800_is_an_export_variant_outside_the_main_table():
    c = chip("h800")
    # NVLink: 400 GB/s counting both directions (H800 SXM5 specifications) -> 200 GB/s one way
    assert c.ici_one_way_bytes_per_s == 400e9 / 2 and c.peak_flops_per_s("fp8") == 3.026e15 / 2
    assert "h800" not in chip_names()
    from scalebook.hardware import export_variants
    assert [v.name for v in export_variants()] == ["h800"]


def test_dense_flops_halves_a_2_4_sparse_spec_sheet_figure():
    from scalebook.hardware import dense_flops_per_s
    assert dense_flops_per_s(1.979e15) == pytest.approx(989.5e12)


def test_dense_flops_rejects_an_unknown_pattern():
    from scalebook.hardware import dense_flops_per_s
    with pytest.raises(Error, match="valid: 2:4"):
        dense_flops_per_s(1e15, pattern="1:4")


def test_v5e_micro_rebuilds_its_peak_from_four_128_mxus():
    # 4 MXUs x 128 x 128 cells x 2 FLOPs x 1.5 GHz = 196.6 TFLOP/s (datasheet: 197)
    m = chip("tpu-v5e").micro
    assert (m.cores_per_chip, m.matrix_units_per_chip, m.mxu_side) == (1, 4, 128)
    assert m.peak_from_parts_flops_per_s() == pytest.approx(4 * 128 * 128 * 2 * 1.5e9)
    assert m.local_memory_bytes == 128 * 2**20


def test_v5e_vmem_bandwidth_is_22_times_hbm():
    assert chip("tpu-v5e").micro.local_memory_bytes_per_s == pytest.approx(22 * 820e9)


def test_h100_micro_counts_sms_tensor_cores_and_smem_bandwidth():
    m = chip("h100").micro
    assert (m.cores_per_chip, m.matrix_units_per_chip, m.vector_lanes) == (132, 528, 16896)
    # 132 SMs x 128 bytes/clock x 1.98 GHz
    assert m.local_memory_bytes_per_s == pytest.approx(132 * 128 * 1.98e9)
    assert m.l2_bytes == 50e6 and m.tmem_bytes_per_sm is None


def test_h100_implied_clock_from_its_dense_peak():
    # 990e12 / (528 tensor cores x 1024 FLOPs/cycle) = 1.831 GHz
    assert chip("h100").micro.implied_clock_hz() == pytest.approx(990e12 / (528 * 1024))


def test_blackwell_has_tensor_memory_and_gb200_shares_b200_parts():
    # PTX ISA: 512 columns x 128 lanes of 32-bit cells = 256 KiB per SM
    assert chip("b200").micro.tmem_bytes_per_sm == 512 * 128 * 4
    assert chip("gb200").micro.cores_per_chip == chip("b200").micro.cores_per_chip == 148


def test_unpublished_parts_raise_instead_of_guessing():
    with pytest.raises(Error, match="not publish"):
        chip("tpu-7x").micro.peak_from_parts_flops_per_s()
    assert chip("tpu-7x").micro.mxu_side is None


def test_spec_data_is_a_copy_readers_cannot_corrupt():
    from scalebook import hardware

    data = hardware.spec_data()
    data["tpu"]["TPU v5e"]["hbm_bw_bytes_per_s"] = 1.0
    assert hardware.spec_data()["tpu"]["TPU v5e"]["hbm_bw_bytes_per_s"] == 8.2e11
    assert hardware.chip("tpu-v5e").hbm_bytes_per_s == 8.2e11


def test_sm_sram_sizes_are_binary_kilobytes():
    # Hopper whitepaper: 65,536 32-bit registers per SM = 256 KiB; 256 KB combined L1/shared memory
    m = chip("h100").micro
    assert m.register_bytes_per_core == 65536 * 4 == 256 * 1024
    assert m.local_memory_bytes == 256 * 1024


def test_b200_keeps_nominal_and_dgx_b200_memory():
    # nominal 192 GB per chip; the DGX B200 user guide: 1,440 GB for 8 GPUs = 180 GB each
    from scalebook.hardware import spec_data
    b = spec_data()["gpu"]["B200"]
    assert chip("b200").hbm_bytes == 192e9
    assert b["dgx_b200_total_gpu_memory_bytes"] / b["dgx_b200_gpus"] == 180e9


def test_v6e_hbm_is_32_gb_as_google_publishes_it():
    # Google Cloud TPU v6e page: "HBM capacity per chip | 32 GB"
    assert chip("tpu-v6e").hbm_bytes == 32e9


def test_tpu_v2_is_recorded_like_v3_but_not_listed_as_a_chip():
    # Two TensorCores with separate HBM: each core is a device, as on v3, so neither is a Chip.
    from scalebook.hardware import spec_data
    tpu = spec_data()["tpu"]
    v2 = tpu["TPU v2"]
    assert v2["cores_per_chip"] == tpu["TPU v3"]["cores_per_chip"] == 2
    assert v2["megacore"] is False and tpu["TPU v3"]["megacore"] is False
    assert "tpu-v2" not in chip_names() and "tpu-v3" not in chip_names()
    with pytest.raises(Error):
        chip("tpu-v2")


def test_tpu_v2_figures_match_the_sources_read():
    from scalebook.hardware import spec_data
    v2 = spec_data()["tpu"]["TPU v2"]
    assert v2["peak_bf16_flops_per_s"] == 45e12           # Tom's Hardware, Hot Chips 2017
    assert v2["hbm_bw_bytes_per_s"] == 700e9              # AnandTech, Hot Chips 2020: "700 GB/s per chip"
    assert v2["hbm_capacity_bytes"] == 32 * 2**30 / 2     # v3's 32 GiB (Google) halved ("2x HBM" on v3)
    assert v2["pod_chips"] == 256                         # Google's v2 page: 256 chips, 512 TensorCores
    assert v2["ici_bw_one_way_per_link_bytes_per_s"] is None and v2["ici_note"]
    assert all(v2["sources"].values())


def test_tpu_v2_parts_rebuild_its_peak_within_the_rounding_of_the_published_figure():
    # By hand: 2 cores x 1 MXU x (2 x 128 x 128 FLOPs per cycle) x 700 MHz = 45.8752 TFLOP/s.
    from scalebook.hardware import spec_data
    v2 = spec_data()["tpu"]["TPU v2"]
    side = int(v2["mxu_shape"].split("x")[0])
    parts = v2["cores_per_chip"] * v2["mxus_per_core"] * 2 * side * side * v2["mxu_clock_hz"]
    assert parts == pytest.approx(45.8752e12)
    assert abs(parts / v2["peak_bf16_flops_per_s"] - 1) < 0.02
