"""Chapter 11's figure: draws and returns a Figure (Agg backend), with the book's thresholds."""
import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from scalebook import Error, plots  # noqa: E402


def test_threshold_ladder_returns_a_figure_with_three_bars_per_chip():
    fig = plots.threshold_ladder(("tpu-v5e", "h100"))
    assert isinstance(fig, matplotlib.figure.Figure)
    ax = fig.axes[0]
    assert len(ax.patches) == 6
    # TPU v5e: 197 TFLOP/s over 820 GB/s of HBM, over 90 GB/s of ICI, over its DCN share
    heights = [p.get_height() for p in ax.patches]
    assert heights[0] == pytest.approx(197e12 / 820e9)
    assert heights[1] == pytest.approx(197e12 / 90e9)
    # H100: 990 TFLOP/s over 3.4 TB/s, over 450 GB/s of NVLink, over 50 GB/s of InfiniBand
    assert heights[3:] == pytest.approx([990e12 / 3.4e12, 990e12 / 450e9, 990e12 / 50e9])
    plt.close(fig)


def test_draws_into_a_given_axes():
    fig, ax = plt.subplots()
    assert plots.threshold_ladder(ax=ax) is fig
    plt.close(fig)


def test_no_chips_is_an_error():
    with pytest.raises(Error):
        plots.threshold_ladder(())
