"""Chapter 3's hop map and idle-axes figures (Agg backend)."""
import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from scalebook import Error, topology  # noqa: E402
from scalebook.plots import sharding as sp  # noqa: E402


@pytest.fixture(autouse=True)
def _close():
    yield
    plt.close("all")


def test_hop_grid_on_a_wrapped_torus_peaks_at_the_centre():
    grid = sp.hop_grid(topology.slice("tpu-v5e", "16x16"), (0, 0))
    assert grid[15][15] == 2 and grid[8][8] == 16 and max(max(r) for r in grid) == 16


def test_hop_grid_without_wraparound_peaks_at_the_far_corner():
    grid = sp.hop_grid(topology.slice("tpu-v5e", "4x4"), (0, 0))
    assert grid[3][3] == 6 and max(max(r) for r in grid) == 6


def test_hop_grid_refuses_a_3d_slice():
    with pytest.raises(Error, match="2D"):
        sp.hop_grid(topology.slice("tpu-v5p", "4x4x4"), (0, 0, 0))


def test_figures_are_returned():
    assert isinstance(sp.hop_map(topology.slice("tpu-v5e", "8x16")), Figure)
    fig = sp.idle_axes(topology.slice("tpu-v5e", "16x16"), axis="X", idle="Y", bytes_=1e9)
    assert isinstance(fig, Figure) and len(fig.axes[0].patches) == 6
