"""The chip table pinned against the published specs, written to kill mutants `make mutate` found.

The package builds its chip table once per process and keeps it. Mutation testing runs each
mutant in a process that has already built the table, so a test that only reads `chip(...)`
never runs the code that builds it. Every test here therefore starts from an empty table
(`fresh_table`), so that the figures it checks are the ones the builder makes from the spec
file. Figures come from the sources the spec file cites: Google's TPU pages and the spec
tables of Austin et al. (2025) for TPUs, NVIDIA's datasheets and whitepapers for GPUs.
"""
import dataclasses

import pytest

from scalebook import Error, chip, chip_names, chips, hardware

TPUS = ["tpu-v4p", "tpu-v5e", "tpu-v5p", "tpu-v6e", "tpu-7x"]
GPUS = ["a100", "h100", "h200", "b200", "gb200"]


@pytest.fixture(autouse=True)
def fresh_table():
    hardware._CHIPS.clear()
    hardware._VARIANTS.clear()
    yield
    hardware._CHIPS.clear()
    hardware._VARIANTS.clear()


# --- names -----------------------------------------------------------------------------------

def test_every_chip_is_filed_under_its_own_name():
    assert [c.name for c in chips()] == TPUS + GPUS
    assert all(chip(n).name == n for n in chip_names())
    assert chip("h800").name == "h800"


@pytest.mark.parametrize("alias, name", [
    ("tpu7x", "tpu-7x"), ("Ironwood", "tpu-7x"), ("7x", "tpu-7x"), ("TPU7x", "tpu-7x"),
    ("Trillium", "tpu-v6e"), ("v4", "tpu-v4p"), ("TPU v4", "tpu-v4p"),
    ("NVIDIA H100", "h100"), ("nvidia_b200", "b200"), ("  H800 ", "h800"),
])
def test_marketing_names_and_generation_names_find_the_chip(alias, name):
    assert chip(alias).name == name


def test_a_chip_passes_through_and_a_non_name_is_refused_saying_what_is_valid():
    c = chip("h100")
    assert chip(c) is c
    with pytest.raises(Error, match=r"chip must be a name like 'tpu-v5e' or 'h100', got 5"):
        chip(5)


def test_an_unknown_chip_lists_every_valid_name_including_the_export_variant():
    with pytest.raises(Error) as e:
        chip("tpu-v9")
    assert str(e.value) == ("unknown chip 'tpu-v9'; valid: tpu-v4p, tpu-v5e, tpu-v5p, tpu-v6e, tpu-7x, "
                            "a100, h100, h200, b200, gb200, h800")


# --- TPU figures -------------------------------------------------------------------------------

def test_v5e_is_a_google_2d_torus_of_16x16_with_8_chips_per_host():
    c = chip("tpu-v5e")
    assert (c.display_name, c.vendor, c.is_tpu) == ("TPU v5e", "Google", True)
    assert (c.torus_dims, c.pod_topology, c.chips_per_host) == (2, "16x16", 8)
    assert (c.nvlink_domain, c.node_egress_bytes_per_s) == (0, None)


def test_v5e_links_one_way_45_gb_s_bidi_90_pcie_16_and_dcn_3_125_per_chip():
    # DCN: 25 GB/s of host NIC shared by 8 chips = 3.125 GB/s each
    c = chip("tpu-v5e")
    assert (c.ici_one_way_bytes_per_s, c.ici_bidi_bytes_per_s) == (45e9, 90e9)
    assert (c.pcie_bytes_per_s, c.dcn_bytes_per_s) == (16e9, 3.125e9)


def test_tpu_hbm_figures_of_the_published_table():
    assert (chip("tpu-v5p").hbm_bytes_per_s, chip("tpu-v6e").hbm_bytes_per_s) == (2.8e12, 1.6e12)
    assert chip("tpu-v4p").hbm_bytes == 32e9


@pytest.mark.parametrize("name, display", [
    ("tpu-v4p", "TPU v4p"), ("tpu-v5p", "TPU v5p"), ("tpu-v6e", "TPU v6e (Trillium)"),
    ("tpu-7x", "TPU7x (Ironwood)"), ("a100", "A100"), ("h200", "H200"), ("gb200", "GB200 (NVL72)"),
    ("h800", "H800"),
])
def test_display_names(name, display):
    assert chip(name).display_name == display


