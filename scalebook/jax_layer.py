"""One Transformer block in plain JAX, to check Chapter 4's counts against XLA (Chapter 4).

`init_block` makes the weights of one layer of a `Transformer` (RMSNorm, attention with N query
and K kv heads, optional RoPE, gated or plain MLP); `block_apply` runs it; `block_flops`
compiles its forward pass and its forward + backward (`jax.grad` of a scalar loss with respect
to the weights and the input, as for a layer inside a deep stack, so every matmul has both its
gradients) and sets XLA's `cost_analysis()` FLOPs beside `transformer.layer_flops_per_token`.

What XLA counts: every matmul at 2 FLOPs per multiply-add, plus about one FLOP per element for
each elementwise op and reduction (norms, softmax, mask, activation, residual adds, RoPE);
exp/rsqrt go to `transcendentals`, not FLOPs. The package counts matmuls only, so XLA reads a
little higher: by about (elementwise ops per element) / (2 x contraction size), under 1% for
D >= 256 and H >= 64. The attention here is dense: it computes all T x T scores and masks the
upper half, so the prediction uses `causal=False` (Chapter 4 on why FlashAttention-style kernels
earn the causal halving and this one does not).

jax is imported inside the functions: `import scalebook` never loads it.
"""
from __future__ import annotations

from dataclasses import dataclass

from ._readable import Readable
from . import units
from .errors import Error, choose, require_positive
from .models import Transformer
from .transformer import REMAT_POLICIES, _html_table, activation_memory, layer_flops_per_token


def _check_buildable(model: Transformer) -> None:
    if model.is_moe or model.is_mla:
        raise Error(
            f"jax_layer builds dense layers with MHA/GQA/MQA; {model.name} uses "
            f"{'MoE' if model.is_moe else 'MLA'}. Use a dense config (routed_experts=0, mla_kv_compression_dim=0)"
        )


def _weight_shapes(model: Transformer) -> dict[str, tuple[int, ...]]:
    _check_buildable(model)
    D, N, K, H, F = model.d_model, model.heads, model.kv_heads, model.head_dim, model.d_ff
    shapes = {"wq": (D, N, H), "wk": (D, K, H), "wv": (D, K, H), "wo": (N, H, D),
              "w_up": (D, F), "w_down": (F, D), "norm1": (D,)}
    if model.mlp == "gated":
        shapes["w_gate"] = (D, F)
    if not model.parallel_block:
        shapes["norm2"] = (D,)
    return shapes


def init_block(model: Transformer, *, seed: int = 0, dtype: str = "float32") -> dict:
    """Weights of one layer of `model`, normal with std 1/sqrt(fan-in) (norm scales 1).

    Shapes: wq [D, N, H], wk and wv [D, K, H], wo [N, H, D]; gated MLP w_gate and w_up [D, F],
    w_down [F, D]; plain MLP w_up [D, F], w_down [F, D]; norm scales [D]. Drawn with numpy
    (no compilation), returned as jax arrays.
    """
    import jax.numpy as jnp
    import numpy as np

    rng = np.random.default_rng(seed)
    weights = {}
    for name, shape in sorted(_weight_shapes(model).items()):
        if name.startswith("norm"):
            weights[name] = jnp.ones(shape, dtype)
        else:
            fan_in = shape[0] * (shape[1] if name == "wo" else 1)
            weights[name] = jnp.asarray(rng.standard_normal(shape) / fan_in**0.5, dtype)
    return weights


def _rms_norm(x, scale, eps: float = 1e-6):
    import jax
    import jax.numpy as jnp

    return x * jax.lax.rsqrt(jnp.mean(x * x, axis=-1, keepdims=True) + eps) * scale


