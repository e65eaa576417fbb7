"""Figures of chapter 9 (profiling): a per-device timeline, a time breakdown, predicted vs measured.

Each function takes what `scalebook.profile` returns (a `Profile`) or plain numbers, draws with
matplotlib (imported inside the function), takes an optional `ax` and returns the `Figure`.
"""
from __future__ import annotations

import math
from typing import Mapping, Sequence

from ._axes import axes
from ..errors import Error

__all__ = ["CATEGORY_COLORS", "profile_timeline", "profile_timelines", "profile_breakdown", "predicted_vs_measured"]

#: One colour per op category (`scalebook.profile.CATEGORIES`) and for idle time.
CATEGORY_COLORS = {
    "matmul": "#1f4e9c",
    "fusion": "#7fb3e6",
    "other": "#9e9e9e",
    "all-gather": "#e8872b",
    "reduce-scatter": "#8e5bb5",
    "all-reduce": "#c73a32",
    "all-to-all": "#3a9a5b",
    "collective-permute": "#8c6239",
    "idle": "#f2f2f2",
}


def _check_profile(profile):
    from ..profile import Profile

    if not isinstance(profile, Profile):
        raise Error(f"expected a scalebook.profile.Profile, got {type(profile).__name__}")


def _time_unit(seconds: float) -> tuple[float, str]:
    if seconds >= 1:
        return 1.0, "s"
    if seconds >= 1e-3:
        return 1e3, "ms"
    return 1e6, "µs"


def _legend_below(fig, ax, handles) -> None:
    """A legend in rows under the axes, with room made for it (no overlap with the x label)."""
    rows = math.ceil(len(handles) / 6)
    ncol = math.ceil(len(handles) / rows)
    height = fig.get_size_inches()[1]
    room = (0.32 * rows + 0.1) / height
    fig.tight_layout(rect=(0, room, 1, 1))
    fig.legend(handles=handles, loc="lower center", ncol=ncol, fontsize=10, frameon=False,
               bbox_to_anchor=(0.5, 0.0))


def _draw_timeline(ax, profile, step, devices) -> tuple[set, str]:
    """Draw one step of `profile` into `ax`; return the categories drawn and the time unit."""
    from ..profile import CATEGORIES

    _check_profile(profile)
    s = profile.steps - 1 if step is None else step
    if not 0 <= s < profile.steps:
        raise Error(f"no step {step}; the profile has steps 0..{profile.steps - 1}")
    devs = list(profile.devices if devices is None else devices)
    missing = [d for d in devs if d not in profile.devices]
    if missing or not devs:
        raise Error(f"devices {missing or devs} are not in the profile; it has {list(profile.devices)}")
    a, b = profile.step_window(s)
    k, unit = _time_unit(b - a)
    used = set()
    for row, d in enumerate(devs):
        ev = profile.ops(step=s, device=d)
        for cat in CATEGORIES:
            spans = [((e.start - a) * k, e.duration * k) for e in ev if e.category == cat]
            if spans:
                used.add(cat)
                ax.broken_barh(spans, (row - 0.38, 0.76), facecolors=CATEGORY_COLORS[cat], linewidth=0)
    ax.set_yticks(range(len(devs)))
    ax.set_yticklabels([f"device {d}" for d in devs], fontsize=10)
    ax.set_ylim(len(devs) - 0.5, -0.5)
    ax.set_xlim(0, (b - a) * k)
    ax.set_xlabel(f"time in step {s} ({unit})", fontsize=11)
    ax.tick_params(axis="x", labelsize=10)
    return used, unit


def _timeline_handles(used):
    from matplotlib.patches import Patch

    from ..profile import CATEGORIES

    handles = [Patch(color=CATEGORY_COLORS[c], label=c) for c in CATEGORIES if c in used]
    handles.append(Patch(facecolor="white", edgecolor="#999999", label="idle"))
    return handles


def profile_timeline(profile, *, step: "int | None" = None, devices: "Sequence[int] | None" = None,
                     title: "str | None" = None, ax=None):
    """Gantt chart of one step: a row per device, a bar per op coloured by category.

    `step` defaults to the last one in the profile (the least disturbed by start-up). Where ops of
    one device overlap, the bars are drawn in `CATEGORIES` order, collectives on top, so a
    collective that waits is always visible. White space is the device's idle time.
    """
    _check_profile(profile)
    n = len(profile.devices if devices is None else devices)
    fig, ax = axes(ax, figsize=(9.0, 0.45 * n + 1.8))
    used, _ = _draw_timeline(ax, profile, step, devices)
    ax.set_title(title or f"{profile.module}: what each device ran in one step", fontsize=12)
    _legend_below(fig, ax, _timeline_handles(used))
    return fig


