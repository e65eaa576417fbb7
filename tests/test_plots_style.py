"""Every figure of `scalebook.plots` is readable on the site: fonts at least 9 pt at the width the
page shows it, no two labels on top of each other, colour-blind-safe colours, a description.

Each public figure function is drawn once: with its defaults, or with the example arguments in
EXAMPLES. A new figure function that needs arguments must get an example here (the test that
lists uncovered functions fails until it does).
"""
import inspect
from types import SimpleNamespace as NS

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
from matplotlib.colors import to_hex  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from scalebook import inference as inf, jax_collectives, plots, roofline, topology, training  # noqa: E402
from scalebook.measure import CopyResult, MatmulResult, Measurement  # noqa: E402
from scalebook.models import preset  # noqa: E402
from scalebook.plots import _style  # noqa: E402


def _profile():
    from scalebook.profile import parse_trace

    def op(name, d, ts, dur):
        return {"ph": "X", "tid": d, "ts": ts, "dur": dur, "name": name,
                "args": {"hlo_op": name, "hlo_module": "jit_f", "device_ordinal": str(d), "run_id": "1"}}
    ev = [e for d in range(4) for e in (op("dot_fusion", d, 10 * d, 500), op("all-gather.1", d, 600, 300))]
    return parse_trace({"traceEvents": ev})


def _estimates():
    kw = dict(seq_len=2048, batch_seqs=16, chip="h100", chips=16)
    m = preset("llama3-8b")
    return {"FSDP": training.estimate(m, strategy=training.Strategy(fsdp=16), **kw),
            "DP x PP": training.estimate(m, strategy=training.Strategy(dp=4, pp=4, microbatch=1), **kw)}


def _training_rows():
    arrays = [NS(op=0, kind="all-gather", axes=("fsdp",), phase="forward", array_bytes=100.0),
              NS(op=1, kind="all-reduce", axes=("fsdp",), phase="backward", array_bytes=80.0)]
    est = [NS(kind="all-gather", axes=("fsdp",), purpose="weights gathered before the forward pass", count=1,
              array_bytes=100.0)]
    return plots.training_collective_rows(NS(arrays=arrays), NS(collectives=est))


D = inf.Deployment
CASES = {"v5e x8 int8": ("tpu-v5e", D(tp=8, weights="int8", kv="int8")), "H100 x8": ("h100", D(tp=8))}

