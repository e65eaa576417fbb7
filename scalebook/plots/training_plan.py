"""Figures of chapter 6 (a training plan for LLaMA 3): plans, step breakdowns, batch sweeps, validation.

Every drawing function imports matplotlib inside, takes an optional `ax` and returns the `Figure`.
The numbers come from `scalebook.training`, `scalebook.planner` and `scalebook.runs`; nothing here
types a hardware figure. The helpers `plan_grid`, `batch_sweep` and `run_predictions` compute what
the figures draw, so a notebook can compute once, quote the numbers and draw them.
"""
from __future__ import annotations

import textwrap

from ._axes import axes

from typing import Mapping, Sequence

from .. import planner, runs, training
from .._data import load
from ..errors import Error, require_positive
from ..hardware import chip as _chip
from ..models import Transformer, preset

__all__ = [
    "plan_grid",
    "plan_map",
    "plan_breakdown",
    "batch_sweep",
    "mfu_vs_batch",
    "run_predictions",
    "validation_scatter",
]

# Colours of the step parts (TrainingEstimate.breakdown keys) and of the layout families.
_PART_COLORS = {
    "compute": "#4c72b0", "matmuls": "#4c72b0", "memory-bound ops": "#a6cee3", "tp (exposed)": "#dd8452", "fsdp (exposed)": "#c44e52", "dp (exposed)": "#8172b3",
    "pp (exposed)": "#937860", "cp (exposed)": "#da8bc3", "ep (exposed)": "#ccb974", "pipeline bubble": "#8c8c8c",
    "optimizer update": "#55a868",
}
_FAMILY_COLORS = ["#c6dbef", "#fdd0a2", "#c7e9c0", "#dadaeb", "#fcbba1", "#d9d9d9", "#fde0ef", "#e5f5e0"]
_SOURCE_MARKERS = {"chowdhery2022palm": ("s", "PaLM (TPU v4)"), "narayanan2021megatron": ("o", "Megatron-LM (A100)"),
                   "smith2022mtnlg": ("^", "MT-NLG (A100)"), "bigscience2022bloom": ("D", "BLOOM (A100)"),
                   "llama3herd2024": ("v", "Llama 3 (H100)"),
                   "korthikanti2022activation": ("<", "Megatron-LM, sequence parallel (A100)"),
                   "maxtext2023configs": ("P", "MaxText (TPU v5e, v5p)"),
                   "torchtitan2024performance": (">", "TorchTitan (A100)"),
                   "mosaicml2024llmfoundry": ("X", "MosaicML LLM Foundry (A100, H100)"),
                   "nvidia2025megatronbridge": ("h", "Megatron Bridge (H100, B200)"),
                   "nvidia2024dgxcnemotron": ("p", "Nemotron-4 on DGX Cloud (H100)"),
                   "jiang2024megascale": ("d", "MegaScale (A100)")}


def _model(m: "Transformer | str") -> Transformer:
    return preset(m) if isinstance(m, str) else m


def _degrees(s: training.Strategy) -> str:
    """'FSDP512 x TP8': the parallel degrees of a strategy, without its options."""
    parts = [f"{k.upper()}{getattr(s, k)}" for k in ("dp", "fsdp", "tp", "pp", "cp", "ep") if getattr(s, k) > 1]
    return " x ".join(parts) or "1 chip"


def _family(s: training.Strategy) -> str:
    """The kinds of parallelism a strategy uses: 'data', 'data + TP', 'data + TP + PP'..."""
    model = [k.upper() for k in ("tp", "pp", "cp", "ep") if getattr(s, k) > 1]
    data = s.dp > 1 or s.fsdp > 1
    return " + ".join((["data"] if data else []) + model) or "one chip"


# --- a plan for every (model, chip count) ------------------------------------------------------

def plan_grid(models: Sequence["Transformer | str"] = ("llama3-8b", "llama3-70b", "llama3-405b"), *,
              chip: str = "h100", chip_counts: Sequence[int] = (1024, 4096, 16384), batch_tokens: float = 2**24,
              seq_len: int = 8192, remat: "tuple[str, ...]" = ("none", "selective")
              ) -> "dict[tuple[str, int], training.TrainingEstimate | None]":
    """The fastest strategy `planner.plan` finds for each (model name, chip count), or None if none fits."""
    ms = [_model(m) for m in models]
    if not ms or not chip_counts:
        raise Error("plan_grid needs at least one model and one chip count")
    out: dict = {}
    for m in ms:
        for n in chip_counts:
            try:
                out[(m.name, int(n))] = planner.plan(m, chip=chip, chips=int(n), batch_tokens=batch_tokens,
                                                     seq_len=seq_len, top=1, remat=remat).best[0]
            except Error:
                out[(m.name, int(n))] = None
    return out