def test_v5p_and_7x_are_3d_tori_with_4_chips_per_host():
    # TPU7x's record gives no torus_dims: its 4x4x576 topology has three sides
    assert [(chip(n).torus_dims, chip(n).chips_per_host) for n in ("tpu-v5p", "tpu-7x")] == [(3, 4), (3, 4)]
    assert chip("tpu-7x").pod_topology == "4x4x576"


@pytest.mark.parametrize("name, units", [
    ("tpu-v5e", "4 MXUs of 128x128"),            # 1 TensorCore x 4 MXUs
    ("tpu-v5p", "8 MXUs of 128x128"),            # 2 TensorCores x 4 MXUs
    ("tpu-v4p", "8 MXUs of 128x128"),            # 2 TensorCores x 4 MXUs
    ("tpu-v6e", "MXUs of 256x256"),              # size published, count not
    ("tpu-7x", "MXUs (size not published)"),
    ("h100", "132 SMs with tensor cores"),
    ("gb200", "148 SMs with tensor cores"),      # B200's dies
])
def test_matrix_units_in_words(name, units):
    assert chip(name).matrix_units == units


def test_tpu_peaks_per_dtype():
    assert dict(chip("tpu-v5e").flops_per_s) == {"bf16": 197e12, "int8": 394e12}
    # TPU7x: native fp8 (4,614 TFLOP/s on Google's page), no published int8
    assert dict(chip("tpu-7x").flops_per_s) == {"bf16": 2.3e15, "fp8": 4.614e15}


def test_tpu_sources_keep_the_general_citation_and_the_records_own():
    s = chip("tpu-v5p").sources
    assert s["all"] == ("Austin et al. 2025, How to Scale Your Model, Part 2 (TPUs) spec tables; "
                        "Google Cloud TPU system architecture docs")
    assert s["HBM"] == "googletpudocs"


@pytest.mark.parametrize("name, group, key", [
    ("tpu-7x", "tpu", "TPU7x (Ironwood)"), ("h100", "gpu", "H100"), ("gb200", "gpu", "GB200 NVL72"),
    ("h800", "gpu", "H800"),
])
def test_a_chips_notes_are_its_records_notes(name, group, key):
    notes = hardware.spec_data()[group][key]["notes"]
    assert notes and chip(name).notes == notes


def test_a_record_without_notes_has_empty_notes():
    assert chip("tpu-v4p").notes  # v4p has notes; a100 has none
    assert chip("a100").notes == ""


# --- GPU figures -------------------------------------------------------------------------------

def test_h100_is_an_nvidia_node_of_8_gpus_at_450_gb_s_with_400_gb_s_of_infiniband():
    # 8 x 400 Gbit/s NICs = 400 GB/s per node, 50 GB/s per GPU
    c = chip("h100")
    assert (c.display_name, c.vendor, c.is_tpu) == ("H100", "NVIDIA", False)
    assert (c.ici_one_way_bytes_per_s, c.ici_bidi_bytes_per_s) == (450e9, None)
    assert (c.nvlink_domain, c.pod_topology, c.chips_per_host, c.torus_dims) == (8, "8", 8, 0)
    assert (c.node_egress_bytes_per_s, c.dcn_bytes_per_s) == (400e9, 50e9)


def test_gpu_pcie_is_one_direction_of_an_x16_slot():
    # PCIe Gen4 x16 (A100): 32 GB/s each way; Gen5 x16 (H100, B200): 64 GB/s
    assert [chip(n).pcie_bytes_per_s for n in ("a100", "h100", "b200")] == [32e9, 64e9, 64e9]


def test_gpu_peaks_per_dtype():
    # Hopper and later have fp8 tensor cores at the int8 rate; Blackwell adds fp4
    assert set(chip("a100").flops_per_s) == {"bf16", "int8"}
    assert set(chip("h100").flops_per_s) == {"bf16", "int8", "fp8"}
    assert set(chip("b200").flops_per_s) == {"bf16", "int8", "fp8", "fp4"}
    assert chip("h100").peak_flops_per_s("fp8") == chip("h100").peak_flops_per_s("int8")


