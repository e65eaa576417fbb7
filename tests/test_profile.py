"""scalebook.profile: a profiled FSDP x TP step against its own compiled HLO (chapter 9).

`profile.profile_training` compiles `jax_training`'s step (2 layers, 4x2 mesh of simulated CPU
devices, B 16, T 64), runs it under `jax.profiler.trace` and parses the Perfetto trace. The trace
must show, on every device and in every step, exactly the ops of the compiled entry computation
(each once), so its collective counts are the HLO's; the per-device totals must add up to the
step; and bad input must raise `scalebook.Error`. The synthetic traces at the top need no jax.
"""
import collections
import gzip
import json
import math

import pytest

from scalebook import Error, profile, xla
from scalebook.profile import COLLECTIVES, parse_trace


def op(name, device, ts, dur, run=1, tid=None, module="jit_f"):
    return {"ph": "X", "pid": 1, "tid": tid if tid is not None else 100 + device, "ts": ts, "dur": dur,
            "name": name, "args": {"hlo_op": name, "hlo_module": module, "device_ordinal": str(device),
                                   "run_id": str(run)}}


def synthetic():
    """Two devices, two steps; device 1 overlaps a fusion with a matmul and waits in its all-reduce."""
    ev = [{"ph": "M", "pid": 1, "name": "process_name", "args": {"name": "/host:CPU"}}]
    for run, t0 in ((7, 0.0), (8, 1000.0)):
        ev += [op("dot_fusion", 0, t0 + 0, 300, run), op("add_fusion", 0, t0 + 300, 100, run),
               op("all-reduce.1", 0, t0 + 400, 200, run),
               op("dot_fusion", 1, t0 + 50, 300, run), op("add_fusion", 1, t0 + 250, 150, run, tid=999),
               op("all-reduce.1", 1, t0 + 400, 500, run)]
        ev.append({"ph": "X", "tid": 101, "ts": t0 + 410, "dur": 380, "name": "Rendezvous", "args": {}})
        ev.append({"ph": "X", "tid": 101, "ts": t0 + 10, "dur": 5, "name": "ThreadpoolListener::Record"})
    ev.append(op("other_program_op", 0, 5000, 10, run=9, module="jit_g"))
    return {"traceEvents": ev}


def test_a_synthetic_trace_is_parsed_per_device_and_step():
    p = parse_trace(synthetic())
    assert p.module == "jit_f" and p.devices == (0, 1) and p.steps == 2
    assert p.dropped == 2 * 2 + 1  # 2 bookkeeping events per step + the other program's op
    assert {e.category for e in p.events} == {"matmul", "fusion", "all-reduce"}
    assert p.step_seconds == pytest.approx((900e-6, 900e-6))
    d1 = [r for r in p.device_steps() if r.device == 1 and r.step == 0][0]
    # device 1: idle 0-50, matmul 50-350, fusion only 350-400 (its overlap with the matmul goes to
    # the matmul), all-reduce 400-900
    assert d1.seconds["matmul"] == pytest.approx(300e-6)
    assert d1.seconds["fusion"] == pytest.approx(50e-6)
    assert d1.inclusive["fusion"] == pytest.approx(150e-6)
    assert d1.seconds["all-reduce"] == pytest.approx(500e-6)
    assert d1.idle == pytest.approx(50e-6)
    d0 = [r for r in p.device_steps() if r.device == 0 and r.step == 1][0]
    assert d0.idle == pytest.approx(300e-6)  # its all-reduce ends at 600 of a 900 us step
    (ar,) = [e for e in p.ops(step=0, device=1) if e.category == "all-reduce"]
    assert ar.wait == pytest.approx(380e-6)
    assert p.waiting(device=0) == {"all-reduce": 0.0}
    assert p.waiting(device=1)["all-reduce"] == pytest.approx(380e-6)
    assert p.collective_counts() == {"all-reduce": 1}


