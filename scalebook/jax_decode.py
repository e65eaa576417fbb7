"""A real decoder with a KV cache in JAX, to check Chapter 7's serving model against XLA.

`prefill(weights, tokens, model=, max_len=)` runs prompts [B, P] through the model and returns
the logits of their last position [B, V] with a cache preallocated for `max_len` positions;
`decode_step(weights, cache, token, position, model=)` feeds one token [B] per sequence at
`position` (the same for every sequence), writes its keys and values into the cache with
`lax.dynamic_update_slice` and returns (logits [B, V], cache).

The cache is one {"k", "v"} pair per layer, each [B, K, max_len, H] (keys stored after RoPE):
`[{"k": ..., "v": ...}] * L`, each array of shape `cache_shape`, rather than one array
[L, B, max_len, K, H]. Two layout choices, both because of what XLA compiles (CPU, jax 0.10.2),
and both visible in `cost_analysis()`:

- kv heads before positions (as Hugging Face's [B, K, S, H] cache): attention multiplies, for
  each sequence and kv head, the query group by the [S, H] block of keys, then by the same
  block of values. With that block contiguous the cache goes straight into the dots. With
  [B, S, K, H] XLA first copies the keys and values into [B, K, S, H] order, every step.
- one array per layer rather than one [L, B, K, S, H] array: XLA on CPU materialises the slice
  `cache[layer]` before the dots read it, again every step.

Either copy reads the cache, writes a copy and reads the copy: three times the KV bytes the
serving model counts (tests/test_xla_decode.py measures both). For the same reason the attention
is written with `lax.dot_general` (output [B, K, G, H], heads in the order of `wo`): with
`jnp.einsum` XLA put the AV product out as [B, K, H, G] and then transposed `wo` each step.

The model is `jax_training`'s (same weights from `jax_training.init_model`, same pieces from
`jax_layer`: RMSNorm, GQA with RoPE, gated or plain MLP, untied unembedding), so
`jax_training.forward` over the whole sequence is the reference a cached decode must reproduce.

Attention in a decode step is dense over the preallocated cache: the new token's query meets all
`max_len` cached keys and the positions after `position` are masked out. That is what a simple
JAX decoder does (a paged-attention kernel reads only the live positions), and it is why
`compiled_costs` compiles the decode step with `max_len` equal to the context it stands for: XLA
then counts the FLOPs and bytes of attending to exactly that many positions, as
`inference.estimate` does at its decode context. Prefill attention is dense too (all P x P
scores, the upper half masked), so its score FLOPs are those of `causal=False`.

`compiled_costs` sets XLA's `cost_analysis()` FLOPs and bytes of prefill and of one decode step
beside `scalebook.inference`'s model; `time_decode` times one decode step on jax's default device.
jax is imported inside the functions: `import scalebook` never loads it.
"""
from __future__ import annotations

from dataclasses import dataclass

from ._readable import Readable
from . import units
from .errors import Error, require_positive
from .errors import model as _as_model
from .models import Transformer
from .transformer import _html_table

#: A small GQA config whose matmuls dominate: compiles in about a second on 2 CPU cores.
SMALL = Transformer(name="tiny-decoder", layers=2, d_model=512, heads=8, kv_heads=2, d_ff=1536, vocab=2048)

_DTYPES = {"float32": 4, "bfloat16": 2, "float16": 2}


def _check(model: Transformer) -> None:
    from .jax_training import _check as check_training

    check_training(model, {"fsdp": 1, "tp": 1})


def _dtype(dtype: str) -> str:
    if not isinstance(dtype, str) or dtype not in _DTYPES:
        raise Error(f"jax_decode runs in {', '.join(_DTYPES)}; got {dtype!r} (use float32 on CPU: XLA "
                    "upcasts bf16 dots there)")
    return dtype


def init_weights(model: Transformer, *, seed: int = 0, dtype: str = "float32") -> dict:
    """`jax_training.init_model`'s weights ({'layers': [...], 'embed', 'final_norm', 'unembed'}),
    cast to `dtype`."""
    model = _as_model(model)
    import jax
    import jax.numpy as jnp

    from .jax_training import init_model

    _check(model)
    dt = jnp.dtype(_dtype(dtype))
    return jax.tree.map(lambda a: a.astype(dt), init_model(model, seed=seed))


