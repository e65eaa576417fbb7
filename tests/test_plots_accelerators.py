"""Chapter 2 figures: each function draws and returns a Figure (Agg backend, no display)."""
import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from scalebook import Error  # noqa: E402
from scalebook.plots import accelerators as A  # noqa: E402


@pytest.fixture(autouse=True)
def _close():
    yield
    plt.close("all")


@pytest.mark.parametrize("draw", [
    lambda: A.systolic_steps(),
    lambda: A.systolic_steps(size=3, rows=2, steps=[0, 2, 4], ncols=3),
    lambda: A.mxu_padding(),
    lambda: A.torus_2d(),
    lambda: A.torus_2d((3, 5), wrap=(False, True)),
    lambda: A.torus_compare(),
    lambda: A.torus_3d(),
    lambda: A.bandwidth_tiers(),
    lambda: A.gpu_node("h100"),
    lambda: A.gpu_node("b200"),
    lambda: A.fat_tree(),
    lambda: A.gpu_cluster(),
])
def test_each_plot_returns_a_figure(draw):
    assert isinstance(draw(), Figure)


def test_plots_draw_into_a_given_axes():
    fig, ax = plt.subplots()
    assert A.mxu_padding(ax=ax) is fig
    fig2, ax2 = plt.subplots()
    assert A.torus_2d(ax=ax2) is fig2


def test_plots_are_exported_from_the_plots_package():
    import scalebook.plots as P

    for name in A.__all__:  # each drawn under the book's style (scalebook/plots/_style.py)
        assert getattr(P, name).__wrapped__ is getattr(A, name)


def test_systolic_pass_takes_rows_plus_twice_size_minus_two_steps():
    size, rows = 4, 3
    busy = [len(A.systolic_active(size, rows, t)) for t in range(rows + 2 * size - 1)]
    assert busy[-1] == 0 and busy[-2] > 0
    assert sum(busy) == rows * size * size  # every multiply-add happens exactly once


def test_tier_bandwidths_count_one_direction_per_chip():
    t = A.tier_bandwidths("tpu-v5p")
    assert t["chip-to-chip"] == 6 * 90e9  # six links of a 3D torus, 90 GB/s each way
    assert A.tier_bandwidths("h100")["chip-to-chip"] == 450e9
    assert A.tier_bandwidths("h100")["host PCIe"] == 64e9  # PCIe Gen5 x16, one direction


def test_bad_input_raises_error():
    with pytest.raises(Error):
        A.systolic_steps(size=4, rows=3, steps=[99])
    with pytest.raises(Error):
        A.gpu_node("tpu-v5e")
    with pytest.raises(Error):
        A.torus_3d((4, 4))
