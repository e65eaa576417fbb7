"""Parameters, FLOPs and bytes of a `Transformer` (Chapter 4).

Notation (Chapter 4): L layers, D d_model, N_q query heads, K kv heads, H head dim, F MLP width
(one branch), V vocabulary, T sequence length, B batch; MoE: E routed experts, k per token, S
shared, F_e expert width; MLA: d_c kv latent, d'_c q latent, d_R RoPE key dim. m = 3 matrices
for a gated MLP, 2 for a plain one.

Conventions, used everywhere below:

- A matmul [P, Q] x [Q, R] costs 2 P Q R FLOPs (a multiply and an add per term). Per token a
  weight matrix of n parameters costs 2 n FLOPs forward. Embedding lookups cost nothing.
- Backward costs twice the forward (gradients with respect to the input and to the weights are
  one matmul each), so training costs 3 x forward per token: the "6 N" of 6 N D.
- Attention scores: each query dots T keys (QK^T, 2 T N (H + d_R) FLOPs per token per layer)
  and mixes T values (AV, 2 T N_q H). `causal=True` counts T / 2 keys per query on average, which
  halves both, as a kernel that skips the masked half does (FlashAttention with causal blocks);
  a dense implementation that masks after computing all T x T scores does the full `causal=False`
  work.
- Only matmul FLOPs are counted; norms, softmax, activations and residual adds cost O(D) or
  O(N T) per token, a fraction of order 1/D of the matmuls (Chapter 4's XLA cross-check).
- MoE: a token passes through its k routed experts and the S shared ones; "active" parameters
  are those one token uses.
"""
from __future__ import annotations

from dataclasses import dataclass

from ._readable import Readable
from . import units
from .errors import Error, choose, require_non_negative, require_positive
from .errors import require_flag as _require_flag
from .errors import instance as _instance, integer as _integer, number as _number, text as _text
from .errors import model as _as_model
from .models import Transformer

REMAT_POLICIES = ("none", "matmul_outputs", "full")
#: What `activation_memory` accepts: the remat policies plus 'attention', Korthikanti et al.
#: (2022)'s selective recomputation (keep everything but the [B, N, T, T] tensors of the
#: attention core and recompute QK^T, softmax, dropout and AV in the backward pass).
ACTIVATION_POLICIES = ("none", "attention", "matmul_outputs", "full")


def format_count(n: float) -> str:
    """'8.03B', '70.6B', '1.05M': a parameter count with a decimal suffix."""
    n = _number('n', n)
    for scale, suffix in ((1e12, "T"), (1e9, "B"), (1e6, "M"), (1e3, "k")):
        if abs(n) >= scale * 0.9995:
            return f"{n / scale:.3g}{suffix}"
    return f"{n:.3g}"


def _html_table(head: tuple[str, ...], rows: list[tuple], caption: str = "") -> str:
    th = "".join(f"<th style='text-align:right'>{h}</th>" for h in head)
    body = "".join("<tr>" + "".join(f"<td style='text-align:right'>{c}</td>" for c in r) + "</tr>" for r in rows)
    cap = f"<caption>{caption}</caption>" if caption else ""
    return f"<table>{cap}<thead><tr>{th}</tr></thead><tbody>{body}</tbody></table>"


# --- per-layer weights -----------------------------------------------------------------------

def _mlp_matrices(model: Transformer) -> int:
    return 3 if model.mlp == "gated" else 2


def _attention_weights(model: Transformer) -> int:
    """Matmul weights of one attention layer.

    Standard: Q and O are D x N_q H, K and V are D x K H: 2 D N_q H + 2 D K H.
    MLA: queries D x d'_c then d'_c x N (H + d_R) (or D x N (H + d_R) without q compression);
    keys/values D x (d_c + d_R) down, d_c x 2 N_q H up; O is N_q H x D.
    """
    D, N, K, H = model.d_model, model.heads, model.kv_heads, model.head_dim
    if not model.is_mla:
        return 2 * D * N * H + 2 * D * K * H
    R, dc, dq = model.mla_rope_head_dim, model.mla_kv_compression_dim, model.mla_q_compression_dim
    q = D * dq + dq * N * (H + R) if dq else D * N * (H + R)
    return q + D * (dc + R) + dc * 2 * N * H + N * H * D


def _attention_extras(model: Transformer) -> int:
    """Non-matmul attention parameters: biases, MLA's latent norms."""
    n = 0
    if model.biases:
        n += model.heads * model.head_dim + 2 * model.kv_heads * model.head_dim + model.d_model
    if model.is_mla:
        n += model.mla_kv_compression_dim + model.mla_q_compression_dim
    return n


def _mlp_weights(model: Transformer, width: int) -> int:
    return _mlp_matrices(model) * model.d_model * width


def _mlp_biases(model: Transformer, width: int) -> int:
    return ((_mlp_matrices(model) - 1) * width + model.d_model) if model.biases else 0


# --- parameters --------------------------------------------------------------------------------

@dataclass(frozen=True)
class ParamCounts(Readable):
    """Parameters of a model by part, whole model (Chapter 4). Counts, not bytes.

    `embedding_params` = V D (+ learned positions x D); `unembedding_params` = V D, or 0 when
    tied; `attention_params` = L x attention weights (+ biases, MLA latent norms); `mlp_params` =
    dense layers x m D F; `routed_expert_params` = MoE layers x E m D F_e; `shared_expert_params` =
    MoE layers x S m D F_e; `router_params` = MoE layers x D E; `norm_params` = (L x norms per
    layer + 1) x D (x 2 with biases).
    """

    model_name: str
    embedding_params: int
    unembedding_params: int
    attention_params: int
    mlp_params: int
    routed_expert_params: int
    shared_expert_params: int
    router_params: int
    norm_params: int
    #: Routed-expert parameters one token uses: MoE layers x k m D F_e.
    active_routed_expert_params: int

    @property
    def total_params(self) -> int:
        return (self.embedding_params + self.unembedding_params + self.attention_params + self.mlp_params
                + self.routed_expert_params + self.shared_expert_params + self.router_params + self.norm_params)

    @property
    def active_params(self) -> int:
        """Parameters one token uses: the total with only k of the E routed experts."""
        return self.total_params - self.routed_expert_params + self.active_routed_expert_params

    @property
    def non_embedding_params(self) -> int:
        """Total less the embedding and unembedding tables (Kaplan et al.'s N)."""
        return self.total_params - self.embedding_params - self.unembedding_params

    def parts(self) -> dict[str, int]:
        """Part name -> parameters, non-zero parts only."""
        d = {"embedding": self.embedding_params, "unembedding": self.unembedding_params,
             "attention": self.attention_params, "MLP": self.mlp_params,
             "routed experts": self.routed_expert_params, "shared experts": self.shared_expert_params,
             "router": self.router_params, "norms": self.norm_params}
        return {k: v for k, v in d.items() if v}

    def __repr__(self) -> str:
        parts = ", ".join(f"{k} {format_count(v)}" for k, v in self.parts().items())
        active = "" if self.active_params == self.total_params else f", active {format_count(self.active_params)}"
        return f"ParamCounts({self.model_name}: total {format_count(self.total_params)}{active}; {parts})"

    def _repr_html_(self) -> str:
        total = self.total_params
        rows = [(k, f"{v:,}", format_count(v), f"{units.fmt_percent(v / total, 1)}") for k, v in self.parts().items()]
        rows.append(("<b>total</b>", f"<b>{total:,}</b>", f"<b>{format_count(total)}</b>", "100%"))
        if self.active_params != total:
            rows.append(("active per token", f"{self.active_params:,}", format_count(self.active_params),
                         f"{units.fmt_percent(self.active_params / total, 1)}"))
        return _html_table(("part", "params", "", "share"), rows, f"Parameters of {self.model_name}")


