"""A small Transformer trained for real on a device mesh: FSDP x tensor parallelism (Chapter 5).

`init_model` builds an L-layer decoder-only model from `jax_layer` blocks, with an embedding
table, a final RMSNorm and an untied unembedding; `loss_fn` is next-token cross-entropy;
`make_train_step` jits one Adam step (Adam written out in plain JAX, no optax) with
`NamedSharding`s on a mesh with axes "fsdp" and "tp"; `train` runs a few steps on synthetic
tokens and returns the losses together with the compiled step, its HLO, XLA's
`memory_analysis()` and the collectives read from the HLO (`xla.collectives_in_hlo`, split into
the arrays they move by `step_arrays`), so that a test can hold them against
`scalebook.training.estimate`. `compile_train_step` compiles at other sizes without running;
`saved_residuals` measures what autodiff keeps for the backward pass on one device.

How the state is laid out (`param_specs`), per mesh axis:

- FSDP (ZeRO-3): every weight, and with it its gradient and Adam moments, is sharded over
  `fsdp` on one dimension (D for the layer weights, the table's D for the embedding and
  unembedding). Before a weight is used, `with_sharding_constraint` asks for its copy gathered
  over `fsdp` (one AllGather per weight); its gradient is summed over the `fsdp` shards of the
  batch and scattered back (a ReduceScatter; on CPU an AllReduce + dynamic-slice, TOOLCHAIN.md, note 14).
- Tensor parallelism (Megatron): Q, K, V and MLP gate/up are sharded over `tp` on their output
  dimension (heads, F); O and MLP down on their input dimension, so attention and MLP each end
  in one AllReduce of the [B, T, D] activations over `tp` in the forward pass (and their input
  gradients in one each in the backward pass). The embedding and unembedding tables are sharded
  over `tp` on the vocabulary (Megatron's vocab-parallel embedding: the lookup ends in one
  AllReduce over `tp`; the logits stay sharded over `tp`, so the softmax needs three small
  AllReduces over `tp`: its max, its sum and the target's logit). Norm scales are sharded over
  `fsdp` only (replicated over `tp`, as in Megatron).
- The batch is sharded over `fsdp`, replicated over `tp`.
- `regather=True` (the default, ZeRO-3) gathers each layer's weights again for its backward
  pass instead of keeping them from the forward pass (`forward`).

Everything is float32 so that the HLO bytes are those of the model (CPU XLA computes bf16 dots
in f32; TOOLCHAIN.md, note 14). jax is imported inside the functions: `import scalebook` never loads it.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from ._readable import Readable
from . import units
from .errors import Error, require_positive
from .models import Transformer
from .transformer import _html_table

#: The mesh axes this module shards over, major first.
AXES = ("fsdp", "tp")

#: A small dense config that compiles and trains in a few seconds on 2 CPU cores.
SMALL = Transformer(name="tiny-fsdp-tp", layers=2, d_model=256, heads=8, kv_heads=4, d_ff=512, vocab=512)

# PartitionSpecs of the weights, as tuples of mesh-axis names (None: not sharded). `stored` is
# how a weight, its gradient and its Adam moments live between steps; `used` is the copy a matmul
# reads, gathered over fsdp (the ZeRO-3 AllGather) and still sharded over tp (Megatron).
_LAYER_SPECS = {
    #           stored                     used
    "wq":     (("fsdp", "tp", None),      (None, "tp", None)),   # [D, N, H]: heads over tp
    "wk":     (("fsdp", "tp", None),      (None, "tp", None)),   # [D, K, H]
    "wv":     (("fsdp", "tp", None),      (None, "tp", None)),   # [D, K, H]
    "wo":     (("tp", None, "fsdp"),      ("tp", None, None)),   # [N, H, D]: input heads over tp
    "w_gate": (("fsdp", "tp"),            (None, "tp")),         # [D, F]: F over tp
    "w_up":   (("fsdp", "tp"),            (None, "tp")),         # [D, F]
    "w_down": (("tp", "fsdp"),            ("tp", None)),         # [F, D]: input F over tp
    "norm1":  (("fsdp",),                 (None,)),              # [D]
    "norm2":  (("fsdp",),                 (None,)),              # [D]
}
_TOP_SPECS = {
    "embed":      (("tp", "fsdp"),        ("tp", None)),         # [V, D]: vocab over tp
    "final_norm": (("fsdp",),             (None,)),              # [D]
    "unembed":    (("fsdp", "tp"),        (None, "tp")),         # [D, V]: vocab over tp
}


def _check(model: Transformer, mesh_shape: Mapping[str, int]) -> None:
    from .jax_layer import _check_buildable

    _check_buildable(model)
    if model.parallel_block or model.tied_embeddings or model.biases or model.learned_positions:
        raise Error(f"jax_training builds sequential, untied, bias-free RoPE models; {model.name} is not one "
                    "(set parallel_block=False, tied_embeddings=False, biases=False, learned_positions=0)")
    if tuple(mesh_shape) != AXES:
        raise Error(f"the mesh must have axes {AXES} in that order, e.g. {{'fsdp': 4, 'tp': 2}}; "
                    f"got {dict(mesh_shape)}")
    fsdp, tp = mesh_shape["fsdp"], mesh_shape["tp"]
    require_positive(fsdp=fsdp, tp=tp)
    for what, size, axis, n in (("d_model", model.d_model, "fsdp", fsdp), ("heads", model.heads, "tp", tp),
                                ("kv_heads", model.kv_heads, "tp", tp), ("d_ff", model.d_ff, "tp", tp),
                                ("vocab", model.vocab, "tp", tp)):
        if size % n:
            raise Error(f"{what}={size} is not divisible by the {axis} axis ({n}); choose sizes that divide")


def param_specs(model: Transformer, *, used: bool = False) -> dict:
    """PartitionSpecs of the model's weights: {'layers': [per-layer dict] * L, 'embed', ...}.

    `used=False`: how weights, gradients and Adam moments are stored (sharded over fsdp and tp);
    `used=True`: the copy a matmul reads, gathered over fsdp (see module doc).
    """
    from jax.sharding import PartitionSpec as P

    i = 1 if used else 0
    names = [n for n in _LAYER_SPECS if n != "w_gate" or model.mlp == "gated"]
    layer = {n: P(*_LAYER_SPECS[n][i]) for n in names}
    return {"layers": [dict(layer) for _ in range(model.layers)], **{n: P(*s[i]) for n, s in _TOP_SPECS.items()}}


def init_model(model: Transformer, *, seed: int = 0) -> dict:
    """Float32 weights of `model`: each layer from `jax_layer.init_block` (seed + layer index),
    the embedding [V, D] normal(0, 1), the unembedding [D, V] normal(0, 1/D), norm scales 1.

    Returned unsharded; `train` places them with `jax.device_put` as `param_specs` says.
    """
    import jax.numpy as jnp
    import numpy as np

    from .jax_layer import init_block

    _check(model, {"fsdp": 1, "tp": 1})
    rng = np.random.default_rng(seed + 10_000)
    D, V = model.d_model, model.vocab
    return {
        "layers": [init_block(model, seed=seed + i) for i in range(model.layers)],
        "embed": jnp.asarray(rng.standard_normal((V, D)), jnp.float32),
        "final_norm": jnp.ones((D,), jnp.float32),
        "unembed": jnp.asarray(rng.standard_normal((D, V)) / D**0.5, jnp.float32),
    }


def _constrain(tree, specs, mesh):
    import jax
    from jax.sharding import NamedSharding

    return jax.tree.map(lambda x, s: jax.lax.with_sharding_constraint(x, NamedSharding(mesh, s)), tree, specs)


#: `jax.ad_checkpoint.checkpoint_name` of a layer's weights gathered over fsdp.
GATHERED = "fsdp_gathered_weights"


def _save_all_but_gathered(prim, *_, **params) -> bool:
    """Remat policy: save every value the backward pass needs except gathered weights.

    `save_anything_except_these_names(GATHERED)` is not enough: autodiff would then save the
    output of the `sharding_constraint` that gathered the weight (the same array, unnamed).
    So this refuses sharding constraints too; those on activations cost nothing to redo.
    """
    return prim.name != "sharding_constraint" and params.get("name") != GATHERED


def forward(params: dict, tokens, *, model: Transformer, mesh=None, regather: bool = True):
    """Logits [B, T, V] of `tokens` [B, T] (int32).

    With `mesh`, each weight is gathered over fsdp just before its layer uses it and activations
    are pinned to batch-over-fsdp at each layer boundary (module doc). `regather=True` (ZeRO-3)
    wraps each layer in `jax.checkpoint` with a policy that saves every activation for the
    backward pass except the gathered weights (named `GATHERED`): the backward pass gathers each
    layer's weights again instead of keeping all of them from the forward pass. With
    `regather=False` autodiff keeps every gathered weight as a residual (no second AllGather,
    but the whole model, over fsdp, stays in memory). The embedding table is gathered once: the
    gradient of a lookup does not read the table. The unembedding is gathered once too: it is
    the last weight of the forward pass and the first of the backward.
    """
    import jax
    import jax.numpy as jnp
    from jax.ad_checkpoint import checkpoint_name
    from jax.sharding import NamedSharding, PartitionSpec as P

    from .jax_layer import _rms_norm, block_apply

    def pin(x, spec):
        return x if mesh is None else jax.lax.with_sharding_constraint(x, NamedSharding(mesh, spec))

    used = param_specs(model, used=True)
    top = {k: v for k, v in params.items() if k != "layers"}
    w = top if mesh is None else _constrain(top, {k: used[k] for k in top}, mesh)

    def layer(wl, x):
        if mesh is not None:
            wl = jax.tree.map(lambda a: checkpoint_name(a, GATHERED), _constrain(wl, used["layers"][0], mesh))
        return pin(block_apply(wl, x, model=model), P("fsdp", None, None))

    if regather and mesh is not None:
        layer = jax.checkpoint(layer, policy=_save_all_but_gathered)
    x = pin(jnp.take(w["embed"], tokens, axis=0), P("fsdp", None, None))
    for wl in params["layers"]:
        x = layer(wl, x)
    h = _rms_norm(x, w["final_norm"])
    return pin(jnp.einsum("btd,dv->btv", h, w["unembed"]), P("fsdp", None, "tp"))


def loss_fn(params: dict, tokens, *, model: Transformer, mesh=None, regather: bool = True):
    """Mean next-token cross-entropy (nats): position t predicts token t + 1 of `tokens` [B, T + 1].
    `mesh` and `regather` as in `forward`."""
    import jax
    import jax.numpy as jnp

    logits = forward(params, tokens[:, :-1], model=model, mesh=mesh, regather=regather)
    target = tokens[:, 1:]
    logz = jax.nn.logsumexp(logits, axis=-1)
    picked = jnp.take_along_axis(logits, target[..., None], axis=-1)[..., 0]
    return jnp.mean(logz - picked)


def init_adam(params: dict) -> dict:
    """Adam's state for `params`: step count 0, first and second moments zero (float32)."""
    import jax
    import jax.numpy as jnp

    return {"step": jnp.zeros((), jnp.int32), "m": jax.tree.map(jnp.zeros_like, params),
            "v": jax.tree.map(jnp.zeros_like, params)}


