"""Serving a model: prefill, decode steps, KV cache and memory on a sharded deployment (Chapter 7).

A `Deployment` says how a model is laid out for serving: `tp` chips split every layer by heads and
MLP width (Megatron style, over the fast links), `ep` groups each hold 1/ep of the routed experts
and serve 1/ep of the sequences (attention data-parallel, experts reached by AllToAll), `pp`
stages each hold 1/pp of the layers. Chips = tp x ep x pp. Weights and KV cache may be quantised.

With `attention="batch"` (Pope et al. 2022, for multi-query models) the tp chips split the KV cache
by sequence instead of by kv head, and move queries to it and back by AllToAll.

One decode step of a batch of B sequences with S tokens of context, per chip (stage share 1/pp):

    bytes  = weights held (experts: only those some token picks, E (1 - (1 - k/E)^B) of E: each
             token picks k distinct experts, so a given expert escapes one token with probability
             1 - k/E, and all B tokens with (1 - k/E)^B)
             + KV cache read, B / ep sequences x S tokens x 2 K H x bytes / min(tp, K)
    FLOPs  = 2 x active params x B / (tp ep) + attention 4 N_q H S x B / (tp ep)   (per layer, summed)
    time   = max(FLOPs / (peak x compute efficiency), bytes / (HBM x bandwidth efficiency))
             + TP AllReduces (2 a layer of B / ep x D activations) + EP AllToAlls (2 a MoE layer)

A large prefill moves less by gathering each layer's weights to every chip than by reducing its
activations (Pope et al. 2022); its collective time is the smaller of the two.

A step that both decodes and prefills (chunked prefill, `mixed_step`) is one roofline of the two
together: max(FLOPs of both / peak, weights once + KV read + KV written / HBM) + the collectives
of all its tokens, not a prefill added to a decode step. The verify step of speculative decoding
(`verify_step`) is a decode step of g + 1 tokens per sequence: (g + 1) x the FLOPs and the bytes
through every collective, the same weight and cache reads. The time to first token is the prefill
alone: its logits at the prompt's last position give the first output token. Memory reserves the
activations of one prefill pass of `workspace_tokens` tokens (default: the whole prompt), an
input of `estimate`, `memory_per_chip` and `max_batch` stated in their results.

Attention in decode reads S x 2 K H bytes per sequence for 4 N_q H S FLOPs: intensity 2 N_q / (K b)
whatever the batch, so it stays memory-bound (Chapter 7). Prefill of P tokens is the same with
B P tokens of FLOPs (causal attention) against one pass over the weights: compute-bound once
P B exceeds the chip's critical batch.

Every forward pass (a prefill pass, a decode step) also pays a fixed `layer_overhead_seconds` per
layer, whatever its size: each layer is a dozen or so kernels, and each kernel costs a launch, a
ramp-up and a tail, and host work the GPU waits on between them, whether it moves a megabyte or a
gigabyte (TensorRT-LLM's tuning guide speaks of the exposed CPU runtime of each step and fuses
kernels to cut it; nvidia2024trtllmbest). It dominates short forward passes (a 128-token prompt,
a decode step at small batch). The model adds it to the step; a real engine overlaps some of it
with work (launches queued ahead of a long kernel), so at large steps the additive form overcharges
a little. The GPU value is fitted on TensorRT-LLM 0.9.0 runs whose benchmark commands pass no
CUDA-graph option (nvidia2024trtllmperf): an engine that replays each decode step as one captured
CUDA graph pays much less of it, and a reader modelling one should pass a smaller
`layer_overhead_seconds`.

Efficiencies and overhead are explicit parameters (`bandwidth_efficiency`, `compute_efficiency`,
`layer_overhead_seconds`); their defaults per chip family (TPU, GPU) come from
`data/serving_efficiency.json`, fitted on the published results marked `fit` in
`scalebook.serving_results` (chapter 8 shows the fit and the validation on the rest). The TPU family
has no overhead (its two anchors pin two constants; XLA runs a step as one compiled program). One
set per family is a simplification: chapter 8 shows where it fails (Mixtral on Hopper, A100
against Hopper).
Memory leaves out framework workspace and fragmentation, as in `scalebook.training`.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, fields
from typing import Any, Mapping

from ._readable import Readable
from . import collectives, units
from . import transformer as tr
from ._data import load
from .errors import MAX_CHIPS, MAX_TOKENS, Error, _show, require_count, require_flag, require_positive
from .errors import MAX_CHIPS, MAX_COUNT, MAX_TOKENS, require_count as _require_count  # noqa: F401
from .errors import instance as _instance, integer as _integer, number as _number, text as _text
from .errors import model as _as_model
from .hardware import Chip, chip as _chip
from .models import Transformer
from .topology import Axis, Topology, for_chips

WEIGHT_DTYPES = ("bf16", "fp16", "fp8", "int8", "int4", "fp4")
KV_DTYPES = ("bf16", "fp16", "fp8", "int8", "int4")


def _positive_int(name: str, value: object, maximum: int = MAX_CHIPS) -> int:
    """`value` as a positive int, at most `maximum` (default: `errors.MAX_CHIPS`, 10**7)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise Error(f"{name} must be a positive integer, got {_show(value)}")
    if value > maximum:
        raise Error(f"{name} is too large (at most {maximum:,}), got {_show(value)}")
    return value


