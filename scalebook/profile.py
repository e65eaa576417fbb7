"""Profiles: what a compiled program did, op by op and device by device (Chapter 9).

Three views of one sharded step sit side by side in this module:

- **compiled**: the optimized HLO that XLA built (`hlo_ops`, `fusions`, `collectives`), what its
  cost model counts (`xla.cost`) and what memory it plans (`memory_analysis`);
- **measured**: a `jax.profiler` trace of the same program running (`capture`, `read_trace`),
  parsed into a per-op timeline (`TraceEvent`) and per-device, per-step totals (`Profile`);
- **predicted**: `training.estimate`'s collectives, compute and memory, which `line_up` sets
  beside the other two.

How a trace is read (jax 0.10, XLA:CPU; TOOLCHAIN.md, note 15): `jax.profiler.trace(dir,
create_perfetto_trace=True)` writes `dir/plugins/profile/<time>/perfetto_trace.json.gz`, a Chrome
trace whose complete events (`"ph": "X"`, microseconds) include one per HLO op executed on a
device, with `args` naming the op (`hlo_op`), its program (`hlo_module`), the device
(`device_ordinal`) and the execution (`run_id`, one per call: a step). Everything else is the
runtime's bookkeeping (`ThreadpoolListener::*`, `Rendezvous`, `Wait ...`, `end: <op>` markers,
Python frames) and is dropped. On CPU the simulated devices share the host's cores and their ops
run on whichever pool thread is free, so the device comes from `device_ordinal`, not the thread.

Per-device totals count each instant of a step once: where ops of one device overlap, the instant
goes to the first of matmul, fusion, other, then the collectives (so a collective's time is the
part not hidden behind compute); the step's window is the span of all devices' ops in that
execution, and what no op of a device covers is that device's idle time. So for every device and
step the categories plus idle add up to the step's window exactly.

jax is imported inside the functions that need it; reading a trace file needs only the standard
library.
"""
from __future__ import annotations

import bisect
import collections
import gzip
import json
import math
import os
import re
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

from ._readable import Readable
from . import units
from .errors import Error, require_positive
from .errors import text as _text

__all__ = [
    "CATEGORIES", "COLLECTIVES", "TraceEvent", "DeviceStep", "Profile", "HloOp", "LineUpRow", "LineUp",
    "StepProfile", "find_trace", "read_trace", "parse_trace", "capture", "hlo_ops", "fusions", "collectives",
    "memory_analysis", "categorize", "line_up", "profile_training", "BOOKKEEPING", "hlo_instruction",
]

#: Collective kinds, as HLO names them (and `scalebook.collectives` / `xla.HLO_COLLECTIVES`).
COLLECTIVES = ("all-gather", "reduce-scatter", "all-reduce", "all-to-all", "collective-permute")

#: Categories of an op, in the order an instant where ops overlap is given to them.
CATEGORIES = ("matmul", "fusion", "other") + COLLECTIVES

#: Name prefixes of the runtime's own events in an XLA:CPU trace (never ops of the program).
BOOKKEEPING = ("ThreadpoolListener::", "Rendezvous", "InvokeRendezvous", "Wait", "ThunkExecutor::", "end: ",
               "$", "CommonPjRtLoadedExecutable", "PjRt", "TfrtCpu", "Execute")

#: HLO opcodes that run no code of their own on XLA:CPU: they never appear in a trace.
NOT_EXECUTED = ("parameter", "constant", "bitcast", "get-tuple-element", "tuple")

_MATMUL_WORDS = ("dot", "gemm", "matmul", "convolution", "cublas", "ynn_fusion")


def _f(value: float, unit: str) -> str:
    return units.format_quantity(value, unit)


# ------------------------------------------------------------------ the compiled program (HLO)


@dataclass(frozen=True)
class HloOp(Readable):
    """One instruction of the entry computation of compiled HLO.

    `opcode` is HLO's ('fusion', 'all-gather', 'copy', ...); `fusion_kind` XLA's kind of a fusion
    ('kLoop', 'kInput', 'kOutput', 'kCustom'; '' otherwise); `category` is 'matmul' for a dot or
    convolution, or a fusion whose body contains one, 'fusion' for other fusions, the collective's
    kind for a collective, else 'other'. `jax_op` is the jax operation it came from (its
    `op_name` metadata, e.g. 'jit(step)/jvp(btd,dkh->btkh)/dot_general').
    """

    name: str
    opcode: str
    shape: str
    category: str
    fusion_kind: str = ""
    jax_op: str = ""

    @property
    def executed(self) -> bool:
        """Whether XLA:CPU runs code for it (a trace has one event per execution)."""
        return self.opcode not in NOT_EXECUTED

    def __repr__(self) -> str:
        kind = f" {self.fusion_kind}" if self.fusion_kind else ""
        return f"HloOp({self.name}: {self.opcode}{kind} -> {self.shape}, {self.category})"


