"""scalebook.planner: the search finds what estimate would, fits in memory, and ranks correctly."""
import numpy as np
import pytest

import scalebook
from scalebook import models, planner, training, topology
from scalebook.strategy import Strategy

MODEL = models.preset("llama3-8b")


@pytest.fixture(scope="module")
def plan():
    return planner.plan(MODEL, chip="h100", chips=64, batch_seqs=256, seq_len=4096, top=5)


def test_plan_returns_the_fastest_first_and_all_fit(plan):
    steps = [e.step_seconds for e in plan.best]
    assert steps == sorted(steps)
    assert all(e.fits for e in plan.best) and len(plan.best) == 5
    assert 0 < plan.fitting <= plan.considered


def test_no_hand_picked_strategy_beats_the_plan(plan):
    best = plan.best[0].step_seconds
    for s in (Strategy(fsdp=64), Strategy(fsdp=8, tp=8, sequence_parallel=True), Strategy(dp=8, tp=8, remat="full"),
              Strategy(dp=16, tp=4, sequence_parallel=True, remat="selective"), Strategy(fsdp=16, pp=4, microbatch=1)):
        e = training.estimate(MODEL, strategy=s, chip="h100", chips=64, batch_seqs=256, seq_len=4096)
        if e.fits:
            assert e.step_seconds >= best * (1 - 1e-9), s


def test_vectorised_search_agrees_with_estimate_row_by_row():
    topo = topology.for_chips("tpu-v5p", 64)
    cands = planner.candidates(MODEL, chips=64, seqs=128, seq_len=2048)
    r = planner.evaluate_all(MODEL, cands, topology=topo, batch_tokens=128 * 2048, seq_len=2048)
    rng = np.random.default_rng(0)
    for i in rng.choice(np.flatnonzero(r["valid"]), size=25, replace=False):
        e = training.estimate(MODEL, strategy=cands.strategy(int(i)), topology=topo, batch_seqs=128, seq_len=2048)
        assert r["step"][i] == pytest.approx(e.step_seconds, rel=1e-9)
        assert r["memory"][i] == pytest.approx(e.memory.bytes, rel=1e-9)


def test_pareto_front_trades_time_for_memory(plan):
    front = plan.pareto
    assert [e.step_seconds for e in front] == sorted(e.step_seconds for e in front)
    mems = [e.memory.bytes for e in front]
    assert all(a > b for a, b in zip(mems, mems[1:]))


def test_a_moe_model_gets_expert_parallel_candidates():
    cands = planner.candidates(models.preset("mixtral-8x7b"), chips=16, seqs=64, seq_len=4096)
    assert any(k[5] > 1 for k in cands.keys)


def test_nothing_fits_raises_error_naming_the_leanest():
    with pytest.raises(scalebook.Error, match="leanest"):
        planner.plan(models.preset("llama3-405b"), chip="h100", chips=8, batch_seqs=8, seq_len=4096)


@pytest.mark.parametrize("kw", [dict(top=0), dict(seq_len=0), dict(batch_seqs=0)])
def test_bad_plan_input_raises_error(kw):
    args = dict(chip="h100", chips=64, batch_seqs=64, seq_len=4096) | kw
    with pytest.raises(scalebook.Error):
        planner.plan(MODEL, **args)


def test_a_batch_of_one_sequence_still_finds_model_parallel_plans():
    p = planner.plan(MODEL, chip="h100", chips=64, batch_seqs=1, seq_len=4096, top=1)
    assert p.best[0].strategy.data == 1


def test_plan_renders_as_text_and_html(plan):
    assert "fit" in repr(plan) and "<table>" in plan._repr_html_()


def test_candidates_that_do_not_fit_the_axes_are_skipped_not_fatal():
    p = planner.plan(models.preset("llama3-70b"), chip="h100", chips=24, batch_seqs=48, seq_len=4096, top=2)
    assert p.best and all(e.chips == 24 for e in p.best)