@dataclass(frozen=True, kw_only=True)
class Deployment(Readable):
    """How a model is laid out for serving (module docstring). Chips = tp x ep x pp."""

    tp: int = 1
    ep: int = 1
    pp: int = 1
    weights: str = "bf16"
    kv: str = "bf16"
    activations: str = "bf16"
    #: How the tp chips split attention: "heads" (Megatron: each chip its heads and their KV
    #: cache, repeated once tp exceeds the kv heads) or "batch" (Pope et al. 2022: the KV cache of
    #: 1/tp of the sequences per chip, queries moved there and back by two AllToAlls a layer).
    #: "auto" picks "batch" when tp does not divide the heads or exceeds the kv heads (MQA),
    #: "heads" otherwise; `resolve` fixes it for a model.
    attention: str = "auto"
    #: Stored dtype of every weight outside the MLP (attention projections, norms, router,
    #: embeddings) when it differs from `weights`, which then covers the MLP and experts only: Meta
    #: served Llama 3 405B with fp8 FFN weights and bf16 attention (Dubey et al. 2024, section 6.2;
    #: their first and last layers stay bf16 too, which this does not model). None: as `weights`.
    attention_weights: str | None = None

    def __post_init__(self) -> None:
        for name in ("tp", "ep", "pp"):
            _positive_int(name, getattr(self, name))
        if not isinstance(self.attention, str) or self.attention not in ("heads", "batch", "auto"):
            raise Error(f"unknown attention split {self.attention!r}; valid: heads, batch, auto")
        checks = [("weights", WEIGHT_DTYPES), ("kv", KV_DTYPES), ("activations", ("bf16", "fp16", "fp32"))]
        if self.attention_weights is not None:
            checks.append(("attention_weights", WEIGHT_DTYPES))
        for name, valid in checks:
            raw = getattr(self, name)
            value = units.canonical_dtype(raw) if isinstance(raw, str) and raw in units.DTYPE_BYTES else None
            if value not in valid:
                raise Error(f"unknown {name} dtype {getattr(self, name)!r}; valid: {', '.join(valid)}")
            object.__setattr__(self, name, value)

    @property
    def chips(self) -> int:
        return self.tp * self.ep * self.pp

    @property
    def attention_dtype(self) -> str:
        """Stored dtype of the weights outside the MLP: `attention_weights`, else `weights`."""
        return self.attention_weights or self.weights

    def replace(self, **changes) -> "Deployment":
        kw = {f.name: getattr(self, f.name) for f in fields(self)}
        kw.update(changes)
        return Deployment(**kw)

    def resolve(self, model: Transformer) -> "Deployment":
        """This deployment with attention="auto" decided for `model` (a config or a preset name)."""
        model = _as_model(model)
        if self.attention != "auto":
            return self
        by_batch = self.tp > 1 and (model.heads % self.tp or (self.tp > model.kv_heads and not model.is_mla))
        return self.replace(attention="batch" if by_batch else "heads")

    def label(self) -> str:
        parts = [f"{k.upper()}{getattr(self, k)}" for k in ("tp", "ep", "pp") if getattr(self, k) > 1] or ["1 chip"]
        split = ", attention by batch" if self.attention == "batch" and self.tp > 1 else ""
        w = (f"{self.weights} MLP and {self.attention_weights} other weights"
             if self.attention_weights not in (None, self.weights) else f"{self.weights} weights")
        return f"{' x '.join(parts)} ({w}, {self.kv} KV{split})"

    def __repr__(self) -> str:
        return f"Deployment({self.label()})"


def check_deployment(model: Transformer, d: Deployment) -> None:
    """Raise `Error` where the layout cannot split this model."""
    model = _as_model(model)
    _instance('deployment', d, Deployment)
    d = d.resolve(model)
    if d.attention == "heads" and model.heads % d.tp:
        raise Error(f"tp={d.tp} must divide the {model.heads} query heads of {model.name} (or split attention by "
                    "batch: Deployment(attention='batch'))")
    width = model.d_ff or model.expert_d_ff
    if width % d.tp:
        raise Error(f"tp={d.tp} must divide the MLP width {width} of {model.name}")
    if d.ep > 1 and not model.is_moe:
        raise Error(f"ep={d.ep} needs a mixture-of-experts model; {model.name} is dense")
    if d.ep > 1 and model.routed_experts % d.ep:
        raise Error(f"ep={d.ep} must divide the {model.routed_experts} routed experts of {model.name}")
    if d.pp > model.layers:
        raise Error(f"pp={d.pp} stages for {model.layers} layers: at most {model.layers}")


def _constants(chip: "str | Chip") -> dict:
    return load("serving_efficiency")["tpu" if _chip(chip).is_tpu else "gpu"]


def default_efficiency(chip: "str | Chip") -> tuple[float, float]:
    """(bandwidth, compute) efficiency of a chip's family for serving, fitted in chapter 8.

    `data/serving_efficiency.json` names the published results each was fitted on
    (`refit_default_efficiency`; `tools/fit_serving_efficiency.py` writes the file).
    """
    entry = _constants(chip)
    return float(entry["bandwidth_efficiency"]), float(entry["compute_efficiency"])


def default_layer_overhead(chip: "str | Chip") -> float:
    """Fixed seconds per layer of every forward pass (a prefill pass or a decode step) on a chip's
    family, fitted with its efficiencies (chapter 8; 0 where none is fitted: the TPU family, whose
    two anchors pin two constants only)."""
    return float(_constants(chip).get("layer_overhead_seconds", 0.0))


