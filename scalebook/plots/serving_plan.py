"""Figures of chapter 8 (a serving plan for LLaMA 3): frontiers, memory stacks, decode steps, cost, validation.

Every drawing function imports matplotlib inside, takes an optional `ax` and returns the `Figure`.
The numbers come from `scalebook.inference` and `scalebook.serving`; nothing here types a hardware
figure or a price. The helpers `frontier_curves` and `cost_rows` compute what the figures draw, so
a notebook can compute once, quote the numbers and draw them.
"""
from __future__ import annotations

from typing import Mapping, Sequence

from .. import hardware
from .. import inference as inf
from .. import serving
from ..errors import Error, require_positive
from ..models import Transformer, preset
from ._axes import axes

__all__ = [
    "frontier_curves",
    "serving_frontier",
    "memory_stack",
    "decode_breakdown",
    "cost_rows",
    "serving_cost",
    "serving_predictions",
    "serving_validation",
    "serving_errors",
]

_COLORS = ["#4c72b0", "#dd8452", "#55a868", "#c44e52", "#8172b3", "#937860", "#da8bc3", "#8c8c8c", "#ccb974"]
_MEMORY_COLORS = {"weights": "#4c72b0", "KV cache": "#dd8452", "workspace": "#8c8c8c"}
_STEP_COLORS = {"weights (HBM)": "#4c72b0", "KV cache (HBM)": "#dd8452", "compute": "#55a868",
                "TP AllReduce": "#c44e52", "EP AllToAll": "#8172b3", "PP send": "#937860",
                "fixed per-layer cost": "#da8bc3"}


def _model(m: "Transformer | str") -> Transformer:
    return preset(m) if isinstance(m, str) else m


# --- the latency/throughput frontier -----------------------------------------------------------

def frontier_curves(model: "Transformer | str", cases: "Mapping[str, tuple[str, inf.Deployment]]", *,
                    prompt_len: int, output_len: int, **efficiency) -> "dict[str, list[inf.ServingEstimate]]":
    """`serving.frontier` for each labelled (chip, deployment): estimates at batch 1, 2, 4 ... up to the largest.

    A case whose deployment cannot hold one sequence raises `Error` (choose cases that fit).
    """
    m = _model(model)
    if not cases:
        raise Error("frontier_curves needs at least one (chip, deployment) case")
    return {label: serving.frontier(m, chip=chip, deployment=d, prompt_len=prompt_len, output_len=output_len,
                                    **efficiency) for label, (chip, d) in cases.items()}


def serving_frontier(curves: "Mapping[str, Sequence[inf.ServingEstimate]]", *,
                     latency_target_s: float | None = None, ax=None):
    """Output tokens/s per chip against per-token latency, one line per case, batch growing along it.

    The last point of each line is the largest batch that fits (labelled with that batch); a dashed
    vertical line marks `latency_target_s` if given. `curves` is `frontier_curves`' result.
    """
    if not curves or any(not v for v in curves.values()):
        raise Error("serving_frontier needs at least one non-empty curve")
    fig, ax = axes(ax, (8.0, 5.0))
    for i, (label, ests) in enumerate(curves.items()):
        xs = [1e3 * e.per_token_latency_seconds for e in ests]
        ys = [e.output_tokens_per_s_per_chip for e in ests]
        col = _COLORS[i % len(_COLORS)]
        ax.plot(xs, ys, marker="o", ms=3.5, lw=1.6, color=col, label=f"{label} (max batch {ests[-1].batch:,})")
        ax.plot(xs[-1], ys[-1], marker="s", ms=7, color=col, markeredgecolor="k", markeredgewidth=0.6)
    if latency_target_s is not None:
        require_positive(latency_target_s=latency_target_s)
        ax.axvline(1e3 * latency_target_s, color="k", ls="--", lw=1)
        ax.text(1e3 * latency_target_s, 0.98, f" target {1e3 * latency_target_s:g} ms", transform=ax.get_xaxis_transform(),
                va="top", ha="left", fontsize=9)
    ax.set_xscale("log")
    ax.set_yscale("log")
    from matplotlib.ticker import FuncFormatter, LogLocator

    plain = FuncFormatter(lambda v, _: f"{v:,.0f}" if v >= 1 else f"{v:g}")
    for axis in (ax.xaxis, ax.yaxis):
        axis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
        axis.set_major_formatter(plain)
        axis.set_minor_formatter(FuncFormatter(lambda v, _: ""))
    ax.set_xlabel("per-token latency (ms, log scale)")
    ax.set_ylabel("output tokens/s per chip (log scale)")
    some = next(iter(curves.values()))[0]
    ax.set_title(f"{some.model_name}: latency against throughput as the batch grows "
                 f"(prompt {some.prompt_len}, output {some.output_len})", fontsize=10)
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=9, loc="lower right")
    fig.tight_layout()
    return fig