def params(model: Transformer) -> ParamCounts:
    """Parameter counts of `model` by part, with total and active (Chapter 4).

    Dense LLaMA-style layer: 2 D N_q H + 2 D K H (attention) + 3 D F (gated MLP) + 2 D (norms);
    total = L x layer + V D (x 2 untied) + D (final norm).
    """
    model = _as_model(model)
    L, D, V = model.layers, model.d_model, model.vocab
    moe = model.moe_layers
    per_expert = _mlp_weights(model, model.expert_d_ff) + _mlp_biases(model, model.expert_d_ff) if model.is_moe else 0
    norm_each = D * (2 if model.biases else 1)
    return ParamCounts(
        model_name=model.name,
        embedding_params=V * D + model.learned_positions * D,
        unembedding_params=0 if model.tied_embeddings else V * D,
        attention_params=L * (_attention_weights(model) + _attention_extras(model)),
        mlp_params=model.dense_layers * (_mlp_weights(model, model.d_ff) + _mlp_biases(model, model.d_ff)),
        routed_expert_params=moe * model.routed_experts * per_expert,
        shared_expert_params=moe * model.shared_experts * per_expert,
        router_params=moe * (D * model.routed_experts + (model.routed_experts if model.biases else 0)),
        norm_params=(L * model.norms_per_layer + 1) * norm_each,
        active_routed_expert_params=moe * model.experts_per_token * per_expert,
    )


# --- FLOPs ---------------------------------------------------------------------------------------

@dataclass(frozen=True)
class FlopsPerToken(Readable):
    """Matmul FLOPs per token of one forward pass, by part (Chapter 4).

    `attention_projection_flops` = 2 x attention weights per layer (QKV and O);
    `attention_score_flops` = QK^T + AV = 2 T_eff N (2H + d_R) per layer, T_eff = T/2 if causal
    else T; `mlp_flops` = 2 m D F per dense layer plus 2 m D F_e (k + S) per MoE layer;
    `router_flops` = 2 D E per MoE layer; `unembedding_flops` = 2 D V (once per model).
    Summed over the layers it covers (all of them for `flops_per_token`, one for
    `layer_flops_per_token`).
    """

    model_name: str
    seq_len: int
    causal: bool
    attention_projection_flops: float
    attention_score_flops: float
    mlp_flops: float
    router_flops: float
    unembedding_flops: float

    @property
    def forward_flops(self) -> float:
        """All matmul FLOPs of one forward pass per token, attention scores included."""
        return (self.attention_projection_flops + self.attention_score_flops + self.mlp_flops
                + self.router_flops + self.unembedding_flops)

    @property
    def forward_flops_without_attention(self) -> float:
        """Forward FLOPs less the attention scores (QK^T, AV): the 2 N part of 2 N + attention."""
        return self.forward_flops - self.attention_score_flops

    @property
    def backward_flops(self) -> float:
        """2 x forward: one matmul for the input gradient, one for the weight gradient."""
        return 2 * self.forward_flops

    @property
    def training_flops(self) -> float:
        """Forward + backward = 3 x forward per token."""
        return 3 * self.forward_flops

    @property
    def attention_fraction(self) -> float:
        """Share of the forward FLOPs spent on attention scores."""
        return self.attention_score_flops / self.forward_flops

    def parts(self) -> dict[str, float]:
        d = {"attention projections": self.attention_projection_flops,
             "attention scores": self.attention_score_flops, "MLP / experts": self.mlp_flops,
             "router": self.router_flops, "unembedding": self.unembedding_flops}
        return {k: v for k, v in d.items() if v}

    def __repr__(self) -> str:
        f = units.format_quantity
        return (f"FlopsPerToken({self.model_name}, T={self.seq_len}{', causal' if self.causal else ''}: "
                f"forward {f(self.forward_flops, 'FLOP')}, training {f(self.training_flops, 'FLOP')}, "
                f"attention {units.fmt_percent(self.attention_fraction, 1)})")

    def _repr_html_(self) -> str:
        f = units.format_quantity
        fw = self.forward_flops
        rows = [(k, f(v, "FLOP"), f"{units.fmt_percent(v / fw, 1)}") for k, v in self.parts().items()]
        rows += [("<b>forward</b>", f"<b>{f(fw, 'FLOP')}</b>", "100%"),
                 ("training (3x)", f(self.training_flops, "FLOP"), "300%")]
        cap = f"FLOPs per token of {self.model_name}, T={self.seq_len}{' (causal)' if self.causal else ''}"
        return _html_table(("part", "FLOPs per token", "share"), rows, cap)


def _score_flops(model: Transformer, seq_len: float, causal: bool) -> float:
    t = seq_len / 2 if causal else seq_len
    return 2 * t * model.heads * (2 * model.head_dim + model.mla_rope_head_dim)


def _check_seq(seq_len: int) -> None:
    require_non_negative(seq_len=seq_len)


def flops_per_token(model: Transformer, *, seq_len: int = 0, causal: bool = True) -> FlopsPerToken:
    """Forward matmul FLOPs per token of the whole model at sequence length `seq_len` (Chapter 4).

    forward = 2 x active matmul parameters (embedding lookup excluded, unembedding 2 D V included)
    + attention scores 4 T_eff N_q H per layer (T_eff = T/2 when `causal`). `seq_len=0` leaves the
    attention scores out. Training per token is 3 x forward (`.training_flops`).
    """
    _require_flag('causal', causal)
    model = _as_model(model)
    _check_seq(seq_len)
    D, L = model.d_model, model.layers
    moe_width = (model.experts_per_token + model.shared_experts) * model.expert_d_ff
    return FlopsPerToken(
        model_name=model.name, seq_len=seq_len, causal=causal,
        attention_projection_flops=2.0 * L * _attention_weights(model),
        attention_score_flops=L * _score_flops(model, seq_len, causal),
        mlp_flops=2.0 * (model.dense_layers * _mlp_weights(model, model.d_ff)
                         + model.moe_layers * _mlp_weights(model, moe_width)),
        router_flops=2.0 * model.moe_layers * D * model.routed_experts,
        unembedding_flops=2.0 * D * model.vocab,
    )


def layer_flops_per_token(model: Transformer, *, seq_len: int = 0, causal: bool = True,
                          moe: bool | None = None) -> FlopsPerToken:
    """Forward matmul FLOPs per token of one layer (no unembedding) (Chapter 4).

    `moe` picks a MoE layer or a dense one; default: MoE if the model has MoE layers.
    """
    _require_flag('causal', causal)
    if moe is not None:
        _require_flag('moe', moe)
    model = _as_model(model)
    _check_seq(seq_len)
    if moe is None:
        moe = model.moe_layers > 0
    if moe and not model.moe_layers:
        raise Error(f"{model.name} has no MoE layers; use moe=False")
    if not moe and not model.dense_layers:
        raise Error(f"{model.name} has no dense layers; use moe=True")
    D = model.d_model
    width = (model.experts_per_token + model.shared_experts) * model.expert_d_ff if moe else model.d_ff
    return FlopsPerToken(
        model_name=model.name, seq_len=seq_len, causal=causal,
        attention_projection_flops=2.0 * _attention_weights(model),
        attention_score_flops=_score_flops(model, seq_len, causal),
        mlp_flops=2.0 * _mlp_weights(model, width),
        router_flops=2.0 * D * model.routed_experts if moe else 0.0,
        unembedding_flops=0.0,
    )


