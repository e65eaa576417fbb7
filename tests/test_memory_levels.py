"""memory_levels: rooflines at VMEM/SMEM, HBM and the host link (chapter 2b)."""
import pytest

from scalebook import Error, memory_levels as ml


def test_vmem_critical_intensity_is_22_times_lower_than_hbm():
    # v5e: 197e12 / (22 x 820e9) = 10.9 FLOPs/byte
    assert ml.critical_intensity("tpu-v5e", "vmem") == pytest.approx(197e12 / (22 * 820e9))


def test_smem_critical_intensity_of_an_h100():
    # 990e12 / (132 SMs x 128 B x 1.98e9) = 29.6 FLOPs/byte
    assert ml.critical_intensity("h100", "smem") == pytest.approx(990e12 / (132 * 128 * 1.98e9))


def test_host_critical_intensity_uses_one_pcie_direction():
    # v5e: 197e12 / 16e9 = 12,312 FLOPs per byte copied from the host
    assert ml.critical_intensity("tpu-v5e", "host") == pytest.approx(197e12 / 16e9)


def test_wrong_level_for_the_vendor_raises():
    with pytest.raises(Error, match="smem"):
        ml.level_bytes_per_s("h100", "vmem")
    with pytest.raises(Error, match="valid"):
        ml.level_bytes_per_s("h100", "l3")


def test_roofline_below_the_vmem_critical_intensity_is_bandwidth_bound():
    # an elementwise add of two 1 MiB bf16 arrays: 512 Ki FLOPs, 3 MiB moved through VMEM
    r = ml.roofline("tpu-v5e", flops=2**19, bytes_=3 * 2**20, level="vmem")
    assert r.bound == "local bandwidth"
    assert r.seconds == pytest.approx(3 * 2**20 / (22 * 820e9))


def test_host_transfer_runs_in_parallel_over_each_chips_link():
    # 140 GB over 8 H100s, each 64 GB/s one way: 140e9 / (8 x 64e9) s
    assert ml.host_transfer_seconds("h100", 140e9, chips=8) == pytest.approx(140e9 / (8 * 64e9))


def test_gb200_host_link_is_its_share_of_the_superchips_nvlink_c2c():
    # GB200 datasheet: NVLink-C2C 900 GB/s (both directions) per superchip of 2 GPUs -> 900e9 / 2 / 2 one way
    assert ml.level_bytes_per_s("gb200", "host") == 900e9 / 2 / 2


def test_smem_capacity_is_per_sm_times_sms():
    assert ml.level_capacity_bytes("h100", "smem") == 132 * 256 * 1024  # 256 KB (KiB, as NVIDIA counts SRAM) per SM


def test_square_tile_intensity_is_side_over_bytes():
    # 2 x 256 x 256 / ((256 + 256) x 2 bytes) = 128
    assert ml.output_tile_intensity(256, 256) == 128


def test_min_square_tile_reaches_the_hbm_critical_intensity():
    # H100: 2 bytes x 990e12 / 3.4e12 = 582.4 -> 583
    assert ml.min_square_tile("h100") == 583