def adam_update(params: dict, grads: dict, state: dict, *, lr: float, b1: float = 0.9, b2: float = 0.999,
                eps: float = 1e-8) -> tuple[dict, dict]:
    """One Adam step (Kingma & Ba, with bias correction): m = b1 m + (1-b1) g, v = b2 v + (1-b2) g^2,
    p -= lr (m / (1 - b1^t)) / (sqrt(v / (1 - b2^t)) + eps). Elementwise: no communication."""
    import jax
    import jax.numpy as jnp

    t = state["step"] + 1
    m = jax.tree.map(lambda m, g: b1 * m + (1 - b1) * g, state["m"], grads)
    v = jax.tree.map(lambda v, g: b2 * v + (1 - b2) * g * g, state["v"], grads)
    c1 = 1 - b1 ** t.astype(jnp.float32)
    c2 = 1 - b2 ** t.astype(jnp.float32)
    new = jax.tree.map(lambda p, m, v: p - lr * (m / c1) / (jnp.sqrt(v / c2) + eps), params, m, v)
    return new, {"step": t, "m": m, "v": v}


def _state_shardings(model: Transformer, mesh):
    import jax
    from jax.sharding import NamedSharding, PartitionSpec as P

    p = jax.tree.map(lambda s: NamedSharding(mesh, s), param_specs(model),
                     is_leaf=lambda x: isinstance(x, P))
    return p, {"step": NamedSharding(mesh, P()), "m": p, "v": p}