@dataclass(frozen=True)
class ElementwiseFlops(Readable):
    """FLOPs per token of one layer's elementwise work, by operation (Chapter 4).

    Counted per element, a transcendental (exp, tanh) as one FLOP, as a vector unit issues it:

    - `norm_flops`: RMSNorm, y = x / sqrt(mean(x^2) + eps) x g: square, sum, scale, times the
      gain, 4 FLOPs per element of its D-wide input (the mean's division and the rsqrt are one
      each per token, left out); two norms per layer (one in a parallel block): 8 D.
    - `residual_flops`: the two residual adds, D each: 2 D.
    - `activation_flops`: gated MLP, act(gate) x up with SiLU(x) = x / (1 + exp(-x)) (negate,
      exp, add, divide: 4) and the product (1): 5 per element of the F-wide branch; a plain MLP's
      GELU in its tanh form, ``0.5*x*(1 + tanh(sqrt(2/pi)*(x + 0.044715*x**3)))``: 9 per element. An
      MoE layer applies it to the k + S experts a token uses, (k + S) F_e wide.
    - `rotary_flops`: RoPE turns each pair (a, b) of a query or key into (a cos - b sin,
      a sin + b cos): 4 multiplies and 2 adds per pair, 3 per element, the angles precomputed:
      3 (N + K) H (MLA: 3 (N + 1) d_R, the positional part only).
    - `softmax_flops`: per score, the running maximum, the subtraction, exp, the sum and the
      division: 5 per score, N T_eff scores per token (T_eff = T/2 when `causal`). The same count
      whether or not a fused kernel does it; fusing saves the bytes, not these FLOPs. The 1/sqrt(H)
      scale is folded into the queries (N_q H per token, left out).
    - `router_flops`: an MoE layer's softmax over its E routed experts, 5 E (top-k selection left out).
    """

    model_name: str
    seq_len: int
    causal: bool
    norm_flops: float
    residual_flops: float
    activation_flops: float
    rotary_flops: float
    softmax_flops: float
    router_flops: float

    @property
    def flops(self) -> float:
        """All elementwise FLOPs of the layer per token."""
        return (self.norm_flops + self.residual_flops + self.activation_flops + self.rotary_flops
                + self.softmax_flops + self.router_flops)

    def parts(self) -> dict[str, float]:
        d = {"norms": self.norm_flops, "residual adds": self.residual_flops,
             "activation function": self.activation_flops, "rotary embeddings": self.rotary_flops,
             "softmax": self.softmax_flops, "router softmax": self.router_flops}
        return {k: v for k, v in d.items() if v}

    def __repr__(self) -> str:
        return (f"ElementwiseFlops({self.model_name}, T={self.seq_len}{', causal' if self.causal else ''}: "
                f"{units.format_quantity(self.flops, 'FLOP')} per token and layer)")

    def _repr_html_(self) -> str:
        f = units.format_quantity
        rows = [(k, f(v, "FLOP")) for k, v in self.parts().items()]
        rows.append(("<b>one layer</b>", f"<b>{f(self.flops, 'FLOP')}</b>"))
        cap = f"Elementwise FLOPs per token of one layer of {self.model_name}, T={self.seq_len}"
        return _html_table(("operation", "FLOPs per token"), rows, cap)


def layer_elementwise_flops_per_token(model: Transformer, *, seq_len: int, causal: bool = True,
                                      moe: bool | None = None) -> ElementwiseFlops:
    """Elementwise FLOPs per token of one layer (Chapter 4): norms, residual adds, the MLP's
    activation function, rotary embeddings, the attention softmax (and an MoE router's softmax).

    Sequential gated layer: 8 D + 2 D + 5 F + 3 (N + K) H + 5 N T_eff, each term derived in
    `ElementwiseFlops`. Beside the layer's matmul FLOPs (`layer_flops_per_token`) this is a share
    of order 1/D; the time these passes cost comes from the bytes each reads and writes, not
    from these FLOPs. `moe` as in `layer_flops_per_token`.
    """
    _require_flag('causal', causal)
    model = _as_model(model)
    _check_seq(seq_len)
    mm = layer_flops_per_token(model, seq_len=seq_len, causal=causal, moe=moe)  # checks `moe`
    is_moe = mm.router_flops > 0
    D, N, K, H = model.d_model, model.heads, model.kv_heads, model.head_dim
    width = (model.experts_per_token + model.shared_experts) * model.expert_d_ff if is_moe else model.d_ff
    t_eff = seq_len / 2 if causal else seq_len
    rope = 3.0 * (N + 1) * model.mla_rope_head_dim if model.is_mla else 3.0 * (N + K) * H
    return ElementwiseFlops(
        model_name=model.name, seq_len=seq_len, causal=causal,
        norm_flops=4.0 * D * (1 if model.parallel_block else 2),
        residual_flops=2.0 * D,
        activation_flops=(5.0 if model.mlp == "gated" else 9.0) * width,
        rotary_flops=rope,
        softmax_flops=5.0 * N * t_eff,
        router_flops=5.0 * model.routed_experts if is_moe else 0.0,
    )


def attention_crossover_seq_len(model: Transformer, *, causal: bool = False, moe: bool | None = None) -> float:
    """Sequence length T at which one layer's attention-score FLOPs equal all its other FLOPs.

    Score FLOPs per token (QK^T and AV) grow as T; the weight matmuls do not, so
    T* = (projection + MLP FLOPs) / (score FLOPs per unit of T). For an MHA layer with N_q H = D
    and a gated MLP of F = 4 D, T* = 8 D without the causal halving and 16 D with it (Chapter 4).
    """
    _require_flag('causal', causal)
    if moe is not None:
        _require_flag('moe', moe)
    model = _as_model(model)
    one = layer_flops_per_token(model, seq_len=1, causal=causal, moe=moe)
    return one.forward_flops_without_attention / one.attention_score_flops


@dataclass(frozen=True)
class TrainingFlops(Readable):
    """FLOPs to train on `tokens` tokens: exact count beside the 6 N D rule (Chapter 4).

    `flops` = 3 x forward FLOPs per token x tokens (attention at `seq_len` included);
    `six_nd_flops` = 6 x active params x tokens, the approximation.
    """

    model_name: str
    tokens: float
    seq_len: int
    causal: bool
    active_params: int
    flops: float
    six_nd_flops: float

    @property
    def ratio(self) -> float:
        """Exact / 6 N D: above 1 where attention scores matter, below where embeddings do."""
        return self.flops / self.six_nd_flops

    def __repr__(self) -> str:
        return (f"TrainingFlops({self.model_name}, {units.fmt_count(self.tokens)} tokens at T={self.seq_len}: "
                f"{units.fmt_count(self.flops)} FLOPs exact, 6ND = {units.fmt_count(self.six_nd_flops)} FLOPs, ratio {self.ratio:.3f})")