def _rope(x, theta: float = 10000.0):
    """Rotary position embedding on [B, T, heads, H] (rotate-half form)."""
    import jax.numpy as jnp

    T, H = x.shape[1], x.shape[-1]
    freq = theta ** (-jnp.arange(0, H // 2, dtype=jnp.float32) * 2 / H)
    angle = jnp.arange(T, dtype=jnp.float32)[:, None] * freq[None, :]
    cos, sin = jnp.cos(angle)[None, :, None, :], jnp.sin(angle)[None, :, None, :]
    x1, x2 = x[..., : H // 2], x[..., H // 2:]
    return jnp.concatenate([x1 * cos - x2 * sin, x2 * cos + x1 * sin], axis=-1).astype(x.dtype)


def _attention(w: dict, h, *, model: Transformer, causal: bool, rope: bool):
    import jax
    import jax.numpy as jnp

    B, T, _ = h.shape
    K, G = model.kv_heads, model.heads // model.kv_heads
    q = jnp.einsum("btd,dnh->btnh", h, w["wq"])
    k = jnp.einsum("btd,dkh->btkh", h, w["wk"])
    v = jnp.einsum("btd,dkh->btkh", h, w["wv"])
    if rope:
        q, k = _rope(q), _rope(k)
    q = q.reshape(B, T, K, G, model.head_dim)  # query heads grouped by the kv head they share
    s = jnp.einsum("btkgh,bskh->bkgts", q, k) * (model.head_dim ** -0.5)
    if causal:
        s = jnp.where(jnp.tril(jnp.ones((T, T), bool)), s, jnp.finfo(s.dtype).min)
    p = jax.nn.softmax(s, axis=-1)
    o = jnp.einsum("bkgts,bskh->btkgh", p, v).reshape(B, T, model.heads, model.head_dim)
    return jnp.einsum("btnh,nhd->btd", o, w["wo"])


def _mlp(w: dict, h, *, model: Transformer):
    import jax
    import jax.numpy as jnp

    if model.mlp == "gated":  # SwiGLU
        a = jax.nn.silu(jnp.einsum("btd,df->btf", h, w["w_gate"])) * jnp.einsum("btd,df->btf", h, w["w_up"])
    else:
        a = jax.nn.gelu(jnp.einsum("btd,df->btf", h, w["w_up"]))
    return jnp.einsum("btf,fd->btd", a, w["w_down"])


def block_apply(weights: dict, x, *, model: Transformer, causal: bool = True, rope: bool = True):
    """One pre-norm layer on x [B, T, D]: x + attn(norm(x)), then + mlp(norm(.)).

    A `parallel_block` model computes x + attn(norm(x)) + mlp(norm(x)) instead.
    """
    h = _rms_norm(x, weights["norm1"])
    if model.parallel_block:
        return x + _attention(weights, h, model=model, causal=causal, rope=rope) + _mlp(weights, h, model=model)
    x = x + _attention(weights, h, model=model, causal=causal, rope=rope)
    return x + _mlp(weights, _rms_norm(x, weights["norm2"]), model=model)


@dataclass(frozen=True)
class BlockFlops(Readable):
    """XLA's compiled FLOPs of one layer beside the package's matmul count (Chapter 4).

    predicted forward = B T x `layer_flops_per_token(model, seq_len=T, causal=False).forward_flops`;
    predicted training = 3 x forward + B T x one layer's `remat_flops_per_token` under `remat`.
    XLA's figures include elementwise ops (see module doc).
    """

    model_name: str
    batch: int
    seq_len: int
    remat: str
    forward_xla_flops: float
    forward_predicted_flops: float
    training_xla_flops: float
    training_predicted_flops: float

    @property
    def forward_ratio(self) -> float:
        """XLA / predicted, forward."""
        return self.forward_xla_flops / self.forward_predicted_flops

    @property
    def training_ratio(self) -> float:
        """XLA / predicted, forward + backward."""
        return self.training_xla_flops / self.training_predicted_flops

    def __repr__(self) -> str:
        f = units.format_quantity
        return (f"BlockFlops({self.model_name}, B={self.batch}, T={self.seq_len}, remat={self.remat!r}: forward XLA "
                f"{f(self.forward_xla_flops, 'FLOP')} vs {f(self.forward_predicted_flops, 'FLOP')} "
                f"({units.fmt_percent((self.forward_ratio - 1), 2, signed=True)}), training XLA {f(self.training_xla_flops, 'FLOP')} vs "
                f"{f(self.training_predicted_flops, 'FLOP')} ({units.fmt_percent((self.training_ratio - 1), 2, signed=True)}))")

    def _repr_html_(self) -> str:
        f = units.format_quantity
        rows = [("forward", f(self.forward_xla_flops, "FLOP"), f(self.forward_predicted_flops, "FLOP"),
                 f"{units.fmt_percent((self.forward_ratio - 1), 2, signed=True)}"),
                ("forward + backward", f(self.training_xla_flops, "FLOP"), f(self.training_predicted_flops, "FLOP"),
                 f"{units.fmt_percent((self.training_ratio - 1), 2, signed=True)}")]
        cap = f"One layer of {self.model_name}, B={self.batch}, T={self.seq_len}, remat={self.remat!r}"
        return _html_table(("pass", "XLA cost_analysis", "scalebook", "XLA above"), rows, cap)


def block_flops(model: Transformer, *, batch: int, seq_len: int, causal: bool = True, rope: bool = True,
                remat: str = "none", dtype: str = "float32") -> BlockFlops:
    """Compile one layer's forward and forward + backward; XLA FLOPs beside the prediction.

    `remat` wraps the layer in `jax.checkpoint`: 'full' saves only its input, 'matmul_outputs'
    uses `jax.checkpoint_policies.dots_with_no_batch_dims_saveable` (as in
    `transformer.activation_memory`). 'full' matches XLA within 1%; with 'matmul_outputs' XLA on
    CPU (jax 0.10.2) sometimes skips recomputing QK^T / AV (seen with H = 128), reading up to
    2.5% below the prediction. Compiles from shapes only (nothing runs). Use float32 on
    CPU: XLA upcasts bf16 dots there.
    """
    import jax
    import jax.numpy as jnp

    from . import xla

    _check_buildable(model)
    require_positive(batch=batch, seq_len=seq_len)
    choose("remat policy", remat, REMAT_POLICIES)
    weights = {name: jax.ShapeDtypeStruct(shape, jnp.dtype(dtype)) for name, shape in _weight_shapes(model).items()}
    (x,) = xla.shapes((batch, seq_len, model.d_model), dtype=dtype)

    def forward(w, x):
        return block_apply(w, x, model=model, causal=causal, rope=rope)

    layer = forward
    if remat == "full":
        layer = jax.checkpoint(forward)
    elif remat == "matmul_outputs":
        layer = jax.checkpoint(forward, policy=jax.checkpoint_policies.dots_with_no_batch_dims_saveable)

    def loss(w, x):
        return jnp.sum(layer(w, x) ** 2)

    fwd = xla.cost(forward, weights, x)
    train = xla.cost(jax.value_and_grad(loss, argnums=(0, 1)), weights, x)
    per_token = layer_flops_per_token(model, seq_len=seq_len, causal=False).forward_flops
    one_layer = model.replace(layers=1)
    remat_per_token = activation_memory(one_layer, batch=batch, seq_len=seq_len, policy=remat,
                                        causal=False).remat_flops_per_token
    tokens = batch * seq_len
    return BlockFlops(model_name=model.name, batch=batch, seq_len=seq_len, remat=remat,
                      forward_xla_flops=fwd.flops, forward_predicted_flops=tokens * per_token,
                      training_xla_flops=train.flops,
                      training_predicted_flops=tokens * (3 * per_token + remat_per_token))