def make_train_step(model: Transformer, mesh, *, lr: float = 3e-3, donate: bool = True, regather: bool = True):
    """`step(params, adam_state, tokens) -> (params, adam_state, loss)`, jitted on `mesh`.

    `mesh`: a `jax.sharding.Mesh` with axes ('fsdp', 'tp') of Auto type (`xla.mesh`). Params and
    Adam moments in and out are sharded as `param_specs(model)`; tokens [B, T + 1] over fsdp.
    `donate=True` donates params and Adam state, so XLA updates them in place (their output
    buffers alias the inputs: `memory_analysis().alias_size_in_bytes`). `regather` as in `forward`.
    """
    import functools

    import jax
    from jax.sharding import NamedSharding, PartitionSpec as P

    _check(model, dict(mesh.shape))
    require_positive(lr=lr)
    p_sh, s_sh = _state_shardings(model, mesh)
    tok_sh = NamedSharding(mesh, P("fsdp", None))
    loss_sh = NamedSharding(mesh, P())

    loss = functools.partial(loss_fn, model=model, mesh=mesh, regather=regather)

    def step(params, state, tokens):
        loss_value, grads = jax.value_and_grad(loss)(params, tokens)
        grads = _constrain(grads, param_specs(model), mesh)  # gradients live where their weights do
        params, state = adam_update(params, grads, state, lr=lr)
        return params, state, loss_value

    return jax.jit(step, in_shardings=(p_sh, s_sh, tok_sh), out_shardings=(p_sh, s_sh, loss_sh),
                   donate_argnums=(0, 1) if donate else ())


