"""scalebook.plots (chapter 1): every figure function returns a matplotlib Figure."""
import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from scalebook import Error, plots, roofline  # noqa: E402
from scalebook.measure import CopyResult, MatmulResult, Measurement  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402


@pytest.fixture(autouse=True)
def _close():
    yield
    plt.close("all")


def _measurement(chip=None):
    mm = (MatmulResult(1, 1024, 1024, "fp32", 1e-3), MatmulResult(512, 1024, 1024, "fp32", 1e-2))
    cp = (CopyResult(16_000_000, "fp32", 2e-3),)
    return Measurement("cpu", "cpu", chip, mm, cp, 1.0,
                       197e12 if chip else None, 820e9 if chip else None)


def test_roofline_with_several_chips_and_ops():
    ops = {"dot product": 0.5, "matmul": roofline.matmul("tpu-v5e", batch=512, d_model=4096, d_ff=4096)}
    assert isinstance(plots.roofline(["tpu-v5e", "h100", "b200"], ops=ops), Figure)


def test_roofline_draws_into_a_given_axis():
    fig, ax = plt.subplots()
    assert plots.roofline("h100", ax=ax) is fig


def test_critical_intensity_bars():
    assert isinstance(plots.critical_intensity_bars(), Figure)
    assert isinstance(plots.critical_intensity_bars(["tpu-v5e", "h100"], ("bf16", "int8")), Figure)


def test_time_vs_batch():
    assert isinstance(plots.time_vs_batch("tpu-v5e"), Figure)
    assert isinstance(plots.time_vs_batch("h100", weight_dtype="int8"), Figure)


def test_time_budgets():
    rs = {"a": roofline.op("tpu-v5e", flops=1e12, hbm_bytes=1e9, comm_bytes=1e8),
          "b": roofline.op("tpu-v5e", flops=1e10, hbm_bytes=4e9)}
    assert isinstance(plots.time_budgets(rs, unit="ms"), Figure)


def test_split_matmul_time_draws_a_figure():
    assert isinstance(plots.split_matmul_time(["tpu-v5e", "h100"]), Figure)


@pytest.mark.parametrize("chip", [None, "tpu-v5e"])
def test_measured_roofline(chip):
    assert isinstance(plots.measured_roofline(_measurement(chip)), Figure)


def test_bad_input_raises_error():
    with pytest.raises(Error):
        plots.roofline([])
    with pytest.raises(Error):
        plots.time_budgets({})
