"""Figures of chapter 4 (Transformer arithmetic): parameters, FLOPs, memory and KV cache.

Every function draws with matplotlib (imported inside the function), takes an optional `ax`
and returns the `Figure`. Every number comes from `scalebook.transformer` and the presets of
`scalebook.models`; nothing is typed here.
"""
from __future__ import annotations

from ._axes import axes

from typing import Sequence

from .. import transformer as tr
from ..errors import Error, require_positive
from ..models import Transformer, preset

__all__ = [
    "param_breakdown",
    "attention_crossover",
    "flops_by_part",
    "training_memory_stack",
    "kv_cache_per_token",
]

_PART_COLORS = {
    "embedding": "#8c8c8c", "unembedding": "#bdbdbd", "attention": "#4c72b0", "MLP": "#dd8452",
    "routed experts": "#c44e52", "shared experts": "#937860", "router": "#da8bc3", "norms": "#55a868",
}


def _ax(ax, figsize=(7, 4)):
    return axes(ax, figsize)


def _model(m: "Transformer | str") -> Transformer:
    return preset(m) if isinstance(m, str) else m


def param_breakdown(models: Sequence["Transformer | str"] = ("gpt3-175b", "llama3-8b", "llama3-70b",
                                                              "llama3-405b", "gemma2-9b", "mixtral-8x7b",
                                                              "deepseek-v3"), ax=None):
    """Share of each model's parameters by part (embedding, attention, MLP, experts...).

    One horizontal bar per model, split by `transformer.params(m).parts()`; the label gives the
    total and, for a mixture of experts, the parameters active per token.
    """
    ms = [_model(m) for m in models]
    if not ms:
        raise Error("param_breakdown needs at least one model")
    fig, ax = _ax(ax, (8, 0.55 * len(ms) + 1.6))
    seen = set()
    labels = []
    for i, m in enumerate(ms):
        p = tr.params(m)
        total = p.total_params
        left = 0.0
        for part, n in p.parts().items():
            share = n / total
            ax.barh(i, share, left=left, color=_PART_COLORS.get(part, "#999999"),
                    label=part if part not in seen else None, edgecolor="white", linewidth=0.5)
            seen.add(part)
            if share > 0.07:
                ax.text(left + share / 2, i, f"{100 * share:.0f}%", ha="center", va="center",
                        fontsize=8, color="white")
            left += share
        label = f"{m.name}\n{tr.format_count(total)}"
        if p.active_params != total:
            label += f" ({tr.format_count(p.active_params)} active)"
        labels.append(label)
    ax.set_yticks(range(len(ms)), labels, fontsize=8)
    ax.invert_yaxis()
    ax.set_xlim(0, 1)
    ax.set_xlabel("share of all parameters")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.18), ncol=4, fontsize=8, frameon=False)
    ax.set_title("Where the parameters are")
    fig.tight_layout()
    return fig