# --- memory per chip ---------------------------------------------------------------------------

def memory_stack(model: "Transformer | str", *, chip: str, deployment: inf.Deployment,
                 points: "Sequence[tuple[int, int]]", title: str | None = None, ax=None):
    """Bytes per chip (weights, KV cache, workspace) stacked, one bar per (batch, context) point.

    A horizontal line marks the chip's HBM; a bar above it does not fit. The KV cache grows with
    batch x context, the weights do not move.
    """
    m = _model(model)
    if not points:
        raise Error("memory_stack needs at least one (batch, context) point")
    mems = [inf.memory_per_chip(m, chip=chip, deployment=deployment, batch=int(b), context=int(c))
            for b, c in points]
    fig, ax = axes(ax, (7.0, 4.4))
    seen: set[str] = set()
    for i, mem in enumerate(mems):
        bottom = 0.0
        for part, v in mem.parts().items():
            ax.bar(i, v / 1e9, bottom=bottom, color=_MEMORY_COLORS[part], width=0.7, edgecolor="white",
                   linewidth=0.5, label=part if part not in seen else None)
            seen.add(part)
            bottom += v / 1e9
        if not mem.fits:
            ax.text(i, bottom, "does\nnot fit", ha="center", va="bottom", fontsize=9, color="#c44e52")
    hbm = mems[0].hbm_bytes / 1e9
    ax.axhline(hbm, color="k", lw=1, ls="--")
    ax.text(0.98, hbm, f"HBM {hbm:g} GB", ha="right", va="bottom", fontsize=9, transform=ax.get_yaxis_transform())
    ax.set_xticks(range(len(points)), [f"B={b:,}\nC={c:,}" for b, c in points], fontsize=9)
    ax.set_ylabel("GB per chip")
    top = max(m_.bytes for m_ in mems) / 1e9
    ax.set_ylim(0, max(top, hbm) * 1.22)
    shown = hardware.chip(chip).display_name
    ax.set_title(title or f"{m.name} on {deployment.chips} {shown}, {deployment.label()}", fontsize=10)
    ax.legend(fontsize=9, loc="upper left")
    fig.tight_layout()
    return fig


# --- where a decode step goes ------------------------------------------------------------------

def _step_parts(e: inf.ServingEstimate) -> dict[str, float]:
    """The decode step as drawn: the larger of compute and HBM time (HBM split into weights and KV),
    then comm, then the fixed per-layer cost."""
    s = e.decode
    out: dict[str, float] = {}
    if s.memory_seconds >= s.compute_seconds:
        share = s.weight_bytes_read / s.bytes_read if s.bytes_read else 1.0
        out["weights (HBM)"] = s.memory_seconds * share
        out["KV cache (HBM)"] = s.memory_seconds * (1 - share)
    else:
        out["compute"] = s.compute_seconds
    out["TP AllReduce"] = s.tp_seconds
    out["EP AllToAll"] = s.ep_seconds
    out["PP send"] = s.pp_seconds
    out["fixed per-layer cost"] = s.overhead_seconds
    return out