def synthetic_tokens(*, batch: int, seq_len: int, vocab: int, seed: int = 0):
    """Int32 tokens [batch, seq_len + 1] that a model can learn: sequence b counts up from a random
    start with a random stride (token t+1 = token t + stride_b mod vocab), a fixed batch."""
    import numpy as np

    require_positive(batch=batch, seq_len=seq_len, vocab=vocab)
    rng = np.random.default_rng(seed)
    start = rng.integers(0, vocab, size=(batch, 1))
    stride = rng.integers(1, 8, size=(batch, 1))
    return ((start + stride * np.arange(seq_len + 1)[None, :]) % vocab).astype(np.int32)


@dataclass(frozen=True)
class StepArray(Readable):
    """One array that a collective of the compiled step moves, with the pass it belongs to.

    XLA's combiners pack independent collectives of one kind and group into a single op with a
    tuple of operands (all the gradient ReduceScatters of a step become one AllReduce on CPU);
    this splits such an op back into its arrays. `array_bytes` is V of that array alone (the
    convention of `xla.HloCollective`); `combined_with` how many arrays shared the op.
    `phase` is read from the op's `op_name` metadata: 'forward' (jax's jvp), 'backward'
    (jax's transpose of it), or 'other'. `op_name` is the jax operation that needed it; `op`
    the index of its HLO op among the step's collectives (arrays of one op share it).
    """

    op: int
    kind: str
    axes: tuple[str, ...]
    shape: str
    array_bytes: float
    combined_with: int
    phase: str
    op_name: str

    def __repr__(self) -> str:
        f = units.format_quantity
        packed = f", 1 of {self.combined_with} in one op" if self.combined_with > 1 else ""
        return (f"StepArray({self.phase} {self.kind} over {''.join(self.axes) or '-'}: {self.shape}, "
                f"V={f(self.array_bytes, 'B')}{packed}; {self.op_name})")


def _phase(op_name: str) -> str:
    if "transpose(" in op_name:
        return "backward"
    return "forward" if "jvp(" in op_name else "other"