EXAMPLES = {
    "time_budgets": lambda: plots.time_budgets(
        {"a": roofline.op("tpu-v5e", flops=1e12, hbm_bytes=1e9, comm_bytes=1e8),
         "b": roofline.op("tpu-v5e", flops=1e10, hbm_bytes=4e9)}, unit="ms"),
    "measured_roofline": lambda: plots.measured_roofline(Measurement(
        "cpu", "cpu", "tpu-v5e", (MatmulResult(1, 1024, 1024, "fp32", 1e-3), MatmulResult(512, 1024, 1024, "fp32", 1e-2)),
        (CopyResult(16_000_000, "fp32", 2e-3),), 1.0, 197e12, 820e9)),
    "collective_times": lambda: plots.collective_times(topology.slice("tpu-v5e", "16x16")),
    "multi_axis_allgather": lambda: plots.multi_axis_allgather(topology.slice("tpu-v5p", "8x8x8"), bytes_=1e9),
    "predicted_vs_compiled": lambda: plots.predicted_vs_compiled([
        {"case": "A[I_X, J] B[J, K]", "predicted": 0.0, "compiled": 0.0},
        {"case": "A[I, J_X] B[J_X, K]", "predicted": 3e5, "compiled": 3.1e5, "predicted_ops": "AllReduce(X)",
         "compiled_ops": "AllReduce(X)"},
        {"case": "A[I_X, J] B[J, K_X]", "predicted": 2e5, "compiled": 2e5, "predicted_ops": "AllGather(X)",
         "compiled_ops": "AllGather(X)"}]),
    "memory_by_strategy": lambda: plots.memory_by_strategy(_estimates()),
    "step_time_by_strategy": lambda: plots.step_time_by_strategy(_estimates()),
    "plan_breakdown": lambda: plots.plan_breakdown(_estimates()),
    "frontier_curves": None,  # returns data, drawn by serving_frontier
    "serving_frontier": lambda: plots.serving_frontier(
        plots.frontier_curves("llama3-70b", CASES, prompt_len=2048, output_len=512)),
    "memory_stack": lambda: plots.memory_stack("llama3-70b", chip="tpu-v5e", deployment=D(tp=8, weights="int8", kv="int8"),
                                               points=[(8, 4096), (64, 4096)]),
    "serving_cost": lambda: plots.serving_cost(plots.cost_rows(
        "llama3-70b", {"v5e": ("tpu-v5e", D(tp=8, weights="int8", kv="int8"), 64)},
        prices={"tpu-v5e": 1.2}, prompt_len=2048, output_len=512)),
    "serving_validation": lambda: plots.serving_validation(plots.serving_predictions()),
    "serving_errors": lambda: plots.serving_errors(plots.serving_predictions()),
    "profile_timeline": lambda: plots.profile_timeline(_profile()),
    "profile_breakdown": lambda: plots.profile_breakdown(_profile()),
    "profile_timelines": lambda: plots.profile_timelines({"first": _profile(), "second": _profile()}),
    "predicted_vs_measured": lambda: plots.predicted_vs_measured([("a", 1e-3, 2e-3), ("b", 1e-2, 8e-3)]),
    "time_ratios": lambda: plots.time_ratios([dict(label="AllGather", measured=2.0, predicted=1.0),
                                              dict(label="matmul", measured=0.7, predicted=0.6)]),
    "training_collectives": lambda: plots.training_collectives(_training_rows()),
    "collective_matmul_timeline": lambda: plots.collective_matmul_timeline(jax_collectives.collective_matmul_cost(
        "allgather-matmul", topology.slice("tpu-v5e", "16x16"), axis="X", dims=dict(I=8192, J=8192, K=16 * 4096),
        bidirectional=True)),
    "decode_breakdown": lambda: plots.decode_breakdown(
        {k: v[-1] for k, v in plots.frontier_curves("llama3-70b", CASES, prompt_len=2048, output_len=512).items()}),
    "decode_measured": lambda: plots.decode_measured(_decode_curve()),
    "hop_map": lambda: plots.hop_map(topology.slice("tpu-v5e", "16x16"), (0, 0)),
    "idle_axes": lambda: plots.idle_axes(topology.slice("tpu-v5e", "16x16"), axis="X", idle="Y", bytes_=1e9),
}


def _decode_curve():
    from scalebook.jax_decode import DecodeCurve, DecodePoint

    pts = tuple(DecodePoint(batch=b, context=c, seconds=0.01 * b * (1 + c / 1000), model_weight_bytes=1e8,
                            model_kv_bytes=b * c * 1e3, model_flops=2e8 * b,
                            predicted_memory_seconds=1e-3 * (1 + b * c / 1e5), predicted_roofline_seconds=1e-3 * b,
                            matmul_flops_per_s=1e11)
                for c in (256, 2048) for b in (2, 16))
    return DecodeCurve(model_name="m", device_kind="cpu", dtype="float32", measured_bytes_per_s=2e10, points=pts)


def _required(fn) -> list[str]:
    return [p.name for p in inspect.signature(fn).parameters.values()
            if p.default is p.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]


def _public():
    return {n: getattr(plots, n) for n in dir(plots)
            if not n.startswith("_") and getattr(getattr(plots, n), "_scalebook_styled", False)}


def _figure_calls():
    calls = {}
    for name, fn in _public().items():
        if name in EXAMPLES:
            if EXAMPLES[name] is not None:
                calls[name] = EXAMPLES[name]
        elif not _required(fn):
            calls[name] = fn
    return calls


FIGURES = _figure_calls()


