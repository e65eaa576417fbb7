"""Figures of chapter 10 (Parallelism in JAX).

The steps of a hand-written ring AllGather and ReduceScatter (which block is where after each
`ppermute`), the timeline of a collective matmul with and without overlap (predicted on a
TPU axis), measured time ratios beside predicted ones, and the collectives XLA compiled for the
FSDP x TP training step beside `training.estimate`. Schedules and costs come from
`scalebook.jax_collectives`; every function imports matplotlib inside, takes an optional `ax`
(or `fig`) and returns the Figure.
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

from .. import units
from ..errors import Error
from ._axes import axes

__all__ = [
    "ring_collective_steps",
    "collective_matmul_timeline",
    "time_ratios",
    "training_collective_rows",
    "training_collectives",
]

_BLUE, _ORANGE, _GREEN, _RED, _GREY = "#4C72B0", "#DD8452", "#55A868", "#C44E52", "#8C8C8C"
_BLOCK_COLORS = ["#4C72B0", "#DD8452", "#55A868", "#C44E52", "#8172B3", "#937860", "#DA8BC3", "#CCB974"]


def ring_collective_steps(n: int = 4, *, bidirectional: bool = True,
                          kinds: Sequence[str] = ("all-gather", "reduce-scatter"), fig=None):
    """One row per collective, one panel per state: rows are devices, columns blocks.

    AllGather: a filled cell is a block the device holds. ReduceScatter: the number is how many
    devices' parts the device's sum for that block holds. A cell that changed in this step has a
    thick edge and says where it came from ('from 3'). From `jax_collectives.ring_holdings` and
    `ring_steps`, the schedule the hand-written code runs.
    """
    import matplotlib.pyplot as plt
    from matplotlib.patches import Rectangle

    from .. import jax_collectives as jc

    if n < 2 or n > 8:
        raise Error(f"draw a ring of 2 to 8 devices, not {n}")
    if not kinds:
        raise Error("name at least one collective: 'all-gather' or 'reduce-scatter'")
    states = {k: jc.ring_holdings(k, n, bidirectional=bidirectional) for k in kinds}
    cols = max(len(s) for s in states.values())
    if fig is None:
        fig = plt.figure(figsize=(2.55 * cols + 0.6, 2.75 * len(kinds) + 0.5))
    grid = fig.subplots(len(kinds), cols, squeeze=False)
    for row, kind in enumerate(kinds):
        steps = jc.ring_steps(kind, n, bidirectional=bidirectional)
        rs = kind.replace("_", "-").lower() in ("reduce-scatter", "reducescatter", "rs")
        for s, ax in enumerate(grid[row]):
            if s >= len(states[kind]):
                ax.axis("off")
                continue
            state = states[kind][s]
            came = {(t.dst, t.block): t.src for t in steps[s - 1]} if s else {}
            for dev in range(n):
                for blk in range(n):
                    v = state[dev][blk]
                    new = (dev, blk) in came
                    if rs:
                        shade = 0.15 + 0.75 * (v - 1) / max(n - 1, 1)
                        face = (*_rgb(_BLOCK_COLORS[blk % 8]), shade)
                    else:
                        face = (*_rgb(_BLOCK_COLORS[blk % 8]), 0.75) if v else (1, 1, 1, 1)
                    ax.add_patch(Rectangle((blk, n - 1 - dev), 1, 1, facecolor=face,
                                           edgecolor="black" if new else "#bbbbbb", linewidth=2.4 if new else 0.6))
                    label = str(v) if rs else ""
                    if new and n <= 4:
                        label = (label + "\n" if label else "") + f"from {came[(dev, blk)]}"
                    if label:
                        ax.text(blk + 0.5, n - 0.5 - dev, label, ha="center", va="center", fontsize=9 if n <= 4 else 7)
            ax.set_xlim(0, n)
            ax.set_ylim(0, n)
            ax.set_aspect("equal")
            ax.set_xticks([i + 0.5 for i in range(n)], [str(i) for i in range(n)], fontsize=9)
            ax.set_yticks([n - 0.5 - i for i in range(n)], [f"dev {i}" for i in range(n)], fontsize=9)
            ax.set_xlabel("block", fontsize=9)
            name = "AllGather" if not rs else "ReduceScatter"
            ax.set_title(f"{name}: start" if s == 0 else f"after step {s}", fontsize=10)
    way = "both ways" if bidirectional else "one way"
    fig.suptitle(f"Rings of ppermute over {n} devices, {way}: each step moves one block per device per direction",
                 fontsize=10)
    fig.tight_layout()
    return fig


def _rgb(hex_color: str) -> tuple[float, float, float]:
    h = hex_color.lstrip("#")
    return tuple(int(h[i:i + 2], 16) / 255 for i in (0, 2, 4))


def collective_matmul_timeline(cost: Any, *, ax=None):
    """Predicted timeline of a collective matmul (`jax_collectives.CollectiveMatmulCost`):
    sequential (all sends, then all block matmuls) above overlapped (round r's sends beside the
    matmuls of the blocks that arrived in round r - 1)."""
    if not hasattr(cost, "arrivals"):
        raise Error("collective_matmul_timeline takes a jax_collectives.CollectiveMatmulCost")
    own = ax is None
    fig, ax = axes(ax, (8.6, 3.6))
    scale, unit = _time_unit(max(cost.sequential_seconds, cost.overlapped_seconds))
    comm, block = cost.round_comm_seconds * scale, cost.block_compute_seconds * scale
    rounds = len(cost.arrivals) - 1
    lanes = {"sequential: link": 3.0, "sequential: matmul": 2.2, "overlapped: link": 1.0, "overlapped: matmul": 0.2}
    h = 0.6
    # sequential: rounds of sends, then N block matmuls
    for r in range(rounds):
        ax.broken_barh([(r * comm, comm)], (lanes["sequential: link"], h), facecolors=_ORANGE, edgecolor="white")
    t0 = rounds * comm
    for b in range(cost.n):
        ax.broken_barh([(t0 + b * block, block)], (lanes["sequential: matmul"], h), facecolors=_BLUE,
                       edgecolor="white")
    # overlapped: round r sends while the blocks of round r - 1 are multiplied
    t = 0.0
    for r in range(1, rounds + 1):
        work = cost.arrivals[r - 1] * block
        ax.broken_barh([(t, comm)], (lanes["overlapped: link"], h), facecolors=_ORANGE, edgecolor="white")
        for b in range(cost.arrivals[r - 1]):
            ax.broken_barh([(t + b * block, block)], (lanes["overlapped: matmul"], h), facecolors=_BLUE,
                           edgecolor="white")
        t += max(comm, work)
    for b in range(cost.arrivals[-1]):
        ax.broken_barh([(t + b * block, block)], (lanes["overlapped: matmul"], h), facecolors=_BLUE, edgecolor="white")
    ax.set_yticks([v + h / 2 for v in lanes.values()], list(lanes), fontsize=9)
    ax.axvline(cost.overlapped_seconds * scale, color=_GREEN, lw=1.2, ls="--")
    ax.axvline(cost.sequential_seconds * scale, color=_RED, lw=1.2, ls="--")
    ax.set_xlabel(f"time ({unit})", fontsize=9)
    ax.set_xlim(0, max(cost.sequential_seconds, cost.overlapped_seconds) * scale * 1.03)
    ax.set_title(f"{cost.kind} over {cost.n} devices: overlapped {units.format_quantity(cost.overlapped_seconds, 's')}"
                 f" vs sequential {units.format_quantity(cost.sequential_seconds, 's')}", fontsize=10)
    from matplotlib.patches import Patch

    sent = "a block each way" if cost.bidirectional else "a block"
    ax.legend(handles=[Patch(color=_ORANGE, label=f"ppermute round ({sent})"),
                       Patch(color=_BLUE, label="one block's matmul")],
              fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=2, frameon=False)
    ax.tick_params(labelsize=9)
    if own:
        fig.tight_layout()
    return fig


def _time_unit(seconds: float) -> tuple[float, str]:
    if seconds < 1e-3:
        return 1e6, "µs"
    if seconds < 1:
        return 1e3, "ms"
    return 1.0, "s"


def time_ratios(rows: Sequence[Mapping], *, ax=None):
    """Grouped bars on a log scale: a measured time ratio beside the predicted one, per comparison.

    Each row: 'label', 'measured' (e.g. hand-written / library time on this machine) and
    'predicted' (the same ratio from `jax_collectives`' cost model on a TPU axis). A dotted line
    marks 1 (equally fast).
    """
    if not rows:
        raise Error("time_ratios needs at least one row")
    for r in rows:
        if r["measured"] <= 0 or r["predicted"] <= 0:
            raise Error(f"ratios must be positive: {dict(r)}")
    own = ax is None
    fig, ax = axes(ax, (1.7 * len(rows) + 2.6, 4.0))
    w = 0.38
    for i, r in enumerate(rows):
        for j, (key, color, lab) in enumerate((("measured", _ORANGE, "measured here (simulated devices)"),
                                               ("predicted", _BLUE, "predicted on a TPU axis"))):
            x = i + (j - 0.5) * w
            ax.bar(x, r[key], w, color=color, label=lab if i == 0 else None)
            ax.text(x, r[key] * 1.06, f"{r[key]:.2f}", ha="center", va="bottom", fontsize=8)
    ax.axhline(1.0, color="black", lw=0.8, ls=":")
    ax.set_yscale("log")
    lo = min(min(r["measured"], r["predicted"]) for r in rows)
    hi = max(max(r["measured"], r["predicted"]) for r in rows)
    ymin, ymax = min(lo, 1.0) / 1.6, max(hi, 1.0) * 2.2
    ax.set_ylim(ymin, ymax)
    ticks = [t for t in (0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 20, 50, 100) if ymin <= t <= ymax]
    ax.set_yticks(ticks, [f"{t:g}" for t in ticks])
    ax.yaxis.set_minor_formatter(__import__("matplotlib").ticker.NullFormatter())
    ax.set_xticks(range(len(rows)), [r["label"] for r in rows], fontsize=9)
    ax.set_ylabel("time ratio", fontsize=9)
    ax.set_title("Hand-written vs library, overlapped vs sequential: time ratios", fontsize=10)
    # below the axes: a measured bar can reach any height, so no corner inside is safe, and a
    # legend beside them would take the width the two-line group labels need
    ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=2, frameon=False)
    ax.tick_params(axis="y", labelsize=9)
    if own:
        fig.tight_layout()
    return fig


# ------------------------------------------------------------------ the FSDP x TP step


def _phase_of(purpose: str) -> str:
    p = purpose.lower()
    return "backward" if ("backward" in p or "gradient" in p) else "forward"


def training_collective_rows(run: Any, estimate: Any) -> list[dict]:
    """Collectives of a compiled training step (`jax_training.TrainingRun`) beside those a
    `training.TrainingEstimate` of the same strategy predicts, grouped by mesh axis, kind and pass.

    The prediction's kinds are put in their CPU form first (`xla.CPU_EQUIVALENTS`: a
    ReduceScatter compiles to an AllReduce + dynamic-slice), so the gradient ReduceScatters meet
    the AllReduces XLA emitted. A group the prediction lacks is labelled "(not predicted)". Each row: 'label', 'axes', 'kind', 'phase', 'compiled_bytes' and
    'predicted_bytes' (V summed over the group's arrays; `count` x V for the prediction),
    'compiled_ops' (HLO ops; combined ops count once), 'compiled_arrays', 'predicted_ops'.
    Sorted by mesh axis, kind and pass (forward first); a group only one side has gets 0 on the other.
    """
    from .. import xla
    from ..collectives import label

    groups: dict[tuple, dict] = {}

    def row(axes, kind, phase, predicted_kind=None):
        key = (tuple(axes), kind, phase)
        if key not in groups:
            shown = label(predicted_kind or kind)
            if predicted_kind and predicted_kind != kind:
                shown = f"{shown} (CPU: {label(kind)})"
            groups[key] = {"label": f"{'x'.join(axes)}: {shown}, {phase}", "axes": tuple(axes), "kind": kind,
                           "phase": phase, "compiled_bytes": 0.0, "predicted_bytes": 0.0, "compiled_ops": 0,
                           "compiled_arrays": 0, "predicted_ops": 0.0, "_ops": set()}
        return groups[key]

    for c in estimate.collectives:
        kind = xla.CPU_EQUIVALENTS.get(c.kind, c.kind)
        r = row(c.axes, kind, _phase_of(c.purpose), c.kind)
        r["predicted_bytes"] += c.count * c.array_bytes
        r["predicted_ops"] += c.count
    for a in run.arrays:
        phase = "backward" if a.phase == "backward" else "forward"
        r = row(a.axes, a.kind, phase)
        r["compiled_bytes"] += a.array_bytes
        r["compiled_arrays"] += 1
        r["_ops"].add(a.op)
    out = []
    for key in sorted(groups, key=lambda k: (k[0], k[1], k[2] != "forward")):
        r = groups[key]
        r["compiled_ops"] = len(r.pop("_ops"))
        if not r["predicted_ops"]:
            r["label"] += " (not predicted)"
        out.append(r)
    return out


def _n(count: float, word: str) -> str:
    return f"{count:g} {word}" + ("" if count == 1 else "s")


def training_collectives(rows: Sequence[Mapping], *, ax=None):
    """Horizontal bars: V moved per step by each group of collectives, compiled vs predicted
    (`training_collective_rows`), with the compiled ops / arrays and the predicted count."""
    if not rows:
        raise Error("training_collectives needs at least one row")
    own = ax is None
    fig, ax = axes(ax, (6.4, 0.62 * len(rows) + 1.8))  # the column's width: shown at its own size
    h = 0.38
    top = max(max(r["compiled_bytes"], r["predicted_bytes"]) for r in rows) or 1.0
    scale, unit = (1e6, "MB") if top >= 1e6 else (1e3, "kB")
    for i, r in enumerate(rows):
        y = len(rows) - 1 - i
        ax.barh(y + h / 2, r["predicted_bytes"] / scale, h, color=_BLUE,
                label="predicted (training.estimate)" if i == 0 else None)
        ax.barh(y - h / 2, r["compiled_bytes"] / scale, h, color=_ORANGE,
                label="compiled (HLO of the step)" if i == 0 else None)
        ax.text(r["predicted_bytes"] / scale + top / scale * 0.01, y + h / 2, _n(r["predicted_ops"], "collective"),
                va="center", fontsize=8)
        ax.text(r["compiled_bytes"] / scale + top / scale * 0.01, y - h / 2,
                f"{_n(r['compiled_ops'], 'op')}, {_n(r['compiled_arrays'], 'array')}", va="center", fontsize=8)
    ax.set_yticks([len(rows) - 1 - i for i in range(len(rows))], [r["label"] for r in rows], fontsize=9)
    ax.set_xlim(0, top / scale * 2.4)  # room for the count beside the longest bar
    from matplotlib.ticker import MaxNLocator

    ax.xaxis.set_major_locator(MaxNLocator(5))
    ax.set_xlabel(f"array bytes V moved per step ({unit}, summed over the group)", fontsize=9)
    ax.set_title("FSDP x TP training step: collectives compiled vs predicted", fontsize=10)
    ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=2, frameon=False)
    ax.tick_params(axis="x", labelsize=9)
    if own:
        fig.tight_layout()
    return fig