def deployment_topology(chip: "str | Chip", d: Deployment) -> Topology:
    """The chips of a deployment, with one mesh axis (or several) per degree: tp on the fastest
    links (NVLink or ICI), then ep, then pp, laid out as `training` lays out a strategy
    (`topology.for_chips`; the group axes are named tp*, ep*, pp*)."""
    _instance('deployment', d, Deployment)
    from .strategy import _Queue, _ordered

    c = _chip(chip)
    topo = for_chips(c, d.chips)
    q = _Queue(_ordered(topo))
    axes = []
    for kind in ("tp", "ep", "pp"):
        for i, a in enumerate(q.take(getattr(d, kind), kind)):
            axes.append(Axis(name=f"{kind}{i}", size=a.size, link=a.link, wraparound=a.wraparound,
                             bytes_per_s=a.bytes_per_s, one_way_bytes_per_s=a.one_way_bytes_per_s))
    axes = axes or [Axis(name="tp0", size=1, link="ici" if c.is_tpu else "nvlink", wraparound=False,
                         bytes_per_s=c.collective_bytes_per_s, one_way_bytes_per_s=c.ici_one_way_bytes_per_s)]
    return Topology(chip=c, kind=topo.kind, axes=tuple(axes), hop_latency_seconds=topo.hop_latency_seconds)


def _group(topo: Topology, kind: str) -> tuple[str, ...]:
    return tuple(n for n in topo.names if n.startswith(kind))


# --- results ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class ServingMemory(Readable):
    """Bytes per chip while serving: weights, KV cache, and the workspace of a prefill pass of
    `workspace_tokens` tokens (the prompt, or the chunk a chunked prefill runs at once)."""

    weight_bytes: float
    kv_cache_bytes: float
    workspace_bytes: float
    hbm_bytes: float
    workspace_tokens: int = 0

    @property
    def bytes(self) -> float:
        return self.weight_bytes + self.kv_cache_bytes + self.workspace_bytes

    @property
    def fits(self) -> bool:
        return bool(self.bytes <= self.hbm_bytes)

    def parts(self) -> dict[str, float]:
        return {"weights": self.weight_bytes, "KV cache": self.kv_cache_bytes, "workspace": self.workspace_bytes}

    def __repr__(self) -> str:
        f = units.format_quantity
        return (f"ServingMemory({f(self.bytes, 'B')} of {f(self.hbm_bytes, 'B')}{'' if self.fits else ' -- DOES NOT FIT'}:"
                f" weights {f(self.weight_bytes, 'B')}, KV {f(self.kv_cache_bytes, 'B')}, "
                f"workspace {f(self.workspace_bytes, 'B')} for a {self.workspace_tokens}-token prefill pass)")


@dataclass(frozen=True)
class StepTime:
    """One prefill or decode step on one chip: the roofline parts and the collectives."""

    flops: float
    weight_bytes_read: float
    kv_bytes_read: float
    compute_seconds: float
    memory_seconds: float
    tp_seconds: float
    ep_seconds: float
    pp_seconds: float
    #: Fixed time of the step's layers whatever their size (`layer_overhead_seconds` x layers of
    #: the stage): kernel launches, synchronisation and host work the GPU waits on.
    overhead_seconds: float = 0.0

    @property
    def bytes_read(self) -> float:
        return self.weight_bytes_read + self.kv_bytes_read

    @property
    def seconds(self) -> float:
        """max(compute, memory) + the collectives (which wait on each other in a decode step) + the
        fixed per-layer overhead."""
        return (max(self.compute_seconds, self.memory_seconds) + self.tp_seconds + self.ep_seconds + self.pp_seconds
                + self.overhead_seconds)

    @property
    def bound(self) -> str:
        """The resource that limits the step: "compute", "memory" or "communication" (the fixed
        per-layer overhead is no resource and never named here; compare `overhead_seconds`)."""
        comm = self.tp_seconds + self.ep_seconds + self.pp_seconds
        worst = max(self.compute_seconds, self.memory_seconds, comm)
        return "compute" if worst == self.compute_seconds else "memory" if worst == self.memory_seconds else "communication"

    def parts(self) -> dict[str, float]:
        return {"compute": self.compute_seconds, "memory": self.memory_seconds, "tp": self.tp_seconds,
                "ep": self.ep_seconds, "pp": self.pp_seconds, "overhead": self.overhead_seconds}