def test_h200_is_an_h100_die_with_more_hbm_and_borrows_hoppers_network():
    # H200 datasheet: 141 GB of HBM3e at 4.8 TB/s; NVLink 4 (450 GB/s) and an H100 node's NICs
    c = chip("h200")
    assert (c.hbm_bytes, c.hbm_bytes_per_s) == (141e9, 4.8e12)
    assert (c.ici_one_way_bytes_per_s, c.node_egress_bytes_per_s, c.dcn_bytes_per_s) == (450e9, 400e9, 50e9)
    assert c.sources["NVLink"] == ("NVLink generation of Hopper GPUs "
                                   "(Austin et al. 2025, How to Scale Your Model, Part 12)")
    assert c.sources["InfiniBand"] == "assumed as for an 8-GPU H100 node (8 x 400 Gbps NICs)"


def test_b200_has_its_own_nvlink_and_no_borrowed_figures():
    c = chip("b200")
    assert c.ici_one_way_bytes_per_s == 900e9 and c.node_egress_bytes_per_s == 400e9
    assert "NVLink" not in c.sources and "InfiniBand" not in c.sources
    assert c.sources["all"] == ("Austin et al. 2025, How to Scale Your Model, Part 12 (GPUs) spec tables; "
                                "NVIDIA datasheets")


@pytest.mark.parametrize("name, key", [("a100", "A100"), ("b200", "B200"), ("gb200", "GB200 NVL72"),
                                       ("h800", "H800")])
def test_a_gpus_sources_carry_every_label_of_its_record(name, key):
    record = hardware.spec_data()["gpu"][key]["sources"]
    sources = chip(name).sources
    assert record and all(sources[label] == where for label, where in record.items())


@pytest.mark.parametrize("name, nvlink", [("a100", 300e9), ("h100", 450e9), ("b200", 900e9), ("gb200", 900e9),
                                          ("h800", 200e9)])
def test_only_the_h200_borrows_its_nvlink_figure_from_its_generation(name, nvlink):
    # NVLink 3 (A100): 12 links x 25 GB/s; NVLink 4: 18 x 25; NVLink 5: 18 x 50; H800: cut to 400 both ways
    c = chip(name)
    assert c.ici_one_way_bytes_per_s == nvlink
    assert "NVLink" not in c.sources


def test_gb200_is_a_rack_of_72_gpus_four_per_host():
    # NVL72: 18 compute trays of 2 superchips = 4 GPUs each; 3.6 TB/s of scale-out per rack
    c = chip("gb200")
    assert (c.nvlink_domain, c.pod_topology, c.chips_per_host) == (72, "72", 4)
    assert c.ici_one_way_bytes_per_s == 900e9
    assert c.dcn_bytes_per_s == pytest.approx(3.6e12 / 72)  # 50 GB/s per GPU


def test_gb200_dense_peaks_per_gpu_are_the_superchip_sheet_halved_twice():
    # sheet, per superchip of 2 GPUs, with 2:4 sparsity: bf16 10, fp8 20, fp4 40 PFLOP/s
    assert dict(chip("gb200").flops_per_s) == {"bf16": 2.5e15, "int8": 5e15, "fp8": 5e15, "fp4": 10e15}


def test_gb200_memory_and_host_link_are_its_own():
    # 8 TB/s of HBM per GPU; NVLink-C2C to Grace: 900 GB/s both ways = 450 GB/s one way
    # 13.4 TB of HBM per rack of 72 GPUs = 186 GB each (B200 alone: 192 GB)
    # NVLink-C2C: 900 GB/s per superchip counting both directions / 2 GPUs / 2 directions = 225 GB/s
    c = chip("gb200")
    assert c.hbm_bytes == 186e9
    assert c.hbm_bytes_per_s == 8e12
    assert c.pcie_bytes_per_s == 225e9
    assert c.sources["SMs and caches"] == "B200 figures (2 B200 + 1 Grace CPU per GB200; NVLink C2C to host)"


