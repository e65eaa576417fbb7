"""Chapter 9's interactive timeline: a recorded profile of the chapter's training step on 8
simulated devices, to zoom into and hover over, op by op.

Where the data comes from. The figure reads a trace committed with the package,
`scalebook/data/ch9_trace.json.gz`, and the compiled program it ran, `ch9_step.hlo.gz`, both
written by `record()`: `profile.profile_training(steps=2)` (the chapter's `jax_training.SMALL`
step, FSDP 4 x TP 2 on 8 simulated CPU devices, warmed up once, then 2 steps traced), keeping of
the Perfetto trace only the op events `profile.parse_trace` keeps (name, times, thread, and the
`hlo_op`, `hlo_module`, `device_ordinal` and `run_id` arguments); the runtime's bookkeeping,
including the `Rendezvous` events that time a collective's wait, is left out, so every
`TraceEvent.wait` of this trace is 0. The file's `scalebook` entry says when, with which jax and
by which command it was recorded (`recorded()`). A trace recorded while the book builds would be
this machine's, like chapter 9's own figures, but differ from run to run; the committed one
makes the figure, its tests and the site the same every time, and is read with the package's
own `profile.read_trace` (with the HLO, so the categories are the HLO's), exactly as chapter 9
reads its live trace. It shows what XLA:CPU ran on a shared CPU; nothing in it times a TPU.

What it shows. One bar per op execution of the chosen step (device on y, milliseconds from the
step's first op on x, colour by `profile.CATEGORIES`), the bars of one category group or all of
them (`GROUPS`: matmul, fusion, collective, other); a tooltip names each op (its HLO name, the
JAX operation its metadata names, its category and duration). Dragging the plot pans and the
wheel zooms the time axis (a Vega-Lite interval selection bound to the scale; a double click
resets it); zooming is the mouse's or the touchpad's, while the step and category controls are
keyboard operable like every figure's. The readout gives `Profile.device_steps()` for the step: per device, the seconds in
each category group with each instant counted once, and idle, which add up to the step's window.

Site data. The 5,504 op executions of the two steps would weigh 321 kB as JSON objects and weigh
115 kB as CSV, so the chart carries them as CSV text (device, start and duration in µs from the
step's start rounded to 0.1 µs, the op's index, the step); the op's name, category and JAX
operation come from a table of the 344 op names by index (a Vega-Lite lookup). The rows of
`compute` are the same numbers as objects; `chart` only changes how they are written down.
"""
from __future__ import annotations

import functools
import gzip
import json
import numbers
from importlib import resources

from .. import profile, units
from ..errors import Error, choose
from ._figure import InteractiveFigure, select

#: The committed trace and the HLO of the program it ran (package data; see the module docstring).
TRACE_FILE = "ch9_trace.json.gz"
HLO_FILE = "ch9_step.hlo.gz"
#: Steps in the recorded trace (`record`'s default): the step control's values.
STEPS = 2
#: The category filter: every op, or one group of `profile.CATEGORIES`.
GROUPS = ("all", "matmul", "fusion", "collective", "other")


def _path(name: str):
    return resources.files("scalebook").joinpath("data", name)


def group_of(category: str) -> str:
    """The filter group of a `profile.CATEGORIES` category: the collectives together."""
    return "collective" if category in profile.COLLECTIVES else category


@functools.lru_cache(maxsize=1)
def hlo_text() -> str:
    """The compiled HLO of the recorded program."""
    with _path(HLO_FILE).open("rb") as f:
        return gzip.decompress(f.read()).decode("utf-8")


@functools.lru_cache(maxsize=1)
def recorded() -> dict:
    """The trace file's `scalebook` entry: date, jax version, command, model and mesh."""
    with _path(TRACE_FILE).open("rb") as f:
        return json.loads(gzip.decompress(f.read()))["scalebook"]


@functools.lru_cache(maxsize=1)
def trace() -> profile.Profile:
    """The committed trace, read by `profile.read_trace` with its HLO (op categories from the HLO)."""
    with resources.as_file(_path(TRACE_FILE)) as p:
        return profile.read_trace(p, hlo=hlo_text())


@functools.lru_cache(maxsize=1)
def _names() -> tuple[tuple[str, str, str], ...]:
    """(name, category, JAX operation) of every op name in the trace, sorted by name."""
    by_name = {op.name: op for op in profile.hlo_ops(hlo_text())}
    cats = {e.name: e.category for e in trace().events}
    return tuple((n, cats[n], by_name[n].jax_op if n in by_name else "") for n in sorted(cats))


