"""Figures of chapter 5 (training in parallel): thresholds, memory, step time, pipelines, plans.

Every function draws with matplotlib (imported inside the function), takes an optional `ax`
and returns the `Figure`. Every number comes from `scalebook.training` and `scalebook.planner`
(the step model of `scalebook.step`); the pipeline timeline is a small event simulation of the
schedules that chapter 5 describes, with a backward pass twice as long as a forward pass.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping, Sequence

from ._axes import axes
from .. import topology as _topo
from .. import training
from ..errors import Error, require_positive
from ..hardware import chip as _chip
from ..models import Transformer, preset

__all__ = [
    "critical_batch_vs_chips",
    "compute_vs_comm",
    "memory_by_strategy",
    "step_time_by_strategy",
    "PipelineOp",
    "pipeline_timeline",
    "pipeline_schedule",
    "pipeline_bubble",
    "strategy_map",
]


def _model(m: "Transformer | str") -> Transformer:
    return preset(m) if isinstance(m, str) else m


def _powers_of_two(lo: int, hi: int) -> list[int]:
    out, n = [], 1
    while n <= hi:
        if n >= lo:
            out.append(n)
        n *= 2
    return out


def _layout(chip, n: int, slice_shape: "str | None"):
    """The topology of `n` chips: `topology.for_chips`, or equal slices of `slice_shape` over DCN."""
    if slice_shape is None:
        return _topo.for_chips(chip, n)
    per = math.prod(int(d) for d in slice_shape.lower().split("x"))
    if n <= per:
        return _topo.for_chips(chip, n)
    if n % per:
        raise Error(f"{n} chips are not whole slices of {slice_shape}")
    return _topo.multislice(chip, slice_shape, slices=n // per)


# --- thresholds ------------------------------------------------------------------------------------

_STRATEGY_STYLE = {"DP": ("#4c72b0", "o"), "FSDP": ("#dd8452", "s"), "FSDP+TP": ("#55a868", "^")}


def critical_batch_vs_chips(chip: str = "tpu-v5p", model: "Transformer | str" = "llama3-70b", *,
                            chips: "Sequence[int] | None" = None, seq_len: int = 8192, tp: int = 8,
                            slice_shape: "str | None" = None,
                            global_batch_tokens: Sequence[float] = (2 ** 22,), efficiency: float = 1.0,
                            ax=None):
    """Tokens per chip that keep DP, FSDP and FSDP + TP compute-bound, against the chip count.

    Each point is `training.critical_batch_per_chip` for the strategy on `chips` chips laid out
    by `topology.for_chips` (or, for a TPU, in slices of `slice_shape` joined over DCN). Dashed
    diagonals show the batch each chip actually gets when a global batch of
    `global_batch_tokens` is spread over the chips: a strategy stays compute-bound while the
    diagonal is above its line. The shaded region is where the chips span more than one pod,
    slice or NVLink node, so the slow network (DCN or InfiniBand) joins in.
    """
    c = _chip(chip)
    m = _model(model)
    require_positive(seq_len=seq_len, tp=tp, efficiency=efficiency)
    if chips is None:
        chips = _powers_of_two(16, 32768) if c.is_tpu else _powers_of_two(8, 16384)
    chips = list(chips)
    if not chips:
        raise Error("critical_batch_vs_chips needs at least one chip count")
    fig, ax = axes(ax, (6.4, 4.4))
    lows: list[float] = []
    for label in ("DP", "FSDP", "FSDP+TP"):
        xs, ys = [], []
        for n in chips:
            if label == "FSDP+TP" and (n % tp or n // tp < 2):
                continue
            s = {"DP": training.Strategy(dp=n), "FSDP": training.Strategy(fsdp=n),
                 "FSDP+TP": training.Strategy(fsdp=n // tp, tp=tp, sequence_parallel=True)}[label]
            topo = _layout(c, n, slice_shape)
            xs.append(n)
            ys.append(training.critical_batch_per_chip(m, strategy=s, seq_len=seq_len, topology=topo,
                                                       efficiency=efficiency))
        color, marker = _STRATEGY_STYLE[label]
        name = f"FSDP + TP{tp}" if label == "FSDP+TP" else label
        if label == "DP":  # drawn wide underneath: DP and FSDP need the same batch
            ax.plot(xs, ys, color=color, label=name, lw=6, alpha=0.45, solid_capstyle="round")
        else:
            ax.plot(xs, ys, marker=marker, color=color, label=name, lw=1.8, ms=5)
        lows.extend(ys)
    lo, hi = min(chips), max(chips)
    positive = [y for y in lows if y > 0]
    y_lo, y_hi = min(positive) / 4, max(positive) * 32
    for i, b in enumerate(global_batch_tokens):
        ax.plot([lo, hi], [b / lo, b / hi], ls="--", color="0.35", lw=1.0)
        x_text = min(max(b / (y_lo * y_hi) ** 0.5, lo), hi)  # where the diagonal is mid-height
        right = math.log(x_text / lo) > 0.55 * math.log(hi / lo) if hi > lo else False  # keep it in the frame
        ax.annotate(f"{_tokens(b)} tokens per step,\nspread over the chips", xy=(x_text, b / x_text),
                    xytext=(-6 if right else 6, 6 + 22 * i), textcoords="offset points",
                    ha="right" if right else "left", va="bottom", fontsize=9, color="0.25")
    if c.is_tpu:
        per = (math.prod(int(d) for d in slice_shape.lower().split("x")) if slice_shape
               else math.prod(int(d) for d in c.pod_topology.split("x")))
        where = f"DCN (beyond one {slice_shape} slice)" if slice_shape else "DCN (beyond one pod)"
    else:
        per, where = c.nvlink_domain, "InfiniBand (beyond one node)"
    if hi > per:
        ax.axvspan(per * 1.001, hi * 1.3, color="#eeeeee", zorder=0)
        ax.annotate(where, xy=(0.98, 0.97), xycoords="axes fraction", ha="right", va="top", fontsize=9,
                    color="0.3", bbox=dict(boxstyle="square,pad=0.2", fc="#eeeeee", ec="none"))
    ax.set_xscale("log", base=2)
    ax.set_yscale("log", base=2)
    ax.set_xlim(lo / 1.3, hi * 1.3)
    ax.set_ylim(y_lo, y_hi)
    ax.set_xlabel("chips")
    ax.set_ylabel("tokens per chip per step")
    ax.set_title(f"{m.name} on {c.display_name}: batch per chip to stay compute-bound", fontsize=10)
    ax.legend(fontsize=9, loc="lower left")
    fig.tight_layout()
    return fig


def _tokens(b: float) -> str:
    for value, suffix in ((1e9, "B"), (1e6, "M"), (1e3, "k")):
        if b >= value:
            return f"{b / value:.3g}{suffix}"
    return f"{b:g}"


def compute_vs_comm(model: "Transformer | str" = "llama3-70b", *, chip: str = "tpu-v5p", chips: int = 256,
                    strategy: "training.Strategy | None" = None, seq_len: int = 256,
                    tokens_per_chip: "Sequence[int] | None" = None, efficiency: float = 1.0, ax=None):
    """Step time of one strategy against the tokens each chip gets, with its compute and traffic.

    Compute grows with the batch; the FSDP and DP traffic does not. The step time (from
    `training.estimate`) follows the traffic at small batches and the compute at large ones; the
    vertical line is `training.critical_batch_per_chip`, where the two cross. Short sequences
    (`seq_len`) let a chip hold less than one long sequence's worth of tokens.
    """
    m = _model(model)
    s = strategy or training.Strategy(fsdp=chips)
    if tokens_per_chip is None:
        tokens_per_chip = _powers_of_two(64, 16 * 1024)
    tokens_per_chip = [t for t in tokens_per_chip if (t * chips) % seq_len == 0
                       and (t * chips // seq_len) % s.data == 0]
    if not tokens_per_chip:
        raise Error("no per-chip batch in tokens_per_chip splits into whole sequences over the replicas")
    fig, ax = axes(ax, (6.4, 4.2))
    comp, comm, step = [], [], []
    for t in tokens_per_chip:
        e = training.estimate(m, strategy=s, seq_len=seq_len, batch_tokens=t * chips, chip=chip, chips=chips,
                              efficiency=efficiency)
        comp.append(e.compute_seconds)
        comm.append(e.comm_seconds["fsdp"] + e.comm_seconds["dp"])
        step.append(e.step_seconds)
    ax.plot(tokens_per_chip, comp, color="#4c72b0", lw=1.6, label="compute")
    ax.plot(tokens_per_chip, comm, color="#c44e52", lw=1.6, label="FSDP + DP traffic")
    ax.plot(tokens_per_chip, step, color="k", lw=2.4, ls=":", label="step time (estimate)")
    crit = training.critical_batch_per_chip(m, strategy=s, seq_len=seq_len, chip=chip, chips=chips,
                                            efficiency=efficiency)
    ax.axvline(crit, color="0.3", lw=1.0, ls="--")
    ax.annotate(f"critical batch\n{crit:,.0f} tokens/chip", xy=(crit, 0.97), xycoords=("data", "axes fraction"),
                xytext=(6, 0), textcoords="offset points", ha="left", va="top", fontsize=9)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("tokens per chip per step")
    ax.set_ylabel("seconds per step")
    ax.set_title(f"{m.name}, {s.label()} on {chips} {_chip(chip).display_name}", fontsize=10)
    ax.legend(fontsize=9, loc="lower right")
    fig.tight_layout()
    return fig


# --- memory and step time by strategy ------------------------------------------------------------------

_MEM_COLORS = {"parameters": "#4c72b0", "gradients": "#55a868", "optimizer": "#8172b3",
               "gathered weights": "#64b5cd", "activations": "#dd8452", "logits": "#c44e52"}


def _check_estimates(estimates: "Mapping[str, training.TrainingEstimate]", what: str) -> None:
    if not estimates:
        raise Error(f"{what} needs at least one labelled training.estimate result")
    for k, e in estimates.items():
        if not isinstance(e, training.TrainingEstimate):
            raise Error(f"{what}: {k!r} is not a training.estimate result")


def memory_by_strategy(estimates: "Mapping[str, training.TrainingEstimate]", *, ax=None):
    """Bytes per chip of each labelled estimate, stacked by part (`e.memory.parts()`), beside HBM."""
    _check_estimates(estimates, "memory_by_strategy")
    labels = list(estimates)
    fig, ax = axes(ax, (7.2, 0.55 * len(labels) + 1.8))
    seen = set()
    hbm = set()
    for i, k in enumerate(labels):
        e = estimates[k]
        left = 0.0
        for part, v in e.memory.parts().items():
            if v <= 0:
                continue
            ax.barh(i, v / 1e9, left=left, color=_MEM_COLORS[part], edgecolor="white", linewidth=0.5,
                    label=part if part not in seen else None)
            seen.add(part)
            left += v / 1e9
        ax.text(left, i, f" {left:,.0f} GB" + ("" if e.fits else " (does not fit)"), va="center", fontsize=9)
        hbm.add(e.memory.hbm_bytes)
    for h in sorted(hbm):
        ax.axvline(h / 1e9, color="k", lw=1.0, ls="--")
        ax.annotate(f"HBM {h / 1e9:.0f} GB", xy=(h / 1e9, 1.0), xycoords=("data", "axes fraction"),
                    xytext=(3, 2), textcoords="offset points", fontsize=9, va="bottom")
    ax.set_yticks(range(len(labels)), labels, fontsize=9)
    ax.invert_yaxis()
    xmax = max(sum(estimates[k].memory.parts().values()) for k in labels) / 1e9
    ax.set_xlim(0, xmax * 1.5)
    ax.set_xlabel("GB per chip")
    ax.legend(fontsize=9, loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=3, frameon=False)
    fig.tight_layout()
    return fig


_STEP_COLORS = {"model matmuls": "#4c72b0", "recomputed matmuls (remat)": "#a1c9f4",
                "memory-bound ops": "#64b5cd", "tp (exposed)": "#55a868",
                "fsdp (exposed)": "#dd8452", "dp (exposed)": "#937860", "pp (exposed)": "#da8bc3",
                "ep (exposed)": "#c44e52", "cp (exposed)": "#8c8c8c", "pipeline bubble": "#ffb482",
                "optimizer update": "#8172b3"}


def _step_parts(e: "training.TrainingEstimate") -> dict[str, float]:
    parts = dict(e.breakdown())
    matmuls = parts.pop("matmuls") if "matmuls" in parts else parts.pop("compute")
    remat = matmuls * (1 - e.model_flops / e.hardware_flops)
    out = {"model matmuls": matmuls - remat, "recomputed matmuls (remat)": remat}
    out.update(parts)
    return {k: v for k, v in out.items() if v > 0}


def step_time_by_strategy(estimates: "Mapping[str, training.TrainingEstimate]", *, ax=None):
    """Step seconds of each labelled estimate, split as `e.breakdown()` splits them (MFU at the end).

    The matmul time is split into the model's own FLOPs and what remat recomputes.
    """
    _check_estimates(estimates, "step_time_by_strategy")
    labels = list(estimates)
    fig, ax = axes(ax, (8.2, 0.55 * len(labels) + 2.0))
    seen = set()
    for i, k in enumerate(labels):
        e = estimates[k]
        left = 0.0
        for part, v in _step_parts(e).items():
            ax.barh(i, v, left=left, color=_STEP_COLORS.get(part, "#999999"), edgecolor="white", linewidth=0.5,
                    label=part if part not in seen else None)
            seen.add(part)
            left += v
        ax.text(left, i, f" MFU {100 * e.mfu:.0f}%", va="center", fontsize=9)
    ax.set_yticks(range(len(labels)), labels, fontsize=9)
    ax.invert_yaxis()
    ax.set_xlim(0, max(estimates[k].step_seconds for k in labels) * 1.25)
    ax.set_xlabel("seconds per step")
    ax.legend(fontsize=9, loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=3, frameon=False)
    fig.tight_layout()
    return fig


# --- pipelines -------------------------------------------------------------------------------------

@dataclass(frozen=True)
class PipelineOp:
    """One forward ('F') or backward ('B') pass of one microbatch on one stage, in time units."""

    stage: int
    kind: str
    microbatch: int
    start: float
    duration: float

    @property
    def end(self) -> float:
        return self.start + self.duration


def _stage_order(schedule: str, stages: int, micro: int, s: int) -> list[tuple[str, int]]:
    if schedule == "gpipe":
        return [("F", i) for i in range(micro)] + [("B", i) for i in range(micro)]
    warm = min(stages - 1 - s, micro)
    order = [("F", i) for i in range(warm)]
    for i in range(micro - warm):
        order += [("F", warm + i), ("B", i)]
    order += [("B", i) for i in range(micro - warm, micro)]
    return order


def pipeline_timeline(stages: int = 4, microbatches: int = 8, schedule: str = "1f1b", *,
                      forward: float = 1.0, backward: float = 2.0) -> list[PipelineOp]:
    """When each stage runs each microbatch's forward and backward pass, for 'gpipe' or '1f1b'.

    GPipe runs every forward, then every backward; 1F1B starts backward passes as soon as the
    last stage can, so a stage holds at most `stages` microbatches of activations. A forward on
    stage s waits for stage s - 1, a backward for stage s + 1. Both finish at
    (microbatches + stages - 1) x (forward + backward): the same bubble.
    """
    for name, v in (("stages", stages), ("microbatches", microbatches)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise Error(f"{name} must be a positive integer, got {v!r}")
    if schedule not in ("gpipe", "1f1b"):
        raise Error(f"unknown schedule {schedule!r}; valid: gpipe, 1f1b (interleaved: see pipeline_bubble)")
    require_positive(forward=forward, backward=backward)
    orders = [_stage_order(schedule, stages, microbatches, s) for s in range(stages)]
    pos = [0] * stages
    free = [0.0] * stages
    done: dict[tuple[str, int, int], float] = {}
    ops: list[PipelineOp] = []
    while any(p < len(o) for p, o in zip(pos, orders)):
        progressed = False
        for s in range(stages):
            if pos[s] >= len(orders[s]):
                continue
            kind, i = orders[s][pos[s]]
            dep = (("F", s - 1, i) if s > 0 else None) if kind == "F" else \
                (("B", s + 1, i) if s < stages - 1 else ("F", s, i))
            if dep is not None and dep not in done:
                continue
            start = max(free[s], done[dep] if dep is not None else 0.0)
            dur = forward if kind == "F" else backward
            ops.append(PipelineOp(stage=s, kind=kind, microbatch=i, start=start, duration=dur))
            done[(kind, s, i)] = start + dur
            free[s] = start + dur
            pos[s] += 1
            progressed = True
        if not progressed:  # pragma: no cover - the orders above never deadlock
            raise Error("pipeline schedule deadlocked")
    return ops


def pipeline_schedule(stages: int = 4, microbatches: int = 8, schedules: Sequence[str] = ("gpipe", "1f1b"), *,
                      ax=None):
    """Gantt chart of `pipeline_timeline` for each schedule: forward, backward and idle (bubble) time.

    With several schedules and no `ax`, one panel per schedule, stacked; the side label of each
    stage counts the microbatches whose activations it holds at its peak.
    """
    import matplotlib.pyplot as plt

    schedules = list(schedules)
    if not schedules:
        raise Error("pipeline_schedule needs at least one schedule")
    if ax is None:
        fig, axs = plt.subplots(len(schedules), 1, figsize=(8.5, 1.0 + 0.55 * stages * len(schedules)),
                                squeeze=False, sharex=True)
        axs = [a[0] for a in axs]
    else:
        fig, axs = ax.figure, [ax] * len(schedules)
        schedules = schedules[:1]
    for a, sched in zip(axs, schedules):
        ops = pipeline_timeline(stages, microbatches, sched)
        end = max(o.end for o in ops)
        a.barh(range(stages), [end] * stages, color="#f2f2f2", edgecolor="none")
        for o in ops:
            color = "#4c72b0" if o.kind == "F" else "#dd8452"
            a.barh(o.stage, o.duration, left=o.start, color=color, edgecolor="white", linewidth=0.8)
            a.text(o.start + o.duration / 2, o.stage, str(o.microbatch + 1), ha="center", va="center",
                   fontsize=9, color="white")
        peaks = []
        for s in range(stages):
            live, peak = 0, 0
            for o in sorted((o for o in ops if o.stage == s), key=lambda o: o.start):
                live += 1 if o.kind == "F" else -1
                peak = max(peak, live)
            peaks.append(peak)
        a.set_yticks(range(stages), [f"stage {s + 1} (holds {p})" for s, p in enumerate(peaks)], fontsize=9)
        a.invert_yaxis()
        busy = sum(o.duration for o in ops) / stages
        a.set_title(f"{'GPipe' if sched == 'gpipe' else '1F1B'}: {microbatches} microbatches on "
                    f"{stages} stages, idle {100 * (1 - busy / end):.0f}% of the time", fontsize=10)
        a.set_xlim(0, end)
    axs[-1].set_xlabel("time (one forward pass of one microbatch on one stage = 1)")
    from matplotlib.patches import Patch
    axs[0].legend(handles=[Patch(color="#4c72b0", label="forward"), Patch(color="#dd8452", label="backward"),
                           Patch(color="#f2f2f2", label="idle (bubble)")],
                  fontsize=9, loc="lower right", ncol=3, bbox_to_anchor=(1.0, 1.12), frameon=False)
    fig.tight_layout()
    return fig


def pipeline_bubble(model: "Transformer | str" = "llama3-8b", *, stages: Sequence[int] = (4, 8, 16),
                    virtual_stages: Sequence[int] = (1, 2), microbatches: "Sequence[int] | None" = None,
                    chip: str = "tpu-v5p", seq_len: int = 4096, ax=None):
    """Share of the step spent in the pipeline bubble against the number of microbatches.

    Each point is `training.estimate` of `model` on pp = `stages` chips with one sequence per
    microbatch: bubble_seconds / step_seconds. Solid lines: 1F1B; dashed: interleaved with
    `virtual_stages` chunks per chip. The dotted line marks 10%.
    """
    m = _model(model)
    microbatches = list(microbatches or _powers_of_two(1, 128))
    if not microbatches or not list(stages):
        raise Error("pipeline_bubble needs stage counts and microbatch counts")
    fig, ax = axes(ax, (6.4, 4.2))
    colors = ["#4c72b0", "#dd8452", "#55a868", "#c44e52", "#8172b3"]
    for j, pp in enumerate(stages):
        for v in virtual_stages:
            if pp * v > m.layers:
                continue
            ys = []
            for n in microbatches:
                s = training.Strategy(pp=pp, virtual_stages=v, microbatch=1)
                e = training.estimate(m, strategy=s, seq_len=seq_len, batch_seqs=n, chip=chip, chips=pp)
                ys.append(100 * e.bubble_seconds / e.step_seconds)
            ax.plot(microbatches, ys, color=colors[j % len(colors)], ls="-" if v == 1 else "--", marker="o", ms=3,
                    label=f"{pp} stages" + ("" if v == 1 else f", interleaved x{v}"))
    ax.axhline(10, color="0.3", lw=0.8, ls=":")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("microbatches per step")
    ax.set_ylabel("bubble, % of the step")
    ax.set_ylim(0, 100)
    ax.set_title(f"Pipeline bubble ({m.name} on {_chip(chip).display_name})", fontsize=10)
    ax.legend(fontsize=9, ncol=2)
    fig.tight_layout()
    return fig


# --- strategy map --------------------------------------------------------------------------------------

_FAMILY_COLORS = ["#c6dbef", "#fdd0a2", "#c7e9c0", "#dadaeb", "#fcbba1", "#d9d9d9", "#f7f7b0", "#bfe5e5"]


def _short(s: "training.Strategy") -> str:
    parts = [f"{k.upper()}{v}" for k, v in s.degrees().items() if v > 1]
    return "·".join(parts) or "1 chip"


def _family(s: "training.Strategy") -> str:
    names = {"dp": "DP", "fsdp": "FSDP", "tp": "TP", "pp": "PP", "ep": "EP", "cp": "CP"}
    kinds = [names[k] for k, v in s.degrees().items() if v > 1]
    if "DP" in kinds and "FSDP" in kinds:
        kinds.remove("DP")
    return "+".join(kinds) or "one chip"


def strategy_map(models: Sequence["Transformer | str"] = ("llama3-8b", "llama3-70b", "llama3-405b"),
                 chips: Sequence[int] = (64, 256, 1024, 4096), *, chip: str = "h100",
                 batch_tokens: float = 2 ** 22, seq_len: int = 8192, efficiency: "float | None" = None, ax=None):
    """The fastest strategy `planner.plan` finds for each model (rows) and chip count (columns).

    Each cell names the degrees of the winner, its remat policy and MFU; its colour is the family
    of parallelisms it mixes. Grey cells: nothing fits in memory.
    """
    from .. import planner
    from ..errors import Error as _Err

    ms = [_model(m) for m in models]
    chips = list(chips)
    if not ms or not chips:
        raise Error("strategy_map needs at least one model and one chip count")
    fig, ax = axes(ax, (2.3 * len(chips) + 1.6, 1.25 * len(ms) + 1.4))
    families: dict[str, str] = {}
    for r, m in enumerate(ms):
        for col, n in enumerate(chips):
            try:
                e = planner.plan(m, chip=chip, chips=n, batch_tokens=batch_tokens, seq_len=seq_len, top=1,
                                 efficiency=efficiency).best[0]
            except _Err:
                ax.add_patch(_rect(col, r, "#bdbdbd"))
                ax.text(col + 0.5, r + 0.5, "does not fit", ha="center", va="center", fontsize=9)
                continue
            fam = _family(e.strategy)
            color = families.setdefault(fam, _FAMILY_COLORS[len(families) % len(_FAMILY_COLORS)])
            ax.add_patch(_rect(col, r, color))
            extra = e.strategy.remat if e.strategy.remat != "none" else "no remat"
            ax.text(col + 0.5, r + 0.5, f"{_two_lines(_short(e.strategy))}\n{extra}, mb {e.microbatch_seqs}\nMFU "
                    f"{100 * e.mfu:.0f}%", ha="center", va="center", fontsize=9)
    ax.set_xlim(0, len(chips))
    ax.set_ylim(len(ms), 0)
    ax.set_xticks([i + 0.5 for i in range(len(chips))], [f"{n:,}" for n in chips], fontsize=9)
    ax.set_yticks([i + 0.5 for i in range(len(ms))], [m.name for m in ms], fontsize=9)
    ax.set_xlabel(f"{_chip(chip).display_name} chips")
    ax.tick_params(length=0)
    for side in ax.spines.values():
        side.set_visible(False)
    ax.set_title(f"Fastest strategy that fits ({_tokens(batch_tokens)} tokens per step, T = {seq_len})",
                 fontsize=10)
    fig.tight_layout()
    return fig


def _two_lines(label: str, width: int = 16) -> str:
    """A degrees label such as 'DP256·FSDP2·TP2·PP2·CP2' broken at a '·' when it is wider than a cell."""
    parts = label.split("·")
    if len(label) <= width or len(parts) < 2:
        return label
    half = max(range(1, len(parts)), key=lambda i: -abs(len("·".join(parts[:i])) - len("·".join(parts[i:]))))
    return "·".join(parts[:half]) + "·\n" + "·".join(parts[half:])


def _rect(col: int, row: int, color: str):
    from matplotlib.patches import Rectangle

    return Rectangle((col + 0.03, row + 0.05), 0.94, 0.9, color=color, ec="white")