def _split_names(body: str) -> list[str]:
    """'pre/(a:b:c)' (a combined op's metadata) -> ['pre/a', 'pre/b', 'pre/c']; else [body]."""
    if ":" not in body or not body.endswith(")"):
        return [body]
    depth = 0
    for i in range(len(body) - 1, -1, -1):
        depth += {")": 1, "(": -1}.get(body[i], 0)
        if depth == 0:
            return [body[:i] + part for part in body[i + 1:-1].split(":")]
    return [body]


def step_arrays(hlo: str, mesh_shape: Mapping[str, int]) -> tuple[StepArray, ...]:
    """Every array moved by a collective in compiled HLO `hlo`, in program order (see `StepArray`).

    Kinds, axes and bytes come from `xla.collectives_in_hlo`, one HLO line at a time; a tuple
    (combined) op is split into its arrays, each named by its part of the op's metadata.
    """
    import re

    from . import xla

    out = []
    ops = 0
    for line in hlo.splitlines():
        found = xla.collectives_in_hlo(line, dict(mesh_shape))
        if not found:
            continue
        ops += 1
        (c,) = found
        shapes = re.findall(r"[a-z]+[0-9]*[a-z0-9]*\[[0-9,]*\]", c.shape)
        m = re.search(r'op_name="([^"]*)"', line)
        name = m.group(1) if m else ""
        body = name.split("/", 1)[1] if "/" in name else name
        names = _split_names(body)
        if len(names) != len(shapes):
            names = [body] * len(shapes)
        for shape, op in zip(shapes, names):
            v = xla._shape_bytes(shape)[0]
            if c.kind in ("reduce-scatter", "all-to-all", "collective-permute"):
                v *= c.group_size
            out.append(StepArray(op=ops - 1, kind=c.kind, axes=c.axes, shape=shape, array_bytes=v,
                                 combined_with=len(shapes),
                                 phase=_phase(op), op_name=op))
    return tuple(out)


@dataclass(frozen=True)
class MemoryAnalysis(Readable):
    """XLA's `compiled.memory_analysis()` of one device's program, in bytes.

    `argument_bytes`: the inputs (params, Adam state, tokens) resident on the device;
    `output_bytes`: the outputs; `alias_bytes`: outputs written into donated input buffers;
    `temp_bytes`: everything else live during the step (activations, gathered weights,
    gradients, logits, XLA's scratch). Peak = argument + output - alias + temp.
    """

    argument_bytes: int
    output_bytes: int
    alias_bytes: int
    temp_bytes: int
    generated_code_bytes: int

    @property
    def bytes(self) -> int:
        """Device memory the step needs: arguments + outputs not aliased to arguments + temps."""
        return self.argument_bytes + self.output_bytes - self.alias_bytes + self.temp_bytes

    def __repr__(self) -> str:
        f = units.format_quantity
        return (f"MemoryAnalysis({f(self.bytes, 'B')} per device: arguments {f(self.argument_bytes, 'B')}, "
                f"outputs {f(self.output_bytes, 'B')} (aliased {f(self.alias_bytes, 'B')}), "
                f"temporaries {f(self.temp_bytes, 'B')})")


def memory_analysis(compiled) -> MemoryAnalysis:
    """`compiled.memory_analysis()` as a `MemoryAnalysis` (per device for a partitioned program)."""
    m = compiled.memory_analysis()
    if m is None:
        raise Error("this backend's compiled program reports no memory analysis")
    return MemoryAnalysis(argument_bytes=int(m.argument_size_in_bytes), output_bytes=int(m.output_size_in_bytes),
                          alias_bytes=int(m.alias_size_in_bytes), temp_bytes=int(m.temp_size_in_bytes),
                          generated_code_bytes=int(m.generated_code_size_in_bytes))


