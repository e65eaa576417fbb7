"""Chapter 4's attention and MoE figures draw what the package computes."""
import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from scalebook import Error, plots, roofline  # noqa: E402
from scalebook import transformer as tr  # noqa: E402
from scalebook.models import preset  # noqa: E402


@pytest.fixture(autouse=True)
def _close():
    yield
    plt.close("all")


def test_decode_curves_are_flat_near_the_group_size_and_prefill_rises():
    fig = plots.attention_intensity_curves("llama3-70b", chips=("h100",), batches=(1, 64), max_seq_len=65536)
    lines = fig.axes[0].get_lines()
    prefill, decode_1, decode_64 = lines[0], lines[1], lines[2]
    assert prefill.get_ydata()[-1] > 100 * prefill.get_ydata()[0]
    assert list(decode_1.get_ydata()) == list(decode_64.get_ydata())
    assert decode_1.get_ydata()[-1] == pytest.approx(64 / 8, rel=1e-3)     # N / K of LLaMA-3 70B


def test_flash_attention_bars_stack_two_forward_and_five_backward_matmuls():
    fig = plots.flash_attention_passes("llama3-8b", seq_len=1024)
    one = tr.flash_attention_cost(preset("llama3-8b"), batch=1, seq_len=1024).recompute_flops / 1e12
    heights = [p.get_height() for p in fig.axes[0].patches]
    assert heights == pytest.approx([one] * 7)


def test_moe_bars_are_the_dense_critical_batch_times_experts_over_top_k():
    fig = plots.moe_batch_bars(("mixtral-8x7b",), chips=("h100",))
    dense, moe = (p.get_height() for p in fig.axes[0].patches)
    assert moe == pytest.approx(dense * 8 / 2)
    assert dense == pytest.approx(roofline.critical_batch("h100"))


def test_attention_curves_reject_a_non_positive_length():
    with pytest.raises(Error, match="max_seq_len"):
        plots.attention_intensity_curves(max_seq_len=0)
