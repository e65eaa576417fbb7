"""Chapter 4's interactive model anatomy: a preset's parameters, forward FLOPs per token and training
memory, each by part, as the sequence length changes.

Every value is `scalebook.transformer`'s: the parameters are `params(model).parts()`, the FLOPs
`flops_per_token(model, seq_len=T).parts()` (causal attention, as a kernel that skips the masked
half counts it; matmul FLOPs only), the memory `training_memory(model).parts()` (bf16 weights and
gradients, fp32 Adam moments and master copy: 16 bytes per parameter) plus
`activation_memory(model, batch=1, seq_len=T, policy="none", flash_attention=True)` (one
sequence, no rematerialization, no T x T tensor kept), whole model on one device (chapter 4
counts before any sharding). The parameters do not depend on T, so their bars are kept once.
"""
from __future__ import annotations

from .. import models, transformer as tr, units
from ..errors import Error
from ._figure import InteractiveFigure, select, slider

PRESETS = ("llama3-8b", "llama3-70b", "llama3-405b", "gpt3-175b", "mixtral-8x7b", "deepseek-v3")
SEQ_LENS = tuple(2 ** k for k in range(10, 18))  # 1,024 .. 131,072
MEASURES = ("params", "flops", "memory")
MEASURE_LABELS = ("parameters", "forward FLOPs per token", "training memory")
#: measure: (unit, axis scale, axis unit)
UNITS = {"params": ("", 1e9, "billions of parameters"), "flops": ("FLOP", 1e9, "GFLOP per token"),
         "memory": ("B", 1e9, "GB")}


def _parts(model, measure: str, seq_len: int) -> dict[str, float]:
    if measure == "params":
        return dict(tr.params(model).parts())
    if measure == "flops":
        return tr.flops_per_token(model, seq_len=seq_len).parts()
    state = tr.training_memory(model)
    parts = {"parameters": state.param_bytes, "gradients": state.grad_bytes,
             "optimizer (Adam, fp32 master)": state.optimizer_bytes}
    parts["activations (1 sequence)"] = tr.activation_memory(model, batch=1, seq_len=seq_len, policy="none",
                                                             flash_attention=True).bytes
    return parts


def _show(value: float, measure: str) -> str:
    return tr.format_count(value) if measure == "params" else units.format_quantity(value, UNITS[measure][0])


def compute(preset: str, measure: str, seq_len: int) -> list[dict]:
    """One bar per part of the measure (its value on the axis and its label), and the readout: the
    total, the largest part (all of them when several tie) and its share, the attention scores'
    share of the FLOPs when they are not the largest, and an MoE's active parameters."""
    if measure not in UNITS:
        raise Error(f"measure {measure!r}: valid measures are {list(UNITS)}")
    model = models.preset(preset)
    parts = _parts(model, measure, seq_len)
    _, scale, axis_unit = UNITS[measure]
    on = ("preset", "measure") if measure == "params" else None
    bars = [{"kind": "bar", "part": k, "value": float(f"{v / scale:.4g}"), "label": _show(v, measure),
             **({"on": on} if on else {})} for k, v in parts.items()]
    total = sum(parts.values())
    most = max(parts.values())
    top = " and ".join(k for k, v in parts.items() if v == most)
    label = MEASURE_LABELS[MEASURES.index(measure)]
    text = (f"{model.name}, {label}" + ("" if measure == "params" else f" at {seq_len:,} tokens")
            + f" (axis in {axis_unit})\ntotal {_show(total, measure)}; largest part {top}, "
            f"{units.fmt_percent(most / total)}{' each' if ' and ' in top else ''}")
    if measure == "flops" and top != "attention scores":
        f = tr.flops_per_token(model, seq_len=seq_len)
        text += f"; attention scores {units.fmt_percent(f.attention_fraction)}"
    elif measure == "params" and tr.params(model).active_params != tr.params(model).total_params:
        text += f"; active per token {tr.format_count(tr.params(model).active_params)}"
    return bars + [{"kind": "readout", "text": text}]


def chart(rows: list[dict], filters: bool):
    """Horizontal bars, one per part, each labelled with its value (the page prints the readout above them)."""
    import altair as alt

    base = alt.Chart(alt.Data(values=rows))
    where = FIGURE.filter_expression if filters else (lambda extra="": extra)
    y = alt.Y("part:N", sort=None, title=None)
    x = alt.X("value:Q", title="the chosen measure (unit in the readout)")
    picked = base.transform_filter(where("datum.kind == 'bar'"))
    bars = picked.mark_bar(color="#0072b2").encode(
        x=x, y=y, tooltip=[alt.Tooltip("part:N"), alt.Tooltip("label:N", title="value")],
        description=alt.Description("label:N"))
    labels = picked.mark_text(align="left", dx=3, fontSize=11, aria=False).encode(x=x, y=y, text="label:N")
    return alt.layer(bars, labels).properties(width=360, height=220, padding={"right": 90})


def static(preset: str, measure: str, seq_len: int):
    """The static picture (the site's fallback): `scalebook.plots.flops_by_part` for the preset."""
    from .. import plots

    return plots.flops_by_part(preset)


FIGURE = InteractiveFigure(
    name="model-anatomy",
    title="A model's parameters, FLOPs and memory, by part",
    controls=(
        select("preset", "model", PRESETS, [models.preset(p).name for p in PRESETS], default="llama3-70b"),
        select("measure", "measure", MEASURES, MEASURE_LABELS, default="flops"),
        slider("seq_len", "sequence length", SEQ_LENS, default=8192, live_range=(1, 1_048_576)),
    ),
    compute=compute,
    chart=chart,
    caption=("Slide the sequence length up with the FLOPs shown and watch the attention scores grow from a sliver "
             "into the largest part, while the weight multiplies stay put. Switch to memory: the training state "
             "(16 bytes per parameter) dwarfs one sequence's activations until the context gets long. Pick "
             "Mixtral or DeepSeek-V3 and compare the parameters with the FLOPs: most expert weights sit idle "
             "for any one token. Memory is the whole model on one device, activations for one sequence with "
             "nothing recomputed."),
    alt=("Horizontal bar chart of the chosen model's parameters, forward FLOPs per token or training memory, "
         "one bar per part (embedding, attention, MLP or experts, optimizer state, activations and so on), each "
         "labelled with its value, and a readout of the total, the largest part's share and, for FLOPs, the "
         "attention scores' share at the chosen sequence length."),
    static=static,
)


def figure() -> InteractiveFigure:
    """Chapter 4's model anatomy (preset, measure, sequence length)."""
    return FIGURE