@dataclass(frozen=True)
class TrainingRun(Readable):
    """What `train` did: the losses per step, and the compiled step with what XLA says about it.

    `collectives`: every collective in the compiled step's HLO (`xla.HloCollective`, with mesh
    axes and V bytes), in program order; `arrays`: the same split into the arrays they move,
    with the pass each belongs to (`step_arrays`). `memory`: `memory_analysis()` per device.
    """

    model: Transformer
    mesh_shape: dict
    regather: bool
    batch: int
    seq_len: int
    lr: float
    losses: tuple[float, ...]
    memory: MemoryAnalysis
    collectives: tuple
    arrays: tuple = field(repr=False)
    hlo: str = field(repr=False)
    compiled: Any = field(repr=False)

    @property
    def tokens_per_step(self) -> int:
        return self.batch * self.seq_len

    def __repr__(self) -> str:
        mesh = "x".join(f"{k}={v}" for k, v in self.mesh_shape.items())
        loss = " -> ".join(f"{x:.3f}" for x in (self.losses[0], self.losses[-1]))
        return (f"TrainingRun({self.model.name} on {mesh}, B={self.batch}, T={self.seq_len}, {len(self.losses)} steps: "
                f"loss {loss}; {len(self.collectives)} collectives in the HLO; {self.memory})")

    def _repr_html_(self) -> str:
        rows = [(i, f"{x:.4f}") for i, x in enumerate(self.losses)]
        cap = f"{self.model.name}, B={self.batch}, T={self.seq_len}, mesh {self.mesh_shape}: {self.memory}"
        return _html_table(("step", "loss (nats)"), rows, cap)


def _check_run(model: Transformer, mesh_shape: Mapping[str, int] | None, batch: int, seq_len: int) -> dict:
    shape = dict(mesh_shape or {"fsdp": 4, "tp": 2})
    _check(model, shape)
    require_positive(batch=batch, seq_len=seq_len)
    if batch % shape["fsdp"]:
        raise Error(f"batch={batch} is not divisible by the fsdp axis ({shape['fsdp']}); use a multiple of it")
    return shape


def compile_train_step(model: Transformer = SMALL, *, mesh_shape: Mapping[str, int] | None = None, batch: int = 16,
                       seq_len: int = 64, lr: float = 3e-3, regather: bool = True):
    """`make_train_step` compiled for `batch` sequences of `seq_len` tokens, from shapes only
    (nothing is allocated or run): for reading its HLO and `memory_analysis` at other sizes."""
    import jax
    import jax.numpy as jnp
    from jax.sharding import NamedSharding, PartitionSpec as P

    from . import xla

    shape = _check_run(model, mesh_shape, batch, seq_len)
    mesh = xla.mesh(shape)
    p_sh, s_sh = _state_shardings(model, mesh)

    def placed(tree, shardings):
        return jax.tree.map(lambda a, sh: jax.ShapeDtypeStruct(a.shape, a.dtype, sharding=sh), tree, shardings)

    params = placed(jax.eval_shape(lambda: init_model(model)), p_sh)
    state = placed(jax.eval_shape(init_adam, params), s_sh)
    tokens = jax.ShapeDtypeStruct((batch, seq_len + 1), jnp.int32, sharding=NamedSharding(mesh, P("fsdp", None)))
    return make_train_step(model, mesh, lr=lr, regather=regather).lower(params, state, tokens).compile()


