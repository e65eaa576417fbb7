"""Chapters 2 and 2b's interactive comparison: every chip of `scalebook.chips()` side by side on one
quantity at a time: dense matmul peak, HBM bandwidth, the collective bandwidth W, or a critical
intensity (peak over a bandwidth), in a chosen dtype.

Every value is the package's: `Chip.peak_flops_per_s(dtype)`, `roofline.link_bytes_per_s(chip,
"hbm" | "ici")` and `roofline.critical_intensity(chip, dtype, link)` (chapter 1: peak FLOP/s over
bytes/s, the FLOPs an op must do per byte moved to be compute-bound). The "ici" bandwidth is the
W of chapter 3's one-axis collectives: a TPU's ICI in both directions of one axis, a GPU's NVLink
egress in one direction (chapter 2's direction convention). A chip with no matmul peak in the
chosen dtype in the spec table gets no bar (never its bf16 peak in disguise); the readout names
those chips.
"""
from __future__ import annotations

from .. import hardware, roofline as rl, units
from ..errors import Error
from ._figure import InteractiveFigure, select

#: quantity: (label, unit of the value, scale of the axis, axis unit, depends on the dtype, link)
QUANTITIES = {
    "peak": ("dense matmul peak", "FLOP/s", 1e12, "TFLOP/s", True, None),
    "hbm": ("HBM bandwidth", "B/s", 1e9, "GB/s", False, "hbm"),
    "ici": ("ICI/NVLink bandwidth W", "B/s", 1e9, "GB/s", False, "ici"),
    "hbm_intensity": ("critical intensity, peak / HBM bandwidth", "FLOP/B", 1.0, "FLOP/B", True, "hbm"),
    "ici_intensity": ("critical intensity, peak / W", "FLOP/B", 1.0, "FLOP/B", True, "ici"),
}
QUANTITY_LABELS = ("peak FLOP/s", "HBM bandwidth", "ICI/NVLink bandwidth", "critical intensity (HBM)",
                   "critical intensity (ICI/NVLink)")
DTYPES = ("bf16", "int8", "fp8")


def _value(c: hardware.Chip, quantity: str, dtype: str) -> float | None:
    """The chip's `quantity` (SI units) in `dtype`, or None when it has no matmul peak in `dtype`."""
    _, _, _, _, by_dtype, link = QUANTITIES[quantity]
    if by_dtype and dtype not in c.flops_per_s:
        return None
    if quantity == "peak":
        return c.peak_flops_per_s(dtype)
    if by_dtype:
        return rl.critical_intensity(c, dtype, link)
    return rl.link_bytes_per_s(c, link)


def _show(value: float, unit: str) -> str:
    return f"{value:,.0f} {unit}" if unit == "FLOP/B" else units.format_quantity(value, unit)


def _names(bars: list[dict], value: float) -> str:
    """The chips whose bar has `value` (all of them, when several tie), and the value."""
    names = [b["chip"] for b in bars if b["_si"] == value]
    label = next(b["label"] for b in bars if b["_si"] == value)
    return f"{' and '.join(names) if len(names) < 3 else ', '.join(names[:-1]) + ' and ' + names[-1]} {label}"


