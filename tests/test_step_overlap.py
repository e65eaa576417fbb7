"""scalebook.step: overlap priced by resource (issue 18, items 1, 2, 6 and 7).

Each test derives the exposed time by hand from the pieces the model is built of (the compute of
a microbatch and the priced collectives, `TrainingEstimate.collectives`), so the rule is pinned,
not the code's output.
"""
import dataclasses

import numpy as np
import pytest

from scalebook import Error, models, planner, training
from scalebook.strategy import Strategy
from scalebook.topology import for_chips

L70 = models.preset("llama3-70b")
L8 = models.preset("llama3-8b")


def _seconds(e, parallelism, words):
    """Seconds of one collective of the estimate, found by a word of its purpose."""
    (c,) = [c for c in e.collectives if c.parallelism == parallelism and words in c.purpose]
    return c.seconds


# --- item 1: a network is one resource -----------------------------------------------------------

def test_dp_allreduce_is_exposed_when_the_infiniband_also_carries_fsdp_traffic():
    # Chapter 6's H100 plan: DP256 x FSDP2 x TP8 for LLaMA 3 70B at 4M tokens of 8K. FSDP and the DP
    # AllReduce both cross InfiniBand; TP stays on NVLink. Without remat the backward pass is 2/3 of
    # a microbatch's compute. In the last backward pass the InfiniBand carries the DP AllReduce and
    # every layer's backward gather and reduce-scatter; the window is that pass, lengthened by its
    # share of the exposed TP (NVLink, which leaves the InfiniBand free meanwhile).
    # (At an efficiency of 0.65, a little above the fitted Hopper constant, so that the InfiniBand's
    # traffic outlasts the window by tens of milliseconds; at the constant itself they about tie.)
    s = Strategy(dp=256, fsdp=2, tp=8, sequence_parallel=True, zero=1)
    e = training.estimate(L70, strategy=s, seq_len=8192, batch_tokens=2 ** 22, chip="h100", chips=4096,
                          efficiency=0.65)
    assert e.microbatches == 1
    layers = L70.layers
    g = _seconds(e, "fsdp", "before the forward")
    r = _seconds(e, "fsdp", "weight gradients reduce-scattered")
    dp = _seconds(e, "dp", "summed over data-parallel")
    window = 2 / 3 * e.compute_seconds + 2 / 3 * e.exposed_seconds["tp"]
    assert e.exposed_seconds["dp"] == pytest.approx(dp + layers * (g + r) - window, rel=1e-9)
    assert e.exposed_seconds["dp"] > 0  # priced one collective at a time, it was "hidden"


@pytest.mark.parametrize("chip, chips, kw", [
    ("h100", 4096, dict(dp=256, fsdp=2, tp=8, sequence_parallel=True)),
    ("h100", 4096, dict(fsdp=512, tp=8, sequence_parallel=True, tp_overlap=True)),
    ("tpu-v5p", 4096, dict(fsdp=256, tp=16, sequence_parallel=True, tp_overlap=True)),
    ("tpu-v5p", 512, dict(fsdp=64, tp=8, sequence_parallel=True, tp_overlap=True)),
])
def test_no_step_is_shorter_than_the_traffic_of_any_network(chip, chips, kw):
    # Whatever each window hides, every network must carry all of its collectives within the step.
    e = training.estimate(L70, strategy=Strategy(**kw), seq_len=8192, batch_tokens=2 ** 22, chip=chip, chips=chips)
    by_network: dict[str, float] = {}
    for c in e.collectives:
        nets = e.placement.networks(c.parallelism if c.parallelism != "dp" else "grad")
        outer = "dcn" if "dcn" in nets else "nvlink" if "nvlink" in nets else "ici"
        by_network[outer] = by_network.get(outer, 0.0) + c.total_seconds
    assert e.step_seconds >= max(by_network.values()) * (1 - 1e-9)


# --- item 2: FSDP exposure is per layer -----------------------------------------------------------