def _computations(hlo: str) -> dict[str, list[str]]:
    """{computation name: its instruction lines}; the entry computation is also under 'ENTRY'."""
    comps: dict[str, list[str]] = {}
    cur: list[str] | None = None
    for line in hlo.splitlines():
        if cur is None:
            m = re.match(r"^(ENTRY\s+)?%?([\w.\-]+)\s.*\{\s*$", line)
            if m and not line.startswith("HloModule"):
                cur = comps.setdefault(m.group(2), [])
                if m.group(1):
                    comps["ENTRY"] = cur
            continue
        if line.startswith("}"):
            cur = None
            continue
        cur.append(line)
    return comps


_INSTRUCTION = re.compile(r"^\s*(?:ROOT\s+)?%?([\w.\-]+)\s*=\s*(.*?)\s+([a-z][a-z0-9\-]*)\((.*)$")


def _split_instruction(line: str) -> "tuple[str, str, str, str] | None":
    m = _INSTRUCTION.match(line)
    if not m:
        return None
    return m.group(1), m.group(2), m.group(3), m.group(4)


def hlo_ops(hlo: str, *, executed_only: bool = True) -> tuple[HloOp, ...]:
    """The instructions of the entry computation of compiled HLO text, in program order.

    `hlo` is `compiled.as_text()` (optimized, after SPMD partitioning: one device's program).
    With `executed_only` (default), drops the opcodes that run no code (`NOT_EXECUTED`), leaving
    exactly the ops an XLA:CPU trace shows once per device per execution.
    """
    if not isinstance(hlo, str) or "ENTRY" not in hlo:
        raise Error("hlo must be compiled HLO text with an ENTRY computation (compiled.as_text())")
    comps = _computations(hlo)
    if "ENTRY" not in comps:
        raise Error("could not find the ENTRY computation in the HLO text")
    out = []
    for line in comps["ENTRY"]:
        parts = _split_instruction(line)
        if parts is None:
            continue
        name, shape, opcode, rest = parts
        if opcode.endswith("-done") and opcode[: -len("-done")] in COLLECTIVES:
            category = opcode[: -len("-done")]
        elif opcode.endswith("-start") and opcode[: -len("-start")] in COLLECTIVES:
            category = opcode[: -len("-start")]
        elif opcode in COLLECTIVES:
            category = opcode
        elif opcode in ("dot", "convolution"):
            category = "matmul"
        elif opcode == "fusion":
            called = re.search(r"calls=%?([\w.\-]+)", rest)
            body = "\n".join(comps.get(called.group(1), [])) if called else ""
            category = "matmul" if re.search(r"\s(dot|convolution)\(", body) else "fusion"
        else:
            category = "other"
        kind = re.search(r"kind=(k\w+)", rest) if opcode == "fusion" else None
        jax_op = re.search(r'op_name="([^"]*)"', rest)
        op = HloOp(name=name, opcode=opcode, shape=shape.strip(), category=category,
                   fusion_kind=kind.group(1) if kind else "", jax_op=jax_op.group(1) if jax_op else "")
        if op.executed or not executed_only:
            out.append(op)
    return tuple(out)


def hlo_instruction(hlo: str, name: str, *, full: bool = False) -> str:
    """The text of instruction `name` (e.g. 'all-gather.3', 'ynn_fusion.77') in compiled HLO, or of
    the computation `name` (e.g. 'fused_computation.77': its header and body). Unless `full`,
    `metadata=` and `backend_config=` are cut from each line, which keeps it readable."""
    if not isinstance(hlo, str):
        raise Error("hlo must be compiled HLO text (compiled.as_text())")
    _text("name", name)

    def short(line: str) -> str:
        line = line.strip()
        return line if full else re.sub(r",\s*(metadata|backend_config)=.*$", "", line)

    comps = _computations(hlo)
    if name in comps and name != "ENTRY":
        header = next(line for line in hlo.splitlines() if re.match(rf"^(ENTRY\s+)?%?{re.escape(name)}\s", line))
        return "\n".join([short(header)] + ["  " + short(line) for line in comps[name]] + ["}"])
    for lines in comps.values():
        for line in lines:
            parts = _split_instruction(line)
            if parts and parts[0] == name:
                return short(line)
    raise Error(f"no instruction or computation named {name!r} in the HLO")


def fusions(hlo: str) -> tuple[HloOp, ...]:
    """The fusions of the entry computation (each one kernel: one trace event per execution)."""
    return tuple(op for op in hlo_ops(hlo) if op.opcode == "fusion")


def collectives(hlo: str, mesh_shape: Mapping[str, int]):
    """The collectives of compiled HLO with their mesh axes and bytes: `xla.collectives_in_hlo`."""
    from . import xla

    if not isinstance(hlo, str):
        raise Error("hlo must be compiled HLO text (compiled.as_text())")
    return xla.collectives_in_hlo(hlo, dict(mesh_shape))