@pytest.fixture(scope="module")
def drawn():
    """Each figure function's Figure (non-figure results, e.g. data helpers, are left out)."""
    out = {}
    with matplotlib.rc_context({"figure.max_open_warning": 0}):  # all kept open to be measured
        for name, call in sorted(FIGURES.items()):
            result = call()
            if isinstance(result, Figure):
                out[name] = result
    yield out
    plt.close("all")


def test_every_public_function_passes_through_the_style():
    import scalebook.plots as pkg
    for mod in (m for n, m in vars(pkg).items() if inspect.ismodule(m) and not n.startswith("_")):
        for name in getattr(mod, "__all__", []):
            if inspect.isfunction(getattr(mod, name)):
                assert getattr(plots, name).__wrapped__ is getattr(mod, name), name


def test_every_figure_function_that_needs_arguments_has_an_example():
    missing = [n for n, fn in _public().items() if _required(fn) and n not in EXAMPLES]
    # Helpers that return data (what a figure draws), not figures:
    data = {"systolic_active", "torus_hops", "tier_bandwidths", "parse_dims", "block_owners", "ring_states",
            "pipeline_timeline", "cost_rows", "training_collective_rows", "plan_grid", "batch_sweep",
            "decode_parts", "describe", "description", "hop_grid"}
    assert sorted(n for n in missing if n not in data) == []


def test_the_examples_draw_many_figures(drawn):
    assert len(drawn) >= 40


def test_no_font_reads_below_9_pt_at_the_width_the_site_shows(drawn):
    small = {n: round(_style.smallest_rendered_pt(f), 1) for n, f in drawn.items()
             if _style.smallest_rendered_pt(f) < _style.MIN_PT - 0.01}
    assert small == {}


def test_no_two_labels_overlap(drawn):
    clashes = {n: _style.text_overlaps(f)[:3] for n, f in drawn.items() if _style.text_overlaps(f)}
    assert clashes == {}


def test_overlapping_labels_are_found():
    fig, ax = plt.subplots()
    ax.text(0.5, 0.5, "one label")
    ax.text(0.5, 0.5, "another label")
    assert _style.text_overlaps(fig) == [("one label", "another label")]


def test_the_systolic_array_labels_fit_their_cells(drawn):
    assert _style.text_overlaps(drawn["systolic_steps"]) == []
    assert _style.smallest_rendered_pt(drawn["systolic_steps"]) >= 9


def test_no_tab10_colour_is_left(drawn):
    tab = {c.lower() for c in _style._TAB_TO_SAFE if to_hex(c) not in ("#7f7f7f",)}
    left = {}
    for n, f in drawn.items():
        used = {to_hex(line.get_color()) for ax in f.axes for line in ax.get_lines()}
        used |= {to_hex(p.get_facecolor()) for ax in f.axes for p in ax.patches}
        if used & tab:
            left[n] = sorted(used & tab)
    assert left == {}


def test_every_figure_has_a_description_naming_what_it_shows(drawn):
    for name, fig in drawn.items():
        text = _style.description(fig)
        assert len(text) > 40, name


def test_the_description_names_the_title_and_axes():
    fig = plots.time_vs_batch("tpu-v5e")
    text = _style.description(fig)
    assert fig.axes[0].get_title() in text
    assert "horizontal axis: batch B (tokens)" in text and "vertical axis: seconds" in text


def test_a_wide_figure_gets_larger_fonts():
    # A 13.76-inch figure at 100 dpi is shrunk to half its width on the site (688 of 1376 px),
    # so a 9 pt label must be drawn at 18 pt to read as 9 pt.
    fig, ax = plt.subplots(figsize=(13.76 - 0.2, 3))
    ax.set_xlabel("x", fontsize=9)
    ax.set_position([0, 0.2, 1, 0.7])
    fig.__dict__["_scalebook_manual_layout"] = True
    _style.fit_fonts(fig)
    assert ax.xaxis.label.get_fontsize() * _style.rendered_scale(fig) >= 9 - 1e-6
    assert ax.xaxis.label.get_fontsize() >= 17


def test_png_description_round_trips_through_the_png_text_chunk():
    import io
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "book" / "_ext"))
    from scalebook_site import png_description

    fig, ax = plt.subplots()
    ax.plot([0, 1])
    buf = io.BytesIO()
    fig.savefig(buf, format="png", metadata={"Description": "a rising line"})
    assert png_description(buf.getvalue()) == "a rising line"