def attention_crossover(models: "dict[str, Transformer | str] | None" = None, *, causal: bool = False,
                        max_ratio: float = 64.0, ax=None):
    """Attention-score FLOPs over all other FLOPs of one layer, against T / D.

    The ratio is linear in T; each line crosses 1 at `transformer.attention_crossover_seq_len`, marked with a dot.
    Default configs: a textbook MHA layer with a gated MLP of F = 4 D (crosses at 8 D), the same
    with GQA (N / 8 kv heads), a plain MLP of F = 4 D, and LLaMA-3 70B.
    """
    require_positive(max_ratio=max_ratio)
    import numpy as np

    if models is None:
        base = Transformer(name="MHA, gated F=4D", layers=1, d_model=4096, heads=32, d_ff=4 * 4096,
                           vocab=32000, mlp="gated")
        models = {
            "MHA, gated MLP F=4D": base,
            "GQA (K=N/8), gated F=4D": base.replace(kv_heads=4),
            "MHA, plain MLP F=4D": base.replace(mlp="plain"),
            "LLaMA-3 70B (GQA, F=3.5D)": "llama3-70b",
        }
    fig, ax = _ax(ax)
    x = np.geomspace(1 / 4, max_ratio, 200)
    for label, m in models.items():
        m = _model(m)
        D = m.d_model
        t_star = tr.attention_crossover_seq_len(m, causal=causal)
        (line,) = ax.plot(x, x * D / t_star, label=f"{label}: T* = {t_star / D:.1f} D")
        ax.plot([t_star / D], [1.0], "o", color=line.get_color())
    ax.axhline(1.0, color="k", lw=0.8, ls="--")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log", base=2)
    ax.set_xlabel("sequence length T / d_model D")
    ax.set_ylabel("attention-score FLOPs / other FLOPs")
    ax.set_title("Where attention overtakes the weight matmuls" + (" (causal)" if causal else ""))
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def flops_by_part(model: "Transformer | str" = "llama3-70b", *,
                  seq_lens: Sequence[int] = (1024, 4096, 16384, 65536, 131072, 524288),
                  causal: bool = True, ax=None):
    """Forward FLOPs per token of the whole model, stacked by part, at several sequence lengths."""
    m = _model(model)
    if not seq_lens:
        raise Error("flops_by_part needs at least one sequence length")
    fig, ax = _ax(ax)
    per = [tr.flops_per_token(m, seq_len=t, causal=causal) for t in seq_lens]
    parts = list(dict.fromkeys(k for f in per for k in f.parts()))
    colors = {"attention projections": "#4c72b0", "attention scores": "#c44e52", "MLP / experts": "#dd8452",
              "router": "#da8bc3", "unembedding": "#8c8c8c"}
    bottom = [0.0] * len(per)
    xs = range(len(per))
    for part in parts:
        vals = [f.parts().get(part, 0.0) / 1e9 for f in per]
        ax.bar(xs, vals, bottom=bottom, label=part, color=colors.get(part))
        bottom = [b + v for b, v in zip(bottom, vals)]
    ax.set_xticks(list(xs), [f"{t // 1024}k" for t in seq_lens])
    ax.set_xlabel("sequence length T (tokens)")
    ax.set_ylabel("forward GFLOPs per token")
    ax.set_title(f"{m.name}: forward FLOPs per token" + (" (causal)" if causal else ""))
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def training_memory_stack(model: "Transformer | str" = "llama3-8b", *, batch: int = 8, seq_len: int = 8192,
                          flash_attention: bool = True, ax=None):
    """Training memory of the whole model under each remat policy, stacked by kind (GB).

    Parameters, gradients, Adam's two moments and master weights (the default mixed-precision
    recipe of `transformer.training_memory`) sit under the activations that each remat policy
    keeps for `batch` sequences of `seq_len` tokens; each bar is labelled with the FLOPs its
    recomputation adds, as a share of a training step's 3 x forward FLOPs.
    """
    m = _model(model)
    require_positive(batch=batch, seq_len=seq_len)
    fig, ax = _ax(ax)
    state = tr.training_memory(m)
    step = tr.flops_per_token(m, seq_len=seq_len).training_flops
    colors = {"parameters": "#4c72b0", "gradients": "#55a868", "Adam first moment": "#dd8452",
              "Adam second moment": "#c44e52", "master weights": "#937860", "activations": "#8172b3"}
    policies = tr.REMAT_POLICIES
    for i, policy in enumerate(policies):
        act = tr.activation_memory(m, batch=batch, seq_len=seq_len, policy=policy, flash_attention=flash_attention)
        bottom = 0.0
        for kind, b in [*state.parts().items(), ("activations", act.bytes)]:
            ax.bar(i, b / 1e9, bottom=bottom, color=colors[kind], label=kind if i == 0 else None,
                   edgecolor="white", linewidth=0.5)
            bottom += b / 1e9
        ax.text(i, bottom, f"+{100 * act.remat_flops_per_token / step:.0f}% step FLOPs", ha="center", va="bottom",
                fontsize=8)
    ax.set_xticks(range(len(policies)), [f"remat: {p}" for p in policies])
    ax.set_ylabel("GB (whole model, before sharding)")
    ax.set_title(f"{m.name} training memory, {batch} x {seq_len} tokens")
    ax.legend(fontsize=8, loc="upper right")
    ax.margins(y=0.12)
    fig.tight_layout()
    return fig


def kv_cache_per_token(models: Sequence["Transformer | str"] = ("gpt3-175b", "gemma-7b", "llama2-70b",
                                                                 "llama3-8b", "llama3-70b", "llama3-405b",
                                                                 "mixtral-8x7b", "palm-540b", "deepseek-v3"),
                       *, dtype: str = "bf16", ax=None):
    """KV cache bytes per token (all layers) of each model, coloured by attention kind."""
    ms = [_model(m) for m in models]
    if not ms:
        raise Error("kv_cache_per_token needs at least one model")
    fig, ax = _ax(ax, (7, 0.4 * len(ms) + 1.5))
    colors = {"MHA": "#c44e52", "GQA": "#dd8452", "MQA": "#55a868", "MLA": "#4c72b0"}
    seen = set()
    for i, m in enumerate(ms):
        kb = tr.kv_cache(m, dtype=dtype).bytes_per_token / 1e3
        kind = m.attention
        ax.barh(i, kb, color=colors[kind], label=kind if kind not in seen else None)
        seen.add(kind)
        ax.text(kb, i, f" {kb:.0f} kB", va="center", fontsize=8)
    ax.set_yticks(range(len(ms)), [m.name for m in ms], fontsize=8)
    ax.invert_yaxis()
    ax.set_xscale("log")
    ax.set_xlabel(f"KV cache per token, all layers ({dtype}, kB)")
    ax.set_title("KV cache per token")
    ax.legend(fontsize=8, loc="lower right")
    ax.margins(x=0.2)
    fig.tight_layout()
    return fig
