"""Figures of chapter 7 (inference): the latency/throughput frontier, serving memory, the decode
step and its roofline, cost per token, speculative decoding.

Every drawing function imports matplotlib inside, takes an optional `ax` and returns the `Figure`.
The numbers come from `scalebook.inference` and `scalebook.serving`; nothing here types a hardware
figure. `decode_parts` computes what `decode_step_breakdown` draws, so a notebook can quote it.
"""
from __future__ import annotations

from ._axes import axes

from typing import Mapping, Sequence

from .. import inference as inf
from .. import serving, units
from ..errors import Error, require_positive
from ..hardware import chip as _chip
from ..models import Transformer, preset

__all__ = [
    "latency_throughput_frontier",
    "serving_memory_stack",
    "decode_parts",
    "decode_step_breakdown",
    "decode_roofline",
    "serving_cost_vs_batch",
    "speculative_speedup",
    "decode_measured",
]

_COLORS = ["#4c72b0", "#dd8452", "#55a868", "#c44e52", "#8172b3", "#937860", "#da8bc3", "#8c8c8c"]
_PART_COLORS = {"weights": "#4c72b0", "KV cache": "#dd8452", "workspace": "#8c8c8c", "TP AllReduce": "#c44e52",
                "EP AllToAll": "#8172b3", "PP send": "#937860",
                "fixed per-layer cost": "#da8bc3"}


def _model(m: "Transformer | str") -> Transformer:
    return preset(m) if isinstance(m, str) else m


def _plain_log_ticks(axis) -> None:
    """Label a log axis 2, 5, 10, 20... instead of 2 x 10^0."""
    from matplotlib.ticker import FuncFormatter, LogLocator

    fmt = FuncFormatter(lambda v, _: f"{v:g}")
    axis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    axis.set_major_formatter(fmt)
    axis.set_minor_formatter(FuncFormatter(lambda v, _: ""))


def _default_deployments() -> dict[str, inf.Deployment]:
    return {
        "TP8, bf16 weights": inf.Deployment(tp=8),
        "TP8, fp8 weights": inf.Deployment(tp=8, weights="fp8"),
        "TP8, fp8 weights + fp8 KV": inf.Deployment(tp=8, weights="fp8", kv="fp8"),
        "TP4, fp8 weights + fp8 KV": inf.Deployment(tp=4, weights="fp8", kv="fp8"),
    }


def latency_throughput_frontier(model: "Transformer | str" = "llama3-70b", chip: str = "h100",
                                deployments: "Mapping[str, inf.Deployment] | None" = None, *,
                                prompt_len: int = 2048, output_len: int = 512, label_batches: bool = True, ax=None):
    """Per-token latency (x) against output tokens/s per chip (y) as the batch grows, one line per
    deployment (`serving.frontier`: powers of two up to the largest batch that fits, marked with a
    square). Up and to the left is better; each line ends where the KV cache fills the memory."""
    m = _model(model)
    deployments = _default_deployments() if deployments is None else dict(deployments)
    if not deployments:
        raise Error("latency_throughput_frontier needs at least one deployment")
    fig, ax = axes(ax, (7.2, 4.6))
    for i, (label, d) in enumerate(deployments.items()):
        pts = serving.frontier(m, chip=chip, deployment=d, prompt_len=prompt_len, output_len=output_len)
        x = [1e3 * e.per_token_latency_seconds for e in pts]
        y = [e.output_tokens_per_s_per_chip for e in pts]
        color = _COLORS[i % len(_COLORS)]
        ax.plot(x, y, "o-", color=color, ms=4, label=f"{label} (max batch {pts[-1].batch})")
        ax.plot(x[-1:], y[-1:], "s", color=color, ms=8)
        if label_batches and i == 0:
            for e, xi, yi in zip(pts, x, y):
                if e.batch in (1, 8, 64) or e is pts[-1]:
                    ax.annotate(f"B={e.batch}", (xi, yi), textcoords="offset points", xytext=(7, -4), fontsize=9,
                                color=color)
    ax.set_xscale("log")
    ax.set_yscale("log")
    _plain_log_ticks(ax.xaxis)
    _plain_log_ticks(ax.yaxis)
    ax.set_xlabel("per-token latency (ms)")
    ax.set_ylabel("output tokens/s per chip")
    ax.set_title(f"{m.name} on {_chip(chip).display_name}: latency against throughput\n"
                 f"(prompt {prompt_len}, output {output_len} tokens)", fontsize=11)
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize=9, loc="lower right")
    fig.tight_layout()
    return fig


