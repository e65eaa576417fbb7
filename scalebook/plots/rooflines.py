"""Figures of chapter 1 (Rooflines): roofline plots, time against batch, budgets, measurements.

Every function draws with matplotlib (imported inside the function), takes an optional `ax`
and returns the `Figure`. Hardware numbers come from `scalebook.hardware`; times from
`scalebook.roofline`; nothing is typed here.
"""
from __future__ import annotations

import math
from typing import Mapping, Sequence

from ._axes import axes

from .. import hardware, roofline as _rl, units
from ..errors import Error, require_positive

__all__ = [
    "roofline",
    "critical_intensity_bars",
    "time_vs_batch",
    "time_budgets",
    "split_matmul_time",
    "measured_roofline",
]


def _ax(ax, figsize=(6.4, 4.2)):
    return axes(ax, figsize)


def _logspace(lo: float, hi: float, n: int = 200) -> list[float]:
    a, b = math.log10(lo), math.log10(hi)
    return [10 ** (a + (b - a) * i / (n - 1)) for i in range(n)]


def _intensity_of(value) -> float:
    if isinstance(value, _rl.Roofline):
        return value.intensity_flops_per_byte
    x = float(value)
    require_positive(intensity=x)
    return x


def roofline(
    chips: "Sequence[str | hardware.Chip] | str" = ("tpu-v5e",),
    *,
    dtype: str = "bf16",
    ops: "Mapping[str, float | _rl.Roofline] | None" = None,
    link: str = "hbm",
    intensity_range: tuple[float, float] = (0.05, 5e3),
    ax=None,
):
    """Log-log roofline: attainable FLOPs/s against arithmetic intensity, one line per chip.

    Attainable = min(peak FLOPs/s in `dtype`, intensity x bandwidth of `link`); the knee of each
    line sits at the chip's critical intensity. `ops` maps a label to an intensity (FLOP/B) or
    to a `Roofline`; each is marked as a point on the first chip's roof.
    """
    if isinstance(chips, (str, hardware.Chip)):
        chips = [chips]
    cs = [hardware.chip(c) for c in chips]
    if not cs:
        raise Error("roofline() needs at least one chip, e.g. ['tpu-v5e']")
    lo, hi = intensity_range
    require_positive(low_intensity=lo, high_intensity=hi)
    fig, ax = _ax(ax)
    xs = _logspace(lo, hi)
    for c in cs:
        peak = c.peak_flops_per_s(c.compute_dtype(dtype))
        bw = _rl.link_bytes_per_s(c, link)
        line, = ax.plot(xs, [min(peak, x * bw) for x in xs], lw=2, label=f"{c.display_name} ({dtype})")
        knee = peak / bw
        if lo <= knee <= hi:
            ax.plot([knee], [peak], "o", color=line.get_color(), ms=5)
            ax.annotate(f"{knee:.0f}", (knee, peak), textcoords="offset points", xytext=(4, 5),
                        fontsize=8, color=line.get_color())
    if ops:
        c = cs[0]
        peak = c.peak_flops_per_s(c.compute_dtype(dtype))
        bw = _rl.link_bytes_per_s(c, link)
        for i, (label, value) in enumerate(ops.items()):
            x = _intensity_of(value)
            y = min(peak, x * bw)
            ax.plot([x], [y], marker="D", color="black", ms=6, zorder=5)
            right = math.log(x / lo) / math.log(hi / lo) > 0.6  # label to the left, inside the frame
            ax.annotate(label, (x, y), textcoords="offset points", xytext=(-6 if right else 6, -12 if i % 2 else 6),
                        ha="right" if right else "left", fontsize=8)
    ax.set_xscale("log")
    ax.set_yscale("log")
    # room above the highest roof for the knee labels (they would cross the frame)
    ax.set_ylim(top=max(c.peak_flops_per_s(c.compute_dtype(dtype)) for c in cs) * 4)
    ax.set_xlabel(f"arithmetic intensity (FLOPs per {'HBM' if link == 'hbm' else link.upper()} byte)")
    ax.set_ylabel("attainable FLOP/s")
    ax.set_title("Roofline: the slope is bandwidth, the flat roof is peak compute", fontsize=10)
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    return fig