def memory_analysis(compiled: Any):
    """XLA's `compiled.memory_analysis()` per device, as `jax_training.MemoryAnalysis` (bytes of
    arguments, outputs, outputs aliased to donated inputs, temporaries, generated code)."""
    from .jax_training import memory_analysis as _ma

    if not hasattr(compiled, "memory_analysis"):
        raise Error(f"expected a compiled jax program (jax.jit(f).lower(...).compile()), got {type(compiled).__name__}")
    return _ma(compiled)


def categorize(name: str, hlo_categories: Mapping[str, str] | None = None) -> str:
    """The category of an op named `name` in a trace: from the HLO when it is there (see
    `HloOp.category`), else guessed from the name ('all-reduce.3' -> 'all-reduce', names with dot,
    gemm, convolution or XLA:CPU's `ynn_fusion` -> 'matmul', other '*fusion*' -> 'fusion')."""
    _text("name", name)
    if hlo_categories is not None and not isinstance(hlo_categories, Mapping):
        raise Error(f"hlo_categories must map op names to categories, got {type(hlo_categories).__name__}")
    if hlo_categories and name in hlo_categories:
        return hlo_categories[name]
    base = re.sub(r"\.\d+$", "", name)
    for kind in COLLECTIVES:
        if base == kind or base.startswith(kind + "-"):
            return kind
    low = name.lower()
    if any(w in low for w in _MATMUL_WORDS):
        return "matmul"
    return "fusion" if "fusion" in low else "other"


# ------------------------------------------------------------------ the measured program (trace)


@dataclass(frozen=True)
class TraceEvent(Readable):
    """One execution of one HLO op on one device, read from a profiler trace.

    Times are seconds from the first op of the trace. `step` counts the program's executions in
    the trace (0, 1, ...); `thread` is the host thread that ran it (on CPU, any pool thread).
    `wait`: for a collective, the seconds its thread spent in the runtime's `Rendezvous` inside
    it, waiting for the other devices of its group to arrive (0 for other ops).
    """

    name: str
    device: int
    thread: int
    start: float
    duration: float
    category: str
    step: int
    module: str = ""
    wait: float = 0.0

    @property
    def end(self) -> float:
        return self.start + self.duration

    def __repr__(self) -> str:
        waited = f", {_f(self.wait, 's')} waiting" if self.wait else ""
        return (f"TraceEvent({self.name} [{self.category}] on device {self.device}, step {self.step}: "
                f"{_f(self.duration, 's')} at {_f(self.start, 's')}{waited})")


@dataclass(frozen=True)
class DeviceStep(Readable):
    """One device during one step: seconds in each category, counted once per instant (see the
    module doc), and idle. `seconds` + `idle` = `window` (the step's span over all devices);
    `inclusive` sums op durations per category without removing overlaps; `ops` counts events."""

    step: int
    device: int
    start: float
    end: float
    seconds: Mapping[str, float]
    idle: float
    inclusive: Mapping[str, float]
    ops: Mapping[str, int]

    @property
    def window(self) -> float:
        return self.end - self.start

    @property
    def busy(self) -> float:
        return sum(self.seconds.values())

    def __repr__(self) -> str:
        parts = ", ".join(f"{k} {_f(v, 's')}" for k, v in self.seconds.items() if v > 0)
        return f"DeviceStep(step {self.step}, device {self.device}: {_f(self.window, 's')}: {parts}, idle {_f(self.idle, 's')})"


def _exclusive(events: Sequence[TraceEvent], start: float, end: float) -> tuple[dict[str, float], float]:
    """Seconds per category with each instant counted once (priority: CATEGORIES order), and idle."""
    rank = {c: i for i, c in enumerate(CATEGORIES)}
    points = sorted({start, end, *(e.start for e in events), *(e.end for e in events)})
    out = {c: 0.0 for c in CATEGORIES}
    # sweep: at each elementary segment, the active event of highest priority
    by_start = sorted(events, key=lambda e: e.start)
    active: list[TraceEvent] = []
    i = 0
    covered = 0.0
    for a, b in zip(points, points[1:]):
        while i < len(by_start) and by_start[i].start <= a:
            active.append(by_start[i])
            i += 1
        active = [e for e in active if e.end > a]
        if b <= a or not active:
            continue
        best = min(active, key=lambda e: rank.get(e.category, len(rank)))
        out[best.category] = out.get(best.category, 0.0) + (b - a)
        covered += b - a
    return out, (end - start) - covered