def _slow_latency(topo, seconds):
    """The topology with every hop (and, where axes carry one, every axis) costing `seconds`."""
    axes = tuple(dataclasses.replace(a, latency_seconds=seconds) if hasattr(a, "latency_seconds") else a
                 for a in topo.axes)
    return dataclasses.replace(topo, axes=axes, hop_latency_seconds=seconds)


def test_fsdp_exposes_the_excess_of_every_layer_gather_over_that_layers_compute():
    # One 2K sequence per GPU, FSDP over 1,536 GPUs, with a (test) 20 us per hop: each layer's
    # gather outlasts the layer's forward compute, and the excess is paid in every layer, plus the
    # first gather (layer 0 and the embedding tables), which nothing precedes.
    topo = _slow_latency(for_chips("h100", 1536), 20e-6)
    e = training.estimate(L8, strategy=Strategy(fsdp=1536), seq_len=2048, batch_seqs=1536, topology=topo)
    layers = L8.layers
    g = _seconds(e, "fsdp", "before the forward")
    r = _seconds(e, "fsdp", "weight gradients reduce-scattered")
    top = _seconds(e, "fsdp", "embedding, unembedding and final norm gathered")
    fwd, bwd = e.compute_seconds / 3, 2 * e.compute_seconds / 3  # no remat
    assert g > fwd / layers
    hand = g + top + layers * max(0.0, g - fwd / layers) + layers * max(0.0, g + r - bwd / layers)
    # ... and the step is at least the InfiniBand's busy time: the embedding tables' reduce-scatter,
    # hidden by no window, tops the path up to it
    busy = sum(c.total_seconds for c in e.collectives if c.parallelism == "fsdp")
    path = e.compute_seconds + hand + e.optimizer_seconds
    assert e.exposed_seconds["fsdp"] == pytest.approx(hand + max(0.0, busy - path), rel=1e-9)


def test_per_gpu_throughput_of_zero3_falls_with_gpus_at_one_sequence_each():
    # Fixed work per GPU and per-layer gathers whose latency grows with the group: each layer's
    # exposed excess grows with the GPU count, so FLOP/s per GPU fall as the cluster grows (the
    # trend of ZeRO-3 at one sequence per GPU that issue 18 cites).
    rates = []
    for n in (768, 1536, 2240):
        topo = _slow_latency(for_chips("h100", n), 20e-6)
        e = training.estimate(L8, strategy=Strategy(fsdp=n), seq_len=2048, batch_seqs=n, topology=topo)
        rates.append(e.model_flops_per_s_per_chip)
    assert rates[0] > rates[1] > rates[2]


# --- item 6: context parallelism counts causal attention --------------------------------------------

def test_ring_attention_step_hides_behind_one_chunk_of_causal_attention():
    # cp=8 over ICI on v5p, one 32K sequence per replica: per ring step a chip sends its keys and
    # values and computes its queries against one key/value chunk. With a causal mask and
    # load-balanced chunks that is 1/cp of its causal attention FLOPs: forward attention per token
    # and layer 2 T N H (half of 4 T N H), on T/cp tokens, over tp=1, at the achieved peak.
    m = L8
    T, cp = 32768, 8
    e = training.estimate(m, strategy=Strategy(fsdp=8, cp=cp), seq_len=T, batch_seqs=8, chip="tpu-v5p", chips=64)
    rate = e.peak_flops_per_s * e.efficiency
    attn_step = 2 * T * m.heads * m.head_dim * (T / cp) / cp / rate
    each = _seconds(e, "cp", "ring")
    count = 3 * (cp - 1) * m.layers  # forward once, backward twice, no remat
    assert e.exposed_seconds["cp"] == pytest.approx(count * max(0.0, each - attn_step), rel=1e-9, abs=1e-15)


def test_min_context_chunk_is_where_a_ring_step_just_hides():
    # A chunk at twice the threshold hides its ring steps; one at half the threshold does not.
    m = L70
    chunk = training.min_context_chunk(m, chip="tpu-v5p", link="ici")
    for factor, hidden in ((2.0, True), (0.5, False)):
        T = 4 * 128 * round(chunk * factor / 128)  # cp=4 chunks of about factor x the threshold
        e = training.estimate(m, strategy=Strategy(cp=4), seq_len=T, batch_seqs=1, chip="tpu-v5p", chips=4)
        assert (e.exposed_seconds["cp"] == 0) == hidden