def critical_intensity_bars(
    chips: "Sequence[str | hardware.Chip] | None" = None,
    dtypes: Sequence[str] = ("bf16", "int8", "fp8"),
    *,
    ax=None,
):
    """Grouped horizontal bars: each chip's critical intensity (peak / HBM bandwidth) in each dtype.

    A dtype the chip has no peak for in the spec table is left out (no bar), never substituted.
    """
    cs = [hardware.chip(c) for c in (chips if chips is not None else hardware.chip_names())]
    if not cs or not dtypes:
        raise Error("critical_intensity_bars() needs at least one chip and one dtype")
    fig, ax = _ax(ax, figsize=(6.8, 0.5 * len(cs) * (1 + 0.3 * len(dtypes)) + 1.0))
    height = 0.8 / len(dtypes)
    for j, dtype in enumerate(dtypes):
        d = units.canonical_dtype(dtype)
        ys, xs = [], []
        for i, c in enumerate(cs):
            if d in c.flops_per_s:
                ys.append(i - 0.4 + height * (j + 0.5))
                xs.append(c.flops_per_s[d] / c.hbm_bytes_per_s)
        bars = ax.barh(ys, xs, height=height, label=d)
        if d == "bf16":
            for x, y in zip(xs, ys):
                ax.annotate(f"{x:.0f}", (x, y), xytext=(3, 0), textcoords="offset points", ha="left", va="center",
                            fontsize=9, color=bars.patches[0].get_facecolor())
    ax.set_yticks(range(len(cs)))
    ax.set_yticklabels([c.display_name for c in cs], fontsize=9)
    ax.invert_yaxis()
    ax.set_xlabel("critical intensity (FLOP per HBM byte)")
    ax.set_title("FLOPs a chip can do per byte it reads from HBM", fontsize=10)
    ax.legend(fontsize=9, title="matmul dtype", title_fontsize=9, loc="lower right")
    ax.grid(True, axis="x", alpha=0.3)
    fig.tight_layout()
    return fig


def _crossing_batch(chip: hardware.Chip, d_model: float, d_ff: float, dtype: str,
                    weight_dtype: str | None) -> float | None:
    """Exact B where 2BDF / peak = (aBD + wDF + aBF) / bandwidth, or None if never."""
    peak = chip.peak_flops_per_s(_rl.matmul_compute_dtype(chip, dtype, weight_dtype))
    a = units.dtype_bytes(dtype)
    w = units.dtype_bytes(weight_dtype or dtype)
    slope = 2 * d_model * d_ff / peak - a * (d_model + d_ff) / chip.hbm_bytes_per_s
    if slope <= 0:
        return None
    return w * d_model * d_ff / chip.hbm_bytes_per_s / slope