@dataclass(frozen=True)
class Profile(Readable):
    """The ops of one program's executions, per device and step, read from a profiler trace.

    `events`: every op execution, sorted by start. `module`: the program ('jit_step');
    `source`: the trace file (None when parsed from memory); `dropped`: how many complete events
    of the trace were runtime bookkeeping or other programs' ops, not kept.
    """

    events: tuple[TraceEvent, ...] = field(repr=False)
    module: str
    source: str | None = None
    dropped: int = 0

    def __post_init__(self):
        if not self.events:
            raise Error("a Profile needs at least one op event")

    @property
    def devices(self) -> tuple[int, ...]:
        return tuple(sorted({e.device for e in self.events}))

    @property
    def steps(self) -> int:
        return 1 + max(e.step for e in self.events)

    def ops(self, *, step: int | None = None, device: int | None = None,
            category: str | None = None) -> tuple[TraceEvent, ...]:
        """The events of one step, device and/or category (all of them by default)."""
        return tuple(e for e in self.events if (step is None or e.step == step) and
                     (device is None or e.device == device) and (category is None or e.category == category))

    def step_window(self, step: int) -> tuple[float, float]:
        """(start, end) of execution `step`: from the first op of any device to the last op's end."""
        ev = self.ops(step=step)
        if not ev:
            raise Error(f"no step {step} in this profile; it has steps 0..{self.steps - 1}")
        return min(e.start for e in ev), max(e.end for e in ev)

    @property
    def step_seconds(self) -> tuple[float, ...]:
        """Wall time of each execution in the trace (the span of its ops over all devices)."""
        return tuple(b - a for a, b in (self.step_window(s) for s in range(self.steps)))

    def device_steps(self) -> tuple[DeviceStep, ...]:
        """A `DeviceStep` for each step and device, in that order."""
        out = []
        for s in range(self.steps):
            a, b = self.step_window(s)
            for d in self.devices:
                ev = self.ops(step=s, device=d)
                excl, idle = _exclusive(ev, a, b)
                incl = {c: 0.0 for c in CATEGORIES}
                ops = {c: 0 for c in CATEGORIES}
                for e in ev:
                    incl[e.category] = incl.get(e.category, 0.0) + e.duration
                    if not e.name.split(".")[0].endswith("-done"):
                        ops[e.category] = ops.get(e.category, 0) + 1
                out.append(DeviceStep(step=s, device=d, start=a, end=b, seconds=excl, idle=idle, inclusive=incl,
                                      ops=ops))
        return tuple(out)

    def totals(self, device: int | None = None) -> dict[str, float]:
        """Seconds per step in each category and idle, averaged over steps (and over devices
        unless `device` is given). The values add up to the mean step time."""
        rows = [r for r in self.device_steps() if device is None or r.device == device]
        if not rows:
            raise Error(f"no device {device} in this profile; devices: {list(self.devices)}")
        out = {c: sum(r.seconds.get(c, 0.0) for r in rows) / len(rows) for c in CATEGORIES}
        out["idle"] = sum(r.idle for r in rows) / len(rows)
        return out

    def waiting(self, device: int | None = None) -> dict[str, float]:
        """{kind: seconds per step} that collectives spent waiting for their group's other devices
        (`TraceEvent.wait`), averaged over steps (and devices unless `device` is given)."""
        ev = [e for e in self.events if e.category in COLLECTIVES and (device is None or e.device == device)]
        k = self.steps * (1 if device is not None else len(self.devices))
        out: dict[str, float] = collections.defaultdict(float)
        for e in ev:
            out[e.category] += e.wait / k
        return dict(out)

    def per_device(self) -> dict[int, dict[str, float]]:
        """`totals(device)` for every device."""
        return {d: self.totals(d) for d in self.devices}

    def op_counts(self, *, step: int = 0, device: int | None = None) -> dict[str, int]:
        """{category: number of ops} that one device ran in one step (async '-done' halves not
        counted). `device` defaults to the first one."""
        d = self.devices[0] if device is None else device
        rows = [r for r in self.device_steps() if r.step == step and r.device == d]
        if not rows:
            raise Error(f"no step {step} on device {d} in this profile")
        return {c: n for c, n in rows[0].ops.items() if n}

    def collective_counts(self) -> dict[str, int]:
        """{kind: collective ops per device per step}; raises `Error` if devices or steps differ."""
        seen = {tuple((k, r.ops.get(k, 0)) for k in COLLECTIVES) for r in self.device_steps()}
        if len(seen) != 1:
            raise Error(f"devices or steps ran different numbers of collectives: {sorted(seen)}")
        return {k: n for k, n in next(iter(seen)) if n}

    def names(self, *, step: int = 0, device: int | None = None) -> collections.Counter:
        """How many times each op name ran on one device in one step."""
        d = self.devices[0] if device is None else device
        return collections.Counter(e.name for e in self.ops(step=step, device=d))

    def top_ops(self, n: int = 10, *, device: int | None = None) -> list[tuple[str, str, float]]:
        """The `n` ops with the most time per step (mean over steps and devices):
        (name, category, seconds per step per device)."""
        ev = [e for e in self.events if device is None or e.device == device]
        per = collections.defaultdict(float)
        cat = {}
        for e in ev:
            per[e.name] += e.duration
            cat[e.name] = e.category
        k = self.steps * (1 if device is not None else len(self.devices))
        ranked = sorted(per.items(), key=lambda kv: -kv[1])[:n]
        return [(name, cat[name], s / k) for name, s in ranked]

    def to_rows(self) -> list[dict[str, Any]]:
        """One row per step and device: the window, each category's seconds, idle (plain floats)."""
        rows = []
        for r in self.device_steps():
            row: dict[str, Any] = {"step": r.step, "device": r.device, "window_s": r.window}
            row.update({f"{c}_s": r.seconds.get(c, 0.0) for c in CATEGORIES if any(
                x.seconds.get(c, 0.0) for x in self.device_steps())})
            row["idle_s"] = r.idle
            rows.append(row)
        return rows

    def __repr__(self) -> str:
        t = self.totals()
        step = sum(t.values())
        parts = ", ".join(f"{k} {units.fmt_percent(v / step, 0)}" for k, v in t.items() if v > 0.005 * step)
        return (f"Profile({self.module}: {len(self.devices)} devices x {self.steps} steps, {len(self.events)} op "
                f"events; mean step {_f(step, 's')}: {parts})")

    def _repr_html_(self) -> str:
        from .transformer import _html_table

        per = self.per_device()
        cats = [c for c in (*CATEGORIES, "idle") if any(v[c] > 0 for v in per.values())]
        rows = [(d, *(f"{1e3 * v[c]:.2f}" for c in cats)) for d, v in per.items()]
        over = f"{self.steps} steps" if self.steps != 1 else "1 step"
        cap = (f"{self.module}: ms per step on each device (mean over {over}; each instant counted "
               f"once; the row adds up to the step)")
        return _html_table(("device", *cats), rows, cap)