def decode_breakdown(estimates: "Mapping[str, inf.ServingEstimate]", *, ax=None):
    """One horizontal bar per estimate: a decode step in ms, split into HBM reads (weights, KV cache) or
    compute (whichever is larger), then the collectives that wait on it.

    A black tick marks the hidden side of the roofline (compute under a memory-bound step, HBM
    under a compute-bound one). The bar ends with the per-token latency and tokens/s per chip.
    """
    if not estimates:
        raise Error("decode_breakdown needs at least one estimate")
    for k, e in estimates.items():
        if not isinstance(e, inf.ServingEstimate):
            raise Error(f"estimates[{k!r}] must be a ServingEstimate, got {type(e).__name__}")
    labels = list(estimates)
    fig, ax = axes(ax, (9.0, 0.62 * len(labels) + 1.9))
    seen: set[str] = set()
    longest = max(e.decode.seconds for e in estimates.values()) * 1e3
    for i, label in enumerate(labels):
        e = estimates[label]
        left = 0.0
        for part, sec in _step_parts(e).items():
            if sec <= 0:
                continue
            ax.barh(i, 1e3 * sec, left=left, color=_STEP_COLORS[part], edgecolor="white", linewidth=0.5,
                    height=0.65, label=part if part not in seen else None)
            seen.add(part)
            left += 1e3 * sec
        hidden = min(e.decode.compute_seconds, e.decode.memory_seconds) * 1e3
        ax.plot([hidden, hidden], [i - 0.36, i + 0.36], color="k", lw=1.6,
                label="hidden side of the roofline" if "hidden" not in seen else None)
        seen.add("hidden")
        ax.text(left + 0.01 * longest, i, f"{1e3 * e.per_token_latency_seconds:.3g} ms/token, "
                f"{e.output_tokens_per_s_per_chip:,.0f} tok/s/chip", va="center", fontsize=9)
    ax.set_yticks(range(len(labels)), labels, fontsize=9)
    ax.invert_yaxis()
    ax.set_xlim(0, longest * 2.0)  # room for the latency and rate beside the longest bar
    ax.set_xlabel("milliseconds per decode step")
    ax.set_title("Where a decode step's time goes", fontsize=11)
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=4, fontsize=9, frameon=False)
    fig.tight_layout()
    return fig


# --- cost per million tokens -------------------------------------------------------------------

def cost_rows(model: "Transformer | str", cases: "Mapping[str, tuple[str, inf.Deployment, int | str]]", *,
              prices: "Mapping[str, float]", prompt_len: int, output_len: int, prefix_hit_rate: float = 0.0,
              **efficiency) -> list[dict]:
    """Cost per million input and output tokens of each labelled (chip, deployment, batch) under
    continuous batching (`serving.continuous_batching`), at `prices[chip]` USD per chip-hour.

    Each row: label, chip, price, workload (the `serving.Workload`), usd_input, usd_output,
    decode_only_usd_output (decode alone, `ServingEstimate.usd_per_million_output_tokens`).
    """
    m = _model(model)
    if not cases:
        raise Error("cost_rows needs at least one case")
    rows = []
    for label, (chip, d, batch) in cases.items():
        if chip not in prices:
            raise Error(f"no price given for {chip!r}; pass prices={{{chip!r}: usd_per_chip_hour, ...}}")
        w = serving.continuous_batching(m, chip=chip, deployment=d, batch=batch, prompt_len=prompt_len,
                                        output_len=output_len, prefix_hit_rate=prefix_hit_rate, **efficiency)
        usd_in, usd_out = w.usd_per_million(prices[chip])
        rows.append(dict(label=label, chip=chip, price=prices[chip], workload=w, usd_input=usd_in,
                         usd_output=usd_out,
                         decode_only_usd_output=w.estimate.usd_per_million_output_tokens(prices[chip])))
    return rows


