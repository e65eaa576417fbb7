"""Chapter 6's figures: each function draws and returns a Figure; the helpers return what they promise."""
import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

import scalebook  # noqa: E402
from scalebook import Error, plots, runs, training  # noqa: E402
from scalebook.training import Strategy  # noqa: E402


@pytest.fixture(scope="module")
def grid():
    return plots.plan_grid(("llama3-8b", "llama3-405b"), chip="h100", chip_counts=(64, 1024),
                           batch_tokens=2**21, seq_len=8192)


@pytest.fixture(scope="module")
def sweep():
    return plots.batch_sweep("llama3-8b", chip="tpu-v5p", chips=64, batch_tokens=(2**19, 2**21), seq_len=8192,
                             strategies={"FSDP64": Strategy(fsdp=64), "FSDP16 x TP4": Strategy(fsdp=16, tp=4)})


def test_plan_grid_holds_the_best_estimate_or_none(grid):
    assert set(grid) == {("llama3-8b", 64), ("llama3-8b", 1024), ("llama3-405b", 64), ("llama3-405b", 1024)}
    assert grid[("llama3-405b", 64)] is None  # 405B does not fit on 64 H100s
    e = grid[("llama3-8b", 64)]
    assert isinstance(e, training.TrainingEstimate) and e.fits and e.chips == 64


def test_plan_map_draws_the_grid(grid):
    fig = plots.plan_map(grid)
    assert isinstance(fig, matplotlib.figure.Figure)
    texts = [t.get_text() for t in fig.axes[0].texts]
    assert "nothing fits" in texts and any("MFU" in t for t in texts)
    plt.close(fig)


def test_batch_sweep_skips_batches_a_strategy_cannot_split(sweep):
    # 2**19 tokens = 64 sequences: FSDP64 splits them; FSDP16 x TP4 too; both splits exist at 2**21.
    assert len(sweep["best"]) == 2 and all(e is not None for e in sweep["best"])
    assert sweep["fixed"]["FSDP64"][0] is not None
    assert sweep["critical"]["FSDP64"] > sweep["critical"]["FSDP16 x TP4"] > 0
    narrow = plots.batch_sweep("llama3-8b", chip="tpu-v5p", chips=64, batch_tokens=(2**18,), seq_len=8192,
                               strategies={"FSDP64": Strategy(fsdp=64)})
    assert narrow["fixed"]["FSDP64"] == [None]  # 32 sequences do not split over 64 replicas


def test_mfu_vs_batch_and_plan_breakdown_draw(sweep):
    fig = plots.mfu_vs_batch(sweep)
    assert isinstance(fig, matplotlib.figure.Figure)
    plt.close(fig)
    fig = plots.plan_breakdown({"best": sweep["best"][0], "FSDP64": sweep["fixed"]["FSDP64"][0]})
    assert isinstance(fig, matplotlib.figure.Figure)
    plt.close(fig)


def test_draws_into_a_given_axes(grid, sweep):
    for call in (lambda ax: plots.plan_map(grid, ax=ax), lambda ax: plots.mfu_vs_batch(sweep, ax=ax),
                 lambda ax: plots.plan_breakdown({"x": sweep["best"][0]}, ax=ax),
                 lambda ax: plots.validation_scatter(ax=ax)):
        fig, ax = plt.subplots()
        assert call(ax) is fig
        plt.close(fig)