def plan_map(grid: "Mapping[tuple[str, int], training.TrainingEstimate | None] | None" = None, *,
             tokens: float = 15e12, ax=None, **grid_kwargs):
    """The best layout for each model (rows) and chip count (columns), coloured by the kinds of parallelism.

    Each cell names the degrees of the plan's fastest strategy, its MFU and the days to train on
    `tokens` tokens; a grey cell means no strategy fits in memory. `grid` is `plan_grid`'s result
    (computed with `grid_kwargs` when not given).
    """
    require_positive(tokens=tokens)
    if grid is None:
        grid = plan_grid(**grid_kwargs)
    if not grid:
        raise Error("plan_map needs a non-empty grid")
    names = list(dict.fromkeys(k[0] for k in grid))
    counts = sorted({k[1] for k in grid})
    families: list[str] = []
    for e in grid.values():
        if e is not None and _family(e.strategy) not in families:
            families.append(_family(e.strategy))
    color = {f: _FAMILY_COLORS[i % len(_FAMILY_COLORS)] for i, f in enumerate(families)}
    fig, ax = axes(ax, (3.0 * len(counts) + 1.6, 1.25 * len(names) + 1.6))
    from matplotlib.patches import Patch, Rectangle

    for r, name in enumerate(names):
        for c, n in enumerate(counts):
            e = grid.get((name, n))
            face = "#eeeeee" if e is None else color[_family(e.strategy)]
            ax.add_patch(Rectangle((c, r), 1, 1, facecolor=face, edgecolor="white", linewidth=2))
            if e is None:
                text = "nothing fits"
            else:
                opts = [f"mb {e.microbatch_seqs}"]
                if e.strategy.remat != "none":
                    opts.append(e.strategy.remat)
                if e.strategy.virtual_stages > 1:
                    opts.append(f"v{e.strategy.virtual_stages}")
                parts = _degrees(e.strategy).split(" x ")
                degrees = " x ".join(parts) if len(parts) <= 3 else (
                    " x ".join(parts[:3]) + " x\n" + " x ".join(parts[3:]))  # fits its cell
                text = (f"{degrees}\n{', '.join(opts)}\n"
                        f"MFU {100 * e.mfu:.0f}%, {e.days(tokens):.3g} days")
            ax.text(c + 0.5, r + 0.5, text, ha="center", va="center", fontsize=9)
    ax.set_xlim(0, len(counts))
    ax.set_ylim(len(names), 0)
    ax.set_xticks([c + 0.5 for c in range(len(counts))], [f"{n:,} chips" for n in counts], fontsize=10)
    ax.set_yticks([r + 0.5 for r in range(len(names))], names, fontsize=10)
    ax.tick_params(length=0)
    for side in ax.spines.values():
        side.set_visible(False)
    some = next(e for e in grid.values() if e is not None) if any(e is not None for e in grid.values()) else None
    title = "Fastest layout found by plan()"
    if some is not None:
        title += f" on {some.chip.display_name}, batch {some.batch_tokens / 2**20:g}M tokens of {some.seq_len}"
    ax.set_title(title, fontsize=11)
    handles = [Patch(facecolor=color[f], label=f) for f in families]
    if handles:
        ax.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, -0.04), ncol=min(4, len(handles)),
                  fontsize=9, frameon=False, title="parallelism used", title_fontsize=9)
    fig.tight_layout()
    return fig


# --- where a step's time goes ------------------------------------------------------------------