def training_flops(model: Transformer, *, tokens: float, seq_len: int = 0, causal: bool = True) -> TrainingFlops:
    """Training FLOPs for a token budget (Chapter 4): exact 3 x forward x D beside 6 N D.

    N is the active parameter count (embedding included, as most papers quote it); the exact
    count adds attention scores and leaves out the FLOP-free embedding lookup.
    """
    _require_flag('causal', causal)
    model = _as_model(model)
    require_positive(tokens=tokens)
    per = flops_per_token(model, seq_len=seq_len, causal=causal)
    n = params(model).active_params
    return TrainingFlops(model_name=model.name, tokens=float(tokens), seq_len=seq_len, causal=causal,
                         active_params=n, flops=per.training_flops * tokens, six_nd_flops=6.0 * n * tokens)


# --- memory: parameters, gradients, optimizer state ---------------------------------------------

@dataclass(frozen=True)
class TrainingMemory(Readable):
    """Bytes of the training state, whole model (Chapter 4). Activations are separate.

    params x (param dtype + grad dtype + Adam first moment + second moment + master copy).
    The default mixed-precision recipe (bf16 params and grads, fp32 moments and master weights)
    is 2 + 2 + 4 + 4 + 4 = 16 bytes per parameter.
    """

    model_name: str
    params: int
    param_bytes: float
    grad_bytes: float
    first_moment_bytes: float
    second_moment_bytes: float
    master_bytes: float

    @property
    def optimizer_bytes(self) -> float:
        """Adam's two moments plus the master weights (the part ZeRO-1 shards)."""
        return self.first_moment_bytes + self.second_moment_bytes + self.master_bytes

    @property
    def bytes(self) -> float:
        return self.param_bytes + self.grad_bytes + self.optimizer_bytes

    @property
    def bytes_per_param(self) -> float:
        return self.bytes / self.params

    def parts(self) -> dict[str, float]:
        d = {"parameters": self.param_bytes, "gradients": self.grad_bytes,
             "Adam first moment": self.first_moment_bytes, "Adam second moment": self.second_moment_bytes,
             "master weights": self.master_bytes}
        return {k: v for k, v in d.items() if v}

    def __repr__(self) -> str:
        f = units.format_quantity
        return (f"TrainingMemory({self.model_name}: {f(self.bytes, 'B')} = {self.bytes_per_param:g} B/param x "
                f"{format_count(self.params)}; " + ", ".join(f"{k} {f(v, 'B')}" for k, v in self.parts().items()) + ")")

    def _repr_html_(self) -> str:
        f = units.format_quantity
        rows = [(k, f(v, "B"), f"{v / self.params:g}") for k, v in self.parts().items()]
        rows.append(("<b>total</b>", f"<b>{f(self.bytes, 'B')}</b>", f"<b>{self.bytes_per_param:g}</b>"))
        return _html_table(("state", "bytes", "bytes/param"), rows, f"Training state of {self.model_name}")


def training_memory(model: Transformer, *, param_dtype: str = "bf16", grad_dtype: str = "bf16",
                    first_moment_dtype: str = "fp32", second_moment_dtype: str = "fp32",
                    master_dtype: str | None = "fp32") -> TrainingMemory:
    """Bytes of parameters, gradients and Adam state for all (total, not active) parameters.

    bytes = P x (b_param + b_grad + b_m + b_v + b_master); `master_dtype=None` keeps no master
    copy (pure bf16 training). Chapter 4.
    """
    model = _as_model(model)
    n = params(model).total_params
    given = {"param_dtype": param_dtype, "grad_dtype": grad_dtype, "first_moment_dtype": first_moment_dtype,
             "second_moment_dtype": second_moment_dtype, "master_dtype": master_dtype}
    b = {name: units.dtype_bytes(dtype, name) for name, dtype in given.items()
         if dtype is not None or name != "master_dtype"}  # no master copy: master_dtype=None
    return TrainingMemory(
        model_name=model.name, params=n, param_bytes=n * b["param_dtype"], grad_bytes=n * b["grad_dtype"],
        first_moment_bytes=n * b["first_moment_dtype"], second_moment_bytes=n * b["second_moment_dtype"],
        master_bytes=n * b["master_dtype"] if master_dtype is not None else 0.0,
    )


# --- memory: activations ---------------------------------------------------------------------------

@dataclass(frozen=True)
class SavedTensor:
    """One activation kept for the backward pass: `elements_per_token` x B T elements.

    `d_wide`: a [B, T, D] tensor outside the tensor-parallel region (layer input, norms, residual,
    output projection, dropout masks of the residual stream), whole on every TP chip unless
    sequence parallelism splits it; the others (Q, K, V, scores, MLP hidden) are split over tp.
    """

    name: str
    shape: str
    elements_per_token: float
    bytes_per_element: float
    d_wide: bool = False


@dataclass(frozen=True)
class ActivationMemory(Readable):
    """Activations a layer keeps for the backward pass under a remat policy (Chapter 4).

    Policies (what each layer saves; everything else is recomputed in the backward pass):

    - 'none': everything the backward needs, 12 tensors for a sequential gated-MLP layer:
      layer input, norm1 output, Q, K, V, softmax probabilities [B, N, T, T] (or, with
      `flash_attention`, the fp32 log-sum-exp [B, N, T]), attention output, residual after
      attention, norm2 output, gate, up, act(gate) x up (a plain MLP: up and act(up), 11).
    - 'matmul_outputs': the layer input and the outputs of matmuls against weights that the
      backward needs (jax.checkpoint_policies.dots_with_no_batch_dims_saveable): Q, K, V,
      output projection, gate and up (plain: up): 7 tensors (6). QK^T and AV are recomputed.
    - 'attention': Korthikanti et al. (2022)'s selective recomputation: what 'none' keeps
      less the [B, N, T, T] tensors (probabilities, and with `dropout` its mask and output);
      QK^T, softmax and AV are recomputed from the saved Q, K, V.
    - 'full': the layer input only, 1 tensor; the backward recomputes the whole layer.

    `dropout=True` adds the 1-byte masks of the dropout after attention and after the MLP
    (and, without flash attention, the mask and output of dropout on the probabilities).

    `tensors` lists one layer (the MoE kind if the model has MoE layers); `bytes` sums all
    layers; `remat_flops_per_token` is the extra forward FLOPs per token, all layers, that
    recomputation costs ('full': a layer forward less the MLP down projection, whose output no
    gradient needs; 'matmul_outputs': QK^T and AV).
    """

    model_name: str
    policy: str
    batch: int
    seq_len: int
    tensors: tuple[SavedTensor, ...]
    bytes: float
    remat_flops_per_token: float

    @property
    def saved_tensors(self) -> int:
        return len(self.tensors)

    @property
    def tokens(self) -> int:
        return self.batch * self.seq_len

    @property
    def layer_bytes(self) -> float:
        """Bytes of the one layer that `tensors` lists."""
        return sum(t.elements_per_token * t.bytes_per_element for t in self.tensors) * self.tokens

    def __repr__(self) -> str:
        f = units.format_quantity
        return (f"ActivationMemory({self.model_name}, remat={self.policy!r}, B={self.batch}, T={self.seq_len}: "
                f"{self.saved_tensors} tensors, {f(self.layer_bytes, 'B')} per layer, {f(self.bytes, 'B')} in all)")

    def _repr_html_(self) -> str:
        f = units.format_quantity
        rows = [(t.name, t.shape, f(t.elements_per_token * t.bytes_per_element * self.tokens, "B"))
                for t in self.tensors]
        rows.append(("<b>one layer</b>", "", f"<b>{f(self.layer_bytes, 'B')}</b>"))
        rows.append(("all layers", "", f(self.bytes, "B")))
        cap = f"Saved activations of {self.model_name}, remat={self.policy!r}, B={self.batch}, T={self.seq_len}"
        return _html_table(("tensor", "shape", "bytes"), rows, cap)