def device_model(model: Transformer, *, tp: int) -> Transformer:
    """The layer one device computes under `tp`-way Megatron TP: N / tp query heads, K / tp kv
    heads, F / tp MLP width and V / tp vocabulary (its slice of the logits); D is whole."""
    return model.replace(name=f"{model.name} / tp{tp}", heads=model.heads // tp, kv_heads=model.kv_heads // tp,
                         head_dim=model.head_dim, d_ff=model.d_ff // tp, vocab=model.vocab // tp)


@dataclass(frozen=True)
class SavedResiduals(Readable):
    """What JAX's autodiff keeps from the forward pass for the backward pass, per device.

    Read with `jax.vjp` under `jax.eval_shape` (nothing runs) on the program one device runs
    (`device_model`, batch / fsdp sequences): the arrays the returned VJP closure holds.
    `bytes` counts those that grow with the batch (activations; the weights it also holds do
    not), found as residuals(2b) - residuals(b). `shapes` lists the residuals at batch b.
    """

    model_name: str
    batch_per_device: int
    seq_len: int
    bytes: float
    shapes: tuple[str, ...] = field(repr=False)

    @property
    def bytes_per_token(self) -> float:
        return self.bytes / (self.batch_per_device * self.seq_len)

    def __repr__(self) -> str:
        f = units.format_quantity
        return (f"SavedResiduals({self.model_name}, {self.batch_per_device} x {self.seq_len} tokens per device: "
                f"{f(self.bytes, 'B')}, {f(self.bytes_per_token, 'B')} per token)")


def saved_residuals(model: Transformer = SMALL, *, mesh_shape: Mapping[str, int] | None = None, batch: int = 16,
                    seq_len: int = 64) -> SavedResiduals:
    """Bytes of activations that autodiff of `loss_fn` saves on one device (see `SavedResiduals`).

    `transformer.activation_memory` counts the tensors a hand-written backward needs (12 per
    layer); autodiff of this plain-JAX model saves more (each norm keeps x / rms and its output,
    keys before and after RoPE, the causal mask, masked scores, exp and probabilities, SiLU's
    intermediates, the logits and their softmax). XLA then stores about these.
    """
    import jax
    import jax.numpy as jnp

    shape = _check_run(model, mesh_shape, batch, seq_len)
    local = device_model(model, tp=shape["tp"])
    b = batch // shape["fsdp"]
    params = jax.eval_shape(lambda: init_model(local))

    def held(n):
        tokens = jax.ShapeDtypeStruct((n, seq_len + 1), jnp.int32)
        closure = jax.eval_shape(lambda p, t: jax.vjp(lambda p: loss_fn(p, t, model=local), p)[1], params, tokens)
        return jax.tree.leaves(closure)

    size = lambda leaves: sum(a.size * a.dtype.itemsize for a in leaves)  # noqa: E731
    one = held(b)
    return SavedResiduals(model_name=model.name, batch_per_device=b, seq_len=seq_len,
                          bytes=float(size(held(2 * b)) - size(one)),
                          shapes=tuple(f"{a.dtype}{list(a.shape)}" for a in one))


def train(model: Transformer = SMALL, *, mesh_shape: Mapping[str, int] | None = None, batch: int = 16,
          seq_len: int = 64, steps: int = 5, lr: float = 3e-3, seed: int = 0, regather: bool = True) -> TrainingRun:
    """Train `model` for `steps` Adam steps on `synthetic_tokens` with FSDP x TP on a mesh.

    `mesh_shape` defaults to {'fsdp': 4, 'tp': 2} (8 devices: call `xla.use_cpu_devices(8)`
    before jax starts). `batch` must divide over fsdp; `regather` as in `forward`. Returns a
    `TrainingRun` with the loss of each step (computed before that step's update), the
    compiled step, its HLO text, its memory analysis and its collectives.
    """
    import jax
    import numpy as np
    from jax.sharding import NamedSharding, PartitionSpec as P

    from . import xla

    shape = _check_run(model, mesh_shape, batch, seq_len)
    require_positive(steps=steps, lr=lr)
    compiled = compile_train_step(model, mesh_shape=shape, batch=batch, seq_len=seq_len, lr=lr, regather=regather)
    mesh = xla.mesh(shape)
    p_sh, s_sh = _state_shardings(model, mesh)
    params = jax.device_put(init_model(model, seed=seed), p_sh)
    state = jax.device_put(init_adam(params), s_sh)
    tokens = jax.device_put(synthetic_tokens(batch=batch, seq_len=seq_len, vocab=model.vocab, seed=seed),
                            NamedSharding(mesh, P("fsdp", None)))
    losses = []
    for _ in range(steps):
        params, state, loss = compiled(params, state, tokens)
        losses.append(float(np.asarray(loss)))
    hlo = compiled.as_text()
    return TrainingRun(model=model, mesh_shape=shape, regather=regather, batch=batch, seq_len=seq_len, lr=lr,
                       losses=tuple(losses), memory=memory_analysis(compiled),
                       collectives=xla.collectives_in_hlo(hlo, shape), arrays=step_arrays(hlo, shape), hlo=hlo,
                       compiled=compiled)
