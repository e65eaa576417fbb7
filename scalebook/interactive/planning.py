"""Chapter 6's interactive plan: the time-memory front of `scalebook.planner.plan` for a LLaMA-3
model on a chip budget (the chip, and how many), with the fastest plan marked.

Every value is `planner.plan`'s: it prices every factorisation of the chips into DP, FSDP, TP, PP,
CP (with microbatches, remat and interleaving), drops what does not fit in HBM, and returns the
Pareto front of step time against memory per chip (each point exactly as `training.estimate` gives it).
A point is one plan on that front: days to train on the chapter's 15T tokens (`days(TOKENS)`,
step time x steps) against its memory per chip, both as `estimate` gives them; the fastest plan
(`plan.best[0]`, also the front's first point) is marked, and the readout names its strategy,
step time, MFU, memory per chip and days. The dashed line is the chip's HBM, which every plan on
the front stays under. The batch is the chapter's map's: 16M tokens (2^24) in sequences of 8,192
tokens. (A batch control would double the grid's 18 plans and its embedded data, past the page's
300 kB budget; `compute` takes any batch.) A chip budget on which no strategy fits draws nothing
and says so (`planner.plan`'s error).
"""
from __future__ import annotations

import functools

from .. import hardware, models, planner, units
from ..errors import MAX_CHIPS, MAX_TOKENS, Error, require_count, require_positive
from ._figure import InteractiveFigure, select, slider

MODELS = ("llama3-8b", "llama3-70b", "llama3-405b")
MODEL_LABELS = ("LLaMA-3 8B", "LLaMA-3 70B", "LLaMA-3 405B")
CHIPS = ("tpu-v5p", "h100")
CHIP_COUNTS = (1024, 4096, 16384)
BATCH_TOKENS = 2 ** 24
SEQ_LEN = 8192
#: Training tokens of the chapter's question (Meta's 15T), for the days.
TOKENS = 15e12


@functools.lru_cache(maxsize=None)
def front(model: str, chip: str, chips: int, batch_tokens: float) -> planner.TrainingPlan:
    """`planner.plan` for one setting (top 1: the fastest, and the whole time-memory front)."""
    return planner.plan(models.preset(model), chip=chip, chips=chips, batch_tokens=batch_tokens,
                        seq_len=SEQ_LEN, top=1)


def _round(value: float) -> float:
    return float(f"{value:.4g}")


def _days(days: float) -> str:
    return f"{days:.1f} days" if days < 10 else f"{days:,.0f} days"


def _wrap(text: str) -> str:
    """A long message on lines of at most 90 characters (the readout is as wide as the chart)."""
    import textwrap

    return "\n".join(textwrap.wrap(text, 90))


def _model_label(model: str) -> str:
    return MODEL_LABELS[MODELS.index(model)] if model in MODELS else models.preset(model).name


def compute(model: str, chip: str, chips: int, batch_tokens: float = BATCH_TOKENS) -> list[dict]:
    """One point per plan on the front (memory per chip in GB, days to train, MFU in %, the
    strategy; `best` marks the fastest), the chip's HBM, and the readout."""
    c = hardware.chip(chip)
    require_count("chips", chips, maximum=MAX_CHIPS)
    require_positive(batch_tokens=batch_tokens)
    if batch_tokens > MAX_TOKENS:
        raise Error(f"batch_tokens must be at most {MAX_TOKENS:,} tokens, got {batch_tokens!r}")
    head = (f"{_model_label(model)} on {chips:,} {c.display_name}, {batch_tokens / 2 ** 20:,.0f}M-token batch "
            f"of {SEQ_LEN:,}-token sequences")
    hbm = {"kind": "hbm", "gb": _round(c.hbm_bytes / 1e9), "on": ["chip"]}
    try:
        p = front(model, chip, chips, batch_tokens)
    except Error as err:  # no strategy fits or splits the batch: say why, draw only the HBM line
        return [hbm, {"kind": "readout", "text": f"{head}\nno plan: {_wrap(str(err))}"}]
    points = [{"kind": "point", "gb": _round(e.memory.bytes / 1e9), "days": _round(e.days(TOKENS)),
               "mfu": round(100 * e.mfu), "plan": e.strategy.label(), "best": i == 0}
              for i, e in enumerate(p.pareto)]
    b = p.best[0]
    f = units.format_quantity
    plans = "plan" if len(p.pareto) == 1 else "plans"
    text = (f"{head}\n{p.fitting:,} of {p.considered:,} strategies fit, {len(p.pareto):,} {plans} on the front\n"
            f"fastest {b.strategy.label()}: step {f(b.step_seconds, 's')}, MFU {units.fmt_percent(b.mfu, 0)}, "
            f"{f(b.memory.bytes, 'B')} per chip, {_days(b.days(TOKENS))} for {TOKENS / 1e12:.0f}T tokens")
    return points + [hbm, {"kind": "readout", "text": text}]