def serving_memory_stack(model: "Transformer | str" = "llama3-70b", chip: str = "h100",
                         deployment: "inf.Deployment | None" = None, *, vary: str = "batch",
                         values: "Sequence[int] | None" = None, batch: int = 64, context: int = 4096, ax=None):
    """Memory per chip (weights, KV cache, prefill workspace) stacked, against the batch at a fixed
    `context` (`vary="batch"`) or against the context at a fixed `batch` (`vary="context"`), with
    the chip's HBM as a dashed line (`inference.memory_per_chip`)."""
    m, d = _model(model), deployment or inf.Deployment(tp=8)
    if vary not in ("batch", "context"):
        raise Error(f"vary must be 'batch' or 'context', got {vary!r}")
    if values is None:
        values = (8, 32, 64, 128, 256, 512) if vary == "batch" else (1024, 4096, 8192, 16384, 32768, 65536)
    values = list(values)
    if not values:
        raise Error("serving_memory_stack needs at least one value")
    require_positive(batch=batch, context=context)
    fig, ax = axes(ax, (6.4, 4.2))
    mems = [inf.memory_per_chip(m, chip=chip, deployment=d, batch=v if vary == "batch" else batch,
                                context=context if vary == "batch" else v) for v in values]
    xs = range(len(values))
    bottom = [0.0] * len(values)
    for part in ("weights", "KV cache", "workspace"):
        h = [mem.parts()[part] / 1e9 for mem in mems]
        ax.bar(xs, h, bottom=bottom, color=_PART_COLORS[part], label=part, edgecolor="white", linewidth=0.5)
        bottom = [b + x for b, x in zip(bottom, h)]
    hbm = _chip(chip).hbm_bytes / 1e9
    ax.axhline(hbm, color="k", ls="--", lw=1)
    ax.text(-0.4, hbm * 0.98, f"HBM of one chip: {hbm:.0f} GB", ha="left", va="top", fontsize=9)
    ax.set_xticks(list(xs), [f"{v:,}" if vary == "batch" else f"{v // 1024}k" for v in values], fontsize=9)
    ax.set_xlabel("batch (sequences)" if vary == "batch" else "context (tokens)")
    ax.set_ylabel("GB per chip")
    fixed = f"context {context:,}" if vary == "batch" else f"batch {batch}"
    ax.set_title(f"{m.name}, {d.label()}\non {_chip(chip).display_name}, {fixed}", fontsize=10)
    ax.set_ylim(0, max(max(bottom), hbm) * 1.12)
    ax.legend(fontsize=9, loc="upper left")
    fig.tight_layout()
    return fig


def decode_parts(e: inf.ServingEstimate) -> dict[str, float]:
    """Seconds of one decode step split for drawing: weight bytes and KV bytes share the memory
    time in proportion, then the collectives; plus 'compute' (which overlaps the memory time)."""
    s = e.decode
    w_share = s.weight_bytes_read / s.bytes_read if s.bytes_read else 0.0
    return {"weights": s.memory_seconds * w_share, "KV cache": s.memory_seconds * (1 - w_share),
            "TP AllReduce": s.tp_seconds, "EP AllToAll": s.ep_seconds, "PP send": s.pp_seconds,
            "fixed per-layer cost": s.overhead_seconds, "compute": s.compute_seconds}


def decode_step_breakdown(model: "Transformer | str" = "llama3-70b", chip: str = "h100",
                          deployment: "inf.Deployment | None" = None, *,
                          batches: Sequence[int] = (1, 8, 32, 64, 128, 256, 512), prompt_len: int = 2048,
                          output_len: int = 512, ax=None):
    """One decode step by part as the batch grows: time to read the weights and the KV cache, and
    the collectives, stacked; the matmul time (hidden under the reads while it is shorter) as a
    line. Step = max(compute, weights + KV) + collectives + the fixed per-layer cost
    (`inference.estimate`)."""
    m, d = _model(model), deployment or inf.Deployment(tp=8)
    batches = list(batches)
    if not batches:
        raise Error("decode_step_breakdown needs at least one batch")
    ests = [inf.estimate(m, chip=chip, deployment=d, batch=b, prompt_len=prompt_len, output_len=output_len)
            for b in batches]
    parts = [decode_parts(e) for e in ests]
    fig, ax = axes(ax, (7, 4.4))
    xs = list(range(len(batches)))
    bottom = [0.0] * len(batches)
    for name in ("weights", "KV cache", "TP AllReduce", "EP AllToAll", "PP send", "fixed per-layer cost"):
        h = [1e3 * p[name] for p in parts]
        if not any(h):
            continue
        ax.bar(xs, h, bottom=bottom, color=_PART_COLORS[name], label=name, edgecolor="white", linewidth=0.5)
        bottom = [b + x for b, x in zip(bottom, h)]
    ax.plot(xs, [1e3 * p["compute"] for p in parts], "k^-", ms=6, label="matmul time (overlaps the reads)")
    for x, e in zip(xs, ests):
        if not e.fits:
            ax.text(x, bottom[x], "does not fit", ha="center", va="bottom", fontsize=9, color="#c44e52")
    ax.set_xticks(xs, [str(b) for b in batches], fontsize=9)
    ax.set_xlabel("batch (sequences decoding together)")
    ax.set_ylabel("ms per decode step")
    ax.set_title(f"{m.name}, {d.label()} on {_chip(chip).display_name}\n"
                 f"decode step at context {prompt_len + output_len // 2:,}", fontsize=10)
    ax.set_ylim(0, max(bottom + [1e3 * p["compute"] for p in parts]) * 1.15)
    ax.legend(fontsize=9, loc="upper left")
    fig.tight_layout()
    return fig


