"""The fast paths of the planner and the fits (issue 18: the planner under 1 s) give what the plain
paths give.

`plan` builds its winners' estimates from the rows of its one vectorised search instead of
calling `training.estimate` again; `step.price` prices each class of repeated rows once; the
placements of the search are laid with the axes ordered once; candidate rows, the shape dedupe
of `step.evaluate` and the Pareto front are computed with numpy instead of loops. The efficiency
fits check, place and describe a strategy once and keep its priced collectives. Each test pins a
fast path against the straightforward computation it replaces, exactly (the same floating-point
operations in the same order), or against a front worked out by hand. Timings are not tested:
`make bench` measures them (`benchmarks/run.py`).
"""
import dataclasses

import numpy as np
import pytest

from scalebook import Error, models, planner, step, topology, training
from scalebook.strategy import GROUPS, POLICY_NAMES, Strategy, place

L8 = models.preset("llama3-8b")
MIXTRAL = models.preset("mixtral-8x7b")

# (model, chip, chips, sequences per step, sequence length): GPUs in several nodes (NVLink and
# InfiniBand), a TPU slice (ICI), and a mixture of experts (expert groups, AllToAll).
CASES = {
    "llama3-8b on 64 H100": (L8, "h100", 64, 256, 4096),
    "llama3-8b on 64 TPU v5p": (L8, "tpu-v5p", 64, 128, 2048),
    "mixtral-8x7b on 32 H100": (MIXTRAL, "h100", 32, 64, 4096),
}


@pytest.fixture(scope="module", params=list(CASES))
def planned(request):
    model, chip, chips, seqs, seq_len = CASES[request.param]
    return model, planner.plan(model, chip=chip, chips=chips, batch_seqs=seqs, seq_len=seq_len, top=5)


def test_every_strategy_of_a_plan_carries_exactly_what_estimate_gives_it(planned):
    model, p = planned
    for e in p.best + p.pareto:
        again = training.estimate(model, strategy=e.strategy, topology=e.topology, batch_tokens=e.batch_tokens,
                                  seq_len=e.seq_len)
        for f in dataclasses.fields(training.TrainingEstimate):
            assert getattr(e, f.name) == getattr(again, f.name), (e.strategy.label(), f.name)
        assert e.to_dict() == again.to_dict()


def test_the_fastest_strategy_heads_the_front(planned):
    _, p = planned
    assert p.pareto[0] == p.best[0]


def _plain_evaluate_all(model, cands, topo, batch_tokens, seq_len):
    """`planner.evaluate_all` the straightforward way: `place` and `describe` for every row's
    strategy, `step.evaluate` on groups without the repeats (every row priced)."""
    st = training.setting(model, topology=topo, strategy=Strategy(), batch_tokens=batch_tokens, seq_len=seq_len,
                          efficiency=None)
    descs = {g: [] for g in GROUPS}
    for tp, cp, fsdp, dp, pp, ep in cands.keys:
        pl = place(Strategy(dp=dp, fsdp=fsdp, tp=tp, pp=pp, ep=ep, cp=cp), topo)
        for g in GROUPS:
            descs[g].append(step.describe(pl, g))
    groups = {g: {k: col[cands.key] for k, col in step.stack(d).items()} for g, d in descs.items()}
    return step.evaluate(st, cands.arrays(), groups)


@pytest.mark.parametrize("model, chip", [(L8, "h100"), (L8, "tpu-v5p"), (MIXTRAL, "h100")])
def test_the_search_gives_every_row_what_plain_evaluation_gives(model, chip):
    topo = topology.for_chips(chip, 64)
    cands = planner.candidates(model, chips=64, seqs=128, seq_len=4096)
    fast = planner.evaluate_all(model, cands, topology=topo, batch_tokens=128 * 4096, seq_len=4096)
    plain = _plain_evaluate_all(model, cands, topo, 128 * 4096, 4096)
    for k, v in plain.items():
        if k != "valid":
            assert np.array_equal(np.asarray(fast[k]), np.asarray(v)), k


def test_fast_placement_lays_every_candidate_as_place_does():
    for chip, chips in (("h100", 64), ("tpu-v5p", 128), ("tpu-v5e", 256)):
        topo = topology.for_chips(chip, chips)
        cands = planner.candidates(MIXTRAL, chips=chips, seqs=chips, seq_len=4096)
        _, _, placement = planner._evaluate_all(MIXTRAL, cands, topology=topo, batch_tokens=chips * 4096,
                                                seq_len=4096)
        for key, (tp, cp, fsdp, dp, pp, ep) in enumerate(cands.keys):
            try:
                want = place(Strategy(dp=dp, fsdp=fsdp, tp=tp, pp=pp, ep=ep, cp=cp), topo)
            except Error:  # not placeable: the search marks its rows invalid
                continue
            assert placement(key) == want