def test_run_predictions_cover_every_run_and_apply_assumptions():
    rows = plots.run_predictions()
    assert [r["id"] for r in rows] == [r.id for r in runs.published_runs()]
    for r in rows:
        run = runs.published_run(r["id"])
        assert r["predicted"] == pytest.approx(r["estimate"].tokens_per_s_per_chip)
        assert r["reported"] == run.reported_tokens_per_s_per_chip()
        if r["reported"] is None:  # BLOOM: its TFLOP/s count is unknown, so it has no throughput
            assert r["error"] is None and r["basis"] is None
        else:
            assert r["error"] == pytest.approx(r["predicted"] / r["reported"] - 1)
            assert r["basis"] in ("tokens/s", "step time", "TFLOP/s, Megatron count", "MFU")
        assert r["util_metric"] in ("MFU", "HFU") and 0 < r["util_reported"] < 1 and 0 < r["util_predicted"] < 1
        assert r["util_error"] == pytest.approx(r["util_predicted"] / r["util_reported"] - 1)
    assert [r["id"] for r in rows if r["error"] is None] == ["bloom-176b-a100"]
    by = {r["id"]: r for r in rows}
    assert by["palm-540b-tpuv4"]["basis"] == "tokens/s" and by["mt-nlg-530b-a100-2240"]["basis"] == "step time"
    assert by["megatron-1t-a100"]["basis"] == "TFLOP/s, Megatron count"
    assert by["llama3-405b-h100-16k"]["basis"] == "MFU"
    # the runs the defaults are fitted on are exactly those marked 'fit', each tagged with its chip family
    fit = {r.id: ("tpu" if scalebook.chip(r.chip).is_tpu else "gpu") for r in runs.published_runs() if r.role == "fit"}
    assert {r["id"]: r["anchor"] for r in rows if r["anchor"]} == fit
    rid = "llama3-405b-h100-16k"
    base = by[rid]
    more = plots.run_predictions(assume={rid: {"virtual_stages": 4}}, ids=[rid])[0]
    assert more["assumed"] == {"virtual_stages": 4} and more["predicted"] > base["predicted"]


def test_megatron_throughput_inverts_its_flop_formula():
    # 163 TFLOP/s per A100 at 96 l h^2 (1 + s/6h + V/16lh) FLOPs per token (l=128, h=25600, s=2048, V=51200)
    r = plots.run_predictions(ids=["megatron-1t-a100"])[0]
    per_token = 96 * 128 * 25600**2 * (1 + 2048 / (6 * 25600) + 51200 / (16 * 128 * 25600))
    assert r["reported"] == pytest.approx(163e12 / per_token)


def test_validation_scatter_leaves_out_runs_without_throughput():
    rows = plots.run_predictions(ids=["bloom-176b-a100", "megatron-1.7b-a100"])
    fig = plots.validation_scatter(rows)
    from matplotlib.collections import PathCollection
    points = sum(len(c.get_offsets()) for c in fig.axes[0].collections if isinstance(c, PathCollection))
    assert points == 1
    plt.close(fig)
    with pytest.raises(Error):
        plots.validation_scatter(plots.run_predictions(ids=["bloom-176b-a100"]))


def test_bad_inputs_are_errors():
    with pytest.raises(Error):
        plots.plan_breakdown({})
    with pytest.raises(Error):
        plots.plan_breakdown({"x": 1.0})
    with pytest.raises(Error):
        plots.validation_scatter([])
    with pytest.raises(Error):
        plots.plan_grid((), chip="h100")


def test_batch_sweep_reuses_known_estimates(sweep):
    known = sweep["best"][0]
    again = plots.batch_sweep("llama3-8b", chip="tpu-v5p", chips=64, batch_tokens=(2**19,), seq_len=8192,
                              known={2**19: known})
    assert again["best"][0] is known


def test_run_predictions_take_an_efficiency_per_chip_family():
    rid = "megatron-1t-a100"
    base = plots.run_predictions(ids=[rid])[0]
    slower = plots.run_predictions(ids=[rid], efficiency={"gpu": 0.5})[0]
    assert slower["predicted"] < base["predicted"]
    palm = plots.run_predictions(ids=["palm-540b-tpuv4"], efficiency={"gpu": 0.5})[0]
    assert palm["predicted"] == plots.run_predictions(ids=["palm-540b-tpuv4"])[0]["predicted"]  # TPU ignores it


def test_every_source_of_the_runs_table_has_its_own_marker():
    from scalebook.plots.training_plan import _SOURCE_MARKERS

    assert {r.source for r in runs.published_runs()} <= set(_SOURCE_MARKERS)
    markers = [m for m, _ in _SOURCE_MARKERS.values()]
    assert len(set(markers)) == len(markers) and "*" not in markers  # the star marks the fit runs
