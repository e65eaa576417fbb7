"""plots.gpus: each figure of chapter 2b draws and returns its Figure."""
import matplotlib

matplotlib.use("Agg")

import pytest

from scalebook.plots import gpus


@pytest.mark.parametrize("fn", [gpus.memory_levels_chart, gpus.gpu_generations, gpus.all_reduce_scaling,
                                gpus.hierarchical_stages, gpus.parallelism_batches])
def test_figure_draws_data(fn):
    fig = fn()
    ax = fig.axes[0]
    assert ax.lines or ax.patches


def test_hierarchical_stages_stacks_three_stages_per_chip():
    fig = gpus.hierarchical_stages(("h100", "gb200"))
    assert len(fig.axes[0].patches) == 2 * 3
