"""Chapter 4's figures: each function draws and returns a Figure (Agg backend)."""
import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from scalebook import Error, plots  # noqa: E402
from scalebook.models import Transformer  # noqa: E402

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


def test_crossover_of_the_textbook_layer_is_8d_and_16d_causal():
    m = Transformer(layers=1, d_model=1024, heads=8, d_ff=4096, vocab=1000, mlp="gated")
    assert plots.crossover_seq_len(m) == pytest.approx(8 * 1024)
    assert plots.crossover_seq_len(m, causal=True) == pytest.approx(16 * 1024)


def test_empty_model_lists_are_errors():
    with pytest.raises(Error):
        plots.param_breakdown([])
    with pytest.raises(Error):
        plots.kv_cache_per_token([])
