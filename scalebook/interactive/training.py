"""Chapter 5's interactive training step: memory per chip and step time, each by part, for
LLaMA-3 70B on 256 H100s (the chapter's case), as the strategy and the batch change.

Every value is `scalebook.training.estimate`'s (the step model of `scalebook.step` and its
assumptions): the memory parts are `estimate.memory.parts()` beside the chip's HBM, the time
parts `estimate.breakdown()` (exposed communication only), and the readout names the total
memory, whether it fits, the step time and the MFU. Controls: how the data-parallel axis holds
the weights and optimizer (plain DP, ZeRO-1, ZeRO-2, or FSDP), the tensor-parallel degree (with
sequence parallelism), activation recomputation, microbatching, and the batch in tokens. The
data-parallel degree is the chips left over: 256 / TP.
"""
from __future__ import annotations

from .. import training, units
from ..errors import Error
from ..strategy import Strategy
from ._figure import InteractiveFigure, select, slider

MODEL = "llama3-70b"
CHIP = "h100"
CHIPS = 256
SEQ_LEN = 4096
DATA = ("dp", "zero1", "zero2", "fsdp")
DATA_LABELS = ("DP", "DP, ZeRO-1", "DP, ZeRO-2", "FSDP")
TP = (1, 2, 4, 8)
REMAT = ("none", "selective", "full")
MICROBATCH = ("whole", "1")
BATCH_TOKENS = (2 ** 20, 2 ** 21, 2 ** 22)
MEMORY_PARTS = ("parameters", "gradients", "optimizer", "gathered weights", "activations", "logits")


def strategy(data: str, tp: int, remat: str, microbatch: str) -> Strategy:
    """The `Strategy` of one setting: the data-parallel degree is CHIPS / tp."""
    n = CHIPS // tp
    kw = dict(tp=tp, sequence_parallel=tp > 1, remat=remat, microbatch=None if microbatch == "whole" else int(microbatch))
    if data == "fsdp":
        return Strategy(fsdp=n, **kw)
    return Strategy(dp=n, zero={"dp": 0, "zero1": 1, "zero2": 2}[data], **kw)


def _round(value: float) -> float:
    return float(f"{value:.3g}")


def compute(data: str, tp: int, remat: str, microbatch: str, batch_tokens: float) -> list[dict]:
    """One row per setting: each memory part (GB per chip), each time part (s), HBM, and the readout."""
    try:
        e = training.estimate(MODEL, strategy=strategy(data, tp, remat, microbatch), seq_len=SEQ_LEN,
                              batch_tokens=batch_tokens, chip=CHIP, chips=CHIPS)
    except Error as err:  # a setting the model refuses: say why, draw nothing
        return [{"kind": "readout", "text": f"Not a valid plan: {err}"}]
    f = units.format_quantity
    parts = e.memory.parts()
    total = sum(parts.values())
    fits = "fits" if e.fits else "does not fit"
    label = DATA_LABELS[DATA.index(data)] + (f" x TP {tp}" if tp > 1 else "")
    micro = "" if microbatch == "whole" else f", microbatches of {microbatch} sequence"
    text = (f"{label}, remat {remat}{micro}, {batch_tokens:,.0f} tokens: {f(total, 'B')} of {f(e.memory.hbm_bytes, 'B')} "
            f"per chip ({fits})\nstep {f(e.step_seconds, 's')}, MFU {units.fmt_percent(e.mfu, 0)}")
    row = {"kind": "readout", "text": text, "hbm_gb": _round(e.memory.hbm_bytes / 1e9)}
    row.update({f"GB {k}": _round(v / 1e9) for k, v in parts.items() if v > 0})
    row.update({f"time {k}": _round(v) for k, v in e.breakdown().items() if v > 0})
    return [row]


def _fields(rows: list[dict], prefix: str) -> list[str]:
    seen: dict[str, None] = {}
    for r in rows:
        for k in r:
            if k.startswith(prefix):
                seen[k] = None
    return list(seen)