def find_trace(path: "str | os.PathLike") -> Path:
    """The trace file at `path`: the file itself, or the newest `perfetto_trace.json.gz` (else
    `*.trace.json.gz`) under a directory. Raises `Error` if there is none."""
    p = Path(path)
    if p.is_file():
        return p
    if not p.is_dir():
        raise Error(f"no trace file or directory at {str(p)!r}")
    found = sorted(p.rglob("perfetto_trace.json.gz"), key=lambda f: f.stat().st_mtime)
    if not found:
        found = sorted(p.rglob("*.trace.json.gz"), key=lambda f: f.stat().st_mtime)
    if not found:
        raise Error(f"no perfetto_trace.json.gz under {str(p)!r}: capture with "
                    "jax.profiler.trace(dir, create_perfetto_trace=True)")
    return found[-1]


def _is_bookkeeping(name: str) -> bool:
    return name.startswith(BOOKKEEPING)


def parse_trace(data: "Mapping[str, Any] | Sequence[Mapping[str, Any]]", *, hlo: str | None = None,
                module: str | None = None, source: str | None = None) -> Profile:
    """A `Profile` from a parsed Chrome/Perfetto trace: a dict with 'traceEvents' or the event list.

    Keeps complete events ('ph' 'X') that name an HLO op and a device (`args.hlo_op`,
    `args.device_ordinal`) and are not runtime bookkeeping (`BOOKKEEPING`); `module` keeps one
    program's ops (default: the program with the most op events). Steps are the program's
    executions (`args.run_id`) in time order. `hlo`, the program's compiled HLO text, sets each
    op's category (`HloOp.category`); without it the category is guessed from the name.
    """
    events = data.get("traceEvents") if isinstance(data, Mapping) else data
    if not isinstance(events, (list, tuple)):
        raise Error("a trace is a dict with a 'traceEvents' list (Chrome trace format) or such a list")
    ops, dropped = [], 0
    waits: dict[int, list[tuple[float, float]]] = collections.defaultdict(list)
    for e in events:
        if isinstance(e, Mapping) and e.get("ph") == "X" and e.get("name") == "Rendezvous":
            try:
                waits[int(e.get("tid", 0))].append((float(e["ts"]), float(e["dur"])))
            except (KeyError, TypeError, ValueError):
                pass
    for ts_list in waits.values():
        ts_list.sort()
    for e in events:
        if not isinstance(e, Mapping) or e.get("ph") != "X":
            continue
        args = e.get("args") or {}
        name = str(e.get("name", ""))
        if "hlo_op" not in args or "device_ordinal" not in args or _is_bookkeeping(name):
            dropped += 1
            continue
        try:
            ops.append((name, int(args["device_ordinal"]), int(e.get("tid", 0)), float(e["ts"]), float(e["dur"]),
                        str(args.get("hlo_module", "")), str(args.get("run_id", "0"))))
        except (KeyError, TypeError, ValueError) as exc:
            raise Error(f"malformed trace event {dict(e)!r}: {exc}") from None
    if not ops:
        raise Error("the trace has no XLA op events (args.hlo_op and args.device_ordinal); was the program run "
                    "and blocked on inside the `with jax.profiler.trace(...)` block?")
    modules = collections.Counter(o[5] for o in ops)
    if module is None:
        module = modules.most_common(1)[0][0]
    elif module not in modules:
        raise Error(f"no ops of module {module!r} in the trace; modules: {', '.join(sorted(modules))}")
    kept = [o for o in ops if o[5] == module]
    dropped += len(ops) - len(kept)
    first = {}
    for o in kept:
        first[o[6]] = min(first.get(o[6], math.inf), o[3])
    step_of = {run: i for i, run in enumerate(sorted(first, key=first.get))}
    t0 = min(o[3] for o in kept)
    cats = {op.name: op.category for op in hlo_ops(hlo)} if hlo is not None else None

    def waited(tid: int, ts: float, dur: float) -> float:
        inside = waits.get(tid, ())
        i = bisect.bisect_left(inside, (ts, -math.inf))
        total = 0.0
        while i < len(inside) and inside[i][0] <= ts + dur:
            total += min(inside[i][1], ts + dur - inside[i][0])
            i += 1
        return total

    out = []
    for n, d, t, ts, dur, mod, run in kept:
        c = categorize(n, cats)
        out.append(TraceEvent(name=n, device=d, thread=t, start=(ts - t0) * 1e-6, duration=dur * 1e-6, category=c,
                              step=step_of[run], module=mod,
                              wait=waited(t, ts, dur) * 1e-6 if c in COLLECTIVES else 0.0))
    out.sort(key=lambda e: (e.start, e.device))
    return Profile(events=tuple(out), module=module, source=source, dropped=dropped)