def time_vs_batch(
    chip: "str | hardware.Chip" = "tpu-v5e",
    *,
    d_model: float = 8192,
    d_ff: float = 32768,
    dtype: str = "bf16",
    weight_dtype: str | None = None,
    batches: Sequence[float] | None = None,
    ax=None,
):
    """Compute time and memory time of `[B, D] x [D, F]` against B, crossing at the critical batch.

    Both axes are logarithmic. The memory time is flat while the weights dominate the bytes;
    the compute time grows linearly in B; the overlapped time is their max. The dashed line is
    the exact crossing for these D and F; its label names the first whole batch that is
    compute-bound (chapter 1 quotes the same number), not the large-D, F limit `critical_batch`.
    """
    c = hardware.chip(chip)
    if batches is None:
        batches = [2 ** (k / 4) for k in range(0, 4 * 14 + 1)]
    if not batches:
        raise Error("time_vs_batch() needs at least one batch size")
    rs = [_rl.matmul(c, batch=b, d_model=d_model, d_ff=d_ff, dtype=dtype, weight_dtype=weight_dtype)
          for b in batches]
    fig, ax = _ax(ax)
    ax.plot(batches, [r.compute_seconds for r in rs], lw=2, label="compute time  2BDF / peak")
    ax.plot(batches, [r.memory_seconds for r in rs], lw=2, label="memory time  bytes / HBM bandwidth")
    ax.plot(batches, [r.lower_seconds for r in rs], lw=5, alpha=0.25, color="black",
            label="overlapped time (max)")
    cross = _crossing_batch(c, d_model, d_ff, dtype, weight_dtype)
    if cross is not None and min(batches) <= cross <= max(batches):
        ax.axvline(cross, color="gray", ls="--", lw=1)
        # the first whole batch that is compute-bound, the number the chapter's prose quotes
        first = next(b for b in range(max(1, math.floor(cross)), math.floor(cross) + 3)
                     if _rl.matmul(c, batch=b, d_model=d_model, d_ff=d_ff, dtype=dtype,
                                   weight_dtype=weight_dtype).bound == "compute")
        ax.annotate(f"compute-bound from B = {first}", (cross, 0.04), xycoords=("data", "axes fraction"),
                    textcoords="offset points", xytext=(5, 0), fontsize=8, color="dimgray")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("batch B (tokens)")
    ax.set_ylabel("seconds")
    w = weight_dtype or dtype
    ax.set_title(f"[B, {d_model:g}] x [{d_model:g}, {d_ff:g}] on {c.display_name} "
                 f"({dtype} activations, {w} weights)", fontsize=10)
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize=8, loc="upper left")
    fig.tight_layout()
    return fig


def time_budgets(rooflines: "Mapping[str, _rl.Roofline]", *, unit: str = "s", ax=None):
    """Horizontal stacked bars of compute, memory and communication time for each labelled op.

    The full bar is the serial upper bound (the sum); a black tick marks the overlapped lower
    bound (the largest of the three).
    """
    if not rooflines:
        raise Error("time_budgets() needs at least one labelled Roofline")
    scale = units.parse_unit(unit)[1]
    fig, ax = _ax(ax, figsize=(6.4, 0.9 + 0.7 * len(rooflines)))
    labels = list(rooflines)
    colors = {"compute": "tab:blue", "memory": "tab:orange", "communication": "tab:green"}
    for i, label in enumerate(labels):
        r = rooflines[label]
        left = 0.0
        for name, t in (("compute", r.compute_seconds), ("memory", r.memory_seconds),
                        ("communication", r.comm_seconds)):
            if t > 0:
                ax.barh(i, t / scale, left=left / scale, color=colors[name], height=0.5,
                        label=name if i == 0 or name not in ax.get_legend_handles_labels()[1] else None)
                left += t
        ax.plot([r.lower_seconds / scale] * 2, [i - 0.35, i + 0.35], color="black", lw=2.5)
    ax.plot([], [], color="black", lw=2.5, label="lower bound (max)")
    ax.set_yticks(range(len(labels)))
    ax.set_yticklabels(labels, fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel(f"time ({unit}); full bar = serial upper bound (sum)")
    handles, names = ax.get_legend_handles_labels()
    seen = {}
    for h, n in zip(handles, names):
        seen.setdefault(n, h)
    ax.legend(seen.values(), seen.keys(), fontsize=8, loc="lower right")
    ax.grid(True, axis="x", alpha=0.3)
    fig.tight_layout()
    return fig


def split_matmul_time(
    chips: "Sequence[str | hardware.Chip] | str" = ("tpu-v5e", "h100"),
    *,
    batch: float = 256,
    d_ff: float = 16384,
    dtype: str = "bf16",
    d_models: Sequence[float] | None = None,
    ax=None,
):
    """Network roofline of a matmul split over 2 chips along D: compute vs link time against D.

    Compute per chip grows with D while the partial sum each chip sends, `[B, F]`, does not;
    the lines cross at D = 2 x peak / one-way link bandwidth, whatever B and F are.
    """
    if isinstance(chips, (str, hardware.Chip)):
        chips = [chips]
    cs = [hardware.chip(c) for c in chips]
    if d_models is None:
        d_models = [2 ** (k / 4) for k in range(4 * 9, 4 * 16 + 1)]
    fig, ax = _ax(ax)
    for c in cs:
        ts = [(r.compute_seconds, r.comm_seconds) for r in
              (_rl.split_matmul(c, batch=batch, d_model=d, d_ff=d_ff, dtype=dtype) for d in d_models)]
        line, = ax.plot(d_models, [t[0] for t in ts], lw=2, label=f"{c.display_name}: compute")
        ax.plot(d_models, [t[1] for t in ts], lw=2, ls="--", color=line.get_color(),
                label=f"{c.display_name}: send partial sums")
        cross = _rl.split_matmul_critical_d_model(c, dtype)
        if min(d_models) <= cross <= max(d_models):
            ax.axvline(cross, color=line.get_color(), lw=0.8, alpha=0.6)
            ax.annotate(f"D ≈ {cross:.0f}", (cross, 0.96), xycoords=("data", "axes fraction"),
                        textcoords="offset points", xytext=(4, -10), fontsize=8, color=line.get_color())
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("contracting dimension D")
    ax.set_ylabel("seconds per chip")
    ax.set_title(f"[{batch:g}, D] x [D, {d_ff:g}] split over 2 chips along D ({dtype})", fontsize=10)
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize=8, loc="upper left")
    fig.tight_layout()
    return fig