def serving_cost(rows: "Sequence[Mapping]", *, ax=None):
    """Grouped bars: USD per million input tokens and per million output tokens for each row of `cost_rows`.

    One row of two horizontal bars per deployment, its name and price on the left: the figure
    keeps the column's width however many deployments it compares, so no label runs into another.
    """
    if not rows:
        raise Error("serving_cost needs at least one row")
    fig, ax = axes(ax, (6.4, 0.75 * len(rows) + 1.6))
    height = 0.38
    top = max(max(r["usd_input"], r["usd_output"]) for r in rows)
    for i, r in enumerate(rows):
        ax.barh(i - height / 2, r["usd_input"], height, color="#8172b3", label="input tokens" if i == 0 else None)
        ax.barh(i + height / 2, r["usd_output"], height, color="#55a868", label="output tokens" if i == 0 else None)
        for dy, v in ((-height / 2, r["usd_input"]), (height / 2, r["usd_output"])):
            ax.text(v + 0.01 * top, i + dy, f"${v:.2f}", ha="left", va="center", fontsize=9)
    ax.set_yticks(range(len(rows)), [f"{r['label']}, ${r['price']:g}/chip-h" for r in rows], fontsize=9)
    ax.invert_yaxis()
    ax.set_xlabel("USD per million tokens")
    ax.set_xlim(0, top * 1.3)  # room for the value labels
    ax.set_title("Cost per million tokens under continuous batching", fontsize=10)
    ax.legend(fontsize=9, loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=2, frameon=False)
    fig.tight_layout()
    return fig


# --- predicted against reported ----------------------------------------------------------------

def serving_predictions(ids: "Sequence[str] | None" = None, **efficiency) -> list[dict]:
    """`inference.estimate` beside each published serving result (`serving_results.predict`).

    The figure compared is the one the source times, in seconds: the per-token latency of a decode,
    the prefill of the whole batch, the time to first token (the prefill), or a static batch end to
    end (its throughput turned into the time of the batch). A result without a tensor-parallel
    degree is modelled with tp = chips. Each row: id, source, model, chip, chips, layout, phase,
    metric, reported, predicted (seconds), error (predicted / reported - 1), bound, role ("fit" or
    "validation"), anchor (the chip family whose default efficiencies were fitted on this result,
    or ''), result, estimate.
    """
    from .. import serving_results

    chosen = (serving_results.published_serving() if ids is None
              else [serving_results.published_serving_result(i) for i in ids])
    rows = []
    for r in chosen:
        p = serving_results.predict(r, **efficiency)
        if p is None:
            continue
        e = p.estimate
        rows.append(dict(id=r.id, source=r.source, model=r.model_name, chip=r.chip, chips=r.chips,
                         layout=e.deployment.label(), phase=r.phase, metric=p.metric, reported=p.reported_seconds,
                         predicted=p.predicted_seconds, error=p.error, bound=p.bound, role=r.role,
                         anchor=r.family if r.role == "fit" else "", result=r, estimate=e))
    return rows