def read_trace(path: "str | os.PathLike", *, hlo: str | None = None, module: str | None = None) -> Profile:
    """Read a trace file (`.json.gz` or `.json`) or the newest one under a directory (`find_trace`)
    and parse it with `parse_trace`. Raises `Error` for a missing or unreadable file."""
    f = find_trace(path)
    try:
        opener = gzip.open if f.suffix == ".gz" else open
        with opener(f, "rt", encoding="utf-8") as fh:
            data = json.load(fh)
    except (OSError, ValueError, EOFError) as exc:
        raise Error(f"cannot read trace {str(f)!r}: {exc}") from None
    return parse_trace(data, hlo=hlo, module=module, source=str(f))


def capture(fn: Callable, *args: Any, steps: int = 3, warmup: int = 1, carry: int = 0,
            trace_dir: "str | os.PathLike | None" = None, hlo: str | None = None) -> Profile:
    """Run `fn(*args)` `steps` times under `jax.profiler.trace` and parse the trace.

    `fn` is a jitted function (compiled here for `args`) or a compiled program; the op categories
    come from its HLO. Any other callable is run as it is, with `hlo` the text of the program it
    runs. `warmup` calls run first, outside the trace. `carry=k` feeds the first `k`
    outputs of each call back as its first `k` arguments (a training step whose params and
    optimizer state are donated). Results are blocked on inside the trace (TOOLCHAIN.md, note 15). The
    trace is written under `trace_dir` (kept, for Perfetto: ui.perfetto.dev) or a temporary
    directory (removed).
    """
    require_positive(steps=steps)
    if isinstance(warmup, bool) or not isinstance(warmup, int) or warmup < 0:
        raise Error(f"warmup must be an integer >= 0, got {warmup!r}")
    if isinstance(carry, bool) or not isinstance(carry, int) or not 0 <= carry <= len(args):
        raise Error(f"carry must be an integer from 0 to the number of arguments ({len(args)}), got {carry!r}")
    if hasattr(fn, "as_text") and hasattr(fn, "memory_analysis"):
        compiled = fn
    elif hasattr(fn, "lower"):
        compiled = fn.lower(*args).compile()
    elif callable(fn) and isinstance(hlo, str):
        compiled = fn
    else:
        raise Error(f"fn must be a jax.jit-ed function, a compiled program, or a callable with its hlo text; "
                    f"got {type(fn).__name__}")
    hlo = compiled.as_text() if hasattr(compiled, "as_text") else hlo
    args = list(args)
    import jax

    def call():
        out = compiled(*args)
        if carry:
            outs = out if isinstance(out, (tuple, list)) else (out,)
            args[:carry] = list(outs[:carry])
        return out

    for _ in range(warmup):
        jax.block_until_ready(call())
    keep = trace_dir is not None
    where = Path(trace_dir) if keep else Path(tempfile.mkdtemp(prefix="scalebook-trace-"))
    try:
        before = set(where.rglob("perfetto_trace.json.gz")) if where.exists() else set()
        with jax.profiler.trace(str(where), create_perfetto_trace=True):
            for i in range(int(steps)):
                with jax.profiler.StepTraceAnnotation("step", step_num=i):
                    out = call()
                jax.block_until_ready(out)
        new = sorted(set(where.rglob("perfetto_trace.json.gz")) - before, key=lambda f: f.stat().st_mtime)
        if not new:
            raise Error(f"jax.profiler wrote no perfetto_trace.json.gz under {str(where)!r}")
        prof = read_trace(new[-1], hlo=hlo)
    finally:
        if not keep:
            shutil.rmtree(where, ignore_errors=True)
    return prof if keep else Profile(events=prof.events, module=prof.module, source=None, dropped=prof.dropped)


# ------------------------------------------------------------------ predicted, compiled, measured


