"""Chapter 4's figures: each function draws and returns a Figure (Agg backend)."""
import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from scalebook import Error, plots  # noqa: E402

CALLS = {
    "param_breakdown": {},
    "attention_crossover": {},
    "flops_by_part": {},
    "training_memory_stack": {},
    "kv_cache_per_token": {},
}


@pytest.mark.parametrize("name", sorted(CALLS))
def test_returns_a_figure(name):
    fig = getattr(plots, name)(**CALLS[name])
    assert isinstance(fig, matplotlib.figure.Figure)
    plt.close(fig)


@pytest.mark.parametrize("name", ["param_breakdown", "attention_crossover", "flops_by_part",
                                  "training_memory_stack", "kv_cache_per_token"])
def test_draws_into_a_given_axes(name):
    fig, ax = plt.subplots()
    assert getattr(plots, name)(ax=ax) is fig
    plt.close(fig)


def test_empty_model_lists_are_errors():
    with pytest.raises(Error):
        plots.param_breakdown([])
    with pytest.raises(Error):
        plots.kv_cache_per_token([])