def test_categories_come_from_the_hlo_when_given_else_from_the_name():
    assert profile.categorize("all-gather.3") == "all-gather"
    assert profile.categorize("all-reduce-start.1") == "all-reduce"
    assert profile.categorize("ynn_fusion.7") == "matmul"
    assert profile.categorize("multiply_add_fusion") == "fusion"
    assert profile.categorize("copy.2") == "other"
    assert profile.categorize("ynn_fusion.7", {"ynn_fusion.7": "fusion"}) == "fusion"


def test_every_device_steps_categories_and_idle_add_up_to_the_step():
    p = parse_trace(synthetic())
    for r in p.device_steps():
        assert sum(r.seconds.values()) + r.idle == pytest.approx(r.window, abs=1e-12)
    assert sum(p.totals().values()) == pytest.approx(sum(p.step_seconds) / p.steps)


def test_trace_files_are_read_from_a_directory_and_bad_ones_refused(tmp_path):
    d = tmp_path / "plugins" / "profile" / "2026_01_01"
    d.mkdir(parents=True)
    with gzip.open(d / "perfetto_trace.json.gz", "wt") as f:
        json.dump(synthetic(), f)
    p = profile.read_trace(tmp_path)
    assert p.source.endswith("perfetto_trace.json.gz") and p.steps == 2
    with pytest.raises(Error, match="no trace"):
        profile.read_trace(tmp_path / "missing")
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(Error, match="perfetto_trace"):
        profile.read_trace(empty)
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(Error, match="cannot read"):
        profile.read_trace(bad)
    with pytest.raises(Error, match="no XLA op events"):
        parse_trace({"traceEvents": [{"ph": "X", "name": "Rendezvous", "ts": 0, "dur": 1}]})
    with pytest.raises(Error, match="traceEvents"):
        parse_trace({"events": []})
    with pytest.raises(Error, match="module"):
        parse_trace(synthetic(), module="jit_nothing")
    with pytest.raises(Error, match="malformed"):
        parse_trace([{"ph": "X", "name": "x", "args": {"hlo_op": "x", "device_ordinal": "zero"}, "ts": 0, "dur": 1}])
    with pytest.raises(Error, match="ENTRY"):
        profile.hlo_ops("not hlo")
    with pytest.raises(Error, match="no step"):
        parse_trace(synthetic()).step_window(5)
    with pytest.raises(Error, match="jit"):
        profile.capture(42)
    with pytest.raises(Error, match="TrainingEstimate"):
        profile.line_up(object(), hlo="ENTRY", mesh_shape={"X": 1})


def test_reprs_are_readable():
    p = parse_trace(synthetic())
    assert "2 devices x 2 steps" in repr(p) and "all-reduce" in repr(p)
    assert "<table>" in p._repr_html_() and "idle" in p._repr_html_()
    assert "waiting" in repr(p.ops(step=0, device=1)[-1])
    assert "idle" in repr(p.device_steps()[0])
    rows = p.to_rows()
    assert len(rows) == 4 and {"step", "device", "window_s", "idle_s", "matmul_s"} <= set(rows[0])


# ------------------------------------------------------------------ a real profiled step


@pytest.fixture(scope="module")
def step():
    xla.use_cpu_devices(8)
    return profile.profile_training(steps=2, warmup=1)


MODEL_LAYERS = 2
WEIGHTS_PER_LAYER = 9   # wq wk wv wo w_gate w_up w_down norm1 norm2
MATRICES_PER_LAYER = 7  # gathered again for the backward pass (norm scales are not)
TOP_WEIGHTS = 3         # embed, unembed, final_norm: gathered once


@pytest.mark.xla
def test_the_trace_runs_exactly_the_compiled_ops_on_every_device_in_every_step(step):
    p = step.profile
    assert p.devices == tuple(range(8)) and p.steps == 2
    executed = [o.name for o in profile.hlo_ops(step.hlo)]
    assert len(executed) == len(set(executed))
    for s in range(p.steps):
        for d in p.devices:
            assert p.names(step=s, device=d) == collections.Counter(executed)