def chart(rows: list[dict], filters: bool):
    """Two stacked bars: memory by part with the HBM line, step time by part (the page prints the readout)."""
    import altair as alt

    # A part a setting lacks (no TP traffic without TP) is zero: Vega-Lite's stack needs a number.
    parts = _fields(rows, "GB ") + _fields(rows, "time ")
    rows = [{**{p: 0 for p in parts}, **r} if r["kind"] == "readout" and "hbm_gb" in r else r for r in rows]
    base = alt.Chart(alt.Data(values=rows))
    where = FIGURE.filter_expression if filters else (lambda extra="": extra)
    picked = base.transform_filter(where("datum.kind == 'readout'"))

    def bar(prefix: str, unit: str, title: str):
        # Each bar folds its own columns into rows (part, value): a reshaping, no arithmetic.
        fields = _fields(rows, prefix)
        key, value, part = f"{unit}_key", f"{unit}_value", f"{unit}_part"
        return picked.transform_fold(fields, as_=[key, value]).transform_calculate(
            **{part: f"substring(datum.{key}, {len(prefix)})"}).mark_bar(aria=False).encode(
            x=alt.X(f"{value}:Q", stack="zero", title=title),
            color=alt.Color(f"{part}:N", title=None, sort=[f[len(prefix):] for f in fields],
                            legend=alt.Legend(orient="bottom", columns=3)),
            order=alt.Order(f"{part}:O"),
        ).properties(width=460, height=34)

    hbm = picked.mark_rule(color="black", strokeDash=[4, 3], aria=False).encode(x="hbm_gb:Q")
    memory = alt.layer(bar("GB ", "GB", "memory per chip (GB); dashed: HBM"), hbm)
    time = bar("time ", "s", "step time (s), exposed communication only")
    return alt.vconcat(memory, time, spacing=12).resolve_scale(color="independent").configure_view(
        stroke=None)


def static(data: str, tp: int, remat: str, microbatch: str, batch_tokens: float):
    """The static picture of one setting (the site's fallback): `scalebook.plots.memory_by_strategy`."""
    from .. import plots

    e = training.estimate(MODEL, strategy=strategy(data, tp, remat, microbatch), seq_len=SEQ_LEN,
                          batch_tokens=batch_tokens, chip=CHIP, chips=CHIPS)
    return plots.memory_by_strategy({DATA_LABELS[DATA.index(data)]: e})


FIGURE = InteractiveFigure(
    name="training-step",
    title="A training step's memory and time by part",
    controls=(
        select("data", "weights over DP", DATA, DATA_LABELS, default="fsdp"),
        select("tp", "TP degree", TP, [str(t) for t in TP]),
        select("remat", "remat", REMAT),
        select("microbatch", "microbatch", MICROBATCH, ["whole batch", "1 sequence"]),
        slider("batch_tokens", "batch (tokens)", BATCH_TOKENS, default=2 ** 21),
    ),
    compute=compute,
    chart=chart,
    caption=(f"LLaMA-3 70B on {CHIPS} H100s, sequences of {SEQ_LEN:,} tokens. Start from plain DP and switch to ZeRO and "
             "then FSDP to watch the optimizer, gradients and weights shrink; turn on remat or microbatches to "
             "trade activation memory for recomputed matmuls; raise the TP degree to see activations split and "
             "exposed TP communication appear in the step time."),
    alt=("Two horizontal stacked bars for the chosen strategy and batch: memory per chip by part (parameters, "
         "gradients, optimizer, gathered weights, activations, logits) against a dashed line at the chip's HBM, "
         "and step time by part (matmuls, memory-bound ops, exposed communication, optimizer update), with a "
         "readout of total memory, whether it fits, the step time and the MFU."),
    static=static,
)


def figure() -> InteractiveFigure:
    """Chapter 5's interactive training step (strategy, TP degree, remat, microbatch, batch)."""
    return FIGURE
