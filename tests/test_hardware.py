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