def compute(quantity: str, dtype: str) -> list[dict]:
    """One bar per chip that has the quantity (its value on the axis, in the axis unit, and its
    label), and the readout: the highest and lowest chip and their ratio, and the chips left out."""
    if quantity not in QUANTITIES:
        raise Error(f"quantity {quantity!r}: valid quantities are {list(QUANTITIES)}")
    dtype = units.canonical_dtype(dtype)
    label, unit, scale, axis_unit, by_dtype, _ = QUANTITIES[quantity]
    on = ("quantity", "dtype") if by_dtype else ("quantity",)
    bars, missing = [], []
    for c in hardware.chips():
        v = _value(c, quantity, dtype)
        if v is None:
            missing.append(c.display_name)
            continue
        bars.append({"kind": "bar", "chip": c.display_name, "value": float(f"{v / scale:.4g}"),
                     "label": _show(v, unit), "on": on, "_si": v})
    head = f"{label}{f', {dtype}' if by_dtype else ''} (axis in {axis_unit})"
    if not bars:
        text = f"{head}\nno chip in the table has a matmul peak in {dtype}"
    elif len(bars) == 1:
        text = f"{head}\nonly {bars[0]['chip']} has a matmul peak in {dtype}: {bars[0]['label']}"
    else:
        hi = max(b["_si"] for b in bars)
        lo = min(b["_si"] for b in bars)
        if hi == lo:
            text = f"{head}\nevery chip shown: {bars[0]['label']}"
        else:
            text = f"{head}\nhighest {_names(bars, hi)}, lowest {_names(bars, lo)} ({hi / lo:.1f}x)"
    if missing and bars:
        text += f"\nno {dtype} matmul peak (no bar): {', '.join(missing)}"
    for b in bars:
        del b["_si"]
    return bars + [{"kind": "readout", "text": text}]


CHIP_ORDER = tuple(c.display_name for c in hardware.chips())


def chart(rows: list[dict], filters: bool):
    """Horizontal bars, one per chip in the table's order, each labelled with its value (the page
    prints the readout above them)."""
    import altair as alt

    base = alt.Chart(alt.Data(values=rows))
    where = FIGURE.filter_expression if filters else (lambda extra="": extra)
    y = alt.Y("chip:N", sort=list(CHIP_ORDER), scale=alt.Scale(domain=list(CHIP_ORDER)), title=None)
    x = alt.X("value:Q", title="the chosen quantity (unit in the readout)")
    picked = base.transform_filter(where("datum.kind == 'bar'"))
    bars = picked.mark_bar(color="#0072b2").encode(
        x=x, y=y, tooltip=[alt.Tooltip("chip:N"), alt.Tooltip("label:N", title="value")],
        description=alt.Description("label:N"))
    labels = picked.mark_text(align="left", dx=3, fontSize=11, aria=False).encode(x=x, y=y, text="label:N")
    return alt.layer(bars, labels).properties(width=380, height=300, padding={"right": 90})


def static(quantity: str, dtype: str):
    """The static picture (the site's fallback, drawn for the default setting, the HBM critical
    intensity in bf16): `scalebook.plots.critical_intensity_bars`."""
    from .. import plots

    drawn = plots.critical_intensity_bars(dtypes=(dtype,))
    ax = drawn.axes[0]
    ax.set_xlim(0, 1.15 * ax.get_xlim()[1])  # room for the longest bar's label inside the frame
    return drawn


FIGURE = InteractiveFigure(
    name="chips",
    title="Every chip side by side",
    controls=(
        select("quantity", "quantity", tuple(QUANTITIES), QUANTITY_LABELS, default="hbm_intensity"),
        select("dtype", "dtype", DTYPES),
    ),
    compute=compute,
    chart=chart,
    caption=("W is the bandwidth chapter 3's collectives divide by: a TPU's ICI in both directions of one axis, "
             "a GPU's NVLink egress in one direction. Start at the critical intensity over HBM: it stays in the "
             "hundreds of FLOPs per byte across vendors and generations. Switch to the peak, then to HBM bandwidth, to see both grow together; then to the "
             "critical intensity over ICI/NVLink, which spreads much wider. Change the dtype to see which chips "
             "have an int8 or fp8 path and how a faster dtype raises every critical intensity."),
    alt=("Horizontal bar chart with one bar per chip of the book's spec table, TPUs then GPUs, showing the "
         "chosen quantity (peak FLOP/s, HBM bandwidth, ICI/NVLink bandwidth, or a critical intensity) in the "
         "chosen dtype, each bar labelled with its value, and a readout naming the highest and lowest chip, "
         "their ratio and the chips without that dtype."),
    static=static,
)


def figure() -> InteractiveFigure:
    """Chapters 2 and 2b's chips side by side (quantity, dtype)."""
    return FIGURE
