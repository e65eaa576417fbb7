"""Chapter 7's interactive frontier: per-token latency against output tokens per second per chip
for LLaMA-3 70B on H100s (prompt 2,048 tokens, 512 out, the chapter's case), as the batch, the
weight and KV-cache dtypes and the tensor-parallel degree change.

Every value is `scalebook.inference.estimate`'s (the decode roofline of chapter 7, its default
efficiencies): the curve is `serving.frontier` (powers of two up to the largest batch that fits,
and that one), the point and readout are the estimate at the chosen batch, or say that the batch
does not fit (its KV cache and weights exceed HBM) and where the largest batch that fits lies.
"""
from __future__ import annotations

from .. import inference as inf, serving, units
from ._figure import InteractiveFigure, select, slider

MODEL = "llama3-70b"
CHIP = "h100"
PROMPT_LEN = 2048
OUTPUT_LEN = 512
DTYPES = ("bf16", "fp8")
TP = (4, 8)
BATCHES = tuple(2 ** k for k in range(11))  # 1 .. 1024


def _pos(value: float) -> float:
    """A position on a log axis, to 4 significant digits."""
    return float(f"{value:.4g}")


def deployment(weights: str, kv: str, tp: int) -> "inf.Deployment":
    """The `Deployment` of one setting: `tp` H100s holding the weights and KV cache in those dtypes."""
    return inf.Deployment(tp=tp, weights=weights, kv=kv)


def compute(weights: str, kv: str, tp: int, batch: int) -> list[dict]:
    """The frontier of the deployment, and the estimate at `batch` (point and readout)."""
    d = deployment(weights, kv, tp)
    on = ("weights", "kv", "tp")
    pts = serving.frontier(MODEL, chip=CHIP, deployment=d, prompt_len=PROMPT_LEN, output_len=OUTPUT_LEN)
    curve = [{"kind": "curve", "x": _pos(1e3 * e.per_token_latency_seconds), "tps": _pos(e.output_tokens_per_s_per_chip),
              "on": on} for e in pts]
    most = pts[-1].batch
    e = inf.estimate(MODEL, chip=CHIP, deployment=d, batch=batch, prompt_len=PROMPT_LEN, output_len=OUTPUT_LEN)
    f = units.format_quantity
    where = f"{tp} H100s, {weights} weights, {kv} cache"
    if not e.fits:
        text = (f"{where}, batch {batch:,}: does not fit\n"
                f"the largest batch that fits is {most:,} (prompt {PROMPT_LEN:,} + output {OUTPUT_LEN:,} tokens)")
        return curve + [{"kind": "readout", "text": text}]
    text = (f"{where}, batch {batch:,}: {f(e.per_token_latency_seconds, 's')} per token\n"
            f"{e.output_tokens_per_s_per_chip:,.0f} output tokens/s per chip (largest batch that fits: {most:,})")
    return curve + [{"kind": "readout", "x": _pos(1e3 * e.per_token_latency_seconds),
                     "tps": _pos(e.output_tokens_per_s_per_chip), "text": text}]


def chart(rows: list[dict], filters: bool):
    """Log-log frontier (line with points), the chosen batch (large point) (the page prints the readout)."""
    import altair as alt

    base = alt.Chart(alt.Data(values=rows))
    where = FIGURE.filter_expression if filters else (lambda extra="": extra)
    x = alt.X("x:Q", scale=alt.Scale(type="log", domain=[10, 200]), title="per-token latency (ms)")
    y = alt.Y("tps:Q", scale=alt.Scale(type="log", domain=[1, 10000]), title="output tokens/s per chip")
    curve = base.transform_filter(where("datum.kind == 'curve'")).mark_line(
        point=True, color="#0072b2", clip=True, aria=False).encode(x=x, y=y, order="x:Q")
    picked = base.transform_filter(where("datum.kind == 'readout'"))
    point = picked.transform_filter("isValid(datum.tps)").mark_point(
        filled=True, size=160, color="#d55e00", shape="diamond", clip=True).encode(
        x=x, y=y, description=alt.Description("text:N"))
    return alt.layer(curve, point).properties(width=460, height=300)


def static(weights: str, kv: str, tp: int, batch: int):
    """The static picture (the site's fallback): `scalebook.plots.latency_throughput_frontier`."""
    from .. import plots

    return plots.latency_throughput_frontier(MODEL, CHIP, {f"TP {tp}, {weights} weights, {kv} cache":
                                                           deployment(weights, kv, tp)},
                                             prompt_len=PROMPT_LEN, output_len=OUTPUT_LEN, label_batches=False)


FIGURE = InteractiveFigure(
    name="frontier",
    title="The latency/throughput frontier of decode",
    controls=(
        select("weights", "weights", DTYPES),
        select("kv", "KV cache", DTYPES),
        select("tp", "chips (TP)", TP, [str(t) for t in TP], default=8),
        slider("batch", "batch", BATCHES, default=64, live_range=(1, 100_000)),
    ),
    compute=compute,
    chart=chart,
    caption=(f"LLaMA-3 70B on H100s, a {PROMPT_LEN:,}-token prompt and {OUTPUT_LEN} output tokens. Slide the batch up: throughput "
             "per chip climbs almost for free at first, then the per-token latency grows, until the KV cache "
             "fills memory and the batch no longer fits. Switch the weights to fp8 to move the curve left; switch "
             "the cache to fp8 to let it climb further before it ends."),
    alt=("Log-log plot of output tokens per second per chip against per-token latency for the chosen deployment, "
         "one point per batch size up to the largest that fits, with the chosen batch highlighted and a readout "
         "of its latency and throughput, or a note that it does not fit."),
    static=static,
)


def figure() -> InteractiveFigure:
    """Chapter 7's interactive frontier (weights, KV cache, TP, batch)."""
    return FIGURE