def test_h800_is_an_h100_with_nvlink_cut_to_200_gb_s_each_way():
    # fp8: 3,026 TFLOP/s sparse -> 1,513 dense; bf16 half of that
    c = chip("h800")
    h100 = chip("h100")
    assert c.ici_one_way_bytes_per_s == 200e9
    assert dict(c.flops_per_s) == {"bf16": 756.5e12, "int8": 1.513e15, "fp8": 1.513e15}
    assert (c.hbm_bytes, c.hbm_bytes_per_s, c.pcie_bytes_per_s) == (h100.hbm_bytes, h100.hbm_bytes_per_s,
                                                                    h100.pcie_bytes_per_s)
    assert (c.nvlink_domain, c.node_egress_bytes_per_s, c.matrix_units) == (8, 400e9, "132 SMs with tensor cores")
    assert "SMs, caches, clock, cores" not in c.sources  # the H100's own source labels are not carried over


# --- peaks and the dtype a matmul runs in ------------------------------------------------------

def test_the_peak_defaults_to_bf16():
    assert chip("tpu-v5e").peak_flops_per_s() == 197e12


def test_a_missing_peak_lists_the_dtypes_the_chip_has():
    with pytest.raises(Error) as e:
        chip("tpu-v5e").peak_flops_per_s("fp32")
    assert str(e.value) == "tpu-v5e has no fp32 matmul peak in the spec table; valid: bf16, int8"


def test_a_dtype_with_no_wider_path_is_refused_listing_what_the_chip_computes_in():
    with pytest.raises(Error) as e:
        chip("h100").compute_dtype("fp32")
    assert str(e.value) == "h100 cannot compute a matmul in fp32; valid: bf16, int8, fp8"


# --- repr, spec row and notebook table ---------------------------------------------------------

V5E_ROW = {
    "chip": "TPU v5e",
    "bf16 FLOP/s": "197 TFLOP/s",
    "int8/fp8 OP/s": "394 TFLOP/s",
    "HBM": "16 GB",
    "HBM bandwidth": "820 GB/s",
    "chip-to-chip (one way)": "45 GB/s per link",
    "collective W": "90 GB/s per axis (bidi)",
    "domain": "16x16 torus",
    "critical intensity (bf16)": "240 FLOP/B",  # 197e12 / 820e9 = 240.2
}


def test_spec_row_of_a_tpu():
    assert hardware.spec_row("tpu-v5e") == V5E_ROW


def test_spec_row_of_a_gpu_labels_nvlink_egress_and_the_domain():
    row = hardware.spec_row(chip("b200"))
    assert row["chip-to-chip (one way)"] == "900 GB/s per GPU"
    assert row["collective W"] == "900 GB/s egress"
    assert row["domain"] == "8-GPU NVLink"
    assert hardware.spec_row("gb200")["domain"] == "72-GPU NVLink"


def test_spec_row_shows_fp8_when_a_chip_has_no_int8_peak():
    assert hardware.spec_row("tpu-7x")["int8/fp8 OP/s"] == "4.61 PFLOP/s"


def test_repr_names_the_chip_its_bf16_peak_hbm_and_collective_bandwidth():
    assert repr(chip("tpu-v5e")) == "Chip(tpu-v5e: 197 TFLOP/s bf16, HBM 16 GB at 820 GB/s, ICI 90 GB/s)"
    assert repr(chip("b200")).endswith(", NVLink 900 GB/s)")


def test_notebook_table_is_the_spec_row():
    cells = "".join(f"<tr><td>{k}</td><td>{v}</td></tr>" for k, v in V5E_ROW.items())
    assert chip("tpu-v5e")._repr_html_() == f"<table><tbody>{cells}</tbody></table>"


# --- inside the chip ---------------------------------------------------------------------------

def test_a_micro_record_names_its_chip_and_its_kind_of_core():
    assert (chip("tpu-v5e").micro.chip, chip("tpu-v5e").micro.core_kind) == ("tpu-v5e", "TensorCore")
    assert (chip("h100").micro.chip, chip("h100").micro.core_kind) == ("h100", "SM")