@pytest.mark.xla
def test_collective_counts_per_device_per_step_match_the_hlo(step):
    in_hlo = collections.Counter(c.kind for c in step.collectives)
    assert step.profile.collective_counts() == dict(in_hlo)
    # One AllGather per weight before the forward pass, and per matrix again before the backward.
    assert in_hlo["all-gather"] == MODEL_LAYERS * (WEIGHTS_PER_LAYER + MATRICES_PER_LAYER) + TOP_WEIGHTS
    assert set(in_hlo) == {"all-gather", "all-reduce"}  # a ReduceScatter is an AllReduce on CPU
    ops = profile.hlo_ops(step.hlo)
    matmuls = [op for op in ops if op.category == "matmul"]
    counts = step.profile.op_counts()
    assert counts["matmul"] == len(matmuls) > 0
    assert counts["fusion"] == sum(op.category == "fusion" for op in ops)
    if xla.jax_version() >= (0, 10, 1):
        # XLA:CPU from jax 0.10.1 runs every dot inside a fusion (a `ynn_fusion`) ...
        assert all(op.opcode == "fusion" for op in matmuls)
        assert counts["matmul"] + counts["fusion"] == len(profile.fusions(step.hlo))
    else:
        # ... jax 0.10.0 and older run each as a plain `dot` instruction.
        assert all(op.opcode == "dot" for op in matmuls)


@pytest.mark.xla
def test_per_device_totals_add_up_and_nothing_is_bookkeeping(step):
    p = step.profile
    assert not any(e.name.startswith(profile.BOOKKEEPING) for e in p.events)
    assert p.dropped > len(p.events)  # the runtime's own events outnumber the ops on CPU
    for r in p.device_steps():
        assert sum(r.seconds.values()) + r.idle == pytest.approx(r.window, rel=1e-9)
        for c in r.seconds:
            assert r.seconds[c] <= r.inclusive[c] + 1e-12
    for d, t in p.per_device().items():
        assert sum(t.values()) == pytest.approx(sum(p.step_seconds) / p.steps, rel=1e-9)
    waits = p.waiting()
    for kind, w in waits.items():
        assert 0 <= w <= sum(e.duration for e in p.ops(category=kind)) / (p.steps * len(p.devices))


@pytest.mark.xla
def test_line_up_sets_the_three_views_side_by_side(step):
    from scalebook import topology, training

    mesh = step.mesh_shape
    s = training.Strategy(fsdp=4, tp=2, placement={"fsdp": ("fsdp",), "tp": ("tp",)}, remat="none",
                          param_dtype="fp32", grad_dtype="fp32", optimizer_dtype="fp32", master_dtype=None,
                          activation_dtype="fp32", flash_attention=False)
    est = training.estimate(step.model, topology=topology.for_mesh("tpu-v5e", mesh), strategy=s,
                            batch_tokens=step.batch * step.seq_len, seq_len=step.seq_len)
    lu = step.line_up(est)
    ag = lu.row("all-gather ops")
    assert ag.compiled == ag.measured == 35
    # The package prices each layer's weights as one array; XLA gathers them one by one, with
    # the same bytes but for the norm scales (replicated over tp; test_xla_training).
    assert ag.predicted == 2 * MODEL_LAYERS + 1
    b = lu.row("all-gather bytes V")
    assert b.compiled == pytest.approx(b.predicted, rel=0.01)
    assert lu.row("compute FLOPs").compiled == pytest.approx(step.cost.flops)
    assert lu.row("memory bytes").compiled == step.memory.bytes
    assert lu.row("step seconds").measured == pytest.approx(sum(step.profile.step_seconds) / 2)
    assert "predicted" in repr(lu) and "<table>" in lu._repr_html_() and len(lu.to_rows()) == len(lu.rows)
    with pytest.raises(Error, match="no row"):
        lu.row("nothing")
    assert all(math.isfinite(x) for x in step.losses)
    assert set(COLLECTIVES) >= set(step.profile.collective_counts())