def _us(seconds: float) -> float:
    return round(seconds * 1e6, 1)


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.1f}"


def _setting(step: int, category: str) -> tuple[int, str]:
    steps = trace().steps
    if isinstance(step, bool) or not isinstance(step, numbers.Integral) or not 0 <= step < steps:
        raise Error(f"step must be a step of the recorded trace, 0 to {steps - 1}, got {step!r}")
    return int(step), choose("category", category, GROUPS)


def readout(step: int, category: str) -> str:
    """The step's window, and each device's seconds by category group and idle (`device_steps`)."""
    prof = trace()
    step, category = _setting(step, category)
    rows = [r for r in prof.device_steps() if r.step == step]
    window = rows[0].window
    shown = "every op" if category == "all" else f"{category} ops only"
    n_ops = sum(1 for e in prof.ops(step=step) if category == "all" or group_of(e.category) == category)
    lines = [f"step {step + 1} of {prof.steps} of {prof.module} on {len(prof.devices)} simulated devices: "
             f"{units.format_quantity(window, 's')}; showing {shown} ({n_ops:,} bars)",
             "ms per device, each instant counted once: matmul, fusion, collective, other, idle"]
    for r in rows:
        by = {g: sum(v for c, v in r.seconds.items() if group_of(c) == g) for g in GROUPS[1:]}
        lines.append(f"device {r.device}: " + ", ".join(_ms(by[g]) for g in GROUPS[1:]) + f", {_ms(r.idle)}")
    return "\n".join(lines)


def compute(step: int, category: str) -> list[dict]:
    """One row per op execution of `step` in the chosen group (device, start and duration in µs
    from the step's start, the index of its name in the name table), the name table, and the readout."""
    prof = trace()
    step, category = _setting(step, category)
    index = {n: i for i, (n, _, _) in enumerate(_names())}
    start, _ = prof.step_window(step)
    ops = [{"kind": "op", "d": e.device, "t": _us(e.start - start), "w": _us(e.duration), "i": index[e.name],
            "on": ("step",)}
           for e in prof.ops(step=step) if category == "all" or group_of(e.category) == category]
    names = [{"kind": "name", "i": i, "n": n, "c": c, "g": group_of(c), "jax": j, "on": ()}
             for i, (n, c, j) in enumerate(_names())]
    return ops + names + [{"kind": "readout", "text": readout(step, category), "on": ()}]


def _csv(ops: list[dict]) -> str:
    """The op rows as CSV text (what the site embeds for the op layer)."""
    def num(v: float) -> str:  # 0.1 µs, no trailing zeros
        return f"{v:.1f}".rstrip("0").rstrip(".")

    lines = ["d,t,w,i,step"] + [f"{r['d']},{num(r['t'])},{num(r['w'])},{r['i']},{r.get('step', '')}" for r in ops]
    return "\n".join(lines)


def chart(rows: list[dict], filters: bool):
    """Bars of op executions (device x time, colour by category) with scale-bound zoom and tooltips.
    (The page prints the readout above the chart.)"""
    import altair as alt

    from ..plots.profiling import CATEGORY_COLORS

    ops = [r for r in rows if r.get("kind") == "op"]
    names = [{k: r[k] for k in ("i", "n", "c", "g", "jax")} for r in rows if r.get("kind") == "name"]
    if filters:
        keep = FIGURE.filter_expression("(category == 'all' || datum.g == category)")
    else:
        keep = "true"
    cats = [c for c in profile.CATEGORIES if c in {n["c"] for n in names}]
    zoom = alt.selection_interval(bind="scales", encodings=["x"], name="zoom")
    bars = alt.Chart(alt.Data(values=_csv(ops), format=alt.DataFormat(
        type="csv", parse={"d": "number", "t": "number", "w": "number", "i": "number", "step": "number"}))
    ).transform_lookup(
        lookup="i", from_=alt.LookupData(data=alt.Data(values=names), key="i", fields=["n", "c", "g", "jax"])
    ).transform_filter(keep).transform_calculate(
        ms0="datum.t / 1000", ms1="(datum.t + datum.w) / 1000", us="datum.w"
    ).mark_bar(clip=True, height=14).encode(
        x=alt.X("ms0:Q", title="ms from the step's first op"),
        x2="ms1:Q",
        y=alt.Y("d:O", title="device"),
        color=alt.Color("c:N", title="category", scale=alt.Scale(domain=cats, range=[CATEGORY_COLORS[c] for c in cats]),
                        legend=alt.Legend(orient="bottom", columns=4)),
        tooltip=[alt.Tooltip("n:N", title="HLO op"), alt.Tooltip("jax:N", title="JAX operation"),
                 alt.Tooltip("c:N", title="category"), alt.Tooltip("us:Q", title="µs", format=".1f"),
                 alt.Tooltip("d:O", title="device")],
    ).add_params(zoom)
    return bars.properties(width=560, height=220)