def weight_shapes(model: Transformer, *, dtype: str = "float32") -> dict:
    """The pytree of `init_weights` as `jax.ShapeDtypeStruct`s (to compile without allocating)."""
    model = _as_model(model)
    import jax
    import jax.numpy as jnp

    from .jax_layer import _weight_shapes

    _check(model)
    dt = jnp.dtype(_dtype(dtype))
    D, V = model.d_model, model.vocab
    layer = {n: jax.ShapeDtypeStruct(s, dt) for n, s in _weight_shapes(model).items()}
    return {"layers": [dict(layer) for _ in range(model.layers)],
            "embed": jax.ShapeDtypeStruct((V, D), dt), "final_norm": jax.ShapeDtypeStruct((D,), dt),
            "unembed": jax.ShapeDtypeStruct((D, V), dt)}


def cache_shape(model: Transformer, *, batch: int, max_len: int) -> tuple[int, int, int, int]:
    """[batch, kv_heads, max_len, head_dim]: the shape of one layer's keys (and of its values)."""
    model = _as_model(model)
    require_positive(batch=batch, max_len=max_len)
    return (int(batch), model.kv_heads, int(max_len), model.head_dim)


def cache_shapes(model: Transformer, *, batch: int, max_len: int, dtype: str = "float32") -> list:
    """The cache's pytree as `jax.ShapeDtypeStruct`s: [{'k', 'v'}] per layer."""
    model = _as_model(model)
    import jax
    import jax.numpy as jnp

    one = jax.ShapeDtypeStruct(cache_shape(model, batch=batch, max_len=max_len), jnp.dtype(_dtype(dtype)))
    return [{"k": one, "v": one} for _ in range(model.layers)]


def init_cache(model: Transformer, *, batch: int, max_len: int, dtype: str = "float32") -> list:
    """An empty (zero) cache, [{'k', 'v'}] per layer, for `batch` sequences of up to `max_len`."""
    model = _as_model(model)
    import jax.numpy as jnp

    return [{n: jnp.zeros(s.shape, s.dtype) for n, s in layer.items()}
            for layer in cache_shapes(model, batch=batch, max_len=max_len, dtype=dtype)]