def _saved_tensors(model: Transformer, *, seq_len: int, policy: str, b: float, flash: bool,
                   moe: bool, dropout: bool = False) -> tuple[SavedTensor, ...]:
    D, N, K, H, T = model.d_model, model.heads, model.kv_heads, model.head_dim, seq_len
    R = model.mla_rope_head_dim
    width = (model.experts_per_token + model.shared_experts) * model.expert_d_ff if moe else model.d_ff
    fw = "k F_e" if moe else "F"
    t = SavedTensor
    x = t("layer input", "[B,T,D]", D, b, d_wide=True)
    if policy == "full":
        return (x,)
    qkv = [t("Q", "[B,T,N,H+d_R]" if model.is_mla else "[B,T,N,H]", N * (H + R), b),
           t("K", "[B,T,N,H+d_R]" if model.is_mla else "[B,T,K,H]", K * (H + R), b),
           t("V", "[B,T,K,H]", K * H, b)]
    if model.is_mla:
        latents = [t("kv latent", "[B,T,d_c+d_R]", model.mla_kv_compression_dim + R, b)]
        if model.mla_q_compression_dim:
            latents.insert(0, t("q latent", "[B,T,d'_c]", model.mla_q_compression_dim, b))
        qkv = latents + qkv
    gated = model.mlp == "gated"
    if policy == "matmul_outputs":
        mlp = [t("gate", f"[B,T,{fw}]", width, b), t("up", f"[B,T,{fw}]", width, b)] if gated else \
              [t("up", f"[B,T,{fw}]", width, b)]
        return (x, *qkv, t("output projection", "[B,T,D]", D, b, d_wide=True), *mlp)
    # 'none' and 'attention' (Korthikanti et al. 2022's selective recomputation, which drops only
    # the [B, N, T, T] tensors and recomputes the attention core from the saved Q, K, V).
    if flash:
        core = [t("softmax log-sum-exp", "[B,N,T] fp32", N, 4.0)]
    elif policy == "attention":
        core = []
    else:
        core = [t("softmax probabilities", "[B,N,T,T]", N * T, b)]
        if dropout:
            core += [t("attention dropout mask", "[B,N,T,T] 1 byte", N * T, 1.0),
                     t("attention dropout output", "[B,N,T,T]", N * T, b)]
    mask = [t("output dropout mask", "[B,T,D] 1 byte", D, 1.0, d_wide=True)] if dropout else []
    attn = [x, t("norm1 output", "[B,T,D]", D, b, d_wide=True), *qkv, *core,
            t("attention output", "[B,T,N*H]", N * H, b), *mask]
    mid = [] if model.parallel_block else [t("residual after attention", "[B,T,D]", D, b, d_wide=True),
                                           t("norm2 output", "[B,T,D]", D, b, d_wide=True)]
    mlp = ([t("gate", f"[B,T,{fw}]", width, b), t("up", f"[B,T,{fw}]", width, b),
            t("act(gate) * up", f"[B,T,{fw}]", width, b)] if gated
           else [t("up", f"[B,T,{fw}]", width, b), t("act(up)", f"[B,T,{fw}]", width, b)])
    if dropout:
        mlp.append(t("MLP dropout mask", "[B,T,D] 1 byte", D, 1.0, d_wide=True))
    return (*attn, *mid, *mlp)


def _remat_flops(model: Transformer, *, seq_len: int, causal: bool, policy: str, moe: bool) -> float:
    """Extra forward matmul FLOPs per token that one layer's backward spends recomputing."""
    if policy == "none":
        return 0.0
    fl = layer_flops_per_token(model, seq_len=seq_len, causal=causal, moe=moe)
    if policy in ("matmul_outputs", "attention"):
        return fl.attention_score_flops
    # 'full'': everything but the matmuls whose outputs only join the residual stream, which no
    # gradient needs: the MLP down projection (and, in a parallel block, the output projection).
    width = (model.experts_per_token + model.shared_experts) * model.expert_d_ff if moe else model.d_ff
    unneeded = 2.0 * model.d_model * width
    if model.parallel_block:
        unneeded += 2.0 * model.heads * model.head_dim * model.d_model
    return fl.forward_flops - unneeded


def activation_memory(model: Transformer, *, batch: int, seq_len: int, policy: str = "none",
                      dtype: str = "bf16", flash_attention: bool = False, causal: bool = True,
                      dropout: bool = False) -> ActivationMemory:
    """Activation bytes kept for the backward pass under remat `policy` (Chapter 4).

    bytes = sum over layers of B T x (elements per token of each saved tensor) x bytes per element.
    A 'none' MHA gated layer without flash attention: B T (4 D + 4 N_q H + 3 F) + B N_q T^2 elements,
    the T^2 term dominating at long context. Remat cost per token (`remat_flops_per_token`):
    'full' one more layer forward less the MLP down projection (its output only joins the
    residual stream, so no gradient needs it; a parallel block also skips the output projection);
    'matmul_outputs' and 'attention' one more QK^T and AV (`causal` as in `flops_per_token`).

    Against Korthikanti et al. (2022), eq. 1, for their GPT layer (plain 4D MLP, MHA, 16-bit,
    dropout): with `dropout=True` a 'none' layer keeps s b h (34 + 5 a s / h) bytes
    (s = T, b = B, h = D, a = N): the 32 s b h and 2 a s^2 b of the tensors above, plus two
    1-byte dropout masks on the residual stream (2 s b h) and, on the scores, a 1-byte mask and
    the 16-bit dropout output (3 a s^2 b). 'attention' is their selective recomputation
    (34 s b h), 'full' their full recomputation (2 s b h). Where this package departs from
    them, on purpose: `dropout=False` by default (LLaMA-style pre-training uses none, so no
    masks); a gated MLP keeps gate, up and act(gate) x up (3 F, against their 2 x 4h); GQA keeps
    K and V at K H wide (not D); `flash_attention` keeps no T x T tensor, only the fp32
    log-sum-exp (4 N bytes per token), so 'attention' saves the same as 'none' there; RoPE
    saves nothing (its backward rotates the gradient back by angles fixed by the positions).
    """
    _require_flag('flash_attention', flash_attention)
    _require_flag('causal', causal)
    _require_flag('dropout', dropout)
    model = _as_model(model)
    require_positive(batch=batch, seq_len=seq_len)
    choose("remat policy", policy, ACTIVATION_POLICIES)
    _instance("dropout", dropout, bool)
    b = units.dtype_bytes(dtype, "dtype")
    total = 0.0
    tensors: tuple[SavedTensor, ...] = ()
    for moe, count in ((False, model.dense_layers), (True, model.moe_layers)):
        if count:
            tensors = _saved_tensors(model, seq_len=seq_len, policy=policy, b=b, flash=flash_attention, moe=moe,
                                     dropout=dropout)
            total += count * batch * seq_len * sum(x.elements_per_token * x.bytes_per_element for x in tensors)
    remat = sum(count * _remat_flops(model, seq_len=seq_len, causal=causal, policy=policy, moe=moe)
                for moe, count in ((False, model.dense_layers), (True, model.moe_layers)) if count)
    return ActivationMemory(model_name=model.name, policy=policy, batch=batch, seq_len=seq_len,
                            tensors=tensors, bytes=total, remat_flops_per_token=remat)


# --- memory: activations with chosen checkpoints -----------------------------------------------------

