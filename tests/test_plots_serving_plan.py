"""Chapter 8's figures: each function draws and returns a Figure; the helpers return what they promise."""
import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from scalebook import Error, inference as inf, plots, serving_results  # noqa: E402
from scalebook.models import preset  # noqa: E402

D = inf.Deployment
CASES = {"v5e x8 int8": ("tpu-v5e", D(tp=8, weights="int8", kv="int8")), "H100 x8 fp8": ("h100", D(tp=8, weights="fp8", kv="fp8"))}


@pytest.fixture(scope="module")
def curves():
    return plots.frontier_curves("llama3-70b", CASES, prompt_len=2048, output_len=512)


def test_frontier_curves_end_at_the_largest_batch(curves):
    m = preset("llama3-70b")
    for label, (chip, d) in CASES.items():
        ests = curves[label]
        assert ests[0].batch == 1
        assert ests[-1].batch == inf.max_batch(m, chip=chip, deployment=d, context=2560, prompt_len=2048)
        rates = [e.output_tokens_per_s_per_chip for e in ests]
        assert rates == sorted(rates)  # throughput per chip grows along the frontier


def test_frontier_and_breakdown_draw(curves):
    fig = plots.serving_frontier(curves, latency_target_s=0.05)
    assert isinstance(fig, matplotlib.figure.Figure)
    plt.close(fig)
    fig = plots.decode_breakdown({k: v[-1] for k, v in curves.items()})
    labels = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert "TP AllReduce" in labels and "KV cache (HBM)" in labels
    plt.close(fig)


def test_step_parts_add_up_to_the_step(curves):
    from scalebook.plots.serving_plan import _step_parts

    for ests in curves.values():
        for e in (ests[0], ests[-1]):
            assert sum(_step_parts(e).values()) == pytest.approx(e.decode_step_seconds)


def test_memory_stack_marks_what_does_not_fit():
    fig = plots.memory_stack("llama3-70b", chip="tpu-v5e", deployment=D(tp=8, weights="int8", kv="int8"),
                             points=[(16, 2560), (1000, 2560)])
    texts = [t.get_text() for t in fig.axes[0].texts]
    assert any("does" in t for t in texts)
    plt.close(fig)


def test_cost_rows_split_input_and_output():
    rows = plots.cost_rows("llama3-70b", {"v5e": ("tpu-v5e", D(tp=8, weights="int8", kv="int8"), 64)},
                           prices={"tpu-v5e": 1.2}, prompt_len=2048, output_len=512)
    r = rows[0]
    w = r["workload"]
    per_s = 8 * 1.2 / 3600
    assert r["usd_input"] == pytest.approx(per_s * w.prefill_share / w.input_tokens_per_s * 1e6)
    assert r["usd_output"] == pytest.approx(per_s * (1 - w.prefill_share) / w.output_tokens_per_s * 1e6)
    fig = plots.serving_cost(rows)
    assert isinstance(fig, matplotlib.figure.Figure)
    plt.close(fig)


def test_serving_predictions_cover_every_result():
    rows = plots.serving_predictions()
    assert [r["id"] for r in rows] == [r.id for r in serving_results.published_serving()]
    for r in rows:
        assert r["reported"] > 0 and r["predicted"] > 0
        assert r["error"] == pytest.approx(r["predicted"] / r["reported"] - 1)
    anchors = [r for r in rows if r["anchor"]]
    assert anchors and all(r["role"] == "fit" for r in anchors)
    for r in anchors:  # the TPU bisection reproduces its two anchors exactly
        if r["anchor"] == "tpu":
            assert abs(r["error"]) < 0.02
    for fn in (plots.serving_validation, plots.serving_errors):
        fig = fn(rows)
        assert isinstance(fig, matplotlib.figure.Figure)
        plt.close(fig)


def test_draws_into_a_given_axes(curves):
    for call in (lambda ax: plots.serving_frontier(curves, ax=ax),
                 lambda ax: plots.decode_breakdown({"x": curves["H100 x8 fp8"][-1]}, ax=ax),
                 lambda ax: plots.memory_stack("llama3-70b", chip="h100", deployment=D(tp=8), points=[(8, 4096)], ax=ax)):
        fig, ax = plt.subplots()
        assert call(ax) is fig
        plt.close(fig)


def test_bad_inputs_are_errors(curves):
    with pytest.raises(Error):
        plots.serving_frontier({})
    with pytest.raises(Error):
        plots.decode_breakdown({"x": 1.0})
    with pytest.raises(Error):
        plots.memory_stack("llama3-70b", chip="h100", deployment=D(tp=8), points=[])
    with pytest.raises(Error):
        plots.cost_rows("llama3-70b", {"x": ("h200", D(tp=8), 8)}, prices={}, prompt_len=8, output_len=8)
    with pytest.raises(Error):
        plots.serving_validation([])
    with pytest.raises(Error):
        plots.serving_errors([])
    with pytest.raises(Error):
        plots.frontier_curves("llama3-70b", {}, prompt_len=8, output_len=8)