def _group(**fields):
    base = dict(n_ici=1.0, w_ici=1.0, hops_ici=0.0, oneway_ici=1.0, a2a_ici=0.0, wrap1=0.0, m_nvl=1.0, w_nvl=1.0,
                m_dcn=1.0, w_dcn=1.0, share=1.0, latency=1e-6, lat_ici=0.0, lat_nvl=0.0, lat_dcn=0.0)
    return base | fields


# Four rows in two classes (rows 0, 2 and rows 1, 3): an 8-GPU NVLink group, and a 4 x 4 ICI torus.
NVL = _group(m_nvl=8.0, w_nvl=450e9 * 0.824, share=8.0, lat_nvl=3.4e-6)
ICI = _group(n_ici=16.0, w_ici=2 * 2 * 90e9, hops_ici=4.0, oneway_ici=90e9, wrap1=0.0, lat_ici=1e-6)
ROWS = [NVL, ICI, NVL, ICI]
FIRST = np.array([0, 1])
REPEATS = (FIRST, np.array([0, 1, 0, 1]), {k: col[FIRST] for k, col in step.stack(ROWS).items()})


def _stacked(repeats=None):
    g = step.stack(ROWS)
    return g if repeats is None else {**g, step.REPEATS: repeats}


@pytest.mark.parametrize("kind", ["all-gather", "reduce-scatter", "all-reduce", "all-to-all", "collective-permute"])
def test_price_of_repeated_rows_is_the_price_of_every_row(kind):
    v = np.array([1e8, 3e7, 1e8, 3e7])
    assert np.array_equal(step.price(kind, _stacked(REPEATS), v), step.price(kind, _stacked(), v))
    for same in (5e6, np.array([5e6])):  # one V for every row: a number, or an array that broadcasts
        assert np.array_equal(step.price(kind, _stacked(REPEATS), same), step.price(kind, _stacked(), same))


def test_price_of_rows_whose_bytes_differ_within_a_class_is_priced_row_by_row():
    # rows 0 and 2 share a class but not their bytes: each is priced on its own V
    v = np.array([1e8, 3e7, 2e8, 3e7])
    got = step.price("all-gather", _stacked(REPEATS), v)
    # an AllGather over 8 NVLink GPUs: V (N - 1) / (N W) at the Simple protocol, plus 7 steps of 3.4 us
    w = 450e9 * 0.824
    assert got[0] == pytest.approx(1e8 * 7 / (8 * w) + 7 * 3.4e-6, rel=1e-12)
    assert got[2] == pytest.approx(2e8 * 7 / (8 * w) + 7 * 3.4e-6, rel=1e-12)
    assert np.array_equal(got, step.price("all-gather", _stacked(), v))


def test_distinct_columns_are_those_np_unique_finds():
    rng = np.random.default_rng(18)
    for n in (1, 7, 5000):
        rows = (rng.choice([512.0, 1024.0, 8192.0, 16384.5], n), rng.choice([1.0, 4.0, 8.0], n),
                rng.choice([1.0, 2.0, 8.0], n))
        shapes, inverse = step._unique_columns(*rows)
        want, want_inverse = np.unique(np.stack(rows), axis=1, return_inverse=True)
        assert np.array_equal(shapes, want) and np.array_equal(inverse, want_inverse.reshape(-1))
        assert np.array_equal(shapes[:, inverse], np.stack(rows))


def test_pareto_front_by_hand():
    # sorted by time (ties by memory): (1 s, 50), (2 s, 60), (2 s, 30), (3 s, 30), (4 s, 10), (5 s, 20).
    # 60 and the second 30 are not below the least memory of a faster strategy; 20 is above 10.
    times = np.array([2.0, 1.0, 4.0, 3.0, 2.0, 5.0])
    mems = np.array([60.0, 50.0, 10.0, 30.0, 30.0, 20.0])
    assert planner._pareto(times, mems) == [1, 4, 2]