def profile_timelines(profiles: "Mapping[str, object]", *, step: "int | None" = None,
                      devices: "Sequence[int] | None" = None, axes_list=None):
    """`profile_timeline` of several profiles side by side ({title: Profile}), one shared legend;
    each panel has its own time axis. `axes_list`: the axes to draw into (one per profile)."""
    import matplotlib.pyplot as plt

    if not profiles:
        raise Error("profile_timelines needs at least one {title: Profile}")
    items = list(profiles.items())
    if axes_list is None:
        n = max(len(p.devices if devices is None else devices) for _, p in items)
        fig, axs = plt.subplots(1, len(items), figsize=(5.6 * len(items), 0.45 * n + 1.9), squeeze=False)
        axs = list(axs[0])
    else:
        axs = list(axes_list)
        if len(axs) != len(items):
            raise Error(f"{len(items)} profiles need {len(items)} axes, got {len(axs)}")
        fig = axs[0].figure
    used = set()
    for ax, (title, p) in zip(axs, items):
        u, _ = _draw_timeline(ax, p, step, devices)
        used |= u
        ax.set_title(title, fontsize=12)
    _legend_below(fig, axs[0], _timeline_handles(used))
    return fig


def profile_breakdown(profile, *, waiting: bool = True, title: "str | None" = None, ax=None):
    """Stacked bars: the mean step of each device split into matmuls, fusions, other ops, each
    collective kind (time not hidden behind compute) and idle; each bar adds up to the step.

    With `waiting`, the part of each collective spent waiting for the other devices of its group
    (`Profile.waiting`) is hatched.
    """
    from matplotlib.patches import Patch

    from ..profile import COLLECTIVES

    _check_profile(profile)
    per = profile.per_device()
    waits = {d: profile.waiting(d) for d in per} if waiting else {}
    waiting_drawn = False
    cats = [c for c in CATEGORY_COLORS if any(v.get(c, 0.0) > 0 for v in per.values())]
    step = max(sum(v.values()) for v in per.values())
    k, unit = _time_unit(step)
    fig, ax = axes(ax, figsize=(8.0, 0.42 * len(per) + 2.0))
    for row, (d, v) in enumerate(per.items()):
        left = 0.0
        for c in cats:
            w = v.get(c, 0.0) * k
            ax.barh(row, w, left=left, color=CATEGORY_COLORS[c], edgecolor="white" if c != "idle" else "#999999",
                    linewidth=0.5, label=c if row == 0 else None, height=0.7)
            wait = min(waits.get(d, {}).get(c, 0.0) * k, w) if c in COLLECTIVES else 0.0
            if wait > 0:
                ax.barh(row, wait, left=left + w - wait, color="none", edgecolor="white", hatch="///",
                        linewidth=0, height=0.7)
                waiting_drawn = True
            left += w
    ax.set_yticks(range(len(per)))
    ax.set_yticklabels([f"device {d}" for d in per], fontsize=10)
    ax.invert_yaxis()
    over = f"{profile.steps} steps" if profile.steps != 1 else "1 step"
    ax.set_xlabel(f"{unit} per step (mean over {over})", fontsize=11)
    ax.tick_params(axis="x", labelsize=10)
    ax.set_title(title or "Where each device's step went", fontsize=12)
    handles, _ = ax.get_legend_handles_labels()
    if waiting_drawn:
        handles.append(Patch(facecolor="white", edgecolor="#555555", hatch="///", label="of which waiting"))
    _legend_below(fig, ax, handles)
    return fig


def predicted_vs_measured(points: "Sequence[tuple[str, float, float]]", *, unit: str = "s",
                          band: float = 2.0, title: "str | None" = None, ax=None):
    """Measured against predicted, one labelled point per (label, predicted, measured), on log axes.

    The diagonal is a perfect prediction; the shaded band is within a factor `band` of it.
    """
    if not points:
        raise Error("predicted_vs_measured needs at least one (label, predicted, measured) point")
    for p in points:
        if len(p) != 3 or not all(isinstance(x, (int, float)) and x > 0 and math.isfinite(x) for x in p[1:]):
            raise Error(f"each point is (label, predicted > 0, measured > 0); got {p!r}")
    if not band > 1:
        raise Error(f"band must be a factor above 1, got {band!r}")
    vals = [x for p in points for x in p[1:]]
    lo, hi = min(vals) / (2 * band), max(vals) * 2 * band
    k, tu = _time_unit(max(vals)) if unit == "s" else (1.0, unit)
    fig, ax = axes(ax, figsize=(6.4, 5.0))
    ax.set_xscale("log")
    ax.set_yscale("log")
    xs = [lo * k, hi * k]
    ax.plot(xs, xs, color="#444444", linewidth=1, label="measured = predicted")
    ax.fill_between(xs, [x / band for x in xs], [x * band for x in xs], color="#dddddd", alpha=0.6,
                    label=f"within {band:g}x")
    markers = "osD^vP*X"
    for i, (label, pred, meas) in enumerate(points):
        ax.scatter([pred * k], [meas * k], s=55, marker=markers[i % len(markers)], zorder=3, label=label)
    ax.set_xlim(lo * k, hi * k)
    ax.set_ylim(lo * k, hi * k)
    ax.set_xlabel(f"predicted ({tu})", fontsize=11)
    ax.set_ylabel(f"measured ({tu})", fontsize=11)
    ax.tick_params(labelsize=10)
    ax.set_title(title or "Prediction against measurement", fontsize=12)
    ax.legend(fontsize=9, loc="upper left", frameon=False)
    fig.tight_layout()
    return fig