def decode_roofline(model: "Transformer | str" = "llama3-70b", chip: str = "h100",
                    deployment: "inf.Deployment | None" = None, *,
                    contexts: Sequence[int] = (1, 2048, 8192, 32768), max_batch: int = 4096, ax=None):
    """Arithmetic intensity of a decode step (FLOPs over bytes read per chip) against the batch,
    one line per context, with the chip's critical intensity (peak FLOP/s over HBM bandwidth) and
    the intensity of attention alone, 2N / (K b), which no batch changes."""
    import numpy as np

    m, d = _model(model), deployment or inf.Deployment(tp=8)
    contexts = list(contexts)
    if not contexts:
        raise Error("decode_roofline needs at least one context")
    require_positive(max_batch=max_batch)
    c = _chip(chip)
    fig, ax = axes(ax, (7, 4.4))
    bs = sorted({int(x) for x in np.geomspace(1, max_batch, 25)})
    for i, ctx in enumerate(contexts):
        ys = []
        for b in bs:
            s = inf.estimate(m, chip=c, deployment=d, batch=b, prompt_len=max(ctx, 1), output_len=1).decode
            ys.append(s.flops / s.bytes_read)
        label = "no context (weights only)" if ctx <= 1 else f"context {ctx:,}"
        ax.plot(bs, ys, "-", color=_COLORS[i % len(_COLORS)], lw=2, label=label)
    probe = inf.estimate(m, chip=c, deployment=d, batch=1, prompt_len=1, output_len=1)
    peak = probe.decode.flops / (probe.decode.compute_seconds * probe.compute_efficiency)  # the peak it used
    crit = peak / c.hbm_bytes_per_s
    ax.axhline(crit, color="k", ls="--", lw=1)
    ax.text(bs[0], crit * 1.08, f"critical intensity {crit:.0f} FLOP/B", fontsize=9, va="bottom")
    b_kv = units.dtype_bytes(d.kv)
    if not m.is_mla:
        att = 2 * m.heads / (m.kv_heads * b_kv)
        ax.axhline(att, color="#c44e52", ls=":", lw=1.5)
        ax.text(bs[-1], att * 1.08, f"attention alone: 2N/(Kb) = {att:.0f}", fontsize=9, ha="right",
                va="bottom", color="#c44e52")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("batch (sequences)")
    _plain_log_ticks(ax.yaxis)
    ax.set_ylabel("decode FLOPs per byte read")
    ax.set_title(f"Roofline of a decode step: {m.name}, {d.label()}\non {c.display_name}", fontsize=10)
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize=9, loc="upper left")
    fig.tight_layout()
    return fig