def _layer_ops(model: Transformer, *, seq_len: int, causal: bool, moe: bool, flash: bool,
               dropout: bool) -> list[tuple[tuple[str, ...], tuple[str, ...], float]]:
    """One layer's forward as (inputs, outputs, matmul FLOPs per token) steps, outputs named as in
    `_saved_tensors`. The attention core (QK^T, softmax, AV) is one step: re-running it for any
    of its outputs costs both score matmuls. Norms, activations, residual adds and dropout masks
    (regenerated from their seed) cost no matmul FLOPs."""
    D, N, K, H = model.d_model, model.heads, model.kv_heads, model.head_dim
    width = (model.experts_per_token + model.shared_experts) * model.expert_d_ff if moe else model.d_ff
    if flash:
        core = ("softmax log-sum-exp",)
    else:
        core = ("softmax probabilities",) + (("attention dropout mask", "attention dropout output") if dropout else ())
    mlp_in = "norm1 output" if model.parallel_block else "norm2 output"
    ops = [(("layer input",), ("norm1 output",), 0.0),
           (("norm1 output",), ("Q",), 2.0 * D * N * H),
           (("norm1 output",), ("K",), 2.0 * D * K * H),
           (("norm1 output",), ("V",), 2.0 * D * K * H),
           (("Q", "K", "V"), core + ("attention output",), _score_flops(model, seq_len, causal)),
           (("attention output",), ("output projection",), 2.0 * N * H * D)]
    if dropout:
        ops += [((), ("output dropout mask",), 0.0), ((), ("MLP dropout mask",), 0.0)]
    if not model.parallel_block:
        ops += [(("layer input", "output projection"), ("residual after attention",), 0.0),
                (("residual after attention",), ("norm2 output",), 0.0)]
    routing: tuple[str, ...] = ()
    if moe:  # the router's choice is no saveable tensor: recomputed whenever an expert matmul is
        ops.append(((mlp_in,), ("routing",), 2.0 * D * model.routed_experts))
        routing = ("routing",)
    if model.mlp == "gated":
        ops += [((mlp_in, *routing), ("gate",), 2.0 * D * width), ((mlp_in, *routing), ("up",), 2.0 * D * width),
                (("gate", "up"), ("act(gate) * up",), 0.0)]
    else:
        ops += [((mlp_in, *routing), ("up",), 2.0 * D * width), (("up",), ("act(up)",), 0.0)]
    return ops


def _tensor_universe(model: Transformer, *, seq_len: int, b: float, flash: bool, moe: bool,
                     dropout: bool) -> dict[str, SavedTensor]:
    """Every tensor a layer can keep, by name: what 'none' keeps plus the output projection."""
    tensors = {t.name: t for t in _saved_tensors(model, seq_len=seq_len, policy="none", b=b, flash=flash,
                                                 moe=moe, dropout=dropout)}
    tensors["output projection"] = SavedTensor("output projection", "[B,T,D]", model.d_model, b, d_wide=True)
    return tensors


def checkpoint_names(model: Transformer, *, flash_attention: bool = False, dropout: bool = False) -> tuple[str, ...]:
    """Names of the tensors one layer of `model` can keep for the backward pass, in forward order
    (Chapter 4): the argument `saved` of `activation_memory_saving` takes any of them. They are
    the tensors of Korthikanti et al. (2022)'s per-layer accounting (what policy 'none' keeps) and
    the attention's output projection (which 'matmul_outputs' keeps instead of the residual)."""
    _require_flag('flash_attention', flash_attention)
    _require_flag('dropout', dropout)
    model = _as_model(model)
    _require_standard_attention(model, "choosing checkpoints")
    moe = model.moe_layers > 0
    order = [n for _, outs, _ in _layer_ops(model, seq_len=1, causal=True, moe=moe, flash=flash_attention,
                                              dropout=dropout) for n in outs]
    names = _tensor_universe(model, seq_len=1, b=2.0, flash=flash_attention, moe=moe, dropout=dropout)
    return tuple(n for n in ["layer input", *order] if n in names)


def _recompute_flops(ops, needed: set[str], saved: set[str]) -> float:
    """Matmul FLOPs per token to recompute every tensor of `needed` not in `saved`, from the saved
    ones: each step runs at most once, and a step's inputs that are not saved are recomputed too."""
    producer = {out: i for i, (_, outs, _) in enumerate(ops) for out in outs}
    run: set[int] = set()
    stack = [n for n in needed if n not in saved]
    while stack:
        i = producer[stack.pop()]
        if i in run:
            continue
        run.add(i)
        stack.extend(n for n in ops[i][0] if n not in saved)
    return sum(ops[i][2] for i in run)


def activation_memory_saving(model: Transformer, *, saved, batch: int, seq_len: int, dtype: str = "bf16",
                             flash_attention: bool = False, causal: bool = True,
                             dropout: bool = False) -> ActivationMemory:
    """Activations kept when each layer saves the tensors named in `saved` and recomputes the rest
    (Chapter 4): remat with chosen checkpoints, as `jax.checkpoint` with a policy that saves
    named values does.

    bytes = layers x B T x sum over the saved tensors of (elements per token x bytes per element);
    `checkpoint_names(model)` lists the names, with the per-layer accounting of
    `activation_memory`. The layer input is always kept (the backward restarts the layer from it).
    `remat_flops_per_token`: the backward needs every tensor policy 'none' keeps; each one not
    saved is recomputed from the nearest saved ones, and the matmul FLOPs of every forward step
    re-run (once each) are summed over the layers. The attention core (QK^T, softmax, AV) is one
    step: if the probabilities (or, with `flash_attention`, the log-sum-exp) or the attention
    output must be recomputed, both score matmuls run again. Norms, activation functions and
    residual adds cost no matmul FLOPs (the module's convention), so dropping a norm output costs
    bytes of recompute traffic but no FLOPs here.

    The four policies of `activation_memory` are special cases: 'full' saves the layer input;
    'matmul_outputs' the layer input, Q, K, V, the output projection, gate and up; 'attention'
    everything 'none' keeps but the [B, N, T, T] tensors; 'none' all of them. They give the same
    bytes and recompute FLOPs, except 'attention' with `flash_attention`, which keeps no
    [B, N, T, T] tensor and so saves everything: here it costs no recompute, where
    `activation_memory` charges one attention core. Standard attention only (not MLA).
    """
    _require_flag('flash_attention', flash_attention)
    _require_flag('causal', causal)
    _require_flag('dropout', dropout)
    model = _as_model(model)
    _require_standard_attention(model, "choosing checkpoints")
    require_positive(batch=batch, seq_len=seq_len)
    if isinstance(saved, str) or not hasattr(saved, "__iter__"):
        raise Error(f"saved must be a list of tensor names such as ['Q', 'K', 'V'], got {saved!r}; "
                    f"valid names: {', '.join(checkpoint_names(model, flash_attention=flash_attention, dropout=dropout))}")
    names = [_text("saved", n) for n in saved]
    valid = checkpoint_names(model, flash_attention=flash_attention, dropout=dropout)
    for n in names:
        choose("checkpoint name in saved", n, valid)
    keep = {"layer input", *names}
    b = units.dtype_bytes(dtype, "dtype")
    total, remat = 0.0, 0.0
    tensors: tuple[SavedTensor, ...] = ()
    for moe, count in ((False, model.dense_layers), (True, model.moe_layers)):
        if not count:
            continue
        universe = _tensor_universe(model, seq_len=seq_len, b=b, flash=flash_attention, moe=moe, dropout=dropout)
        tensors = tuple(universe[n] for n in valid if n in keep and n in universe)
        total += count * batch * seq_len * sum(t.elements_per_token * t.bytes_per_element for t in tensors)
        needed = {t.name for t in _saved_tensors(model, seq_len=seq_len, policy="none", b=b, flash=flash_attention,
                                                 moe=moe, dropout=dropout)}
        ops = _layer_ops(model, seq_len=seq_len, causal=causal, moe=moe, flash=flash_attention, dropout=dropout)
        remat += count * _recompute_flops(ops, needed, keep)
    label = "saved: " + ", ".join(n for n in valid if n in keep)
    return ActivationMemory(model_name=model.name, policy=label, batch=batch, seq_len=seq_len,
                            tensors=tensors, bytes=total, remat_flops_per_token=remat)


