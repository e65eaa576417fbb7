"""Chapter 7's figures: each function draws and returns a Figure (Agg backend)."""
import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from scalebook import Error, inference as inf, models, plots  # noqa: E402

CALLS = {
    "latency_throughput_frontier": {},
    "serving_memory_stack": {},
    "decode_step_breakdown": {},
    "decode_roofline": {},
    "serving_cost_vs_batch": {},
    "speculative_speedup": {},
}


@pytest.mark.parametrize("name", sorted(CALLS))
def test_returns_a_figure(name):
    fig = getattr(plots, name)(**CALLS[name])
    assert isinstance(fig, matplotlib.figure.Figure)
    plt.close(fig)


@pytest.mark.parametrize("name", sorted(CALLS))
def test_draws_into_a_given_axes(name):
    fig, ax = plt.subplots()
    assert getattr(plots, name)(ax=ax, **CALLS[name]) is fig
    plt.close(fig)


def test_memory_stack_against_context_and_other_models():
    fig = plots.serving_memory_stack("llama3-8b", "tpu-v6e", inf.Deployment(tp=4), vary="context", batch=16)
    plt.close(fig)
    fig = plots.decode_step_breakdown("mixtral-8x7b", "h100", inf.Deployment(tp=2, ep=2), batches=(1, 64))
    plt.close(fig)
    fig = plots.decode_roofline(models.preset("deepseek-v3"), "h200", inf.Deployment(tp=8, weights="fp8"),
                                max_batch=256)
    plt.close(fig)


def test_decode_parts_add_up_to_the_step():
    e = inf.estimate(models.preset("llama3-70b"), chip="h100", deployment=inf.Deployment(tp=8), batch=64,
                     prompt_len=2048, output_len=512)
    p = plots.decode_parts(e)
    reads = p["weights"] + p["KV cache"]
    assert reads == pytest.approx(e.decode.memory_seconds)
    comm = p["TP AllReduce"] + p["EP AllToAll"] + p["PP send"] + p["fixed per-layer cost"]
    assert max(reads, p["compute"]) + comm == pytest.approx(e.decode.seconds)


def test_bad_arguments_are_errors():
    with pytest.raises(Error):
        plots.latency_throughput_frontier(deployments={})
    with pytest.raises(Error):
        plots.serving_memory_stack(vary="tokens")
    with pytest.raises(Error):
        plots.serving_memory_stack(values=[])
    with pytest.raises(Error):
        plots.decode_step_breakdown(batches=[])
    with pytest.raises(Error):
        plots.decode_roofline(contexts=[])
    with pytest.raises(Error):
        plots.serving_cost_vs_batch(setups={})
    with pytest.raises(Error):
        plots.speculative_speedup([])
    with pytest.raises(Error):
        plots.speculative_speedup(max_draft=0)


def test_decode_measured_draws_measured_and_predicted_shapes():
    from scalebook.jax_decode import DecodeCurve, DecodePoint

    pts = tuple(DecodePoint(batch=b, context=c, seconds=0.01 * b * (1 + c / 1000), model_weight_bytes=1e8,
                            model_kv_bytes=b * c * 1e3, model_flops=2e8 * b, predicted_memory_seconds=1e-3 * (1 + b * c / 1e5),
                            predicted_roofline_seconds=1e-3 * b, matmul_flops_per_s=1e11)
                for c in (256, 2048) for b in (2, 16))
    curve = DecodeCurve(model_name="m", device_kind="cpu", dtype="float32", measured_bytes_per_s=2e10, points=pts)
    assert curve.ratios()[0] == {"batch": 2, "context": 256, "measured": 1.0, "memory": 1.0, "roofline": 1.0}
    fig = plots.decode_measured(curve)
    assert len(fig.axes[0].lines) == 6