def serving_cost_vs_batch(model: "Transformer | str" = "llama3-8b",
                          setups: "Mapping[str, tuple[str, inf.Deployment, float]] | None" = None, *,
                          prompt_len: int = 2048, output_len: int = 512, ax=None):
    """USD per million output tokens (decode only) against the batch, one line per setup
    (label -> (chip, deployment, USD per chip-hour)), up to the largest batch that fits."""
    from ..training import price_per_chip_hour

    m = _model(model)
    if setups is None:
        setups = {"H100, bf16": ("h100", inf.Deployment(), price_per_chip_hour("h100")),
                  "H100, fp8": ("h100", inf.Deployment(weights="fp8"), price_per_chip_hour("h100")),
                  "TPU v5e TP4, bf16": ("tpu-v5e", inf.Deployment(tp=4), price_per_chip_hour("tpu-v5e")),
                  "TPU v5e, int8": ("tpu-v5e", inf.Deployment(weights="int8"), price_per_chip_hour("tpu-v5e"))}
    setups = dict(setups)
    if not setups:
        raise Error("serving_cost_vs_batch needs at least one setup")
    fig, ax = axes(ax, (7, 4.4))
    for i, (label, (chip, d, price)) in enumerate(setups.items()):
        require_positive(usd_per_chip_hour=price)
        pts = serving.frontier(m, chip=chip, deployment=d, prompt_len=prompt_len, output_len=output_len)
        color = _COLORS[i % len(_COLORS)]
        ax.plot([e.batch for e in pts], [e.usd_per_million_output_tokens(price) for e in pts], "o-", ms=4,
                color=color, label=f"{label} (${price:g}/chip-h)")
        ax.plot([pts[-1].batch], [pts[-1].usd_per_million_output_tokens(price)], "s", color=color, ms=8)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("batch (sequences)")
    _plain_log_ticks(ax.yaxis)
    ax.set_ylabel("USD per million output tokens")
    ax.set_title(f"{m.name}: decode cost against batch\n(prompt {prompt_len}, output {output_len}; "
                 "square = largest batch that fits)", fontsize=10)
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize=9)
    fig.tight_layout()
    return fig


def speculative_speedup(acceptance_rates: Sequence[float] = (0.5, 0.7, 0.8, 0.9), *, draft_cost_ratio: float = 0.05,
                        max_draft: int = 12, ax=None):
    """Expected speedup of speculative decoding against the number of draft tokens, one line per
    acceptance rate (`serving.speculative_decoding`); the best draft length is marked."""
    rates = list(acceptance_rates)
    if not rates:
        raise Error("speculative_speedup needs at least one acceptance rate")
    if isinstance(max_draft, bool) or not isinstance(max_draft, int) or max_draft < 1:
        raise Error(f"max_draft must be a positive integer, got {max_draft!r}")
    fig, ax = axes(ax, (6.4, 4.2))
    gs = list(range(1, max_draft + 1))
    for i, a in enumerate(rates):
        sp = [serving.speculative_decoding(acceptance_rate=a, draft_tokens=g, draft_cost_ratio=draft_cost_ratio).speedup
              for g in gs]
        color = _COLORS[i % len(_COLORS)]
        ax.plot(gs, sp, "o-", ms=4, color=color, label=f"acceptance {a:g}")
        k = max(range(len(gs)), key=lambda j: sp[j])
        ax.plot([gs[k]], [sp[k]], "*", ms=13, color=color)
    ax.axhline(1.0, color="k", lw=0.8, ls="--")
    ax.set_xlabel("draft tokens per round")
    ax.set_ylabel("speedup over plain decoding")
    ax.set_title(f"Speculative decoding, draft step = {draft_cost_ratio:g} of a target step", fontsize=10)
    ax.legend(fontsize=9)
    ax.grid(True, alpha=0.3)
    fig.tight_layout()
    return fig


def decode_measured(curve, *, ax=None):
    """Measured decode step times against the serving model's shape (a `jax_decode.DecodeCurve`).

    One line per context length against batch, as ratios to the smallest case: measured (solid,
    dots), the memory-only prediction (dotted) and the roofline with this device's matmul rate
    (dashed). Ratios compare shapes whatever the device's absolute speed.
    """
    points = list(curve.ratios())
    if not points:
        raise Error("decode_measured needs a curve with at least one point")
    fig, ax = axes(ax, (6.6, 4.3))
    contexts = sorted({p["context"] for p in points})
    for i, c in enumerate(contexts):
        row = sorted((p for p in points if p["context"] == c), key=lambda p: p["batch"])
        b = [p["batch"] for p in row]
        color = _COLORS[i % len(_COLORS)]
        ax.plot(b, [p["measured"] for p in row], "o-", color=color, label=f"measured, context {c:,}")
        ax.plot(b, [p["roofline"] for p in row], "--", color=color, alpha=0.8, label=f"roofline model, {c:,}")
        ax.plot(b, [p["memory"] for p in row], ":", color=color, alpha=0.8, label=f"memory-only model, {c:,}")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("batch (sequences)")
    ax.set_ylabel("step time / smallest case")
    ax.set_title(f"Decode step on {curve.device_kind}: measured and predicted shapes", fontsize=10)
    ax.legend(fontsize=8, ncol=1, frameon=False, loc="upper left")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    return fig