@dataclass(frozen=True)
class LineUpRow(Readable):
    """One quantity three ways: predicted (the package), compiled (XLA), measured (the trace).

    A value is None where that view has no such number. `unit` is a `units` unit ('', 'B', 's',
    'FLOP'); `note` says what each column counts when they differ in kind.
    """

    quantity: str
    unit: str
    predicted: float | None
    compiled: float | None
    measured: float | None
    note: str = ""

    def _cell(self, v: float | None) -> str:
        if v is None:
            return "-"
        return f"{v:g}" if self.unit == "" else _f(v, self.unit)

    def __repr__(self) -> str:
        return (f"LineUpRow({self.quantity}: predicted {self._cell(self.predicted)}, compiled "
                f"{self._cell(self.compiled)}, measured {self._cell(self.measured)})")


@dataclass(frozen=True)
class LineUp(Readable):
    """Rows of `LineUpRow`, per device and per step; `predicted_chip` is the chip the package's
    seconds are for (the measured ones are on the machine that ran the trace)."""

    rows: tuple[LineUpRow, ...]
    predicted_chip: str
    measured_on: str = ""

    def row(self, quantity: str) -> LineUpRow:
        for r in self.rows:
            if r.quantity == quantity:
                return r
        raise Error(f"no row {quantity!r}; rows: {', '.join(r.quantity for r in self.rows)}")

    def to_rows(self) -> list[dict[str, Any]]:
        return [{"quantity": r.quantity, "unit": r.unit, "predicted": r.predicted, "compiled": r.compiled,
                 "measured": r.measured, "note": r.note} for r in self.rows]

    def __repr__(self) -> str:
        w = max(len(r.quantity) for r in self.rows)
        lines = [f"{'per device, per step':<{w}}  {'predicted':>12}  {'compiled':>12}  {'measured':>12}"]
        for r in self.rows:
            lines.append(f"{r.quantity:<{w}}  {r._cell(r.predicted):>12}  {r._cell(r.compiled):>12}  "
                         f"{r._cell(r.measured):>12}")
        lines.append(f"(predicted seconds on {self.predicted_chip}; measured on {self.measured_on or 'this machine'})")
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        from .transformer import _html_table

        rows = [(r.quantity, r._cell(r.predicted), r._cell(r.compiled), r._cell(r.measured), r.note)
                for r in self.rows]
        cap = (f"Per device and step: predicted (seconds on {self.predicted_chip}), compiled (XLA), measured "
               f"({self.measured_on or 'this machine'})")
        return _html_table(("quantity", "predicted", "compiled", "measured", "note"), rows, cap)


def line_up(estimate: Any, *, hlo: str, mesh_shape: Mapping[str, int], memory: Any = None,
            profile: Profile | None = None, cost: Any = None, cpu: bool = True, measured_on: str = "") -> LineUp:
    """Set a `training.TrainingEstimate` beside the compiled HLO and a measured `Profile` of the
    same step, per device and per step.

    Rows, for each collective kind: ops (predicted: the package's count, one per array it prices;
    compiled: HLO ops; measured: trace events), bytes V (sum over the ops) and seconds (predicted:
    on the estimate's chip; measured: time not hidden behind compute); then compute FLOPs
    (`cost`, an `xla.CompiledCost`) and seconds, memory per device (`memory`, a
    `MemoryAnalysis`) and the step time. With `cpu` (default) a predicted ReduceScatter is listed
    as the AllReduce XLA:CPU compiles instead (`xla.CPU_EQUIVALENTS`).
    """
    from . import xla

    if not hasattr(estimate, "collectives") or not hasattr(estimate, "memory"):
        raise Error(f"estimate must be a training.TrainingEstimate, got {type(estimate).__name__}")
    if profile is not None and not isinstance(profile, Profile):
        raise Error(f"profile must be a scalebook.profile.Profile, got {type(profile).__name__}")
    compiled_c = collectives(hlo, mesh_shape)
    chips = estimate.chips
    pred_ops: dict[str, float] = collections.defaultdict(float)
    pred_bytes: dict[str, float] = collections.defaultdict(float)
    pred_s: dict[str, float] = collections.defaultdict(float)
    for c in estimate.collectives:
        kind = xla.CPU_EQUIVALENTS.get(c.kind, c.kind) if cpu else c.kind
        pred_ops[kind] += c.count
        pred_bytes[kind] += c.count * c.array_bytes
        pred_s[kind] += c.total_seconds
    comp_ops = collections.Counter(c.kind for c in compiled_c)
    comp_bytes: dict[str, float] = collections.defaultdict(float)
    for c in compiled_c:
        comp_bytes[c.kind] += c.array_bytes
    meas_counts = profile.collective_counts() if profile is not None else {}
    meas_t = profile.totals() if profile is not None else {}
    rows = []
    for kind in [k for k in COLLECTIVES if k in pred_ops or k in comp_ops or k in meas_counts]:
        rows.append(LineUpRow(f"{kind} ops", "", pred_ops.get(kind), float(comp_ops.get(kind, 0)),
                              float(meas_counts.get(kind, 0)) if profile is not None else None,
                              "predicted: one per array priced; XLA: one per op (combined ops count once)"))
        rows.append(LineUpRow(f"{kind} bytes V", "B", pred_bytes.get(kind), comp_bytes.get(kind, 0.0), None,
                              "sum of V over the ops"))
        rows.append(LineUpRow(f"{kind} seconds", "s", pred_s.get(kind),
                              None, meas_t.get(kind) if profile is not None else None,
                              "measured: time not hidden behind compute"))
    flops = getattr(cost, "flops", None)
    rows.append(LineUpRow("compute FLOPs", "FLOP", estimate.hardware_flops / chips, flops, None,
                          "package: matmuls and attention; XLA: every op"))
    rows.append(LineUpRow("compute seconds", "s", estimate.compute_seconds, None,
                          (meas_t["matmul"] + meas_t["fusion"] + meas_t["other"]) if profile is not None else None,
                          "measured: matmuls, fusions and other ops"))
    rows.append(LineUpRow("memory bytes", "B", estimate.memory.bytes,
                          float(memory.bytes) if memory is not None else None, None,
                          "XLA: arguments + outputs - aliased + temporaries"))
    rows.append(LineUpRow("step seconds", "s", estimate.step_seconds, None,
                          sum(profile.step_seconds) / profile.steps if profile is not None else None,
                          "measured: span of all devices' ops"))
    return LineUp(rows=tuple(rows), predicted_chip=estimate.chip.name, measured_on=measured_on)


