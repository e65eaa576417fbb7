"""Figures of chapter 4's attention and MoE rooflines: prefill vs decode intensity, FlashAttention's
forward and backward, and the batch an MoE layer needs.

Every function draws with matplotlib (imported inside the function), takes an optional `ax`
and returns the `Figure`. Every number comes from `scalebook.transformer`, `scalebook.roofline`
and the presets of `scalebook.models`; nothing is typed here.
"""
from __future__ import annotations

from typing import Sequence

from .. import hardware, roofline
from .. import transformer as tr
from ..errors import require_positive
from ..models import Transformer, preset
from ._axes import axes

__all__ = ["attention_intensity_curves", "flash_attention_passes", "moe_batch_bars"]


def _model(m: "Transformer | str") -> Transformer:
    return preset(m) if isinstance(m, str) else m


def attention_intensity_curves(model: "Transformer | str" = "llama3-70b",
                               chips: Sequence[str] = ("tpu-v5e", "h100", "b200"),
                               batches: Sequence[int] = (1, 64), max_seq_len: int = 131072, ax=None):
    """Intensity of one layer's attention against context length: prefill rises, decode stays flat.

    Prefill (causal) for one sequence; decode for each of `batches` (the curves coincide: the
    batch does not change decode's intensity). Dashed lines: each chip's bf16 critical intensity.
    """
    require_positive(max_seq_len=max_seq_len)
    m = _model(model)
    fig, ax = axes(ax, (7, 4.2))
    ts = [2 ** k for k in range(4, max_seq_len.bit_length()) if 2 ** k <= max_seq_len]
    pre = [tr.attention_intensity(m, seq_len=t, phase="prefill").intensity_flops_per_byte for t in ts]
    ax.plot(ts, pre, color="#4c72b0", lw=2, label="prefill (causal), any batch")
    styles = ("-", ":", "--")
    for i, b in enumerate(batches):
        dec = [tr.attention_intensity(m, seq_len=t, batch=b, phase="decode").intensity_flops_per_byte for t in ts]
        ax.plot(ts, dec, color="#c44e52", lw=2 + (len(batches) - 1 - i), ls=styles[i % len(styles)],
                label=f"decode, batch {b}")
    for i, c in enumerate(chips):
        crit = roofline.critical_intensity(c)
        ax.axhline(crit, color="#777777", ls="--", lw=0.8)
        ax.text(ts[min(len(ts) - 1, 3 * i)], crit * 1.08, f"{hardware.chip(c).display_name.split(' (')[0]} critical", fontsize=7,
                color="#555555")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("context length T (tokens)")
    ax.set_ylabel("arithmetic intensity (FLOP/B)")
    ax.set_title(f"Attention in {m.name}: prefill climbs with T, decode stays at N/K = {m.heads // m.kv_heads}",
                 fontsize=10)
    ax.legend(fontsize=8, loc="center right")
    ax.grid(alpha=0.3, which="major")
    return fig