def plan_breakdown(estimates: "Mapping[str, training.TrainingEstimate]", *, ax=None):
    """One horizontal bar per estimate: seconds per step split into compute, exposed collectives, bubble, optimizer.

    The bar ends with the estimate's MFU. Labels are the mapping's keys.
    """
    if not estimates:
        raise Error("plan_breakdown needs at least one estimate")
    for k, e in estimates.items():
        if not isinstance(e, training.TrainingEstimate):
            raise Error(f"estimates[{k!r}] must be a TrainingEstimate, got {type(e).__name__}")
    labels = list(estimates)
    shown = [textwrap.fill(k, 30) for k in labels]  # a long plan label would squeeze the bars to nothing
    lines = sum(s.count("\n") + 1 for s in shown)
    fig, ax = axes(ax, (6.4, 0.35 * lines + 0.25 * len(labels) + 2.3))  # the column's width: shown at its own size
    seen: set[str] = set()
    longest = max(e.step_seconds for e in estimates.values())
    for i, label in enumerate(labels):
        e = estimates[label]
        left = 0.0
        for part, sec in e.breakdown().items():
            ax.barh(i, sec, left=left, color=_PART_COLORS.get(part, "#999999"), edgecolor="white", linewidth=0.5,
                    label=part if part not in seen else None)
            seen.add(part)
            left += sec
        ax.text(left + 0.01 * longest, i, f"MFU {100 * e.mfu:.0f}%", va="center", fontsize=9)
    ax.set_yticks(range(len(labels)), shown, fontsize=9)
    ax.invert_yaxis()
    ax.set_xlim(0, longest * 1.5)  # room for the MFU beside the longest bar
    from matplotlib.ticker import MaxNLocator

    ax.xaxis.set_major_locator(MaxNLocator(5))  # few enough ticks that their labels never touch
    ax.set_title("Where a training step's time goes (seconds per step)", fontsize=11)
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.1), ncol=2, fontsize=9, frameon=False)
    fig.tight_layout()
    return fig


# --- MFU against the batch ---------------------------------------------------------------------

def batch_sweep(model: "Transformer | str" = "llama3-70b", *, chip: str = "h100", chips: int = 4096,
                batch_tokens: Sequence[float] = (2**20, 2**21, 2**22, 2**23, 2**24), seq_len: int = 8192,
                strategies: "Mapping[str, training.Strategy] | None" = None,
                remat: "tuple[str, ...]" = ("none", "selective"),
                known: "Mapping[float, training.TrainingEstimate] | None" = None) -> dict:
    """MFU of fixed strategies and of the plan's best at each global batch, on `chips` chips.

    `known` maps a batch to a best estimate already computed (e.g. a `planner.plan` the notebook
    shows), so that batch is not planned again.

    Returns {'model', 'chip', 'chips', 'seq_len', 'batches', 'best': [estimate or None per batch],
    'fixed': {label: [estimate or None per batch]}, 'critical': {label: tokens per chip}}: a fixed
    strategy is None where the batch does not split over its replicas or it does not fit.
    """
    m = _model(model)
    if not batch_tokens:
        raise Error("batch_sweep needs at least one batch size")
    strategies = dict(strategies or {})
    best, fixed = [], {k: [] for k in strategies}
    known = dict(known or {})
    for b in batch_tokens:
        if b in known:
            best.append(known[b])
        else:
            try:
                best.append(planner.plan(m, chip=chip, chips=chips, batch_tokens=b, seq_len=seq_len, top=1,
                                         remat=remat).best[0])
            except Error:
                best.append(None)
        for label, s in strategies.items():
            try:
                e = training.estimate(m, strategy=s, seq_len=seq_len, batch_tokens=b, chip=chip, chips=chips)
                fixed[label].append(e if e.fits else None)
            except Error:
                fixed[label].append(None)
    critical = {label: training.critical_batch_per_chip(m, strategy=s.replace(microbatch=None), seq_len=seq_len,
                                                        chip=chip, chips=chips) for label, s in strategies.items()}
    return dict(model=m.name, chip=chip, chips=chips, seq_len=seq_len, batches=list(batch_tokens), best=best,
                fixed=fixed, critical=critical)


