"""Chapter 1's interactive roofline: a chip's roof in a dtype, and where `[B, D] x [D, F]` sits on
it as the batch B moves.

Every value is `scalebook.roofline`'s: the roof is min(peak FLOPs/s, intensity x HBM bytes/s)
(`roofline.critical_intensity` is its corner), the point is `roofline.matmul(chip, batch=B,
d_model=D, d_ff=F, dtype=dtype)` (attainable FLOPs/s = its FLOPs over its lower-bound time), and
the readout names the bound and the critical batch `roofline.critical_batch` (chapter 1: in the
limit D, F >> B the matmul turns compute-bound at B* = critical intensity x bytes per weight / 2).
Activations and weights share the dtype; the matmul's compute dtype is `roofline.matmul_compute_dtype`
(fp8 on a chip without an fp8 path runs at its bf16 peak, as the package assumes).
"""
from __future__ import annotations

from .. import hardware, roofline as rl, units
from ._figure import InteractiveFigure, select, slider

#: The matmul of chapter 1's roofline figure: [B, 8192] x [8192, 8192].
D_MODEL = 8192
D_FF = 8192
BATCHES = tuple(2 ** k for k in range(14))  # 1 .. 8192
DTYPES = ("bf16", "fp8", "int8")
INTENSITY_RANGE = (0.5, 2e4)  # FLOP/B, the horizontal axis


def _short(chip: str) -> str:
    return hardware.chip(chip).display_name


def _pos(value: float) -> float:
    """A position on a log axis, to 4 significant digits (what a 460-pixel axis can show)."""
    return float(f"{value:.4g}")


def compute(chip: str, dtype: str, batch: float) -> list[dict]:
    """The roof of `chip` in `dtype` (three points: both ends and the corner) and the matmul's
    point with its readout, all from `scalebook.roofline`."""
    c = hardware.chip(chip)
    compute_dtype = rl.matmul_compute_dtype(c, dtype)
    peak = c.peak_flops_per_s(compute_dtype)
    corner = rl.critical_intensity(c, compute_dtype)
    lo, hi = INTENSITY_RANGE
    roof = [{"kind": "roof", "x": _pos(x), "tflops": _pos(min(peak, x * c.hbm_bytes_per_s) / 1e12),
             "on": ("chip", "dtype")} for x in (lo, corner, hi)]
    mm = rl.matmul(c, batch=batch, d_model=D_MODEL, d_ff=D_FF, dtype=dtype)
    attained = mm.flops / mm.lower_seconds
    b_star = rl.critical_batch(c, dtype)
    f = units.format_quantity
    text = (f"{_short(chip)}, {dtype}, batch {batch:,.0f}: intensity {mm.intensity_flops_per_byte:,.0f} FLOP/B, "
            f"corner {corner:,.0f} FLOP/B\n"
            f"{mm.bound}-bound: {f(attained, 'FLOP/s')}, {units.fmt_percent(attained / peak, 0)} of peak "
            f"(critical batch {b_star:,.0f})")
    point = {"kind": "readout", "x": _pos(mm.intensity_flops_per_byte), "tflops": _pos(attained / 1e12),
             "bound": mm.bound, "text": text}
    return roof + [point]


def chart(rows: list[dict], filters: bool):
    """Log-log roof (line), the matmul (point coloured by its bound) (the page prints the readout)."""
    import altair as alt

    base = alt.Chart(alt.Data(values=rows))
    x = alt.X("x:Q", scale=alt.Scale(type="log", domain=list(INTENSITY_RANGE)),
              title="arithmetic intensity (FLOP/B)")
    y = alt.Y("tflops:Q", scale=alt.Scale(type="log", domain=[0.1, 1e4]), title="attainable TFLOP/s")
    where = FIGURE.filter_expression if filters else (lambda extra="": extra)
    roof = base.transform_filter(where("datum.kind == 'roof'")).mark_line(
        color="#1f4e79", clip=True, aria=False).encode(x=x, y=y)
    point = base.transform_filter(where("datum.kind == 'readout'")).mark_point(
        filled=True, size=120, clip=True).encode(
        x=x, y=y,
        color=alt.Color("bound:N", scale=alt.Scale(domain=["memory", "compute"], range=["#d55e00", "#0072b2"]),
                        title="bound"),
        shape=alt.Shape("bound:N", scale=alt.Scale(domain=["memory", "compute"], range=["triangle-up", "circle"]),
                        title="bound"),
        tooltip=[alt.Tooltip("text:N", title="matmul")], description=alt.Description("text:N"))
    return alt.layer(roof, point).properties(width=460, height=300)


def static(chip: str, dtype: str, batch: float):
    """The static picture of one setting (the site's fallback): `scalebook.plots.roofline`."""
    from .. import plots

    mm = rl.matmul(chip, batch=batch, d_model=D_MODEL, d_ff=D_FF, dtype=dtype)
    return plots.roofline([chip], dtype=dtype, ops={f"matmul, B={batch:,.0f}": mm})


FIGURE = InteractiveFigure(
    name="roofline",
    title="The roofline of a chip, and a matmul moving along it",
    controls=(
        select("chip", "chip", hardware.chip_names(), [_short(n) for n in hardware.chip_names()], default="tpu-v5e"),
        select("dtype", "dtype", DTYPES),
        slider("batch", "batch", BATCHES, default=64, live_range=(1, 1_000_000)),
    ),
    compute=compute,
    chart=chart,
    caption=("Move the batch slider past the critical batch and watch the point climb the slanted wall, "
             "turn the corner and stop at the flat roof: the bound changes from memory to compute. Then "
             "change the chip or the dtype and see the corner, and with it the critical batch, move. "
             f"The matmul is [B, {D_MODEL:,}] x [{D_MODEL:,}, {D_FF:,}], activations and weights in the chosen dtype."),
    alt=("Log-log roofline of the chosen chip: attainable FLOP/s against arithmetic intensity, a slanted "
         "memory-bound wall meeting a flat compute roof at the critical intensity, with a point for the "
         "matmul at the chosen batch coloured by its bound, and a readout of its intensity, bound, "
         "attained FLOP/s and the critical batch."),
    static=static,
)


def figure() -> InteractiveFigure:
    """Chapter 1's interactive roofline (chip, dtype, batch)."""
    return FIGURE