def measured_roofline(measurement, *, ax=None, show_spec: bool = True):
    """Measured matmuls and streams of a `scalebook.measure.Measurement` on a roofline.

    Points are the measurements; the solid line is the roofline they imply (best stream
    bandwidth up to the best matmul FLOPs/s); the dashed line, when the device matched a chip
    of the spec table, is the chip's bf16 spec roofline.
    """
    fig, ax = _ax(ax)
    pts = [(r.intensity_flops_per_byte, r.flops_per_s, r.dtype) for r in measurement.matmuls]
    pts += [(r.intensity_flops_per_byte, r.flops / r.seconds, "stream") for r in measurement.copies]
    if not pts:
        raise Error("the measurement has no timings to plot")
    xs = [p[0] for p in pts]
    lo, hi = min(xs) / 3, max(xs) * 3
    grid = _logspace(lo, hi)
    if measurement.copies and measurement.matmuls:
        bw = measurement.best_bytes_per_s
        peak = measurement.best_flops_per_s()
        hi = max(hi, 3 * peak / bw)
        grid = _logspace(lo, hi)
        ax.plot(grid, [min(peak, x * bw) for x in grid], lw=2, color="tab:blue",
                label=f"measured roof ({units.format_quantity(bw, 'B/s')}, {units.format_quantity(peak, 'FLOP/s')})")
    if show_spec and measurement.spec_flops_per_s and measurement.spec_bytes_per_s:
        sp, sb = measurement.spec_flops_per_s, measurement.spec_bytes_per_s
        hi = max(hi, 3 * sp / sb)
        grid = _logspace(lo, hi)
        ax.plot(grid, [min(sp, x * sb) for x in grid], lw=1.5, ls="--", color="gray",
                label=f"{measurement.chip} bf16 spec")
    markers = {"bf16": "o", "fp32": "s", "fp16": "^", "stream": "D"}
    for kind in dict.fromkeys(p[2] for p in pts):
        sel = [p for p in pts if p[2] == kind]
        ax.plot([p[0] for p in sel], [p[1] for p in sel], markers.get(kind, "o"), ms=7, ls="none",
                label=("stream x+1" if kind == "stream" else f"matmul {kind}"))
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("arithmetic intensity (FLOP/byte)")
    ax.set_ylabel("measured FLOP/s")
    ax.set_title(f"Measured on {measurement.device_kind}", fontsize=10)
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    return fig