def mfu_vs_batch(sweep: "Mapping | None" = None, *, ax=None, **sweep_kwargs):
    """MFU against tokens per chip for the plan's best strategy and for fixed strategies.

    A dashed vertical line marks each fixed strategy's critical batch per chip
    (`training.critical_batch_per_chip`): below it, its FSDP or DP traffic no longer hides behind
    compute. `sweep` is `batch_sweep`'s result (computed with `sweep_kwargs` when not given).
    """
    if sweep is None:
        sweep = batch_sweep(**sweep_kwargs)
    fig, ax = axes(ax, (7, 4.2))
    per_chip = [b / sweep["chips"] for b in sweep["batches"]]
    colors = ["#dd8452", "#55a868", "#8172b3", "#c44e52", "#937860"]

    def line(ests, label, color, marker, lw):
        xs = [x for x, e in zip(per_chip, ests) if e is not None]
        ys = [100 * e.mfu for e in ests if e is not None]
        if xs:
            ax.plot(xs, ys, marker=marker, color=color, lw=lw, label=label)

    line(sweep["best"], "best strategy from plan()", "#4c72b0", "o", 2.2)
    for i, (label, ests) in enumerate(sweep["fixed"].items()):
        col = colors[i % len(colors)]
        crit = sweep["critical"].get(label, 0.0)
        line(ests, f"{label} (critical batch {crit:,.0f}, dashed)" if crit > 0 else label, col, "s", 1.4)
        if crit > 0:
            ax.axvline(crit, color=col, ls="--", lw=1)
    ax.set_xscale("log", base=2)
    ax.set_xticks(per_chip, [f"{x:,.0f}" for x in per_chip])
    ax.minorticks_off()
    ax.set_xlabel("tokens per chip per step (global batch / chips)")
    ax.set_ylabel("MFU (%)")
    mfus = [100 * e.mfu for ests in [sweep["best"], *sweep["fixed"].values()] for e in ests if e is not None]
    ax.set_ylim(0, max([75.0] + [m + 5 for m in mfus]))
    ax.set_title(f"{sweep['model']} on {sweep['chips']:,} {sweep['chip']}, sequences of {sweep['seq_len']}",
                 fontsize=10)
    ax.legend(fontsize=9, loc="lower right")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    return fig


# --- predicted against reported ----------------------------------------------------------------

def _anchors() -> dict[str, str]:
    from ..training import fit_runs
    return {r.id: fam for fam in ("tpu", "gpu") for r in fit_runs(fam)}


def run_predictions(assume: "Mapping[str, Mapping[str, object]] | None" = None,
                    ids: "Sequence[str] | None" = None,
                    efficiency: "Mapping[str, float] | None" = None) -> list[dict]:
    """The step model's prediction for each published run beside what the run reported.

    The comparison is in training tokens per second per chip: `reported` is
    `PublishedRun.reported_tokens_per_s_per_chip()` (None where the paper gives nothing that
    converts, as for BLOOM, whose TFLOP/s count is not stated), `basis` names the figure it came
    from, `predicted` is the estimate's `tokens_per_s_per_chip` and `error` = predicted / reported
    - 1 (None without a reported figure).

    For readers, each row also carries the paper's own utilisation: `util_metric` is 'MFU' if it
    gives one, else 'HFU', else its TFLOP/s per chip over the chip's peak (HFU when those count
    recomputation, or when unknown and the layout recomputes whole layers; MFU otherwise);
    `util_reported`, `util_predicted` (the estimate's MFU or HFU) and `util_error`. These depend on
    how each paper counts FLOPs, so they are not what the errors are measured on.

    `assume` maps a run id to Strategy fields the paper leaves unknown (e.g.
    {'virtual_stages': 4}); they replace the run's own. `efficiency` maps a chip family ('tpu',
    'gpu') to a matmul efficiency to use instead of the fitted default. Every row also has id,
    source, model, chip, chips, layout, assumed, fits, anchor (the chip family whose default
    efficiency was fitted on this run, or '') and estimate.
    """
    assume = dict(assume or {})
    anchors = _anchors()
    chosen = runs.published_runs() if ids is None else [runs.published_run(i) for i in ids]
    rows = []
    for r in chosen:
        kw = r.estimate_kwargs()
        sk = {**kw.pop("strategy_kwargs"), **dict(assume.get(r.id, {}))}
        s = training.Strategy(**sk)
        fam = "tpu" if _chip(r.chip).is_tpu else "gpu"
        e = training.estimate(r.model_config(), strategy=s, efficiency=dict(efficiency or {}).get(fam), **kw)
        if r.reported_mfu:
            util_metric, util_reported = "MFU", r.reported_mfu
        elif r.reported_hfu:
            util_metric, util_reported = "HFU", r.reported_hfu
        elif r.reported_flops_per_s_per_chip:
            counts_remat = r.reported_flops_include_recompute
            if counts_remat is None:
                counts_remat = s.remat == "full"
            util_metric = "HFU" if counts_remat else "MFU"
            util_reported = r.reported_flops_per_s_per_chip / e.peak_flops_per_s
        else:
            util_metric, util_reported = None, None
        util_predicted = None if util_metric is None else (e.hfu if util_metric == "HFU" else e.mfu)
        reported = r.reported_tokens_per_s_per_chip()
        if reported is None and util_reported is None:
            continue
        predicted = e.tokens_per_s_per_chip
        rows.append(dict(
            id=r.id, source=r.source, model=r.model_name, chip=r.chip, chips=r.chips, layout=s.label(),
            assumed=dict(assume.get(r.id, {})), reported=reported, basis=r.throughput_basis() if reported else None,
            predicted=predicted, error=None if reported is None else predicted / reported - 1,
            util_metric=util_metric, util_reported=util_reported, util_predicted=util_predicted,
            util_error=None if util_reported is None else util_predicted / util_reported - 1,
            fits=e.fits, anchor=anchors.get(r.id, ""), estimate=e))
    return rows