@dataclass(frozen=True)
class ServingEstimate(Readable):
    """The result of `estimate`: latency, throughput and memory of a deployment at one batch.

    `decode` is one decode step at the average context (prompt + half the output); a token
    takes `per_token_latency_seconds` = pp x the step (every stage in turn); the deployment
    emits batch / (pp x step) tokens per second with pp microbatches in flight.
    """

    model_name: str
    chip: Chip
    deployment: Deployment
    batch: int
    prompt_len: int
    output_len: int
    bandwidth_efficiency: float
    compute_efficiency: float
    prefill: StepTime
    decode: StepTime
    memory: ServingMemory
    max_batch: int
    prefill_batch: StepTime | None = None
    #: Tokens one prefill pass runs at once, whose activations `memory` reserves (the prompt unless
    #: `estimate(..., workspace_tokens=...)` sets a chunk).
    workspace_tokens: int = 0
    model: Transformer | None = field(default=None, repr=False, compare=False)
    #: Fixed seconds per layer of every forward pass (prefill pass or decode step), whatever its
    #: size (`default_layer_overhead`).
    layer_overhead_seconds: float = 0.0

    @property
    def chips(self) -> int:
        return self.deployment.chips

    @property
    def fits(self) -> bool:
        return self.memory.fits

    @property
    def end_to_end_seconds(self) -> float:
        """A static batch from start to finish: all `batch` prompts prefilled together, then
        output_len - 1 decode steps (the prefill gives the first token): how offline benchmarks
        that run one batch at a time measure (chapter 8)."""
        return self.prefill_batch_seconds + (self.output_len - 1) * self.per_token_latency_seconds

    @property
    def end_to_end_output_tokens_per_s_per_chip(self) -> float:
        """batch x output_len tokens over `end_to_end_seconds`, per chip."""
        return self.batch * self.output_len / self.end_to_end_seconds / self.chips

    @property
    def prefill_seconds(self) -> float:
        """Prefill of one prompt across the deployment (all stages in turn)."""
        return self.prefill.seconds * self.deployment.pp

    @property
    def prefill_batch_seconds(self) -> float:
        """Prefill of all `batch` prompts together (the offline case): one pass, B x P tokens."""
        return (self.prefill_batch or self.prefill).seconds * self.deployment.pp

    @property
    def ttft_seconds(self) -> float:
        """Time to first token of a request that finds the server idle: its prefill, whose logits at
        the prompt's last position give the first output token (no decode step needed)."""
        return self.prefill_seconds

    @property
    def decode_step_seconds(self) -> float:
        return self.decode.seconds

    @property
    def per_token_latency_seconds(self) -> float:
        return self.decode.seconds * self.deployment.pp

    @property
    def output_tokens_per_s(self) -> float:
        return self.batch / self.per_token_latency_seconds * 1.0

    @property
    def output_tokens_per_s_per_chip(self) -> float:
        return self.output_tokens_per_s / self.chips

    @property
    def request_seconds(self) -> float:
        """Time a request spends in the server: prefill (which yields the first token) plus
        output_len - 1 decode steps for the rest."""
        return self.prefill_seconds + (self.output_len - 1) * self.per_token_latency_seconds

    def usd_per_million_output_tokens(self, usd_per_chip_hour: float) -> float:
        """Decode cost only: chips x price / output tokens per hour, per million tokens."""
        require_positive(usd_per_chip_hour=usd_per_chip_hour)
        return self.chips * usd_per_chip_hour / 3600 / self.output_tokens_per_s * 1e6

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready fields (the `serve-estimate --json` contract)."""
        d = self.deployment
        return {
            "model": self.model_name, "chip": self.chip.name, "chips": self.chips,
            "deployment": {"tp": d.tp, "ep": d.ep, "pp": d.pp, "weights": d.weights,
                           "attention_weights": d.attention_dtype, "kv": d.kv, "label": d.label()},
            "batch": self.batch, "max_batch": self.max_batch, "workspace_tokens": self.workspace_tokens,
            "prompt_len": self.prompt_len,
            "output_len": self.output_len, "bandwidth_efficiency": self.bandwidth_efficiency,
            "compute_efficiency": self.compute_efficiency,
            "prefill_seconds": self.prefill_seconds, "prefill_batch_seconds": self.prefill_batch_seconds,
            "ttft_seconds": self.ttft_seconds,
            "decode_step_seconds": self.decode_step_seconds,
            "per_token_latency_seconds": self.per_token_latency_seconds,
            "output_tokens_per_s": self.output_tokens_per_s,
            "output_tokens_per_s_per_chip": self.output_tokens_per_s_per_chip,
            "request_seconds": self.request_seconds,
            "memory_bytes_per_chip": self.memory.bytes, "hbm_bytes_per_chip": self.memory.hbm_bytes,
            "fits": self.fits, "memory_bytes": {k.replace(" ", "_"): v for k, v in self.memory.parts().items()},
            "decode_parts_seconds": self.decode.parts(), "decode_bound": self.decode.bound,
            "decode_bytes_read_per_chip": self.decode.bytes_read, "decode_flops_per_chip": self.decode.flops,
            "prefill_parts_seconds": self.prefill.parts(), "prefill_bound": self.prefill.bound,
        }

    def __repr__(self) -> str:
        f = units.format_quantity
        return (f"ServingEstimate({self.model_name} on {self.chips} {self.chip.name}, {self.deployment.label()}, "
                f"batch {self.batch}: {f(self.per_token_latency_seconds, 's')}/token ({self.decode.bound}-bound), "
                f"{units.fmt_number(self.output_tokens_per_s_per_chip, 4)} token/s per chip, TTFT {f(self.ttft_seconds, 's')}, "
                f"memory {f(self.memory.bytes, 'B')}{'' if self.fits else ' DOES NOT FIT'}, max batch {self.max_batch} "
                f"beside a {self.workspace_tokens}-token prefill workspace)")

    def _repr_html_(self) -> str:
        f = units.format_quantity
        rows = [("per-token latency", f(self.per_token_latency_seconds, "s")),
                ("output tokens/s per chip", units.fmt_number(self.output_tokens_per_s_per_chip, 4)),
                ("time to first token", f(self.ttft_seconds, "s")), ("decode bound", self.decode.bound),
                *((f"memory: {k}", f(v, "B")) for k, v in self.memory.parts().items()),
                ("prefill workspace for", f"{self.workspace_tokens} tokens at once"),
                ("largest batch that fits", str(self.max_batch))]
        body = "".join(f"<tr><th style='text-align:left'>{k}</th><td>{v}</td></tr>" for k, v in rows)
        cap = f"{self.model_name} on {self.chips} {self.chip.display_name}, {self.deployment.label()}, batch {self.batch}"
        return f"<table><caption>{cap}</caption>{body}</table>"


# --- the model -------------------------------------------------------------------------------

@dataclass(frozen=True)
class _Parts:
    attention_params: float  # per layer matmul weights of attention (incl. norms, router)
    dense_mlp_params: float  # all dense-MLP layers together
    expert_params: float  # one routed expert
    shared_params: float  # shared experts, all MoE layers
    embedding_params: float  # the unembedding matrix read each step (embedding rows are gathered)


def _parts(model: Transformer) -> _Parts:
    p = tr.params(model)
    per_expert = p.routed_expert_params / max(model.routed_experts * model.moe_layers, 1)
    unembed = p.unembedding_params or p.embedding_params
    return _Parts(attention_params=(p.attention_params + p.norm_params + p.router_params) / model.layers,
                  dense_mlp_params=p.mlp_params, expert_params=per_expert, shared_params=p.shared_expert_params,
                  embedding_params=unembed)


def weights_per_chip(model: Transformer, d: Deployment) -> float:  # noqa: D401
    """Bytes of weights one chip holds: everything / (tp pp), routed experts further / ep; the MLP
    and experts at `weights` bytes, the rest at `attention_weights` bytes (`Deployment`)."""
    model = _as_model(model)
    _instance('deployment', d, Deployment)
    p = tr.params(model)
    b, b_other = units.dtype_bytes(d.weights), units.dtype_bytes(d.attention_dtype)
    mlp = p.mlp_params + p.shared_expert_params
    other = p.total_params - p.routed_expert_params - mlp
    return (mlp * b + other * b_other) / (d.tp * d.pp) + p.routed_expert_params * b / (d.tp * d.pp * d.ep)


def kv_bytes_per_sequence_per_chip(model: Transformer, d: Deployment, tokens: int) -> float:
    """KV cache of one sequence of `tokens` on one chip, on average: split over tp by kv heads
    (repeated once tp exceeds them; MLA's latent is not split) or, with attention split by batch,
    1/tp of the sequences per chip; and over pp by layers."""
    model = _as_model(model)
    _instance('deployment', d, Deployment)
    require_positive(tokens=tokens)
    kv = tr.kv_cache(model, seq_len=tokens, dtype=d.kv).bytes_per_sequence
    d = d.resolve(model)
    if d.attention == "batch":
        split = d.tp  # each chip keeps whole caches of 1/tp of the sequences
    else:
        split = 1 if model.is_mla else min(d.tp, model.kv_heads)
    return kv / (split * d.pp)


def experts_touched(model: Transformer, *, tokens: float, ep: int = 1) -> float:
    """Expected routed experts of one MoE layer, on one of `ep` expert groups, that at least one
    of `tokens` picks (Chapter 7).

    Each token picks k distinct experts of E (top-k routing, uniform on average), so one expert is
    missed by a token with probability 1 - k/E and by all B tokens with (1 - k/E)^B (tokens routed
    independently): E/ep x (1 - (1 - k/E)^B). Real routers are not uniform, which leaves more
    experts idle at small B; this is the uniform case.
    """
    model = _as_model(model)
    _number('tokens', tokens)
    if tokens < 0:
        raise Error(f"tokens must be >= 0, got {tokens!r}")
    _positive_int("ep", ep)
    if not model.is_moe:
        return 0.0
    E, k = model.routed_experts, model.experts_per_token
    return E / ep * (1 - (1 - k / E) ** tokens)


def _experts_touched(model: Transformer, d: Deployment, tokens: float) -> float:
    return experts_touched(model, tokens=tokens, ep=d.ep)


def _tp_axis(topo: Topology) -> str | None:
    return "tp" if "tp" in topo.names and topo.axis("tp").size > 1 else None


def _rate(c: Chip, dtype: str) -> float:
    """Peak FLOP/s of matmuls on weights (or operands) stored as `dtype`: fp8 (or fp4) run fp8 matmuls
    where the chip has them; integer weights are upcast and every other dtype runs at the bf16 rate."""
    return c.peak_flops_per_s(c.compute_dtype("fp8") if dtype in ("fp8", "fp4") else "bf16")


def _step(model: Transformer, c: Chip, d: Deployment, topo: Topology, *, sequences: float, new_tokens: int,
          context: int, prefill: bool, bw_eff: float, c_eff: float, overhead: float = 0.0) -> StepTime:
    """One step on one chip: `sequences` (over the deployment) each adding `new_tokens` at `context`."""
    if prefill:
        return _mixed(model, c, d, topo, decode_sequences=0.0, decode_tokens=1, context=context,
                      prompts=sequences, prompt_len=new_tokens, bw_eff=bw_eff, c_eff=c_eff, overhead=overhead)
    return _mixed(model, c, d, topo, decode_sequences=sequences, decode_tokens=new_tokens, context=context,
                  prompts=0.0, prompt_len=1, bw_eff=bw_eff, c_eff=c_eff, overhead=overhead)


def _mixed(model: Transformer, c: Chip, d: Deployment, topo: Topology, *, decode_sequences: float,
           decode_tokens: int, context: int, prompts: float, prompt_len: int, bw_eff: float,
           c_eff: float, overhead: float = 0.0) -> StepTime:
    """One step on one chip that decodes `decode_sequences` (each adding `decode_tokens` at
    `context`) and prefills `prompts` prompts of `prompt_len` tokens, all in one pass over the
    weights: one roofline, max(FLOPs of both / peak, weights once + KV read and written / HBM),
    plus the collectives of all the step's tokens (module docstring)."""
    parts = _parts(model)
    b_w, b_o, b_a = (units.dtype_bytes(x) for x in (d.weights, d.attention_dtype, d.activations))
    dec_tokens, pre_tokens = decode_sequences * decode_tokens, prompts * prompt_len
    tokens = dec_tokens + pre_tokens
    local_tokens = tokens / d.ep
    L, stage = model.layers, model.layers / d.pp
    mlp_w = (parts.dense_mlp_params + parts.shared_params) / L
    expert_w = _experts_touched(model, d, tokens) * parts.expert_params * model.moe_layers / L
    layer_bytes = parts.attention_params * b_o + (mlp_w + expert_w) * b_w  # one layer's weights read
    w_read = layer_bytes * stage / d.tp + parts.embedding_params * b_o / (d.tp * d.pp)
    kv = 0.0
    # FLOPs by the rate they run at: the MLP's at the weights' dtype, attention projections, router and
    # unembedding at the other weights' dtype, QK^T and AV (two activations) at the bf16 rate
    mlp = other = scores = 0.0
    if prompts:  # writes the prompts' keys and values; needs logits at each prompt's last position only
        kv += kv_bytes_per_sequence_per_chip(model, d, prompt_len) * prompts / d.ep
        fl = tr.flops_per_token(model, seq_len=prompt_len, causal=True)
        mlp += fl.mlp_flops * pre_tokens
        other += (fl.attention_projection_flops + fl.router_flops) * pre_tokens + fl.unembedding_flops * prompts
        scores += fl.attention_score_flops * pre_tokens
    if decode_sequences:  # reads the whole context; every new token attends to all of it and needs logits
        kv += kv_bytes_per_sequence_per_chip(model, d, 1) * context * decode_sequences / d.ep
        fl = tr.flops_per_token(model, seq_len=context, causal=False)
        mlp += fl.mlp_flops * dec_tokens
        other += (fl.attention_projection_flops + fl.router_flops + fl.unembedding_flops) * dec_tokens
        scores += fl.attention_score_flops * dec_tokens
    share = d.tp * d.ep * d.pp
    flops = (mlp + other + scores) / share
    compute = (mlp / _rate(c, d.weights) + other / _rate(c, d.attention_dtype) + scores / _rate(c, "bf16")) \
        / (share * c_eff)
    memory = (w_read + kv) / (c.hbm_bytes_per_s * bw_eff)
    tp = ep = pp = 0.0
    if d.tp > 1:
        tp = 2 * stage * collectives.all_reduce(topo, axes=_group(topo, "tp"),
                                                bytes_=local_tokens * model.d_model * b_a).seconds
        if d.attention == "batch":  # queries to the chip holding their sequence's cache, outputs back
            v = local_tokens * model.heads * model.head_dim * b_a
            tp += 2 * stage * collectives.all_to_all(topo, axes=_group(topo, "tp"), bytes_=v).seconds
        if prompts and not decode_sequences:  # a big prefill may instead gather each layer's weights and
            # keep its tokens in place (Pope et al. 2022's weight-gathered layout): whichever moves less
            gather = collectives.all_gather(topo, axes=_group(topo, "tp"), bytes_=layer_bytes).seconds
            tp = min(tp, stage * gather)
    if d.ep > 1:
        v = d.ep * local_tokens * model.experts_per_token * model.d_model * b_a
        ep = 2 * model.moe_layers / d.pp * collectives.all_to_all(topo, axes=_group(topo, "ep"), bytes_=v).seconds
    if d.pp > 1:
        pp = collectives.permute(topo, axes=_group(topo, "pp"),
                                 bytes_=d.pp * local_tokens * model.d_model * b_a).seconds
    return StepTime(flops=flops, weight_bytes_read=w_read, kv_bytes_read=kv, compute_seconds=compute,
                    memory_seconds=memory, tp_seconds=tp, ep_seconds=ep, pp_seconds=pp,
                    overhead_seconds=overhead * stage)


def mixed_step(e: "ServingEstimate", *, prompts: float, prompt_tokens: int | None = None) -> StepTime:
    """A decode step of `e`'s batch that also prefills `prompts` prompts (a chunked-prefill step).

    The prefill chunk rides on the same pass over the weights: one roofline of the combined step,
    max(compute of both, weights once + the KV cache read and written) + the collectives of all its
    tokens, not a prefill added on top of a decode step (Chapter 7). While decode is memory-bound,
    the chunk's FLOPs fill idle matmul units and cost little. `prompts` may be fractional (a mean
    rate); `prompt_tokens` defaults to `e.prompt_len`.
    """
    _instance('e', e, ServingEstimate)
    _number('prompts', prompts)
    if prompts < 0:
        raise Error(f"prompts must be >= 0, got {prompts!r}")
    n = e.prompt_len if prompt_tokens is None else _positive_int("prompt_tokens", prompt_tokens)
    c, d = e.chip, e.deployment
    m = e.model
    return _mixed(m, c, d, deployment_topology(c, d), decode_sequences=e.batch / d.pp, decode_tokens=1,
                  context=e.prompt_len + e.output_len // 2, prompts=prompts / d.pp, prompt_len=n,
                  bw_eff=e.bandwidth_efficiency, c_eff=e.compute_efficiency, overhead=e.layer_overhead_seconds)


def verify_step(e: "ServingEstimate", *, tokens: int) -> StepTime:
    """The target's step that checks `tokens` (= g + 1) tokens per sequence in speculative decoding.

    Same weights and cache reads as `e.decode`, `tokens` x its FLOPs and `tokens` x the activations
    through every collective (TP AllReduces, EP AllToAlls, pipeline sends) (Chapter 7).
    """
    _instance('e', e, ServingEstimate)
    _positive_int("tokens", tokens)
    c, d = e.chip, e.deployment
    return _step(e.model, c, d, deployment_topology(c, d), sequences=e.batch / d.pp, new_tokens=tokens,
                 context=e.prompt_len + e.output_len // 2, prefill=False, bw_eff=e.bandwidth_efficiency,
                 c_eff=e.compute_efficiency, overhead=e.layer_overhead_seconds)


def _workspace(model: Transformer, d: Deployment, prompt_len: int) -> float:
    """Prefill workspace of a pass of `prompt_len` tokens: its activations (D and F wide) and fp32
    logits of one row: P (4 D + 3 F / tp) x activation bytes + V x 4."""
    b = units.dtype_bytes(d.activations)
    width = max(model.d_ff, (model.experts_per_token + model.shared_experts) * model.expert_d_ff)
    return prompt_len * (4 * model.d_model + 3 * width / d.tp) * b + model.vocab * 4.0


def _workspace_tokens(context: int, prompt_len: "int | None", workspace_tokens: "int | None") -> int:
    if prompt_len is not None:
        _require_count("prompt_len", prompt_len, minimum=0, maximum=MAX_TOKENS)
    if workspace_tokens is not None:
        return _positive_int("workspace_tokens", workspace_tokens, MAX_TOKENS)
    if prompt_len is not None and _require_count("prompt_len", prompt_len, minimum=0, maximum=MAX_TOKENS):
        return int(prompt_len)
    return context


def memory_per_chip(model: Transformer, *, chip: "str | Chip", deployment: Deployment, batch: int,
                    context: int, prompt_len: int | None = None,
                    workspace_tokens: int | None = None) -> ServingMemory:
    """Weights + KV cache of `batch` sequences of `context` tokens + prefill workspace, per chip.

    The workspace holds the activations of one prefill pass of `workspace_tokens` tokens (default:
    the whole prompt, `prompt_len`, else `context`); a server that chunks its prefill passes its
    chunk size here (`_workspace`).
    """
    model = _as_model(model)
    _instance('deployment', deployment, Deployment)
    c, d = _chip(chip), deployment
    require_positive(batch=batch, context=context)
    n = _workspace_tokens(context, prompt_len, workspace_tokens)
    kv = kv_bytes_per_sequence_per_chip(model, d, context) * math.ceil(batch / d.ep)
    return ServingMemory(weight_bytes=weights_per_chip(model, d), kv_cache_bytes=kv,
                         workspace_bytes=_workspace(model, d, n), hbm_bytes=c.hbm_bytes, workspace_tokens=n)


def max_batch(model: Transformer, *, chip: "str | Chip", deployment: Deployment, context: int,
              prompt_len: int | None = None, workspace_tokens: int | None = None) -> int:
    """Largest batch of `context`-token sequences whose KV cache fits beside the weights (0 if none).

    B_max = ep x floor((HBM - weights - workspace) / KV per sequence per chip), the workspace that
    of one prefill pass of `workspace_tokens` tokens: by default the whole prompt (`prompt_len`,
    else `context`), which at long context is large (a 32k-token prompt of a 70B model reserves
    gigabytes); a server that chunks its prefill passes the chunk size (Chapter 7).
    """
    model = _as_model(model)
    _instance('deployment', deployment, Deployment)
    c, d = _chip(chip), deployment
    require_positive(context=context)
    n = _workspace_tokens(context, prompt_len, workspace_tokens)
    free = c.hbm_bytes - weights_per_chip(model, d) - _workspace(model, d, n)
    if free <= 0:
        return 0
    return d.ep * int(free // kv_bytes_per_sequence_per_chip(model, d, context))


def chips_to_hold(model: Transformer, *, chip: "str | Chip", weights: str = "bf16", kv: str = "bf16",
                  batch: int = 0, context: int = 0) -> int:
    """Fewest chips whose HBM holds the weights and the KV cache of `batch` x `context` tokens."""
    model = _as_model(model)
    c = _chip(chip)
    batch = _require_count("batch", batch, minimum=0, maximum=MAX_TOKENS)
    context = _require_count("context", context, minimum=0, maximum=MAX_TOKENS)
    units.canonical_dtype(kv, "kv")
    total = tr.params(model).total_params * units.dtype_bytes(weights, "weights")
    if batch and context:
        total += tr.kv_cache(model, seq_len=context, batch=batch, dtype=kv).bytes
    return max(1, math.ceil(total / c.hbm_bytes))


def critical_decode_batch(chip: "str | Chip", *, weights: str = "bf16") -> float:
    """Batch at which the weight matmuls of a decode step turn compute-bound (attention aside).

    Each step reads every weight once (w bytes) for 2 B FLOPs per weight: B* = peak w / (2 HBM),
    chapter 1's critical batch at the weight dtype (`roofline.critical_batch`). Reading the KV
    cache only pushes it higher; fp8 weights on a chip with fp8 matmuls double the peak too.
    """
    from . import roofline

    c = _chip(chip)
    _text("weights", weights)
    if weights in ("fp8", "fp4") and "fp8" in c.flops_per_s:
        return c.peak_flops_per_s("fp8") * units.dtype_bytes(weights, "weights") / (2 * c.hbm_bytes_per_s)
    units.canonical_dtype(weights, "weights")
    return roofline.critical_batch(c, "bf16", weight_dtype=weights)


def estimate(model: Transformer, *, chip: "str | Chip", deployment: Deployment | None = None, batch: "int | str",
             prompt_len: int, output_len: int, bandwidth_efficiency: float | None = None,
             compute_efficiency: float | None = None, workspace_tokens: int | None = None,
             layer_overhead_seconds: float | None = None) -> ServingEstimate:
    """Latency, throughput and memory of serving `model` at `batch` sequences (Chapter 7).

    Decode runs at the average context prompt_len + output_len / 2; memory holds the full
    prompt_len + output_len for every sequence, and the workspace of one prefill pass of
    `workspace_tokens` tokens (default: the whole prompt; pass a chunk size for chunked prefill).
    `batch="max"` serves the largest batch that fits. Every forward pass (a prefill pass or a decode
    step) also pays `layer_overhead_seconds` per layer (default: the chip family's fitted value,
    `default_layer_overhead`).
    """
    model = _as_model(model)
    if not isinstance(model, Transformer):
        raise Error(f"model must be a scalebook.models.Transformer, got {type(model).__name__}")
    d = Deployment() if deployment is None else deployment
    if not isinstance(d, Deployment):
        raise Error(f"deployment must be a scalebook.inference.Deployment, got {type(d).__name__}")
    c = _chip(chip)
    for name, v in (("prompt_len", prompt_len), ("output_len", output_len)):
        _positive_int(name, v, MAX_TOKENS)
    d = d.resolve(model)
    check_deployment(model, d)
    bw_default, c_default = default_efficiency(c)
    bw = bw_default if bandwidth_efficiency is None else bandwidth_efficiency
    ce = c_default if compute_efficiency is None else compute_efficiency
    for name, v in (("bandwidth_efficiency", bw), ("compute_efficiency", ce)):
        require_positive(**{name: v})
        if v > 1:
            raise Error(f"{name} is a fraction, at most 1; got {v:g}")
    lo = default_layer_overhead(c) if layer_overhead_seconds is None else layer_overhead_seconds
    _number("layer_overhead_seconds", lo)
    if lo < 0:
        raise Error(f"layer_overhead_seconds must be >= 0, got {lo!r}")
    context = prompt_len + output_len
    ws = _workspace_tokens(context, prompt_len, workspace_tokens)
    most = max_batch(model, chip=c, deployment=d, context=context, workspace_tokens=ws)
    if isinstance(batch, str) and batch == "max":
        if most < 1:
            raise Error(f"{model.name} does not fit on {d.chips} {c.name} with {d.label()}: not even one sequence "
                        f"of {context} tokens; use more chips or smaller weights")
        batch = most
    _positive_int("batch", batch)
    topo = deployment_topology(c, d)
    pre = _step(model, c, d, topo, sequences=d.ep, new_tokens=prompt_len, context=prompt_len, prefill=True,
                bw_eff=bw, c_eff=ce, overhead=lo)
    pre_batch = _step(model, c, d, topo, sequences=batch, new_tokens=prompt_len, context=prompt_len, prefill=True,
                      bw_eff=bw, c_eff=ce, overhead=lo)
    avg = prompt_len + output_len // 2
    dec = _step(model, c, d, topo, sequences=batch / d.pp, new_tokens=1, context=avg, prefill=False,
                bw_eff=bw, c_eff=ce, overhead=lo)
    mem = memory_per_chip(model, chip=c, deployment=d, batch=batch, context=context, workspace_tokens=ws)
    return ServingEstimate(model_name=model.name, chip=c, deployment=d, batch=batch, prompt_len=prompt_len,
                           output_len=output_len, bandwidth_efficiency=bw, compute_efficiency=ce, prefill=pre,
                           decode=dec, memory=mem, max_batch=most, prefill_batch=pre_batch, workspace_tokens=ws,
                           model=model, layer_overhead_seconds=lo)


# --- calibration -------------------------------------------------------------------------------

def _bisect(get, target: float, increasing: bool) -> float:
    lo, hi = 1e-3, 1.0
    for _ in range(50):
        mid = (lo + hi) / 2
        too_low = get(mid) < target if increasing else get(mid) > target
        lo, hi = (mid, hi) if too_low else (lo, mid)
    return hi


def fit_efficiencies(model: Transformer, *, chip: "str | Chip", decode: dict, prefill: dict,
                     decode_seconds_per_token: float, prefill_batch_seconds: float) -> tuple[float, float]:
    """(bandwidth, compute) efficiencies at which `estimate` reproduces a published decode
    latency and a published batched prefill time (each dict holds the estimate's other keyword
    arguments: deployment, batch, prompt_len, output_len). Alternating bisection, a few rounds."""
    model = _as_model(model)
    _instance('decode', decode, dict), _instance('prefill', prefill, dict)
    require_positive(decode_seconds_per_token=decode_seconds_per_token, prefill_batch_seconds=prefill_batch_seconds)
    bw, ce = 0.8, 0.6
    for _ in range(4):
        bw = _bisect(lambda x: estimate(model, chip=chip, bandwidth_efficiency=x, compute_efficiency=ce,
                                        **decode).per_token_latency_seconds, decode_seconds_per_token, False)
        ce = _bisect(lambda x: estimate(model, chip=chip, bandwidth_efficiency=bw, compute_efficiency=x,
                                        **prefill).prefill_batch_seconds, prefill_batch_seconds, False)
    return bw, ce


def refit_default_efficiency(family: str) -> tuple[float, float]:
    """Fit a chip family's default (bandwidth, compute) efficiency again on its anchor results,
    named in `data/serving_efficiency.json` (results from `scalebook.serving_results`)."""
    _text('family', family)
    from . import serving_results

    entry = load("serving_efficiency").get(family)
    if entry is None or "decode_anchor" not in entry:
        raise Error(f"no anchor results for chip family {family!r}; valid: "
                    + ", ".join(k for k, v in load("serving_efficiency").items() if isinstance(v, dict) and "decode_anchor" in v))
    runs = {}
    for key in ("decode_anchor", "prefill_anchor"):
        r = serving_results.published_serving_result(entry[key])
        runs[key] = r
    dec, pre = runs["decode_anchor"], runs["prefill_anchor"]

    def kwargs(r):
        return dict(deployment=Deployment(tp=r.tp or r.chips, ep=r.ep or 1, pp=r.pp or 1, weights=r.weights,
                                          kv=r.kv or "bf16"),
                    batch=r.batch, prompt_len=r.prompt_len, output_len=r.output_len)

    return fit_efficiencies(dec.model_config(), chip=dec.chip, decode=kwargs(dec), prefill=kwargs(pre),
                            decode_seconds_per_token=dec.reported_per_token_latency_seconds,
                            prefill_batch_seconds=pre.reported_prefill_seconds)