def chart(rows: list[dict], filters: bool):
    """The front as points joined by a step line (memory per chip against days), the fastest
    plan larger and coloured, the HBM as a dashed rule (the page prints the readout above)."""
    import altair as alt

    base = alt.Chart(alt.Data(values=rows))
    where = FIGURE.filter_expression if filters else (lambda extra="": extra)
    x = alt.X("gb:Q", title="memory per chip (GB); dashed: HBM", scale=alt.Scale(zero=True))
    y = alt.Y("days:Q", title=f"days to train on {TOKENS / 1e12:.0f}T tokens",
              scale=alt.Scale(type="log", zero=False, nice=False, padding=8))
    points = base.transform_filter(where("datum.kind == 'point'"))
    line = points.mark_line(color="#999999", interpolate="step-after", aria=False).encode(x=x, y=y, order="gb:Q")
    dots = points.mark_circle(opacity=1).encode(
        x=x, y=y,
        color=alt.Color("best:N", scale=alt.Scale(domain=[True, False], range=["#d55e00", "#0072b2"]),
                        legend=alt.Legend(title=None, orient="bottom", labelExpr="datum.value ? 'fastest plan' : "
                                                                                 "'other plans on the front'")),
        size=alt.Size("best:N", scale=alt.Scale(domain=[True, False], range=[160, 40]), legend=None),
        tooltip=[alt.Tooltip("plan:N", title="strategy"), alt.Tooltip("days:Q", title="days", format=",.1f"),
                 alt.Tooltip("gb:Q", title="GB per chip", format=",.1f"), alt.Tooltip("mfu:Q", title="MFU %")],
        description=alt.Description("plan:N"))
    hbm = base.transform_filter(where("datum.kind == 'hbm'")).mark_rule(
        color="black", strokeDash=[4, 3], aria=False).encode(x="gb:Q")
    return alt.layer(line, dots, hbm).properties(width=480, height=260)


def static(model: str, chip: str, chips: int, batch_tokens: float = BATCH_TOKENS):
    """The static picture of one setting (the site's fallback): `scalebook.plots.plan_breakdown` of
    the front's two ends, the fastest plan and the one with the least memory per chip."""
    from .. import plots

    p = front(model, chip, chips, batch_tokens)
    ends = {f"fastest: {p.pareto[0].strategy.label()}": p.pareto[0]}
    if len(p.pareto) > 1:
        ends[f"leanest: {p.pareto[-1].strategy.label()}"] = p.pareto[-1]
    return plots.plan_breakdown(ends)


FIGURE = InteractiveFigure(
    name="plan-front",
    title="The planner's time-memory front on a chip budget",
    controls=(
        select("model", "model", MODELS, MODEL_LABELS, default="llama3-70b"),
        select("chip", "chip", CHIPS, [hardware.chip(c).display_name for c in CHIPS]),
        slider("chips", "chips", CHIP_COUNTS, default=4096),
    ),
    compute=compute,
    chart=chart,
    caption=("Each point is a plan the package's planner keeps because no other plan is both faster and leaner; "
             "the large orange point is the fastest. Quadruple the chips and watch the days fall; switch from "
             "TPU v5p to H100 and the fastest plan adds data parallelism (ZeRO-1) beside FSDP, to keep weight "
             "gathers off the slower network between nodes; pick 405B and on H100 it needs pipeline stages too. "
             f"Hover a point for its strategy and MFU. The global batch is {BATCH_TOKENS // 2 ** 20}M tokens in "
             f"sequences of {SEQ_LEN:,}."),
    alt=("Scatter plot of the time-memory Pareto front of the training plans for the chosen LLaMA-3 model, chip "
         f"and chip count: days to train on {TOKENS / 1e12:.0f} trillion tokens (log scale) against memory per chip "
         "in GB, "
         "the fastest plan marked larger, a dashed line at the chip's HBM, and a readout naming the fastest "
         "plan's strategy, step time, MFU, memory per chip and days."),
    static=static,
)


def figure() -> InteractiveFigure:
    """Chapter 6's planner front (model, chip, chip count)."""
    return FIGURE