def serving_validation(rows: "Sequence[Mapping]", *, label_worst: int = 3, ax=None):
    """Predicted against reported times for published serving results, log-log, with y = x and x2 bands.

    Each row needs: id, metric (the quantity compared, e.g. 'per-token latency', 'prefill'),
    reported and predicted (seconds), error (predicted / reported - 1), and anchor (true for the
    results the default efficiencies were fitted on: drawn as stars). Markers tell the metric; the
    `label_worst` held-out results with the largest errors are named.
    """
    if not rows:
        raise Error("serving_validation needs at least one row")
    import numpy as np

    fig, ax = axes(ax, (6.8, 6.2))
    vals = [v for r in rows for v in (r["reported"], r["predicted"])]
    lo, hi = 0.5 * min(vals), 2.0 * max(vals)
    x = np.geomspace(lo, hi, 20)
    ax.fill_between(x, x / 2, x * 2, color="#eeeeee", label="within a factor of 2")
    ax.fill_between(x, x / 1.25, x * 1.25, color="#d9d9d9", label="within 25%")
    ax.plot(x, x, color="k", lw=0.8)
    markers = ["o", "s", "^", "D", "v", "P"]
    metrics = list(dict.fromkeys(r["metric"] for r in rows))
    for r in rows:
        mk = markers[metrics.index(r["metric"]) % len(markers)]
        star = bool(r.get("anchor"))
        ax.scatter(r["reported"], r["predicted"], marker="*" if star else mk, s=200 if star else 55,
                   color="#dd8452" if star else "#4c72b0", edgecolor="k" if star else "white", linewidth=0.6,
                   zorder=4 if star else 3)
    from matplotlib.lines import Line2D

    handles = [Line2D([], [], marker=markers[i % len(markers)], ls="", color="#4c72b0", label=f"{m} (held out)")
               for i, m in enumerate(metrics)]
    if any(r.get("anchor") for r in rows):
        handles.append(Line2D([], [], marker="*", ms=13, ls="", color="#dd8452", markeredgecolor="k",
                              label="efficiency fitted here"))
    worst = sorted((r for r in rows if not r.get("anchor")), key=lambda r: -abs(r["error"]))[:max(0, label_worst)]
    for k, r in enumerate(sorted(worst, key=lambda r: -r["predicted"])):
        ax.annotate(f"{r['id']} ({100 * r['error']:+.0f}%)", (r["reported"], r["predicted"]),
                    xytext=(0.30, 0.25 - 0.08 * k), textcoords="axes fraction", fontsize=9, ha="left", va="center",
                    arrowprops=dict(arrowstyle="-", color="#666666", lw=0.6, relpos=(0, 0.5)))
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(lo, hi)
    ax.set_ylim(lo, hi)
    ax.set_aspect("equal")
    ax.set_xlabel("reported (seconds)")
    ax.set_ylabel("predicted by scalebook (seconds)")
    ax.set_title("Serving model against published results", fontsize=10)
    from matplotlib.patches import Patch

    handles += [Patch(color="#d9d9d9", label="within 25%"), Patch(color="#eeeeee", label="within a factor of 2")]
    ax.legend(handles=handles, fontsize=9, loc="upper left")
    fig.tight_layout()
    return fig


def serving_errors(rows: "Sequence[Mapping]", *, ax=None):
    """One horizontal bar per published result: the model's error, predicted / reported - 1, in percent.

    Bars of the results the efficiencies were fitted on are orange, held-out ones blue; a grey band
    marks +-25%. `rows` is `serving_predictions`' result.
    """
    if not rows:
        raise Error("serving_errors needs at least one row")
    fig, ax = axes(ax, (9.5, 0.42 * len(rows) + 2.0))
    errs = [100 * r["error"] for r in rows]
    span = max(30.0, 1.4 * max(abs(e) for e in errs))  # room for the longest bar's label
    ax.axvspan(-25, 25, color="#eeeeee", zorder=0)
    ax.axvline(0, color="k", lw=0.8)
    for i, (r, e) in enumerate(zip(rows, errs)):
        ax.barh(i, e, color="#dd8452" if r.get("anchor") else "#4c72b0", height=0.6, zorder=2)
        if r.get("anchor"):  # a fit reproduces its anchor, so its bar is too short to see: mark it
            ax.plot(e, i, marker="*", ms=12, color="#dd8452", markeredgecolor="k", markeredgewidth=0.6, zorder=3)
        ax.text(e + (0.02 if e >= 0 else -0.02) * span, i, f"{e:+.0f}%", va="center",
                ha="left" if e >= 0 else "right", fontsize=9)
    ax.set_yticks(range(len(rows)), [r["id"] for r in rows], fontsize=9)
    ax.invert_yaxis()
    ax.set_xlim(-span, span)
    ax.set_xlabel("predicted / reported - 1 (%)")
    from matplotlib.patches import Patch

    ax.legend(handles=[Patch(color="#dd8452", label="efficiency fitted here"), Patch(color="#4c72b0", label="held out"),
                       Patch(color="#eeeeee", label="within 25%")], fontsize=9, loc="upper center",
              bbox_to_anchor=(0.5, -0.16), ncol=3, frameon=False)
    ax.set_title("Error on each published result", fontsize=10)
    fig.tight_layout()
    return fig