def _plain_candidates(model, chips, seqs, seq_len, remat=POLICY_NAMES):
    """The candidate rows the planner's docstring describes, by nested loops: each set of degrees,
    with every (virtual stages, microbatch) pair, each remat policy; then the rows with tp > 1
    again with TP overlap on."""
    rows = []
    for tp in (t for t in range(1, 65) if chips % t == 0 and planner._tp_ok(model, t)):
        for cp in (c for c in range(1, 33) if (chips // tp) % c == 0 and seq_len % c == 0):
            for pp in (p for p in range(1, min(64, model.layers) + 1) if (chips // (tp * cp)) % p == 0):
                data = chips // (tp * cp * pp)
                if seqs % data:
                    continue
                micro = planner._micro_options(seqs // data)
                vs = [v for v in (1, 2, 4) if pp > 1 and pp * v <= model.layers] or [1]
                for fsdp in (f for f in range(1, data + 1) if data % f == 0):
                    eps = [e for e in range(1, data + 1) if data % e == 0 and model.routed_experts % e == 0
                           and (fsdp % e == 0 or e % fsdp == 0)] if model.is_moe else [1]
                    for ep in eps:
                        for v in vs:
                            for mb in micro:
                                for r in remat:
                                    rows.append((tp, cp, fsdp, data // fsdp, pp, ep, v, mb, POLICY_NAMES.index(r), 0))
    return rows + [r[:-1] + (1,) for r in rows if r[0] > 1]


@pytest.mark.parametrize("model, chips, seqs, remat", [(L8, 64, 256, POLICY_NAMES), (MIXTRAL, 16, 64, ("full",)),
                                                       (L8, 24, 48, ("none", "full")), (L8, 7, 3, POLICY_NAMES)])
def test_candidates_are_the_rows_of_the_nested_loops(model, chips, seqs, remat):
    c = planner.candidates(model, chips=chips, seqs=seqs, seq_len=4096, remat=remat)
    got = [tuple(c.keys[k]) + (int(v), int(mb), int(r), int(o))
           for k, v, mb, r, o in zip(c.key, c.virtual_stages, c.microbatch, c.remat, c.tp_overlap)]
    assert got == _plain_candidates(model, chips, seqs, 4096, remat)
    assert len({tuple(k) for k in c.keys}) == len(c.keys)  # each set of degrees once


# --- fits: `training.fit_efficiency` and `refit_default_efficiency` price one strategy at many
# efficiencies through `training._estimator`, which checks, places and describes it once ---

def test_an_estimator_gives_at_each_efficiency_exactly_what_estimate_gives():
    kw = dict(strategy=Strategy(fsdp=16, tp=4, sequence_parallel=True, remat="selective"), seq_len=4096,
              batch_seqs=128, chip="h100", chips=64)
    at = training._estimator(L8, **kw)
    for eff in (0.5, 0.31, 0.5, None, 1.0):  # repeated, and the default, in one estimator's life
        e, want = at(eff), training.estimate(L8, efficiency=eff, **kw)
        for f in dataclasses.fields(training.TrainingEstimate):
            assert getattr(e, f.name) == getattr(want, f.name), (eff, f.name)


def test_an_estimator_checks_its_inputs_as_estimate_does():
    with pytest.raises(Error, match="tp=3"):
        training._estimator(L8, strategy=Strategy(tp=3, dp=2), seq_len=4096, batch_seqs=8, chip="h100", chips=6)
    at = training._estimator(L8, strategy=Strategy(dp=8), seq_len=4096, batch_seqs=8, chip="h100", chips=8)
    with pytest.raises(Error, match="efficiency"):
        at(1.5)


def test_fit_efficiency_refuses_an_efficiency_of_its_own():
    with pytest.raises(Error, match="efficiency"):
        training.fit_efficiency(L8, target=0.4, strategy=Strategy(dp=8), seq_len=4096, batch_seqs=8, chip="h100",
                                chips=8, efficiency=0.5)


def test_price_keeps_what_it_priced_on_a_group_and_hands_out_copies():
    plain = _stacked()
    kept = {**plain, step.PRICED: {}}
    v = np.array([1e8, 3e7, 2e8, 3e7])
    first = step.price("all-reduce", kept, v)
    assert np.array_equal(first, step.price("all-reduce", plain, v))
    first[:] = 0.0  # a caller's change to its result does not reach the next caller
    again = step.price("all-reduce", kept, v)
    assert np.array_equal(again, step.price("all-reduce", plain, v)) and len(kept[step.PRICED]) == 1
    # another collective, or other bytes, is priced anew
    assert np.array_equal(step.price("all-gather", kept, v), step.price("all-gather", plain, v))
    assert np.array_equal(step.price("all-reduce", kept, 2 * v), step.price("all-reduce", plain, 2 * v))
    assert len(kept[step.PRICED]) == 3