# ------------------------------------------------------------------ texts against frames, stacked panels
def test_no_text_crosses_the_frame_of_its_axes(drawn):
    crossing = {n: _style.text_problems(f)[:3] for n, f in drawn.items() if _style.text_problems(f)}
    assert crossing == {}


def test_a_label_across_the_frame_is_found():
    fig, ax = plt.subplots(figsize=(4, 3))
    ax.text(0.97, 0.5, "a label that runs past the right edge", transform=ax.transAxes)
    assert _style.text_problems(fig) == ["'a label that runs past the right edge' crosses the frame of its axes"]
    plt.close(fig)


def test_labels_inside_the_frame_or_wholly_outside_it_are_fine():
    fig, ax = plt.subplots(figsize=(4, 3))
    ax.text(0.1, 0.5, "inside", transform=ax.transAxes)
    ax.text(1.05, 0.5, "beside", transform=ax.transAxes)
    assert _style.text_problems(fig) == []
    plt.close(fig)


def test_overlapping_titles_are_problems():
    fig, (a, b) = plt.subplots(1, 2, figsize=(4, 2))
    a.set_title("a title much wider than its own panel is")
    b.set_title("and so is this one, it runs into the first")
    assert any("overlaps" in p for p in _style.text_problems(fig))
    plt.close(fig)


def test_each_figure_shown_is_logged_with_its_problems(tmp_path, monkeypatch):
    import json

    log = tmp_path / "figures.jsonl"
    monkeypatch.setenv("SCALEBOOK_FIGURE_LOG", str(log))
    fig, ax = plt.subplots(figsize=(4, 3))
    ax.set_title("T")
    ax.text(0.97, 0.5, "across", transform=ax.transAxes)
    _style._log_problems(fig)
    monkeypatch.delenv("SCALEBOOK_FIGURE_LOG")
    _style._log_problems(fig)  # no variable, no log
    (rec,) = [json.loads(line) for line in log.read_text().splitlines()]
    assert rec["problems"] == ["'across' crosses the frame of its axes"]
    assert rec["figure"] == "T."
    plt.close(fig)


def test_stacked_panels_keep_the_column_width_and_9_pt_text():
    fig, axs = plots.panels(2)
    f = plots.critical_batch_vs_chips("tpu-v5p", "llama3-70b", ax=axs[0])
    plots.critical_batch_vs_chips("h100", "llama3-70b", ax=axs[1])
    assert f is fig and len(axs) == 2
    assert fig.get_size_inches()[0] * _style.DPI <= _style.COLUMN_PX  # shown at its own size
    assert _style.text_problems(fig) == []
    assert _style.smallest_rendered_pt(fig) >= _style.MIN_PT - 0.01
    plt.close(fig)


@pytest.mark.parametrize("rows", [0, -1, 1.5, True])
def test_panels_refuses_a_bad_count(rows):
    from scalebook import Error

    with pytest.raises(Error, match="rows must be a whole number"):
        plots.panels(rows)


def test_titles_name_chips_as_the_prose_does(drawn):
    titles = [ax.get_title() for f in drawn.values() for ax in f.axes] + [
        f._suptitle.get_text() for f in drawn.values() if f._suptitle is not None]
    ids = ("tpu-v5e", "tpu-v5p", "tpu-v6e", "tpu-v4", "h100", "a100", "b200", "gb200", "h200")
    assert [t for t in titles if any(f" {i} " in f" {t} " or f" {i}:" in f" {t}" for i in ids)] == []


def test_the_generation_chart_labels_ratios_plainly(drawn):
    fig = plots.gpu_generations(("a100", "h100", "b200", "gb200"))
    fig.canvas.draw()
    labels = [t.get_text() for t in fig.axes[0].get_yticklabels() if t.get_text()]
    assert labels and all(lab.endswith("x") and "10^" not in lab and "times" not in lab for lab in labels)
    plt.close(fig)