# --- item 7: tensor parallelism overlap -------------------------------------------------------------

def test_overlapped_tp_costs_its_excess_over_the_matmuls_plus_the_compute_it_slows():
    # Hidden TP traffic h = min(TP time, matmul time) costs u x h of compute (u = Calculon's
    # processor usage of a network, 0.15); the rest of the TP time is exposed.
    u = training.tp_overlap_slowdown()
    assert u == 0.15
    s = Strategy(fsdp=32, tp=8, sequence_parallel=True)
    kw = dict(seq_len=8192, batch_seqs=64, chip="h100", chips=256)
    off = training.estimate(L70, strategy=s, **kw)
    on = training.estimate(L70, strategy=s.replace(tp_overlap=True), **kw)
    t_tp, mm = off.comm_seconds["tp"], off.matmul_seconds
    hidden = min(t_tp, mm)
    assert off.exposed_seconds["tp"] == pytest.approx(t_tp)
    assert on.exposed_seconds["tp"] == pytest.approx(t_tp - hidden + u * hidden, rel=1e-9)


def test_the_planner_searches_tp_overlap():
    # both settings of every strategy with tp > 1; none without TP
    cands = planner.candidates(L70, chips=256, seqs=256, seq_len=8192)
    a = cands.arrays()
    assert set(np.unique(a["tp_overlap"][a["tp"] > 1])) == {0, 1}
    assert not a["tp_overlap"][a["tp"] == 1].any()


# --- fitting on the runs marked 'fit' ------------------------------------------------------------------

class _Marked:
    """A published run with a `role`, as helper data's table will carry it."""

    def __init__(self, run, role):
        self._run, self.role = run, role

    def __getattr__(self, name):
        return getattr(self._run, name)


def _with_roles(monkeypatch, fit_ids):
    from scalebook import runs

    marked = tuple(_Marked(r, "fit" if r.id in fit_ids else "validation") for r in runs.published_runs())
    monkeypatch.setattr(runs, "published_runs", lambda: marked)


def test_fit_runs_are_the_family_runs_marked_fit(monkeypatch):
    _with_roles(monkeypatch, {"megatron-18.4b-a100", "megatron-145.6b-a100", "palm-540b-tpuv4"})
    assert [r.id for r in training.fit_runs("gpu")] == ["megatron-18.4b-a100", "megatron-145.6b-a100"]
    assert [r.id for r in training.fit_runs("tpu")] == ["palm-540b-tpuv4"]


def test_without_fit_runs_there_is_nothing_to_fit_on(monkeypatch):
    from scalebook import runs

    unmarked = tuple(_Marked(r, None) for r in runs.published_runs())
    monkeypatch.setattr(runs, "published_runs", lambda: unmarked)
    with pytest.raises(Error, match="'gpu' has role 'fit'"):
        training.fit_runs("gpu")


def test_refit_minimises_the_median_absolute_log_error_over_the_fit_runs(monkeypatch):
    ids = ["megatron-7.5b-a100", "megatron-39.1b-a100", "megatron-310.1b-a100"]
    _with_roles(monkeypatch, set(ids))
    from scalebook import runs

    fit = [r for r in runs.published_runs() if r.id in ids]

    def median_log_error(eff):
        errs = []
        for r in fit:
            kw = r.estimate_kwargs()
            e = training.estimate(r.model_config(), strategy=Strategy(**kw.pop("strategy_kwargs")), efficiency=eff, **kw)
            errs.append(abs(np.log(e.tokens_per_s_per_chip / r.reported_tokens_per_s_per_chip())))
        return float(np.median(errs))

    eff = training.refit_default_efficiency("gpu")
    best = median_log_error(eff)
    # no efficiency on a fine grid around it does better (the median is flat between runs)
    assert all(median_log_error(eff * f) >= best - 1e-12 for f in (0.9, 0.95, 0.98, 1.02, 1.05, 1.1))
