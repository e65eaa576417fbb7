"""scalebook.efficiency: matmul time from its shape (issue 18, item 5), each case derived by hand."""
import pytest

import scalebook
from scalebook import efficiency


def test_a100_wave_quantisation_of_a_small_projection():
    # (2048 x K) @ (K x 2304): 256 x 128 tiles, the long side along 256: ceil(2304/256) = 9 by
    # ceil(2048/128) = 16 = 144 tiles on 108 SMs: 2 waves, of which 144 / 216 do work
    assert efficiency.quantisation("a100", 2048, 2304, 2304) == pytest.approx(144 / 216)


def test_whole_waves_of_whole_tiles_lose_nothing():
    # 108 tiles of 256 x 128 on 108 SMs: one full wave
    assert efficiency.quantisation("a100", 108 * 256, 4096, 128) == pytest.approx(1.0)


def test_tpu_pads_every_dimension_to_the_mxu():
    # v5e: one TensorCore, 128 x 128 MXUs: a 100-row matmul fills 100 of 128 rows of its one tile
    assert efficiency.quantisation("tpu-v5e", 100, 128, 128) == pytest.approx(100 / 128)
    # v6e's 256 x 256 MXU: 128 x 128 x 128 uses an eighth of a 256-cube of work
    assert efficiency.quantisation("tpu-v6e", 128, 128, 128) == pytest.approx(1 / 8)


def test_batched_heads_fill_the_waves_together():
    # 16 heads of (2048 x 128) @ (128 x 2048) on H100: 16 x 8 x 16 = 2048 tiles on 132 SMs, 16 waves
    q = efficiency.quantisation("h100", 2048, 128, 2048, batch=16)
    assert q == pytest.approx(2048 / (16 * 132))


def test_a_skinny_matmul_is_memory_bound():
    # 8 rows against an 8192 x 8192 bf16 weight: the weight's bytes dominate
    h100 = scalebook.chip("h100")
    t = efficiency.matmul_seconds("h100", 8, 8192, 8192, eff_kernel=0.6)
    assert t == pytest.approx(2 * (8 * 8192 + 8192 * 8192 + 8 * 8192) / h100.hbm_bytes_per_s)


def test_a_large_aligned_matmul_runs_at_the_fitted_rate():
    a100 = scalebook.chip("a100")
    m, k, n = 108 * 256, 8192, 128 * 8
    t = efficiency.matmul_seconds("a100", m, k, n, eff_kernel=0.5)
    assert t == pytest.approx(2 * m * k * n / (a100.peak_flops_per_s("bf16") * 0.5))


@pytest.mark.parametrize("kw", [dict(m=0, k=1, n=1), dict(m=1, k=-1, n=1), dict(m=1, k=1, n=float("nan"))])
def test_bad_dimensions_raise_error(kw):
    with pytest.raises(scalebook.Error):
        efficiency.quantisation("h100", **kw)


def test_eff_kernel_must_be_a_fraction():
    with pytest.raises(scalebook.Error):
        efficiency.matmul_seconds("h100", 128, 128, 128, eff_kernel=1.5)
