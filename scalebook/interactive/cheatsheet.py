"""Chapter 11's interactive cheat sheet: the rules of thumb that depend on the chip, recomputed for
the chip (and the matmul dtype) a reader picks, as a table.

The rows are those of chapter 11's first cheat-sheet table, computed by the same package calls on
the same cases: `roofline.critical_intensity`, `roofline.critical_batch` with int8 weights,
`roofline.split_matmul_critical_d_model`, HBM over HBM bandwidth, `topology.chips_to_hold` for
LLaMA-3 70B's bf16 weights, `collectives.all_gather` and `all_reduce` of 1 GB over one fast axis,
`training.rule_of_thumb_batch_per_chip` over the fast link and the slow network,
`training.max_tp_degree`, `min_expert_width` and `min_context_chunk` for LLaMA-3 70B,
`inference.critical_decode_batch`, the decode latency floor of LLaMA-3 8B with int8 weights
(`inference.weights_per_chip` over HBM bandwidth), `jax_collectives.hiding_width` both ways round
the fast axis, the on-demand price, and the cost of 10^21 model FLOPs at the chapter-6 fitted
efficiency. The fast axis is chapter 11's: one 16-chip axis of a 16x16 slice for a TPU with a 2-D
torus, one 4-chip axis of a 4x4x4 cube for a 3-D torus, the NVLink domain of a GPU; the slow
network is DCN for TPUs and InfiniBand for GPUs.

The dtype control moves the four rows whose package call takes a matmul dtype: the critical
intensity, the split-matmul width and the collective matmul's hiding width (all in that dtype's
peak; a chip with no matmul peak in it in the spec data gets a dash, never its bf16 figure in
disguise), and the critical decode batch with weights in that dtype (`critical_decode_batch`
computes fp8 weights in fp8 where the chip has fp8 matmuls, in bf16 otherwise). The training rules
are the book's bf16 ones and the other rows do not depend on a dtype: they are kept once per chip.
"""
from __future__ import annotations

import functools
import textwrap
from dataclasses import dataclass
from typing import Callable

from .. import collectives, hardware, models, roofline, topology, training, units
from .. import inference as inf
from .. import jax_collectives as jc
from .. import transformer as tr
from ..errors import Error
from ._figure import InteractiveFigure, select

DTYPES = ("bf16", "int8", "fp8")
DASH = "—"
#: Width (characters) at which a rule's text wraps (up to three lines): narrow enough that the table
#: reads on a phone once its picture is scaled to the column.
WRAP = 40


def fast_axis(chip: "str | hardware.Chip") -> topology.Topology:
    """Chapter 11's fast axis: a 16x16 slice (2-D torus) or a 4x4x4 cube (3-D torus) for a TPU,
    the NVLink domain for a GPU; the rules use its first axis."""
    c = hardware.chip(chip)
    if c.is_tpu:
        return topology.slice(c, "4x4x4" if c.torus_dims == 3 else "16x16")
    return topology.gpu_node(c)


def links(chip: "str | hardware.Chip") -> tuple[str, str]:
    """(fast link, slow network): ('ici', 'dcn') for a TPU, ('nvlink', 'infiniband') for a GPU."""
    return ("ici", "dcn") if hardware.chip(chip).is_tpu else ("nvlink", "infiniband")


def _usd(x: float) -> str:
    return f"${x:,.0f}" if x >= 100 else f"${x:.2f}"


def _count(x: float) -> str:
    return f"{x:,.0f}"


@dataclass(frozen=True)
class Rule:
    """One row: its text (with `{dtype}` where it depends on the dtype), the chapters that derive
    it, and `value(chip, dtype)`, the package's number formatted for a reader (None: no value)."""

    text: str
    chapters: str
    value: Callable[[hardware.Chip, str], "str | None"]
    by_dtype: bool = False


def _has(c: hardware.Chip, dtype: str) -> bool:
    return dtype in c.flops_per_s


@functools.lru_cache(maxsize=None)
def _models() -> tuple:
    l8, l70 = models.preset("llama3-8b"), models.preset("llama3-70b")
    return l8, l70, tr.params(l70).total_params


def _zflop(c: hardware.Chip) -> "str | None":
    price = training.price_per_chip_hour(c)
    if not price:
        return None
    return _usd(1e21 / (c.peak_flops_per_s("bf16") * training.default_efficiency(c)) / 3600 * price)


def _collective(kind: str, c: hardware.Chip) -> str:
    topo = fast_axis(c)
    cost = getattr(collectives, kind)(topo, axes=topo.axes[0].name, bytes_=1e9)
    return units.format_quantity(cost.seconds, "s")