def static(step: int, category: str):
    """The static picture (the site's fallback): `plots.profile_timeline` of the recorded step."""
    from .. import plots

    return plots.profile_timeline(trace(), step=step, title=f"The recorded training step {step + 1} on 8 simulated devices")


def record(steps: int = STEPS, out_dir=None) -> dict:
    """Record the trace and HLO this figure reads (run by hand, not by the build; see the module
    docstring): `python -c "from scalebook.interactive import timelines; timelines.record()"`
    with 8 simulated CPU devices. Writes both files under `out_dir` (default: the package's data
    folder) and returns the `scalebook` entry written in the trace."""
    import datetime
    import os
    import tempfile
    from pathlib import Path

    from .. import xla

    xla.use_cpu_devices(8)
    import jax

    where = tempfile.mkdtemp(prefix="scalebook-ch9-")
    run = profile.profile_training(steps=steps, trace_dir=where)
    with gzip.open(profile.find_trace(where), "rt", encoding="utf-8") as f:
        raw = json.load(f)["traceEvents"]
    keep = [{"ph": "X", "name": e["name"], "ts": e["ts"], "dur": e["dur"], "tid": e.get("tid", 0), "pid": e.get("pid", 0),
             "args": {k: e["args"][k] for k in ("hlo_op", "hlo_module", "device_ordinal", "run_id")}}
            for e in raw if e.get("ph") == "X" and "hlo_op" in (e.get("args") or {})
            and "device_ordinal" in e["args"] and not profile._is_bookkeeping(str(e.get("name", "")))
            and e["args"].get("hlo_module") == run.profile.module]
    meta = {"recorded": datetime.date.today().isoformat(), "jax": jax.__version__,
            "command": "python -c \"from scalebook.interactive import timelines; timelines.record()\"",
            "what": f"profile.profile_training(steps={steps}): jax_training.SMALL, mesh {run.mesh_shape}, batch "
                    f"{run.batch} x {run.seq_len} tokens, 8 simulated CPU devices ({os.cpu_count()} cores); op events only"}
    out = Path(out_dir) if out_dir is not None else Path(__file__).resolve().parent.parent / "data"
    body = json.dumps({"traceEvents": keep, "scalebook": meta}, separators=(",", ":")).encode()
    (out / TRACE_FILE).write_bytes(gzip.compress(body, 9, mtime=0))
    (out / HLO_FILE).write_bytes(gzip.compress(run.hlo.encode(), 9, mtime=0))
    return meta


FIGURE = InteractiveFigure(
    name="timeline",
    title="A recorded profile of the training step",
    controls=(
        select("step", "step", tuple(range(STEPS)), [str(s + 1) for s in range(STEPS)]),
        select("category", "show", GROUPS, ["every op", "matmuls", "other fusions", "collectives", "other ops"]),
    ),
    compute=compute,
    chart=chart,
    caption=("Drag the timeline to pan and turn the mouse wheel over it to zoom (double-click to reset), then hover "
             "over a bar for the HLO op, the JAX operation it came from and its duration. Show the collectives only "
             "to see the AllGathers of FSDP bunched in the first part of the step and the AllReduces of tensor "
             "parallelism spread through the rest of it. The trace was recorded once with the package's profile_training on 8 simulated CPU "
             "devices and ships with it; its times are a shared CPU's, not a TPU's."),
    alt=("Timeline of one recorded training step on 8 simulated CPU devices: one row per device, one bar per op, "
         "coloured by category (matmul, fusion, all-gather, all-reduce, other), zoomable along the time axis, with a "
         "readout of each device's milliseconds by category and idle time in the step."),
    static=static,
)


def figure() -> InteractiveFigure:
    """Chapter 9's recorded profile (step, category)."""
    return FIGURE
