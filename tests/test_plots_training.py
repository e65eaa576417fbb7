"""Chapter 5's figures: each function draws and returns a Figure (Agg backend)."""
import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from scalebook import Error, models, plots, training  # noqa: E402


@pytest.fixture(autouse=True)
def _close():
    yield
    plt.close("all")


def _estimates():
    m = models.preset("llama3-8b")
    kw = dict(seq_len=2048, batch_seqs=16, chip="h100", chips=16)
    return {"FSDP": training.estimate(m, strategy=training.Strategy(fsdp=16), **kw),
            "FSDP x TP, remat": training.estimate(
                m, strategy=training.Strategy(fsdp=2, tp=8, sequence_parallel=True, remat="full"), **kw),
            "DP x PP": training.estimate(m, strategy=training.Strategy(dp=4, pp=4, microbatch=1), **kw)}


CALLS = {
    "critical_batch_vs_chips": dict(chips=(16, 64, 256)),
    "compute_vs_comm": dict(chips=64, tokens_per_chip=(256, 1024, 4096)),
    "memory_by_strategy": None,
    "step_time_by_strategy": None,
    "pipeline_schedule": dict(stages=3, microbatches=4, schedules=("1f1b",)),
    "pipeline_bubble": dict(stages=(2, 4), microbatches=(1, 4, 16)),
    "strategy_map": dict(models=("llama3-8b",), chips=(8, 64)),
}


def _kwargs(name):
    kw = CALLS[name]
    return {"estimates": _estimates()} if kw is None else dict(kw)


@pytest.mark.parametrize("name", sorted(CALLS))
def test_returns_a_figure(name):
    assert isinstance(getattr(plots, name)(**_kwargs(name)), matplotlib.figure.Figure)


@pytest.mark.parametrize("name", sorted(CALLS))
def test_draws_into_a_given_axes(name):
    fig, ax = plt.subplots()
    assert getattr(plots, name)(ax=ax, **_kwargs(name)) is fig


def test_the_tpu_panel_can_use_small_slices_over_dcn_and_the_gpu_one_nodes():
    assert isinstance(plots.critical_batch_vs_chips("tpu-v5p", chips=(64, 128, 256), slice_shape="4x4x4"),
                      matplotlib.figure.Figure)
    assert isinstance(plots.critical_batch_vs_chips("h100", chips=(8, 16, 32)), matplotlib.figure.Figure)


@pytest.mark.parametrize("schedule", ["gpipe", "1f1b"])
@pytest.mark.parametrize("stages, micro", [(1, 1), (4, 8), (4, 2), (8, 16)])
def test_pipeline_timeline_ends_after_micro_plus_stages_minus_one_slots(schedule, stages, micro):
    ops = plots.pipeline_timeline(stages, micro, schedule)
    assert len(ops) == 2 * stages * micro
    # Both schedules take (m + p - 1) x (forward + backward) with a backward twice a forward.
    assert max(o.end for o in ops) == pytest.approx((micro + stages - 1) * 3)
    for s in range(stages):  # a stage never runs two things at once
        mine = sorted((o for o in ops if o.stage == s), key=lambda o: o.start)
        assert all(a.end <= b.start + 1e-12 for a, b in zip(mine, mine[1:]))


def test_1f1b_holds_at_most_stages_microbatches_and_gpipe_all_of_them():
    def peak(ops, s):
        live = best = 0
        for o in sorted((o for o in ops if o.stage == s), key=lambda o: o.start):
            live += 1 if o.kind == "F" else -1
            best = max(best, live)
        return best

    one = plots.pipeline_timeline(4, 8, "1f1b")
    gp = plots.pipeline_timeline(4, 8, "gpipe")
    assert [peak(one, s) for s in range(4)] == [4, 3, 2, 1]
    assert [peak(gp, s) for s in range(4)] == [8] * 4


def test_bad_inputs_are_errors():
    with pytest.raises(Error):
        plots.pipeline_timeline(0, 4)
    with pytest.raises(Error):
        plots.pipeline_timeline(4, 4, "interleaved")
    with pytest.raises(Error):
        plots.memory_by_strategy({})
    with pytest.raises(Error):
        plots.step_time_by_strategy({"x": 1})
    with pytest.raises(Error):
        plots.strategy_map(models=())
    with pytest.raises(Error):
        plots.critical_batch_vs_chips(chips=())