def _rope_at(x, positions, theta: float = 10000.0):
    """RoPE of x [B, T, heads, H] at integer `positions` [T] (rotate-half form; `jax_layer._rope`
    is this at positions 0..T-1)."""
    import jax.numpy as jnp

    H = x.shape[-1]
    freq = theta ** (-jnp.arange(0, H // 2, dtype=jnp.float32) * 2 / H)
    angle = positions.astype(jnp.float32)[:, None] * freq[None, :]
    cos, sin = jnp.cos(angle)[None, :, None, :], jnp.sin(angle)[None, :, None, :]
    x1, x2 = x[..., : H // 2], x[..., H // 2:]
    return jnp.concatenate([x1 * cos - x2 * sin, x2 * cos + x1 * sin], axis=-1).astype(x.dtype)


def _qkv(w: dict, h, positions):
    """Queries [B, T, N, H] and this step's keys and values [B, K, T, H] (the cache's order)."""
    import jax.numpy as jnp

    q = jnp.einsum("btd,dnh->btnh", h, w["wq"])
    k = jnp.einsum("btd,dkh->btkh", h, w["wk"])
    v = jnp.einsum("btd,dkh->btkh", h, w["wv"])
    return _rope_at(q, positions), _rope_at(k, positions).transpose(0, 2, 1, 3), v.transpose(0, 2, 1, 3)


def _attend(w: dict, q, k, v, mask, model: Transformer):
    """Queries q [B, T, N, H] over keys and values [B, K, S, H] where `mask` [T, S] is True; then O.

    dot_general rather than einsum, so that XLA reads the cache and `wo` where they lie (module doc).
    """
    import jax
    import jax.numpy as jnp

    B, T = q.shape[:2]
    K, G, H = model.kv_heads, model.heads // model.kv_heads, model.head_dim
    # query heads grouped by the kv head they share: [B, K, G T, H] (a reshape when T = 1)
    q = q.reshape(B, T, K, G, H).transpose(0, 2, 3, 1, 4).reshape(B, K, G * T, H)
    s = jax.lax.dot_general(q, k, (((3,), (3,)), ((0, 1), (0, 1)))) * (H ** -0.5)  # [B, K, G T, S]
    s = jnp.where(mask, s.reshape(B, K, G, T, -1), jnp.finfo(s.dtype).min)
    p = jax.nn.softmax(s, axis=-1).reshape(B, K, G * T, -1)
    o = jax.lax.dot_general(p, v, (((3,), (2,)), ((0, 1), (0, 1))))  # [B, K, G T, H]
    o = o.reshape(B, K, G, T, H).transpose(0, 3, 1, 2, 4).reshape(B, T, model.heads * H)
    return jnp.einsum("btn,nd->btd", o, w["wo"].reshape(model.heads * H, -1))


def _layer(w: dict, x, attend, model: Transformer):
    """One pre-norm layer around `attend(h) -> attention output` (as `jax_layer.block_apply`)."""
    from .jax_layer import _mlp, _rms_norm

    x = x + attend(_rms_norm(x, w["norm1"]))
    return x + _mlp(w, _rms_norm(x, w["norm2"]), model=model)


def _logits(weights: dict, x):
    import jax.numpy as jnp

    from .jax_layer import _rms_norm

    return jnp.einsum("bd,dv->bv", _rms_norm(x, weights["final_norm"]), weights["unembed"])


def prefill(weights: dict, tokens, *, model: Transformer, max_len: int):
    """Run prompts `tokens` [B, P] (int32); return (logits of the last position [B, V], cache).

    The cache holds the prompts' keys and values in positions 0..P-1 of `max_len` (zeros after).
    Attention is dense and causal: all P x P scores, the upper half masked. Only the last
    position goes through the unembedding (its logits pick the first new token).
    """
    model = _as_model(model)
    import jax
    import jax.numpy as jnp

    B, P = tokens.shape
    if P > max_len:
        raise Error(f"a prompt of {P} tokens does not fit a cache of max_len={max_len}")
    pos = jnp.arange(P)
    causal = jnp.tril(jnp.ones((P, P), bool))
    cache = init_cache(model, batch=B, max_len=max_len, dtype=weights["embed"].dtype.name)
    x = jnp.take(weights["embed"], tokens, axis=0)
    for w, c in zip(weights["layers"], cache):

        def attend(h, w=w, c=c):
            q, k, v = _qkv(w, h, pos)
            for name, new in (("k", k), ("v", v)):
                c[name] = jax.lax.dynamic_update_slice(c[name], new.astype(c[name].dtype), (0, 0, 0, 0))
            return _attend(w, q, k, v, causal, model)

        x = _layer(w, x, attend, model)
    return _logits(weights, x[:, -1]), cache


def decode_step(weights: dict, cache: list, token, position, *, model: Transformer):
    """One token per sequence, `token` [B] (int32), at `position` (int32 scalar, < max_len).

    Writes the token's keys and values into slot `position` of every layer's cache, attends to
    cache positions 0..position (the rest of the `max_len` are masked, but still read and
    multiplied), and returns (logits [B, V], updated cache).
    """
    model = _as_model(model)
    import jax
    import jax.numpy as jnp

    max_len = cache[0]["k"].shape[2]
    position = jnp.asarray(position, jnp.int32)
    live = (jnp.arange(max_len) <= position)[None, :]  # [1 query, max_len keys]
    zero = jnp.zeros((), jnp.int32)
    cache = [dict(c) for c in cache]
    x = jnp.take(weights["embed"], token, axis=0)[:, None, :]  # [B, 1, D]
    for w, c in zip(weights["layers"], cache):

        def attend(h, w=w, c=c):
            q, k, v = _qkv(w, h, position[None])
            for name, new in (("k", k), ("v", v)):  # [B, K, 1, H] into slot `position`
                c[name] = jax.lax.dynamic_update_slice(c[name], new.astype(c[name].dtype),
                                                       (zero, zero, position, zero))
            return _attend(w, q, c["k"], c["v"], live, model)

        x = _layer(w, x, attend, model)
    return _logits(weights, x[:, 0]), cache


def jitted():
    """(prefill, decode_step) jitted once per process, `model` and `max_len` static, the cache of
    `decode_step` donated (updated in place): `prefill_j(w, tokens, model=m, max_len=S)`,
    `step_j(w, cache, token, position, model=m)`. Each (model, shapes) compiles once."""
    global _JITTED
    if _JITTED is None:
        import jax

        _JITTED = (jax.jit(prefill, static_argnames=("model", "max_len")),
                   jax.jit(decode_step, static_argnames=("model",), donate_argnums=1))
    return _JITTED


_JITTED = None


def generate(weights: dict, prompt, steps: int, *, model: Transformer, max_len: int | None = None):
    """Greedy decoding: prefill `prompt` [B, P], then decode; returns the `steps` new tokens [B, steps]."""
    model = _as_model(model)
    import jax.numpy as jnp

    require_positive(steps=steps)
    P = prompt.shape[1]
    max_len = max_len or P + steps
    prefill_j, step_j = jitted()
    logits, cache = prefill_j(weights, prompt, model=model, max_len=max_len)
    out = []
    for t in range(steps):
        token = jnp.argmax(logits, axis=-1).astype(jnp.int32)
        out.append(token)
        if t + 1 < steps:
            logits, cache = step_j(weights, cache, token, P + t, model=model)
    return jnp.stack(out, axis=1)


# --- compiled costs against the serving model -----------------------------------------------------

def _compile_prefill(model: Transformer, *, batch: int, prompt_len: int, max_len: int, dtype: str):
    import functools

    import jax
    import jax.numpy as jnp

    from . import xla

    tokens = jax.ShapeDtypeStruct((batch, prompt_len), jnp.int32)
    return xla.compile(functools.partial(prefill, model=model, max_len=max_len), weight_shapes(model, dtype=dtype),
                       tokens)


def compile_decode_step(model: Transformer, *, batch: int, max_len: int, dtype: str = "float32"):
    """`decode_step` compiled from shapes (cache donated, so XLA updates it in place)."""
    model = _as_model(model)
    import functools

    import jax
    import jax.numpy as jnp

    from . import xla

    cache = cache_shapes(model, batch=batch, max_len=max_len, dtype=dtype)
    return xla.compile(functools.partial(decode_step, model=model), weight_shapes(model, dtype=dtype), cache,
                       jax.ShapeDtypeStruct((batch,), jnp.int32), jax.ShapeDtypeStruct((), jnp.int32),
                       donate_argnums=1)


@dataclass(frozen=True)
class DecodeCosts(Readable):
    """XLA's compiled FLOPs and bytes of prefill and one decode step beside the serving model.

    The model's side (`predicted_*`), from `scalebook.inference` on one chip at this dtype's bytes:

    - prefill FLOPs: B x `estimate(...).prefill.flops` (one prompt of P tokens: P x
      `flops_per_token(P, causal=True)`, which counts the unembedding for every prompt token);
    - decode FLOPs: `estimate(...).decode.flops` at context max_len (B x `flops_per_token(max_len,
      causal=False)`);
    - decode bytes: `estimate(...).decode.bytes_read` at context max_len: every weight once (the
      unembedding included, the embedding table not: a lookup reads B rows) and the KV cache of
      B sequences x max_len positions.

    What the compiled program does differently, each priced in its own field (tests/test_xla_decode.py
    holds XLA against predicted + these):

    - `prefill_masked_score_flops`: the dense prefill computes all P x P scores and masks the upper
      half; the model counts a causal kernel's half (B L P x 2 N_q H P FLOPs more in XLA).
    - `decode_gather_table_bytes`: XLA's cost model charges the embedding lookup (a gather) for its
      whole operand, the V x D table, though it reads B rows.
    - `decode_score_bytes`: the [B, N, max_len] scores and probabilities that pass between XLA's
      attention fusions (QK^T out, mask, max, exp, sum, normalise, into AV), counted from the
      compiled HLO. A fused decode-attention kernel keeps them on chip; the model does not count them.
    - `decode_activation_bytes`: the [B, D], [B, F] and [B, V] arrays passed between fusions (hidden
      states, queries, MLP products, logits), counted from the HLO. The model counts none.

    What is left is XLA's elementwise FLOPs (norms, softmax, RoPE, activation: about 1%) and a few
    kB of small arrays (the new keys and values, norm statistics).
    """

    model_name: str
    batch: int
    prompt_len: int
    max_len: int
    dtype: str
    prefill_xla_flops: float
    decode_xla_flops: float
    decode_xla_bytes: float
    prefill_predicted_flops: float
    decode_predicted_flops: float
    decode_predicted_weight_bytes: float
    decode_predicted_kv_bytes: float
    prefill_masked_score_flops: float
    decode_gather_table_bytes: float
    decode_score_bytes: float
    decode_activation_bytes: float

    @property
    def decode_predicted_bytes(self) -> float:
        return self.decode_predicted_weight_bytes + self.decode_predicted_kv_bytes

    @property
    def prefill_accounted_flops(self) -> float:
        """The model's prefill FLOPs with the dense masked half added (both unembed the last position only)."""
        return self.prefill_predicted_flops + self.prefill_masked_score_flops

    @property
    def decode_accounted_bytes(self) -> float:
        """The model's decode bytes plus the gather's table and the arrays XLA passes between fusions."""
        return (self.decode_predicted_bytes + self.decode_gather_table_bytes + self.decode_score_bytes
                + self.decode_activation_bytes)

    @property
    def prefill_flops_ratio(self) -> float:
        """XLA / accounted prediction."""
        return self.prefill_xla_flops / self.prefill_accounted_flops

    @property
    def decode_flops_ratio(self) -> float:
        """XLA / predicted (nothing to account for but elementwise ops)."""
        return self.decode_xla_flops / self.decode_predicted_flops

    @property
    def decode_bytes_ratio(self) -> float:
        """XLA / accounted prediction."""
        return self.decode_xla_bytes / self.decode_accounted_bytes

    def _rows(self):
        f = units.format_quantity
        return [("prefill FLOPs", f(self.prefill_xla_flops, "FLOP"), f(self.prefill_predicted_flops, "FLOP"),
                 f"+{f(self.prefill_masked_score_flops, 'FLOP')} masked half",
                 f"{units.fmt_percent((self.prefill_flops_ratio - 1), 2, signed=True)}"),
                ("decode step FLOPs", f(self.decode_xla_flops, "FLOP"), f(self.decode_predicted_flops, "FLOP"), "-",
                 f"{units.fmt_percent((self.decode_flops_ratio - 1), 2, signed=True)}"),
                ("decode step bytes", f(self.decode_xla_bytes, "B"), f(self.decode_predicted_bytes, "B"),
                 f"+{f(self.decode_gather_table_bytes, 'B')} gather table, +{f(self.decode_score_bytes, 'B')} scores, "
                 f"+{f(self.decode_activation_bytes, 'B')} activations",
                 f"{units.fmt_percent((self.decode_bytes_ratio - 1), 2, signed=True)}")]

    def __repr__(self) -> str:
        body = "; ".join(f"{what} XLA {x} vs {p} ({extra}) {d}" for what, x, p, extra, d in self._rows())
        return (f"DecodeCosts({self.model_name}, B={self.batch}, prompt {self.prompt_len}, max_len {self.max_len}, "
                f"{self.dtype}: {body})")

    def _repr_html_(self) -> str:
        cap = (f"{self.model_name}, B={self.batch}, prompt {self.prompt_len}, cache of {self.max_len} positions, "
               f"{self.dtype}")
        return _html_table(("what", "XLA cost_analysis", "scalebook.inference", "accounted differences",
                            "XLA above accounted"), self._rows(), cap)


def predicted_decode(model: Transformer, *, batch: int, context: int, dtype: str = "float32") -> dict:
    """The serving model's decode step at `context` on one chip: {'flops', 'weight_bytes', 'kv_bytes'}.

    Read from `inference.estimate` with prompt_len = context and output_len = 1, so that its
    average decode context (prompt + output // 2) is `context`. Its weights and KV cache are
    bf16 (the model has no fp32 weights); bytes scale linearly with the element size, so they
    are scaled to `dtype`. FLOPs do not depend on the dtype. The chip (h100) only sets times,
    which are not used.
    """
    model = _as_model(model)
    from . import inference

    est = inference.estimate(model, chip="h100", deployment=inference.Deployment(), batch=batch,
                             prompt_len=context, output_len=1)
    scale = _DTYPES[_dtype(dtype)] / units.dtype_bytes("bf16")
    return {"flops": est.decode.flops, "weight_bytes": est.decode.weight_bytes_read * scale,
            "kv_bytes": est.decode.kv_bytes_read * scale}


def predicted_prefill_flops(model: Transformer, *, prompt_len: int) -> float:
    """`inference.estimate(...).prefill.flops`: the FLOPs of prefilling one prompt on one chip."""
    model = _as_model(model)
    from . import inference

    return inference.estimate(model, chip="h100", deployment=inference.Deployment(), batch=1,
                              prompt_len=prompt_len, output_len=1).prefill.flops


_TRIVIAL_OPS = ("parameter", "constant", "bitcast", "tuple", "get-tuple-element")


def decode_traffic(hlo: str, model: Transformer, *, batch: int, max_len: int) -> dict[str, float]:
    """Bytes a compiled decode step moves in and out of its top-level ops for arrays that are
    neither weights nor cache, read from the entry computation of its optimized HLO text.

    'scores': arrays of B N max_len elements with a max_len dimension (scores, probabilities);
    'activations': arrays of B D, B F or B V elements (hidden states, queries, MLP products,
    logits). Each op that is not a parameter, constant, bitcast or tuple counts its output and
    each of its operands that falls in a class. Parameters (weights, cache) and bitcasts of them
    never do, whatever their size.
    """
    model = _as_model(model)
    import math
    import re

    from .xla import _shape_bytes

    B = batch
    act = {B * model.d_model, B * model.d_ff, B * model.vocab}
    entry = hlo.split("\nENTRY", 1)[-1]
    kinds: dict[str, tuple[str | None, float]] = {}
    out = {"scores": 0.0, "activations": 0.0}
    for line in entry.splitlines()[1:]:
        m = re.match(r"\s*(?:ROOT )?%(\S+) = (\w+)\[([\d,]*)\]\S* ([\w-]+)\((.*?)\)", line)
        if not m:
            continue
        name, dt, dims, op, args = m.groups()
        shape = [int(d) for d in dims.split(",") if d]
        n = math.prod(shape)
        operands = [a for a in re.findall(r"%([\w.-]+)", args) if a in kinds]
        if op == "parameter":  # weights and cache: never counted here
            kind = None
        elif op == "bitcast":  # a view: whatever it views
            kind = kinds[operands[0]][0] if operands else None
        else:
            kind = ("scores" if n == B * model.heads * max_len and max_len in shape
                    else "activations" if n in act else None)
        kinds[name] = (kind, _shape_bytes(f"{dt}[{dims}]")[0])
        if op in _TRIVIAL_OPS:
            continue
        for k, nbytes in [kinds[name]] + [kinds[a] for a in operands]:
            if k:
                out[k] += nbytes
    return out


def compiled_costs(model: Transformer = SMALL, *, batch: int, prompt_len: int, max_len: int,
                   dtype: str = "float32") -> DecodeCosts:
    """Compile prefill ([batch, prompt_len]) and one decode step (cache of `max_len`) from shapes;
    XLA's `cost_analysis()` beside the serving model (`DecodeCosts`). Nothing runs.

    The decode step attends over the whole cache, so it stands for a decode at context
    `max_len`. Use float32 on CPU (XLA upcasts bf16 dots there, TOOLCHAIN.md, note 14), and batch >= 2:
    with a batch of 1 XLA on CPU drops the unit dimension, compiles copies of the cache and
    its cost analysis no longer adds up.
    """
    model = _as_model(model)
    from . import xla
    from .transformer import flops_per_token

    _check(model)
    require_positive(batch=batch, prompt_len=prompt_len, max_len=max_len)
    if prompt_len > max_len:
        raise Error(f"a prompt of {prompt_len} tokens does not fit a cache of max_len={max_len}")
    B, P, b = batch, prompt_len, _DTYPES[_dtype(dtype)]
    pre = xla.cost(_compile_prefill(model, batch=B, prompt_len=P, max_len=max_len, dtype=dtype))
    dec_compiled = compile_decode_step(model, batch=B, max_len=max_len, dtype=dtype)
    dec = xla.cost(dec_compiled)
    pred = predicted_decode(model, batch=B, context=max_len, dtype=dtype)
    dense, causal = (flops_per_token(model, seq_len=P, causal=c) for c in (False, True))
    traffic = decode_traffic(dec_compiled.as_text(), model, batch=B, max_len=max_len)
    return DecodeCosts(model_name=model.name, batch=B, prompt_len=P, max_len=max_len, dtype=dtype,
                       prefill_xla_flops=pre.flops, decode_xla_flops=dec.flops, decode_xla_bytes=dec.bytes_accessed,
                       prefill_predicted_flops=B * predicted_prefill_flops(model, prompt_len=P),
                       decode_predicted_flops=pred["flops"], decode_predicted_weight_bytes=pred["weight_bytes"],
                       decode_predicted_kv_bytes=pred["kv_bytes"],
                       prefill_masked_score_flops=B * P * (dense.attention_score_flops - causal.attention_score_flops),
                       decode_gather_table_bytes=model.vocab * model.d_model * b,
                       decode_score_bytes=traffic["scores"], decode_activation_bytes=traffic["activations"])


# --- timing -------------------------------------------------------------------------------------

@dataclass(frozen=True)
class DecodeTiming(Readable):
    """One decode step timed on a device: median seconds, and what XLA says it moves and computes."""

    model_name: str
    device_kind: str
    batch: int
    context: int
    dtype: str
    seconds: float
    xla_flops: float
    xla_bytes: float

    @property
    def bytes_per_s(self) -> float:
        return self.xla_bytes / self.seconds

    @property
    def flops_per_s(self) -> float:
        return self.xla_flops / self.seconds

    @property
    def tokens_per_s(self) -> float:
        return self.batch / self.seconds

    def to_dict(self) -> dict:
        return {"model": self.model_name, "device_kind": self.device_kind, "batch": self.batch,
                "context": self.context, "dtype": self.dtype, "seconds": self.seconds, "xla_flops": self.xla_flops,
                "xla_bytes": self.xla_bytes, "bytes_per_s": self.bytes_per_s, "flops_per_s": self.flops_per_s}

    def __repr__(self) -> str:
        f = units.format_quantity
        return (f"DecodeTiming({self.model_name} on {self.device_kind}, B={self.batch}, context {self.context}, "
                f"{self.dtype}: {f(self.seconds, 's')}/step, {f(self.bytes_per_s, 'B/s')}, "
                f"{f(self.flops_per_s, 'FLOP/s')}, {units.fmt_number(self.tokens_per_s, 4)} token/s)")


def time_decode(model: Transformer = SMALL, *, batch: int, context: int, repeats: int = 5,
                dtype: str = "float32", weights: dict | None = None) -> DecodeTiming:
    """Median wall time of one decode step of `batch` sequences at `context` on jax's default device.

    The cache has `context` positions (all filled) and the step writes position
    context - 1, attending to all of them. The cache is donated, so each step updates it in
    place. Pass `weights` (from `init_weights`) to time several shapes without redrawing them.
    """
    model = _as_model(model)
    import jax
    import jax.numpy as jnp

    from . import xla

    require_positive(batch=batch, context=context, repeats=repeats)
    w = weights if weights is not None else init_weights(model, dtype=dtype)
    compiled = compile_decode_step(model, batch=batch, max_len=context, dtype=dtype)
    cost = xla.cost(compiled)
    shape = cache_shape(model, batch=batch, max_len=context)
    dt = jnp.dtype(_dtype(dtype))
    # any values will do for timing: a constant is cheap to make even for a large cache
    state = [[{n: jnp.full(shape, 0.01, dt) for n in ("k", "v")} for _ in range(model.layers)]]
    token = jnp.zeros((batch,), jnp.int32)
    position = jnp.int32(context - 1)

    def once():
        logits, state[0] = compiled(w, state[0], token, position)
        return logits

    seconds = xla.time_call(once, repeats=repeats, warmup=1)
    state.clear()
    return DecodeTiming(model_name=model.name, device_kind=jax.devices()[0].device_kind, batch=batch,
                        context=context, dtype=dtype, seconds=seconds, xla_flops=cost.flops,
                        xla_bytes=cost.bytes_accessed)


#: A decoder whose float32 weights (290 MB) outgrow a CPU's caches, so a step streams them from memory.
BENCH = Transformer(name="bench-decoder", layers=4, d_model=1024, heads=16, kv_heads=4, d_ff=4096, vocab=8192)


@dataclass(frozen=True)
class DecodePoint:
    """One (batch, context) of a `decode_curve`: measured step time beside two predictions."""

    batch: int
    context: int
    seconds: float
    model_weight_bytes: float
    model_kv_bytes: float
    model_flops: float
    predicted_memory_seconds: float
    predicted_roofline_seconds: float
    matmul_flops_per_s: float


@dataclass(frozen=True)
class DecodeCurve(Readable):
    """Decode step times measured on this device against the serving model's shape (Chapter 7).

    `predicted_memory_seconds`: the bytes the model says a step reads (every weight once, the KV
    cache of batch x context) over the copy bandwidth measured here. `predicted_roofline_seconds`:
    the larger of that and the step's FLOPs over the FLOP/s measured here for a [batch, D] x [D, F]
    matmul, which on a CPU runs far below the stream bandwidth at small batch.
    """

    model_name: str
    device_kind: str
    dtype: str
    measured_bytes_per_s: float
    points: tuple[DecodePoint, ...]

    def ratios(self) -> list[dict]:
        """Each point's measured and predicted times as ratios to the smallest case."""
        base = min(self.points, key=lambda p: (p.batch * p.context, p.batch))
        return [{"batch": p.batch, "context": p.context, "measured": p.seconds / base.seconds,
                 "memory": p.predicted_memory_seconds / base.predicted_memory_seconds,
                 "roofline": p.predicted_roofline_seconds / base.predicted_roofline_seconds} for p in self.points]

    def __repr__(self) -> str:
        f = units.format_quantity
        pts = ", ".join(f"B={p.batch} C={p.context}: {f(p.seconds, 's')}" for p in self.points)
        return f"DecodeCurve({self.model_name} on {self.device_kind}: {pts})"


def decode_curve(model: Transformer = BENCH, *, batches=(2, 8, 32), contexts=(256, 1024, 2048),
                 dtype: str = "float32", repeats: int = 3) -> DecodeCurve:
    """Time decode steps at every (batch, context) and set them beside the model's predictions.

    Measures the device's copy bandwidth and matmul rates with `scalebook.measure` first; see
    `DecodeCurve`. A few seconds per point on a CPU with the default model.
    """
    model = _as_model(model)
    import jax

    from . import measure

    for name, values in (("batches", batches), ("contexts", contexts)):
        if not values:
            raise Error(f"{name} needs at least one value")
    platform = jax.devices()[0].platform
    mdt = {"float32": "fp32", "bfloat16": "bf16", "float16": "fp16"}.get(dtype)
    if mdt is None:
        raise Error(f"dtype must be float32, bfloat16 or float16, got {dtype!r}")
    bandwidth = measure.copy(1e9 if platform != "cpu" else 256e6, dtype=mdt, repeats=repeats).bytes_per_s
    rates = {b: measure.matmul(b, model.d_model, model.d_ff, dtype=mdt, repeats=repeats).flops_per_s for b in batches}
    weights = init_weights(model, dtype=dtype)
    points = []
    for context in contexts:
        for batch in batches:
            t = time_decode(model, batch=batch, context=context, repeats=repeats, dtype=dtype, weights=weights)
            pred = predicted_decode(model, batch=batch, context=context, dtype=dtype)
            memory_s = (pred["weight_bytes"] + pred["kv_bytes"]) / bandwidth
            points.append(DecodePoint(batch=batch, context=context, seconds=t.seconds,
                                      model_weight_bytes=pred["weight_bytes"], model_kv_bytes=pred["kv_bytes"],
                                      model_flops=pred["flops"], predicted_memory_seconds=memory_s,
                                      predicted_roofline_seconds=max(memory_s, pred["flops"] / rates[batch]),
                                      matmul_flops_per_s=rates[batch]))
    return DecodeCurve(model_name=model.name, device_kind=jax.devices()[0].device_kind, dtype=dtype,
                       measured_bytes_per_s=bandwidth, points=tuple(points))