# --- KV cache ------------------------------------------------------------------------------------

@dataclass(frozen=True)
class KVCache(Readable):
    """Bytes of the KV cache (Chapter 4).

    Per token per layer: 2 K H elements (keys and values of the K kv heads); MLA caches the
    compressed latent and the shared RoPE key instead, d_c + d_R elements. `bytes` covers
    `batch` sequences of `seq_len` tokens.
    """

    model_name: str
    dtype: str
    seq_len: int
    batch: int
    layers: int
    elements_per_token_per_layer: int
    bytes_per_token_per_layer: float

    @property
    def bytes_per_token(self) -> float:
        """All layers: L x bytes per token per layer."""
        return self.layers * self.bytes_per_token_per_layer

    @property
    def bytes_per_sequence(self) -> float:
        return self.bytes_per_token * self.seq_len

    @property
    def bytes(self) -> float:
        return self.bytes_per_sequence * self.batch

    def __repr__(self) -> str:
        f = units.format_quantity
        return (f"KVCache({self.model_name}, {self.dtype}: {f(self.bytes_per_token, 'B')} per token, "
                f"{f(self.bytes_per_sequence, 'B')} per sequence of {self.seq_len}, "
                f"{f(self.bytes, 'B')} for batch {self.batch})")


def kv_cache(model: Transformer, *, seq_len: int = 1, batch: int = 1, dtype: str = "bf16") -> KVCache:
    """KV cache size: 2 L K H x bytes per token (MLA: L (d_c + d_R) x bytes) (Chapter 4)."""
    model = _as_model(model)
    require_positive(seq_len=seq_len, batch=batch)
    if model.is_mla:
        per_layer = model.mla_kv_compression_dim + model.mla_rope_head_dim
    else:
        per_layer = 2 * model.kv_heads * model.head_dim
    return KVCache(model_name=model.name, dtype=units.canonical_dtype(dtype, "dtype"), seq_len=seq_len, batch=batch,
                   layers=model.layers, elements_per_token_per_layer=per_layer,
                   bytes_per_token_per_layer=per_layer * units.dtype_bytes(dtype, "dtype"))


# --- attention's arithmetic intensity -----------------------------------------------------------

ATTENTION_PHASES = ("prefill", "decode")


def _require_standard_attention(model: Transformer, what: str) -> None:
    if model.is_mla:
        raise Error(f"{what} models standard attention (MHA, GQA, MQA); {model.name} uses MLA, whose "
                    "cache is a shared latent: use a model with mla_kv_compression_dim=0")


@dataclass(frozen=True)
class AttentionIntensity(Readable):
    """FLOPs and HBM bytes of one layer's dot-product attention (QK^T, softmax, AV) (Chapter 4).

    Projections are not included: they are ordinary weight matmuls (Chapter 1's critical batch).
    Bytes are the least a fused kernel moves: each of Q, K, V read once, O written once.
    """

    model_name: str
    phase: str
    batch: int
    seq_len: int
    causal: bool
    flops: float
    hbm_bytes: float

    @property
    def intensity_flops_per_byte(self) -> float:
        """FLOPs per HBM byte; compare with `roofline.critical_intensity(chip)`."""
        return self.flops / self.hbm_bytes

    def __repr__(self) -> str:
        f = units.format_quantity
        return (f"AttentionIntensity({self.model_name}, {self.phase}, B={self.batch}, T={self.seq_len}: "
                f"{f(self.flops, 'FLOP')} over {f(self.hbm_bytes, 'B')}, "
                f"{units.fmt_number(self.intensity_flops_per_byte)} FLOP/B)")


def attention_intensity(model: Transformer, *, seq_len: int, batch: int = 1, phase: str = "prefill",
                        causal: bool = True, dtype: str = "bf16") -> AttentionIntensity:
    """Arithmetic intensity of one layer's attention in prefill or decode (Chapter 4).

    With b bytes per element, N_q query heads, K kv heads of width H:

    - prefill, B sequences of T tokens: FLOPs 4 B T_eff T N_q H (T_eff = T/2 if `causal`), bytes
      b B T (2 N_q H + 2 K H) (read Q, K, V; write O). Intensity 2 T_eff N_q / (b (N_q + K)): it grows
      with T, so long prompts are compute-bound (T/2 per bf16 byte pair for MHA without causal
      halving).
    - decode, one new token per sequence against T cached ones: FLOPs 4 B T N_q H, bytes
      b B (2 T K H + 2 N_q H) (read the cache, read q, write o). Intensity 2 T N_q / (b (T K + N_q)),
      which tends to 2 N / (b K): the group size N/K in bf16, whatever B and T are, because
      every sequence reads its own cache. Decode attention is therefore memory-bound on every
      chip whose critical intensity exceeds N / K (all of them).
    - MLA decode (DeepSeek-V2/V3), in the absorbed form its kernels run: every head's query is
      mapped into the latent space and dots the cached latent and RoPE key (d_c + d_R), and the
      output mixes the latents (d_c): FLOPs 2 B T N (2 d_c + d_R), bytes b B (T (d_c + d_R)
      + N_q (2 d_c + d_R)). All N_q heads share one cached latent, so the intensity tends to
      2 N (2 d_c + d_R) / (b (d_c + d_R)), about N in bf16. MLA prefill is not modelled.
    """
    _require_flag('causal', causal)
    model = _as_model(model)
    choose("phase", phase, ATTENTION_PHASES)
    require_positive(seq_len=seq_len, batch=batch)
    b = units.dtype_bytes(dtype, "dtype")
    if model.is_mla:
        if phase != "decode":
            raise Error(f"attention_intensity models MLA ({model.name}) in decode only, where its "
                        "kernels attend to the cached latent directly; use phase='decode'")
        N, dc, dr = model.heads, model.mla_kv_compression_dim, model.mla_rope_head_dim
        return AttentionIntensity(
            model_name=model.name, phase=phase, batch=batch, seq_len=seq_len, causal=False,
            flops=2.0 * batch * seq_len * N * (2 * dc + dr),
            hbm_bytes=b * batch * (seq_len * (dc + dr) + N * (2 * dc + dr)))
    N, K, H = model.heads, model.kv_heads, model.head_dim
    if phase == "prefill":
        t_eff = seq_len / 2 if causal else seq_len
        flops = 4.0 * batch * t_eff * seq_len * N * H
        hbm = b * batch * seq_len * (2 * N * H + 2 * K * H)
    else:
        flops = 4.0 * batch * seq_len * N * H
        hbm = b * batch * (2 * seq_len * K * H + 2 * N * H)
    return AttentionIntensity(model_name=model.name, phase=phase, batch=batch, seq_len=seq_len,
                              causal=causal and phase == "prefill", flops=flops, hbm_bytes=hbm)