RULES = (
    Rule("Critical intensity C / W of HBM in {dtype}: the FLOPs per byte, and tokens per chip, a {dtype} matmul needs",
         "Ch. 1, 7", lambda c, d: f"{roofline.critical_intensity(c, d):,.0f} FLOP/B" if _has(c, d) else None, True),
    Rule("The same batch with int8 weights and bf16 arithmetic: half", "Ch. 1",
         lambda c, d: f"{roofline.critical_batch(c, 'bf16', 'int8'):,.0f} tokens"),
    Rule("Width D above which a matmul split over 2 chips along D is compute-bound, in {dtype}", "Ch. 1",
         lambda c, d: _count(roofline.split_matmul_critical_d_model(c, d)) if _has(c, d) else None, True),
    Rule("Time to read the whole HBM once", "Ch. 2",
         lambda c, d: units.format_quantity(c.hbm_bytes / c.hbm_bytes_per_s, "s")),
    Rule("Chips to hold LLaMA-3 70B's bf16 weights", "Ch. 2, 8",
         lambda c, d: _count(topology.chips_to_hold(_models()[2] * 2, c))),
    Rule("AllGather of 1 GB over one fast axis, about V / W", "Ch. 3", lambda c, d: _collective("all_gather", c)),
    Rule("AllReduce of the same 1 GB, about 2 V / W", "Ch. 3", lambda c, d: _collective("all_reduce", c)),
    Rule("DP or FSDP is compute-bound above C / W tokens per chip (bf16, one fast axis)", "Ch. 5",
         lambda c, d: f"{training.rule_of_thumb_batch_per_chip(c, link=links(c)[0]):,.0f} tokens"),
    Rule("The same across DCN or InfiniBand: tokens per slice (TPU) or per node (GPU)", "Ch. 5",
         lambda c, d: f"{training.rule_of_thumb_batch_per_chip(c, link=links(c)[1]):,.0f} tokens"),
    Rule("Largest tensor-parallel degree LLaMA-3 70B can hide, about 4.5 D W / C", "Ch. 5",
         lambda c, d: f"{training.max_tp_degree(_models()[1], chip=c):.1f}"),
    Rule("Narrowest expert that hides expert parallelism's AllToAlls, (2β / 9) C / W", "Ch. 5",
         lambda c, d: _count(training.min_expert_width(c, link=links(c)[0]))),
    Rule("Shortest context-parallel chunk of LLaMA-3 70B that hides its ring: (KV heads / query heads) × C / W", "Ch. 5",
         lambda c, d: f"{training.min_context_chunk(_models()[1], chip=c, link=links(c)[0]):,.0f} tokens"),
    Rule("Decode batch at which the weight matmuls turn compute-bound, {dtype} weights", "Ch. 7",
         lambda c, d: _count(inf.critical_decode_batch(c, weights=d)), True),
    Rule("Decode latency floor of LLaMA-3 8B with int8 weights on one chip: weights / HBM bandwidth", "Ch. 7, 8",
         lambda c, d: units.format_quantity(inf.weights_per_chip(_models()[0], inf.Deployment(weights="int8"))
                                            / c.hbm_bytes_per_s, "s")),
    Rule("Width per device above which a collective matmul hides its sends, in {dtype}, a ring both ways",
         "Ch. 10", lambda c, d: _count(jc.hiding_width(fast_axis(c), axis=fast_axis(c).axes[0].name, dtype=d,
                                                       bidirectional=True)) if _has(c, d) else None, True),
    Rule("On-demand price per chip-hour in the spec data", "Ch. 6",
         lambda c, d: _usd(training.price_per_chip_hour(c)) if training.price_per_chip_hour(c) else None),
    Rule("Cost of 10²¹ model FLOPs at chapter 6's fitted matmul efficiency (a floor)", "Ch. 6",
         lambda c, d: _zflop(c)),
)


@functools.lru_cache(maxsize=None)
def sheet_chips() -> tuple[tuple[str, ...], tuple[tuple[str, str], ...]]:
    """(chips the sheet is computed for, (chip, why) for those left out): a chip is left out when
    a bf16 row raises the package's `Error` (a figure missing from its spec data)."""
    ok, out = [], []
    for name in hardware.chip_names():
        c = hardware.chip(name)
        try:
            for rule in RULES:
                rule.value(c, "bf16")
        except Error as err:
            out.append((name, str(err)))
            continue
        ok.append(name)
    return tuple(ok), tuple(out)