def validation_scatter(rows: "Sequence[Mapping] | None" = None, *, label_worst: int = 3, ax=None):
    """Error of the predicted tokens/s per chip against model size, one point per published run.

    y is predicted / reported - 1 in percent, x the model's published parameter count (log);
    grey bands mark +-10% and +-25%. Markers tell the source; the runs the default efficiencies
    were fitted on are drawn as stars; the `label_worst` held-out runs with the largest errors are
    numbered beside their points and named in the legend. Rows without a reported throughput (BLOOM) are left out. `rows` is `run_predictions`'
    result.
    """
    if rows is None:
        rows = run_predictions()
    rows = [r for r in rows if r.get("error") is not None]
    if not rows:
        raise Error("validation_scatter needs at least one row with a reported throughput")

    def size(r):
        return runs.published_run(r["id"]).published_params

    fig, ax = axes(ax, (6.8, 5.0))
    sizes = [size(r) for r in rows]
    lo, hi = min(sizes) / 1.8, max(sizes) * 1.8
    ax.axhspan(-25, 25, color="#eeeeee", label="within 25%")
    ax.axhspan(-10, 10, color="#d9d9d9", label="within 10%")
    ax.axhline(0, color="k", lw=0.8)
    seen = set()
    for r in rows:
        marker, name = _SOURCE_MARKERS.get(r["source"], ("x", r["source"]))
        if r["anchor"]:
            continue
        ax.scatter(size(r), 100 * r["error"], marker=marker, s=52, color="#4c72b0", edgecolor="white",
                   linewidth=0.6, label=name if name not in seen else None, zorder=3)
        seen.add(name)
    for r in rows:
        if r["anchor"]:
            ax.scatter(size(r), 100 * r["error"], marker="*", s=260, facecolor="none", edgecolor="#dd8452",
                       linewidth=1.6, zorder=4, label="fit run" if "anchor" not in seen else None)
            seen.add("anchor")
    worst = sorted((r for r in rows if not r["anchor"]), key=lambda r: -abs(r["error"]))[:max(0, label_worst)]
    errs = [100 * r["error"] for r in rows]
    top = max(35.0, max(errs) + 12)
    bottom = min(-30.0, min(errs) - 8)
    # The worst runs get a number beside their point and their name in the legend, so no long
    # label crosses the frame, the title or another label however far off the run is.
    for k, r in enumerate(sorted(worst, key=lambda r: -abs(r["error"])), start=1):
        ax.annotate(str(k), (size(r), 100 * r["error"]), xytext=(7, 0), textcoords="offset points",
                    fontsize=9, fontweight="bold", ha="left", va="center")
        ax.plot([], [], " ", label=f"{k}: {r['id']} ({100 * r['error']:+.0f}%)")
    ax.set_xscale("log")
    ax.set_xlim(lo, hi)
    ax.set_ylim(bottom, top)
    ax.set_xlabel("model size (published parameter count)")
    ax.set_ylabel("predicted / reported - 1,\ntokens/s per chip (%)")
    ax.set_title("Step model against published runs: error in training throughput", fontsize=10)
    ax.legend(fontsize=9, loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=2, frameon=False)
    ax.grid(alpha=0.3, axis="x")
    fig.tight_layout()
    return fig