# --- FlashAttention: forward, backward, recomputation ------------------------------------------

@dataclass(frozen=True)
class FlashAttentionCost(Readable):
    """Matmul FLOPs and least HBM bytes of one layer's attention, forward and backward (Chapter 4).

    Forward: S = Q K^T, P = softmax(S), O = P V; it keeps O and the log-sum-exp l (fp32, one per
    query row and head). Backward, given dO: D = rowsum(dO o O) (equal to rowsum(dP o P), since
    sum_j P_ij (dO_i . V_j) = dO_i . O_i), S recomputed from Q and K, P = exp(S - l),
    dV = P^T dO, dP = dO V^T, dS = P o (dP - D), dQ = dS K, dK = dS^T Q. Per (sequence, head) the
    forward is two T_eff x T x H matmuls and the backward five (one of them the recomputed
    Q K^T): 2.5 x the forward, against 2 x if P had been kept.
    """

    model_name: str
    batch: int
    seq_len: int
    causal: bool
    forward_flops: float
    backward_flops: float
    recompute_flops: float
    d_term_flops: float
    forward_hbm_bytes: float
    backward_hbm_bytes: float
    probabilities_bytes: float

    @property
    def backward_over_forward(self) -> float:
        """Backward / forward matmul FLOPs: 2.5 with the recomputed scores."""
        return self.backward_flops / self.forward_flops

    @property
    def training_flops(self) -> float:
        """Forward + backward matmul FLOPs: 3.5 x forward, not the 3 x of weight matmuls."""
        return self.forward_flops + self.backward_flops

    @property
    def forward_intensity_flops_per_byte(self) -> float:
        return self.forward_flops / self.forward_hbm_bytes

    @property
    def backward_intensity_flops_per_byte(self) -> float:
        return self.backward_flops / self.backward_hbm_bytes

    def __repr__(self) -> str:
        f = units.format_quantity
        return (f"FlashAttentionCost({self.model_name}, B={self.batch}, T={self.seq_len}"
                f"{', causal' if self.causal else ''}: forward {f(self.forward_flops, 'FLOP')} / "
                f"{f(self.forward_hbm_bytes, 'B')}, backward {f(self.backward_flops, 'FLOP')} / "
                f"{f(self.backward_hbm_bytes, 'B')} ({self.backward_over_forward:.2f}x forward))")


def flash_attention_cost(model: Transformer, *, batch: int, seq_len: int, causal: bool = True,
                         dtype: str = "bf16") -> FlashAttentionCost:
    """FLOPs and HBM bytes of FlashAttention's forward and backward for one layer (Chapter 4).

    With b bytes per element, c = 4 bytes for the fp32 per-row statistics, T_eff = T/2 if
    `causal`, per sequence:

    - forward FLOPs 4 T_eff T N_q H (Q K^T and P V); bytes b T (2 N_q H + 2 K H) + c T N_q
      (read Q, K, V; write O and l);
    - backward FLOPs 10 T_eff T N_q H: Q K^T again (the recomputation, 2 T_eff T N_q H), then
      dV, dP, dQ, dK (2 T_eff T N_q H each); D = rowsum(dO o O) adds 2 T N_q H elementwise FLOPs
      (`d_term_flops`, not in `backward_flops`);
    - backward bytes: a pass that reads O and dO and writes D, then the main pass reads Q, K,
      V, dO, l and D and writes dQ, dK, dV: b T (5 N_q H + 4 K H) + 3 c T N_q.

    Bytes are the least a kernel moves (each tensor once); a tiled kernel re-reads K and V once
    per block of queries, which lowers the intensity towards the query block size.
    `probabilities_bytes` is the B N T^2 b matrix P that a non-fused kernel would keep instead.
    """
    _require_flag('causal', causal)
    model = _as_model(model)
    batch, seq_len = _integer("batch", batch), _integer("seq_len", seq_len)
    _instance("causal", causal, bool)
    _require_standard_attention(model, "flash_attention_cost")
    N, K, H = model.heads, model.kv_heads, model.head_dim
    b, c = units.dtype_bytes(dtype, "dtype"), 4
    t_eff = seq_len / 2 if causal else seq_len
    one = 2.0 * batch * t_eff * seq_len * N * H            # one T_eff x T x H matmul, all heads
    return FlashAttentionCost(
        model_name=model.name, batch=batch, seq_len=seq_len, causal=causal,
        forward_flops=2 * one, backward_flops=5 * one, recompute_flops=one,
        d_term_flops=2.0 * batch * seq_len * N * H,
        forward_hbm_bytes=batch * seq_len * (b * (2 * N * H + 2 * K * H) + c * N),
        backward_hbm_bytes=batch * seq_len * (b * (5 * N * H + 4 * K * H) + 3 * c * N),
        probabilities_bytes=float(b * batch * N * seq_len * seq_len),
    )


# --- MFU from reported chip-hours --------------------------------------------------------------

@dataclass(frozen=True)
class ReportedMfu(Readable):
    """MFU implied by a run's reported chip-hours (Chapter 4).

    `mfu` = model FLOPs / (chip-hours x 3600 x peak); `model_flops` is 3 x forward per token x
    tokens (attention at `seq_len` included), `six_nd_mfu` the same with 6 N D.
    """

    model_name: str
    chip: str
    tokens: float
    chip_hours: float
    peak_flops_per_s: float
    model_flops: float
    six_nd_flops: float

    @property
    def available_flops(self) -> float:
        """What the chips could have done at peak: chip-hours x 3600 s x peak FLOPs/s."""
        return self.chip_hours * 3600.0 * self.peak_flops_per_s

    @property
    def mfu(self) -> float:
        return self.model_flops / self.available_flops

    @property
    def six_nd_mfu(self) -> float:
        return self.six_nd_flops / self.available_flops

    def __repr__(self) -> str:
        return (f"ReportedMfu({self.model_name} on {self.chip}: {units.fmt_count(self.tokens)} tokens in "
                f"{units.fmt_number(self.chip_hours)} chip-hours: MFU {units.fmt_percent(self.mfu, 1)} "
                f"(6ND: {units.fmt_percent(self.six_nd_mfu, 1)}))")


def mfu_from_chip_hours(model: Transformer, *, tokens: float, chip_hours: float, chip: str,
                        seq_len: int = 0, dtype: str = "bf16") -> ReportedMfu:
    """Average MFU of a training run from its token count and reported chip-hours (Chapter 4).

    MFU = 3 x forward FLOPs per token x tokens / (chip-hours x 3600 x dense peak in `dtype`).
    Chip-hours as reported include restarts, failures, evaluation and idle time, so this is a
    floor on the MFU of the steady-state steps a paper quotes.
    """
    from .hardware import chip as _chip  # hardware does not import transformer: no cycle

    model = _as_model(model)
    require_positive(tokens=tokens, chip_hours=chip_hours)
    seq_len = _integer("seq_len", seq_len, minimum=0)
    c = _chip(chip)
    return ReportedMfu(model_name=model.name, chip=c.name, tokens=float(tokens), chip_hours=float(chip_hours),
                       peak_flops_per_s=c.peak_flops_per_s(c.compute_dtype(dtype)),
                       model_flops=flops_per_token(model, seq_len=seq_len).training_flops * tokens,
                       six_nd_flops=6.0 * params(model).active_params * tokens)