def _where(c: hardware.Chip) -> str:
    topo = fast_axis(c)
    a = topo.axes[0]
    slow = "DCN" if c.is_tpu else "InfiniBand"
    if c.is_tpu:
        fast = f"one {a.size}-chip axis of a {topo.shape} slice"
    else:
        fast = f"the {a.size} GPUs of an NVLink domain"
    return f"fast axis: {fast}; slow network: {slow}"


def compute(chip: str, dtype: str) -> list[dict]:
    """One row per rule (its position, text, value and chapters) and the readout: the chip, what
    its fast axis and slow network are, and the rows without a value and why."""
    c = hardware.chip(chip)
    dtype = units.canonical_dtype(dtype)
    if dtype not in DTYPES:
        raise Error(f"dtype {dtype!r}: valid dtypes are {list(DTYPES)}")
    rows, blank = [], []
    for i, rule in enumerate(RULES):
        value = rule.value(c, dtype)
        text = rule.text.format(dtype=dtype)
        if value is None:
            blank.append(i)
        row = {"kind": "rule", "i": i, "rule": textwrap.fill(text, WRAP), "value": value or DASH, "ch": rule.chapters}
        if not rule.by_dtype:
            row["on"] = ["chip"]
        rows.append(row)
    text = f"{c.display_name}, {dtype} matmuls ({_where(c)})"
    missing_peak = [i for i in blank if RULES[i].by_dtype]
    if missing_peak:
        text += f"\n{DASH}: no {dtype} matmul peak for the {c.display_name} in the spec data"
    if any(not RULES[i].by_dtype for i in blank):
        text += f"\n{DASH}: no on-demand price for the {c.display_name} in the spec data"
    return rows + [{"kind": "readout", "text": text}]


def chart(rows: list[dict], filters: bool):
    """The table: three columns of text marks (rule, value, chapter), every other row shaded (the
    page prints the readout above it)."""
    import altair as alt

    base = alt.Chart(alt.Data(values=rows))
    where = FIGURE.filter_expression if filters else (lambda extra="": extra)
    picked = base.transform_filter(where("datum.kind == 'rule'"))
    y = alt.Y("i:O", axis=None, title=None)

    def column(field: str, x: int, **kw):
        return picked.mark_text(align="left", baseline="top", lineBreak="\n", fontSize=11, **kw).encode(
            x=alt.value(x), y=alt.Y("i:O", axis=None, title=None, bandPosition=0.12), text=f"{field}:N")

    rule = column("rule", 0)
    value = column("value", 255, fontWeight="bold")
    ch = column("ch", 345, color="#555555", aria=False)
    stripes = picked.transform_filter("datum.i % 2 == 0").mark_rect(color="#f2f2f2", aria=False).encode(
        y=y, x=alt.value(-4), x2=alt.value(400))
    return alt.layer(stripes, rule, value, ch).properties(width=400, height=alt.Step(44)).configure_view(stroke=None)


def static(chip: str, dtype: str):
    """The static picture (the site's fallback): `scalebook.plots.threshold_ladder` for the chip,
    the three rows of the sheet that compare its arithmetic with HBM, its fast links and the slow
    network."""
    from .. import plots

    return plots.threshold_ladder((chip,))


def _caption() -> str:
    ok, out = sheet_chips()
    left = (" Every chip in the package's spec data has a sheet." if not out else
            " Left out: " + "; ".join(f"{hardware.chip(n).display_name} ({why})" for n, why in out) + ".")
    return ("Pick a chip to see every rule of the chapter's first cheat-sheet table recomputed from its spec data; "
            "switch the dtype to int8 or fp8 and see which rules move: the critical intensity grows with the "
            "chip's peak in that dtype, while the widths that hide communication weigh that peak against half "
            "the bytes per element, so on most chips they barely move; a dash marks a dtype the chip has no "
            "matmul peak for. Rows that name bf16 keep it whatever the control says." + left)


FIGURE = InteractiveFigure(
    name="cheat-sheet",
    title="The cheat sheet for one chip",
    controls=(
        select("chip", "chip", sheet_chips()[0], [hardware.chip(n).display_name for n in sheet_chips()[0]],
               default="h100"),
        select("dtype", "matmul dtype", DTYPES),
    ),
    compute=compute,
    chart=chart,
    caption=_caption(),
    alt=("A table of the rules of thumb that depend on the chip, for the chosen chip and matmul dtype: each row "
         "gives the rule, its value computed by the package from the chip's spec data, and the chapter that "
         "derives it, under a line naming the chip's fast axis and slow network."),
    static=static,
)


def figure() -> InteractiveFigure:
    """Chapter 11's cheat sheet for one chip (chip, dtype)."""
    return FIGURE
