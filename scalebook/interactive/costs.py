"""Chapter 8's interactive cost: what a million output tokens of LLaMA-3 70B cost on each chip that
has an on-demand price in the package data, at the cheapest configuration whose per-token
latency meets a target (the chapter's chat workload: 2,048-token prompts, 512 tokens out).

Every value is `scalebook.serving.plan_serving`'s: for each chip it searches layouts (tp, pp, ep),
weight and KV dtypes and batches up to 256 chips, down to the largest batch of each layout that
meets the target. The configuration shown for a target is `plan_serving(...,
latency_target_s=target).best[0]` (all the figure's targets searched at once by
`serving.plan_serving_for_targets`; the tests check both agree); its cost is
`ServingEstimate.usd_per_million_output_tokens` at `training.price_per_chip_hour(chip)`: decode
only, price x chips / output tokens per hour (continuous batching's prefill share, which chapter 8
adds, is left out). Chips without a price in the data (the chapter assumes some) are not shown.
"""
from __future__ import annotations

import functools

from .. import hardware, serving, training, units
from ..errors import Error
from ._figure import InteractiveFigure, slider

MODEL = "llama3-70b"
PROMPT_LEN = 2048
OUTPUT_LEN = 512
TARGETS_MS = (15, 20, 30, 50, 75, 100, 150, 200)


def priced_chips() -> tuple[str, ...]:
    """The chips with an on-demand price in the package data."""
    return tuple(c for c in hardware.chip_names() if training.price_per_chip_hour(c))


@functools.lru_cache(maxsize=None)
def _plans(chip: str) -> dict:
    """`plan_serving`'s plan for `chip` at each of the figure's targets, searched together."""
    plans = serving.plan_serving_for_targets(MODEL, chip=chip, latency_targets_s=tuple(t / 1e3 for t in TARGETS_MS),
                                             prompt_len=PROMPT_LEN, output_len=OUTPUT_LEN, top=1)
    return dict(zip(TARGETS_MS, plans))


def best(chip: str, target_ms: float):
    """The configuration with the most output tokens/s per chip within `target_ms` per token, or
    None when none meets it: `plan_serving(..., latency_target_s=target_ms / 1e3).best[0]`."""
    plan = _plans(chip).get(target_ms)
    if plan is None:
        plan = serving.plan_serving(MODEL, chip=chip, latency_target_s=target_ms / 1e3, prompt_len=PROMPT_LEN,
                                    output_len=OUTPUT_LEN, top=1)
    return plan.best[0] if plan.best else None


def compute(target_ms: float) -> list[dict]:
    """One bar per priced chip that meets the target (USD per million output tokens, and the
    configuration), and the readout: the cheapest chip, the ratio to the dearest, and the chips
    that cannot meet the target."""
    if not isinstance(target_ms, (int, float)) or isinstance(target_ms, bool) or not 0 < target_ms < 1e6:
        raise Error(f"target_ms must be a number of milliseconds between 0 and 1e6, got {target_ms!r}")
    bars, missing = [], []
    for name in priced_chips():
        c = hardware.chip(name)
        e = best(name, target_ms)
        if e is None:
            missing.append(c.display_name)
            continue
        usd = e.usd_per_million_output_tokens(training.price_per_chip_hour(name))
        how = (f"{e.chips} chips, {e.deployment.label()}, batch {e.batch:,}, "
               f"{units.format_quantity(e.per_token_latency_seconds, 's')} per token")
        bars.append({"kind": "bar", "chip": c.display_name, "usd": float(f"{usd:.4g}"), "label": f"${usd:.2f}",
                     "how": how})
    head = f"LLaMA-3 70B, at most {target_ms:,.0f} ms per token: USD per million output tokens (decode only)"
    if not bars:
        text = f"{head}\nno priced chip meets it in any configuration the planner tries"
    elif len(bars) == 1:
        text = f"{head}\nonly {bars[0]['chip']} meets it: {bars[0]['label']}\n{bars[0]['how']}"
    else:
        lo = min(bars, key=lambda b: b["usd"])
        hi = max(bars, key=lambda b: b["usd"])
        text = f"{head}\ncheapest {lo['chip']}, {lo['label']}"
        if hi["usd"] > lo["usd"]:
            text += f"; {hi['chip']} costs {hi['usd'] / lo['usd']:.1f}x as much"
        text += f"\n{lo['how']}"
    if missing:
        text += f"\ncannot meet it: {', '.join(missing)}"
    return bars + [{"kind": "readout", "text": text}]


def chart(rows: list[dict], filters: bool):
    """Horizontal bars of USD per million output tokens, one per chip, labelled (the page prints the readout)."""
    import altair as alt

    names = [hardware.chip(c).display_name for c in priced_chips()]
    base = alt.Chart(alt.Data(values=rows))
    where = FIGURE.filter_expression if filters else (lambda extra="": extra)
    y = alt.Y("chip:N", sort=names, scale=alt.Scale(domain=names), title=None)
    x = alt.X("usd:Q", scale=alt.Scale(type="log", domain=[0.1, 100]), stack=None, title="USD per million output tokens")
    picked = base.transform_filter(where("datum.kind == 'bar'"))
    # A log axis has no zero: each bar starts at the axis's left end (Vega-Lite draws none otherwise).
    bars = picked.mark_bar(color="#0072b2").encode(
        x=x, x2=alt.value(0), y=y, tooltip=[alt.Tooltip("chip:N"), alt.Tooltip("label:N", title="USD/M"),
                           alt.Tooltip("how:N", title="configuration")],
        description=alt.Description("how:N"))
    labels = picked.mark_text(align="left", dx=3, fontSize=11, aria=False).encode(x=x, y=y, text="label:N")
    return alt.layer(bars, labels).properties(width=360, height=140, padding={"right": 60})


def static(target_ms: float):
    """The static picture (the site's fallback): `scalebook.plots.serving_frontier` of the priced
    chips' planner frontiers (per-token latency against tokens/s per chip; the search for the
    loosest target, whose frontier holds every layout's batches up to the largest that fits)."""
    from .. import plots

    return plots.serving_frontier({hardware.chip(c).display_name: list(_plans(c)[max(TARGETS_MS)].frontier)
                                   for c in priced_chips()})


FIGURE = InteractiveFigure(
    name="serving-cost",
    title="What a million tokens cost under a latency target",
    controls=(slider("target_ms", "latency target (ms per token)", TARGETS_MS, default=50,
                     live_range=(1, 10_000), integer=False),),
    compute=compute,
    chart=chart,
    caption=("Tighten the latency target and watch every chip's cost climb, as the planner gives up batch and adds "
             "chips to stay fast, until some chips cannot meet it at all; loosen it and the costs flatten once the "
             "largest batch that fits is within reach. Each bar is the cheapest configuration the package's planner "
             "finds for that chip (decode only), at the on-demand price in the package data; chips without one "
             "are left out."),
    alt=("Horizontal bar chart, log scale, of US dollars per million output tokens of LLaMA-3 70B on each chip with "
         "a listed price, at the cheapest configuration meeting the chosen per-token latency target, with a "
         "readout naming the cheapest chip, its configuration, the cost ratio to the dearest, and the chips that "
         "cannot meet the target."),
    static=static,
)


def figure() -> InteractiveFigure:
    """Chapter 8's cost under a latency target (target)."""
    return FIGURE