@dataclass(frozen=True)
class StepProfile(Readable):
    """A training step (`jax_training`) compiled, run and profiled: the three views of it.

    `profile`: the parsed trace; `hlo`, `compiled`: the program; `memory`: `memory_analysis`;
    `cost`: `xla.cost` (per device); `collectives`: `xla.collectives_in_hlo`; `losses`: each
    traced step's loss.
    """

    model: Any
    mesh_shape: dict
    batch: int
    seq_len: int
    profile: Profile
    memory: Any
    cost: Any
    collectives: tuple
    losses: tuple[float, ...]
    hlo: str = field(repr=False)
    compiled: Any = field(repr=False)

    def line_up(self, estimate: Any, *, measured_on: str = "") -> LineUp:
        return line_up(estimate, hlo=self.hlo, mesh_shape=self.mesh_shape, memory=self.memory,
                       profile=self.profile, cost=self.cost, measured_on=measured_on)

    def __repr__(self) -> str:
        mesh = "x".join(f"{k}={v}" for k, v in self.mesh_shape.items())
        return f"StepProfile({self.model.name} on {mesh}, B={self.batch}, T={self.seq_len}: {self.profile})"

    def _repr_html_(self) -> str:
        return self.profile._repr_html_()


def profile_training(model: Any = None, *, mesh_shape: Mapping[str, int] | None = None, batch: int = 16,
                     seq_len: int = 64, steps: int = 3, warmup: int = 1, lr: float = 3e-3, seed: int = 0,
                     trace_dir: "str | os.PathLike | None" = None) -> StepProfile:
    """Compile `jax_training`'s FSDP x TP step (default: `jax_training.SMALL` on a 4x2 mesh),
    run `warmup` steps, then profile `steps` more (`capture`, params and Adam state carried)."""
    import jax
    from jax.sharding import NamedSharding, PartitionSpec as P

    from . import jax_training as jt
    from . import xla

    model = jt.SMALL if model is None else model
    shape = dict(mesh_shape or {"fsdp": 4, "tp": 2})
    compiled = jt.compile_train_step(model, mesh_shape=shape, batch=batch, seq_len=seq_len, lr=lr)
    mesh = xla.mesh(shape)
    spec = jt.param_specs(model)
    p_sh = jax.tree.map(lambda s: NamedSharding(mesh, s), spec, is_leaf=lambda x: isinstance(x, P))
    params = jax.device_put(jt.init_model(model, seed=seed), p_sh)
    state = jax.device_put(jt.init_adam(params), {"step": NamedSharding(mesh, P()), "m": p_sh, "v": p_sh})
    tokens = jax.device_put(jt.synthetic_tokens(batch=batch, seq_len=seq_len, vocab=model.vocab, seed=seed),
                            NamedSharding(mesh, P("fsdp", None)))
    losses: list[float] = []
    args = [params, state, tokens]

    def step(p, s, t):
        out = compiled(p, s, t)
        losses.append(out[2])
        return out

    hlo = compiled.as_text()
    prof = capture(step, *args, steps=steps, warmup=warmup, carry=2, trace_dir=trace_dir, hlo=hlo)
    return StepProfile(model=model, mesh_shape=shape, batch=batch, seq_len=seq_len, profile=prof,
                       memory=memory_analysis(compiled), cost=xla.cost(compiled), collectives=collectives(hlo, shape),
                       losses=tuple(float(x) for x in losses[warmup:]), hlo=hlo, compiled=compiled)