def test_v5p_parts_two_cores_at_1_75_ghz_with_vector_units_and_registers():
    # per TensorCore: VPU 7 TFLOP/s fp32 and 8 x 128 x 4 = 4096 ALUs; 64 vregs of 8 x 128 x 4 B = 256 KiB
    m = chip("tpu-v5p").micro
    assert m.clock_hz == 1.75e9
    assert m.vector_flops_per_s == 2 * 7e12
    assert m.vector_lanes == 2 * 4096
    assert m.register_bytes_per_core == 64 * 4096


def test_v5e_clock_is_its_mxu_clock():
    assert chip("tpu-v5e").micro.clock_hz == 1.5e9


def test_gpu_clock_is_the_boost_clock():
    assert (chip("a100").micro.clock_hz, chip("h100").micro.clock_hz) == (1.41e9, 1.98e9)


@pytest.mark.parametrize("name", GPUS)
def test_every_gpu_publishes_a_vector_peak(name):
    assert chip(name).micro.vector_flops_per_s > 0


@pytest.mark.parametrize("name, cores, boost_hz", [("a100", 6912, 1.41e9), ("h100", 16896, 1.98e9)])
def test_cuda_core_peak_is_cores_times_an_fma_times_the_boost_clock(name, cores, boost_hz):
    # A100: 6912 x 2 x 1.41 GHz = 19.5 TFLOP/s; H100 SXM: 16896 x 2 x 1.98 GHz = 66.9 TFLOP/s
    assert chip(name).micro.vector_flops_per_s == pytest.approx(cores * 2 * boost_hz, rel=0.02)


def test_blackwell_tensor_cores_do_twice_hoppers_work_per_clock():
    # Hopper: 1024 dense bf16 FLOPs per tensor core per clock; Blackwell (an estimate): 2048
    assert chip("h100").micro.matrix_unit_flops_per_cycle == 1024
    assert chip("b200").micro.matrix_unit_flops_per_cycle == 2048


@pytest.mark.parametrize("name", GPUS)
def test_each_sm_has_a_256_kb_register_file(name):
    # 64 K registers of 32 bits = 256 KiB (the spec table stores 256 kB)
    assert chip(name).micro.register_bytes_per_core == pytest.approx(256e3, rel=0.03)


@pytest.mark.parametrize("name", ["h100", "b200"])
def test_hopper_and_blackwell_smem_is_at_most_their_256_kib_l1(name):
    # shared memory is carved out of the combined 256 KiB L1: up to 228 KB of it
    assert 228e3 <= chip(name).micro.local_memory_bytes <= 256 * 1024


def test_the_h800_has_the_h100s_parts():
    assert (chip("h800").micro.cores_per_chip, chip("h800").micro.matrix_units_per_chip) == (132, 528)


def test_an_explicit_clock_replaces_the_published_one():
    # v5e at 1 GHz: 4 MXUs x 128 x 128 x 2 FLOPs x 1e9 = 131.072 TFLOP/s
    assert chip("tpu-v5e").micro.peak_from_parts_flops_per_s(clock_hz=1e9) == 131.072e12


def test_no_peak_from_parts_without_a_clock_even_when_the_units_are_known():
    # B200: 592 tensor cores of 2048 FLOPs per clock, clock not published
    with pytest.raises(Error, match="does not publish enough parts"):
        chip("b200").micro.peak_from_parts_flops_per_s()


def test_no_peak_from_parts_without_flops_per_cycle_even_with_a_clock():
    m = dataclasses.replace(chip("h100").micro, matrix_unit_flops_per_cycle=None)
    with pytest.raises(Error, match="does not publish enough parts"):
        m.peak_from_parts_flops_per_s()
    with pytest.raises(Error, match="h100: matrix-unit count or size not published"):
        m.implied_clock_hz()


def test_an_unknown_sparsity_pattern_lists_the_known_ones():
    with pytest.raises(Error) as e:
        hardware.dense_flops_per_s(1e15, pattern="1:4")
    assert str(e.value) == "unknown sparsity pattern '1:4'; valid: 2:4"