def flash_attention_passes(model: "Transformer | str" = "llama3-8b", *, seq_len: int = 8192, batch: int = 1,
                           ax=None):
    """FlashAttention's matmul FLOPs and least HBM bytes, forward and backward, for one layer.

    Left: FLOPs stacked by matmul (the recomputed Q K^T marked). Right: HBM bytes of each pass
    beside the probability matrix P a non-fused kernel would keep .
    """
    import matplotlib.pyplot as plt

    m = _model(model)
    c = tr.flash_attention_cost(m, batch=batch, seq_len=seq_len)
    one = c.recompute_flops
    if ax is None:
        fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(9, 4))
    else:
        fig, ax1, ax2 = ax.figure, ax, ax.twinx()
    stacks = {"forward": [("Q K^T", one, "#4c72b0"), ("P V", one, "#55a868")],
              "backward": [("Q K^T\n(recomputed)", one, "#8da0cb"), ("dV = P^T dO", one, "#55a868"),
                           ("dP = dO V^T", one, "#dd8452"), ("dQ = dS K", one, "#c44e52"),
                           ("dK = dS^T Q", one, "#937860")]}
    for x, (name, parts) in enumerate(stacks.items()):
        bottom = 0.0
        for label, v, color in parts:
            ax1.bar(x, v / 1e12, bottom=bottom / 1e12, color=color, edgecolor="white", width=0.6)
            ax1.text(x, (bottom + v / 2) / 1e12, label, ha="center", va="center", fontsize=7, color="white")
            bottom += v
    ax1.set_xticks([0, 1])
    ax1.set_xticklabels(list(stacks))
    ax1.set_ylabel("matmul TFLOPs per layer")
    ax1.set_title(f"FLOPs: backward = {c.backward_over_forward:.1f} x forward", fontsize=10)
    names = ["forward", "backward", "P kept (non-fused)"]
    values = [c.forward_hbm_bytes, c.backward_hbm_bytes, c.probabilities_bytes]
    ax2.bar(range(3), [v / 1e6 for v in values], color=["#4c72b0", "#dd8452", "#8c8c8c"], width=0.6)
    for i, v in enumerate(values):
        ax2.text(i, v / 1e6 * 1.1, f"{v / 1e6:,.0f} MB", ha="center", fontsize=8)
    ax2.set_ylim(0, max(values) / 1e6 * 1.3)  # room for the value labels under the title
    ax2.set_xticks(range(3))
    ax2.set_xticklabels(names, fontsize=8)
    ax2.set_ylabel("HBM bytes per layer (MB)")
    ax2.set_title("Bytes: no T x T tensor leaves the chip", fontsize=10)
    fig.suptitle(f"FlashAttention in {m.name}, {batch} x {seq_len} tokens, causal", fontsize=10)
    fig.tight_layout()
    return fig


def moe_batch_bars(models: Sequence["Transformer | str"] = ("mixtral-8x7b", "deepseek-v3"),
                   chips: Sequence[str] = ("tpu-v5e", "tpu-v6e", "h100", "b200"), ax=None):
    """Tokens per chip an MoE layer needs before its experts are compute-bound, per model and chip.

    B* = critical batch x E / k (even routing); the dense critical batch is drawn for scale.
    """
    fig, ax = axes(ax, (8, 4))
    ms = [_model(m) for m in models]
    groups = [("dense", None)] + [(m.name, m) for m in ms]
    width = 0.8 / len(groups)
    colors = ("#8c8c8c", "#4c72b0", "#c44e52", "#55a868", "#dd8452")
    for g, (label, m) in enumerate(groups):
        xs, ys = [], []
        for i, c in enumerate(chips):
            y = (roofline.critical_batch(c) if m is None else
                 roofline.moe_critical_batch(c, routed_experts=m.routed_experts,
                                             experts_per_token=m.experts_per_token))
            xs.append(i + (g - (len(groups) - 1) / 2) * width)
            ys.append(y)
        ax.bar(xs, ys, width, color=colors[g % len(colors)],
               label=label if m is None else f"{label} (E={m.routed_experts}, k={m.experts_per_token})")
        for x, y in zip(xs, ys):
            ax.text(x, y * 1.1, f"{y:,.0f}", ha="center", rotation=90, fontsize=7, va="bottom")
    ax.set_yscale("log")
    ax.set_xticks(range(len(chips)))
    ax.set_xticklabels([hardware.chip(c).display_name.split(" (")[0] for c in chips])
    ax.set_ylabel("tokens per chip to be compute-bound")
    ax.set_title("An MoE layer needs E / k times the dense critical batch", fontsize=10)
    ax.legend(fontsize=8, loc="upper left")
    ax.set_ylim(top=ax.get_ylim()[1] * 4)
    ax.grid(axis="y", alpha=0.3)
    return fig
