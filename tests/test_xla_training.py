"""XLA cross-check (chapter 5): a real FSDP x TP training step against `training.estimate`.

`jax_training.train` runs a 2-layer model (D 256, 8 query / 4 kv heads, F 512, V 512) for a few
Adam steps on a 4x2 mesh ("fsdp" x "tp", 8 simulated CPU devices, fp32, B 16, T 64; described
for jax 0.10.2, with what jax 0.7.2 to 0.10.1 compile differently said where it is checked),
ZeRO-3 over fsdp (each layer's weights gathered before its forward and again before its
backward, `regather=True`) and Megatron TP over tp. The package prices the same strategy with
`training.estimate`. Every collective XLA compiled is put in one bucket below, and each bucket
is held against the prediction; where they differ, the test says why in code:

- the embedding, unembedding and final norm are gathered once for the forward pass and not
  again (a lookup's gradient never reads the table, and the unembedding is last in the forward
  pass and first in the backward, so it stays gathered), as the package predicts;
- norm scales are D long and replicated over tp (Megatron); the package divides every weight by tp;
- norm scales are not gathered again for the backward: autodiff saves their [1, 1, D] broadcast;
- the gradient ReduceScatter is an AllReduce + dynamic-slice on CPU (TOOLCHAIN.md, note 14), and XLA's
  combiner packs all of them (and the loss's batch sum) into one AllReduce at the end;
- XLA all-reduces the partial sums of each TP matmul on its own and does not reassociate their
  sum: the backward pass reduces the attention input gradient as 3 arrays (Q, K and V branches)
  and the MLP's as 2 (gate, up), in one combined op each, so the op count is the predicted one
  but the bytes are 3x and 2x;
- vocab-parallel embedding and logits add TP collectives, as the package predicts: one
  AllReduce of the looked-up activations, one of the unembedding's input gradient, and three
  [B, T] reductions of the softmax over the vocab shards.

Memory: `memory_analysis()` is split into the state (arguments, updated in place: donated and
aliased), a batch-independent part and a batch-proportional part of the temporaries (from a
second compile at twice the batch); each is held against the matching predicted parts.
"""
import collections
import math

import pytest

from scalebook import xla

xla.use_cpu_devices(8)  # before any JAX computation

from scalebook import Error, jax_training as jt, topology, training  # noqa: E402
from scalebook import transformer as tr  # noqa: E402

pytestmark = pytest.mark.xla

MESH = {"fsdp": 4, "tp": 2}
FSDP, TP = MESH["fsdp"], MESH["tp"]
MODEL = jt.SMALL
L, D = MODEL.layers, MODEL.d_model
BATCH, SEQ = 16, 64
F32 = 4
TOKENS_PER_DEVICE = BATCH // FSDP * SEQ


@pytest.fixture(scope="module")
def run():
    return jt.train(MODEL, mesh_shape=MESH, batch=BATCH, seq_len=SEQ, steps=6, lr=3e-3)


@pytest.fixture(scope="module")
def est():
    topo = topology.for_mesh("tpu-v5e", MESH)
    s = training.Strategy(fsdp=FSDP, tp=TP, placement={"fsdp": ("fsdp",), "tp": ("tp",)}, remat="none",
                          param_dtype="fp32", grad_dtype="fp32", optimizer_dtype="fp32", master_dtype=None,
                          activation_dtype="fp32", flash_attention=False)  # the model's attention is dense
    return training.estimate(MODEL, topology=topo, strategy=s, batch_tokens=BATCH * SEQ, seq_len=SEQ)


def predicted(est, parallelism, kind, phrase):
    (c,) = [c for c in est.collectives if c.parallelism == parallelism and c.kind == kind and phrase in c.purpose]
    return c


# ------------------------------------------------------------------ what the model's weights are


def weight_bytes_per_device():
    """(per-layer, top-level) {name: bytes} of each weight as a matmul reads it: gathered over
    fsdp, still split over tp where its `used` spec says so. From the model, not from the HLO."""
    import jax

    shapes = jax.eval_shape(lambda: jt.init_model(MODEL))
    used = jt.param_specs(MODEL, used=True)

    def per_device(a, spec):
        return a.size * F32 / (TP if "tp" in tuple(spec) else 1)

    layer = {n: per_device(a, used["layers"][0][n]) for n, a in shapes["layers"][0].items()}
    top = {n: per_device(shapes[n], used[n]) for n in ("embed", "unembed", "final_norm")}
    return layer, top


LAYER_W, TOP_W = weight_bytes_per_device()
NORMS = ("norm1", "norm2")
MATRICES = tuple(n for n in LAYER_W if n not in NORMS)
#: The package divides every weight by tp; norm scales (D each: 2 per layer + the final one)
#: are replicated over tp, so each device gathers (1 - 1/tp) of them more (and stores 1/fsdp of that).
NORM_TP_EXTRA = (2 * L + 1) * D * F32 * (1 - 1 / TP)


# ------------------------------------------------------------------ sorting the HLO's collectives


#: The cross-entropy's per-token reductions over the vocab shards: [B / fsdp, T] (or [..., 1]).
PER_TOKEN = (f"f32[{BATCH // FSDP},{SEQ}]", f"f32[{BATCH // FSDP},{SEQ},1]")


def bucket(a):
    """The one bucket each array moved by a collective of the compiled step belongs to.

    The loss's scalar and the per-token reductions are told apart by shape: jax 0.9 labels every
    array of a combined AllReduce with the metadata of the op's first array (the loss's batch sum
    then reads as a backward op, a softmax reduction as an attention gradient); jax 0.10 keeps
    each array's own (seen on 0.9.0 and 0.10.0).
    """
    op = a.op_name
    if a.axes == ("fsdp",):
        if a.kind == "all-gather":
            return f"fsdp gather {a.phase}"
        if a.kind == "all-reduce" and a.shape == "f32[]":
            return "loss: mean over the batch"
        if a.kind == "all-reduce" and a.phase == "backward":
            return "fsdp gradient reduce-scatter"  # CPU: all-reduce + dynamic-slice
    if a.axes == ("tp",) and a.kind == "all-reduce" and a.shape in PER_TOKEN:
        return "tp: cross-entropy over vocab shards"
    if a.axes == ("tp",) and a.kind == "all-reduce":
        if a.phase == "forward" and ("btnh,nhd->btd" in op or "btf,fd->btd" in op):
            return "tp forward: attention and MLP outputs"
        if a.phase == "backward" and ("btd,dnh->btnh" in op or "btd,dkh->btkh" in op):
            return "tp backward: attention input gradient (Q, K, V branches)"
        if a.phase == "backward" and "btd,df->btf" in op:
            return "tp backward: MLP input gradient (gate, up branches)"
        if a.phase == "forward" and "_take" in op:
            return "tp: vocab-parallel embedding lookup"
        if a.phase == "backward" and "btd,dv->btv" in op:
            return "tp: unembedding input gradient"
    return None


@pytest.fixture(scope="module")
def buckets(run):
    out = collections.defaultdict(list)
    for a in run.arrays:
        out[bucket(a)].append(a)
    return out


def total(arrays):
    return sum(a.array_bytes for a in arrays)


# ------------------------------------------------------------------ the tests


def test_the_loss_falls(run):
    losses = run.losses
    assert math.log(MODEL.vocab) - 0.5 < losses[0] < math.log(MODEL.vocab) + 1.5  # about uniform at the start
    assert all(b < a for a, b in zip(losses, losses[1:]))  # every step lowers it (fixed batch)
    assert losses[-1] < 0.25 * losses[0]


def test_the_sharded_step_computes_the_same_loss_as_one_device(run):
    import jax
    import numpy as np

    one = jax.devices("cpu")[0]
    params = jax.device_put(jt.init_model(MODEL, seed=0), one)
    tokens = jax.device_put(jt.synthetic_tokens(batch=BATCH, seq_len=SEQ, vocab=MODEL.vocab, seed=0), one)
    loss = jax.jit(lambda p, t: jt.loss_fn(p, t, model=MODEL))(params, tokens)
    np.testing.assert_allclose(run.losses[0], float(loss), rtol=1e-5)


def test_every_collective_in_the_hlo_is_accounted_for(buckets):
    assert None not in buckets, [repr(a) for a in buckets[None]]


def test_fsdp_gathers_each_layer_before_its_forward_pass(buckets, est):
    got = buckets["fsdp gather forward"]
    # One AllGather per weight: 9 per layer, plus embedding, unembedding and final norm.
    want = sorted([LAYER_W[n] for n in LAYER_W] * L + list(TOP_W.values()))
    assert sorted(a.array_bytes for a in got) == want
    assert all(a.combined_with == 1 for a in got)
    p = predicted(est, "fsdp", "all-gather", "before the forward pass")
    top = predicted(est, "fsdp", "all-gather", "embedding, unembedding and final norm gathered")
    assert p.axes == ("fsdp",) and p.count == L and p.per_layer
    assert top.count == 1 and not top.per_layer
    # The norm scales are replicated over tp, so each device moves (1 - 1/tp) more of them.
    assert total(got) == p.count * p.array_bytes + top.array_bytes + NORM_TP_EXTRA
    layer_as_the_package_counts_it = sum(LAYER_W[n] for n in MATRICES) + sum(LAYER_W[n] for n in NORMS) / TP
    assert layer_as_the_package_counts_it == p.array_bytes
    assert sum(TOP_W.values()) == top.array_bytes + D * F32 * (1 - 1 / TP)


def test_fsdp_gathers_each_layer_again_for_its_backward_pass(buckets, est):
    got = buckets["fsdp gather backward"]
    # The 7 matrices of every layer, not the top-level weights (the embedding's gradient does not
    # read the table; the unembedding is still gathered from the end of the forward pass), as
    # predicted; the norm scales are not gathered again either (autodiff saves their [1, 1, D]
    # broadcast), which the package does not know.
    assert sorted(a.array_bytes for a in got) == sorted([LAYER_W[n] for n in MATRICES] * L)
    p = predicted(est, "fsdp", "all-gather", "again for the backward pass")
    assert p.count == L and p.per_layer
    not_regathered = L * sum(LAYER_W[n] for n in NORMS) / TP
    assert total(got) == p.count * p.array_bytes - not_regathered


def test_gradients_are_reduce_scattered_over_fsdp_as_one_combined_all_reduce(run, buckets, est):
    got = buckets["fsdp gradient reduce-scatter"]
    p = predicted(est, "fsdp", "reduce-scatter", "weight gradients")
    top = predicted(est, "fsdp", "reduce-scatter", "final norm gradients")
    assert p.count == L and p.axes == ("fsdp",) and top.count == 1
    # CPU: AllReduce of the same V, then each device keeps its block (TOOLCHAIN.md, note 14) ...
    assert xla.CPU_EQUIVALENTS["reduce-scatter"] == "all-reduce" and "dynamic-slice" in run.hlo
    # ... one gradient per weight, all packed (with the loss's batch sum) into one op.
    assert len(got) == len(LAYER_W) * L + len(TOP_W)
    (loss_sum,) = buckets["loss: mean over the batch"]
    assert {a.combined_with for a in got} == {len(got) + 1} == {loss_sum.combined_with}
    assert total(got) == p.count * p.array_bytes + top.array_bytes + NORM_TP_EXTRA


def test_tp_all_reduces_after_attention_and_mlp_in_the_forward_pass(buckets, est):
    got = buckets["tp forward: attention and MLP outputs"]
    p = predicted(est, "tp", "all-reduce", "(forward")
    assert p.count == 2 * L and p.axes == ("tp",)
    assert len(got) == p.count and {a.array_bytes for a in got} == {p.array_bytes}
    assert p.array_bytes == TOKENS_PER_DEVICE * D * F32  # [B / fsdp, T, D]


def test_tp_backward_reduces_each_projections_partial_sum_separately(buckets, est):
    p = predicted(est, "tp", "all-reduce", "(backward)")
    assert p.count == 2 * L
    attn = buckets["tp backward: attention input gradient (Q, K, V branches)"]
    mlp = buckets["tp backward: MLP input gradient (gate, up branches)"]
    # Each array is one [B / fsdp, T, D] partial sum, as predicted ...
    assert {a.array_bytes for a in attn + mlp} == {p.array_bytes}
    # ... but XLA all-reduces the output of each of the Q, K, V (gate, up) matmuls before adding
    # them, instead of adding and reducing once: 3 + 2 arrays per layer instead of 1 + 1.
    assert len(attn) == 3 * L and len(mlp) == 2 * L
    assert total(attn + mlp) == 5 / 2 * p.count * p.array_bytes
    # The combiner packs each group into one op, so the number of ops is the predicted one
    # (the op carrying one layer's Q, K, V branches may also carry a loss reduction).
    assert len({a.op for a in attn}) == len({a.op for a in mlp}) == L
    assert len({a.op for a in attn + mlp}) == p.count


def test_vocab_parallel_embedding_and_logits_add_the_predicted_tp_collectives(buckets, est):
    v = TOKENS_PER_DEVICE * D * F32
    # Each device looks up the tokens of its vocab half, the halves are summed (forward); the
    # unembedding's input gradient sums over the vocab halves (backward).
    assert [a.array_bytes for a in buckets["tp: vocab-parallel embedding lookup"]] == [v]
    assert [a.array_bytes for a in buckets["tp: unembedding input gradient"]] == [v]
    assert predicted(est, "tp", "all-reduce", "embedding rows").array_bytes == v
    assert predicted(est, "tp", "all-reduce", "unembedding input gradient").array_bytes == v
    # The softmax over logits split by vocab: max, sum of exp and the target's logit per token.
    soft = buckets["tp: cross-entropy over vocab shards"]
    assert sorted(a.array_bytes for a in soft) == [TOKENS_PER_DEVICE * F32] * 3
    p = predicted(est, "tp", "all-reduce", "softmax")
    assert (p.count, p.array_bytes) == (3, TOKENS_PER_DEVICE * F32)


@pytest.fixture(scope="module")
def memory_at_twice_the_batch():
    return jt.memory_analysis(jt.compile_train_step(MODEL, mesh_shape=MESH, batch=2 * BATCH, seq_len=SEQ))


def test_state_is_the_predicted_params_and_adam_moments_updated_in_place(run, est):
    m, e = run.memory, est.memory
    tokens = BATCH // FSDP * (SEQ + 1) * 4  # int32 [B / fsdp, T + 1]
    step_counter = 4
    # Arguments: weights and the two Adam moments, each P / 8 plus the norm scales' tp extra
    # (stored split over fsdp, so 1/fsdp of the gathered extra).
    assert m.argument_bytes == e.params_bytes + e.optimizer_bytes + 3 * NORM_TP_EXTRA / FSDP + tokens + step_counter
    # Donation: every output but the loss is written into its input's buffer. The rest of the
    # outputs is the loss (4 B) and the output tuple's table of 8-byte pointers.
    outputs = 3 * (len(LAYER_W) * L + len(TOP_W)) + 1 + 1
    assert m.alias_bytes == m.argument_bytes - tokens
    assert m.output_bytes - m.alias_bytes == 4 + 8 * outputs


def test_temporaries_are_gathered_weights_plus_what_autodiff_saves(run, buckets, est, memory_at_twice_the_batch):
    e = est.memory
    tokens = TOKENS_PER_DEVICE
    per_token = (memory_at_twice_the_batch.temp_bytes - run.memory.temp_bytes) / tokens
    fixed = run.memory.temp_bytes - per_token * tokens
    # Batch-proportional: XLA keeps about what autodiff saves for the backward pass (read from
    # jax.vjp; XLA fuses a little of it away) ...
    saved = jt.saved_residuals(MODEL, mesh_shape=MESH, batch=BATCH, seq_len=SEQ)
    # ... which is about twice the package's count: it counts the 12 tensors per layer that a
    # hand-written backward needs and one fp32 copy of the logits; autodiff of this plain-JAX
    # model also saves x / rms next to each norm's output, keys before and after RoPE, the
    # causal mask, the masked scores and exp next to the probabilities, SiLU's intermediates,
    # and the exp of the logits.
    package_per_token = (e.activation_bytes + e.logits_bytes) / tokens
    assert 1.7 < saved.bytes_per_token / package_per_token < 2.1
    if xla.jax_version() >= (0, 10, 2):
        assert per_token == pytest.approx(saved.bytes_per_token, rel=0.03)
    else:
        # jax 0.7.2 to 0.10.1 (measured on 0.7.2, 0.8.0, 0.9.0, 0.10.0, 0.10.1) keep about a
        # quarter less per token than autodiff saves (29,784 B against 38,517 B); still more
        # than a hand-written backward needs.
        assert package_per_token < per_token < 0.97 * saved.bytes_per_token
    # Batch-independent: the gathered weights of every layer (the CPU scheduler issues all
    # AllGathers, forward and backward, at the start, and XLA's peak is at the turn from
    # forward to backward, before any gradient exists) and the embedding gradient's [V / tp, D]
    # accumulator, which the scatter-add zeroes at the start.
    gathered = total(buckets["fsdp gather forward"])
    embed_grad = TOP_W["embed"]
    if xla.jax_version() >= (0, 10, 2):
        assert fixed == pytest.approx(gathered + embed_grad, rel=0.001)
        # The package holds 2 gathered layers and the sharded gradients instead; with L = 2 the
        # two come within a few percent of each other by coincidence, not by design.
        assert fixed == pytest.approx(e.gathered_weights_bytes + e.grads_bytes, rel=0.05)
    else:
        # jax 0.7.2 to 0.10.1 peak with every layer's gathered weights and the embedding
        # gradient, but without all of the gathered embedding and unembedding tables.
        layers = L * sum(LAYER_W.values())
        assert layers + embed_grad < fixed < gathered + embed_grad


def test_total_memory_per_device_agrees_once_activations_are_what_autodiff_saves(run, est):
    m, e = run.memory, est.memory
    xla_total = m.argument_bytes + m.output_bytes - m.alias_bytes + m.temp_bytes
    # The package's figure leaves out what the parts above explain, so it reads low ...
    assert e.bytes < xla_total
    # ... and agrees within 3% once its activations and logits are replaced by autodiff's
    # residuals and the exact extras of the state (tokens, step, norm scales, the loss and the
    # output table) are added. What remains: XLA stores 1.3% less than autodiff saves (fusion)
    # and its batch-independent part is 2% above the package's gradients + 2 gathered layers
    # (the coincidence noted above); they partly cancel.
    saved = jt.saved_residuals(MODEL, mesh_shape=MESH, batch=BATCH, seq_len=SEQ).bytes
    extras = (m.argument_bytes - e.params_bytes - e.optimizer_bytes) + (m.output_bytes - m.alias_bytes)
    adjusted = e.bytes - e.activation_bytes - e.logits_bytes + saved + extras
    if xla.jax_version() >= (0, 10, 2):
        assert xla_total == pytest.approx(adjusted, rel=0.03)
    else:
        # jax 0.7.2 to 0.10.1 keep less than autodiff saves and fewer gathered tables (the test
        # above), so the total lands below the adjusted figure (and above the package's).
        assert xla_total < 0.97 * adjusted


# ------------------------------------------------------------------ layout and input checks


def test_every_weight_and_its_adam_moments_are_sharded_over_fsdp_on_one_dimension():
    specs = jt.param_specs(MODEL)
    for spec in [*specs["layers"][0].values(), specs["embed"], specs["unembed"], specs["final_norm"]]:
        assert tuple(spec).count("fsdp") == 1
    used = jt.param_specs(MODEL, used=True)
    assert all("fsdp" not in tuple(s) for s in used["layers"][0].values())


def test_bad_meshes_and_batches_are_refused_with_a_reason():
    with pytest.raises(Error, match="axes"):
        jt.compile_train_step(MODEL, mesh_shape={"tp": 2, "fsdp": 4})
    with pytest.raises(Error, match="batch=6"):
        jt.compile_train_step(MODEL, mesh_shape=MESH, batch=6)
    with pytest.raises(Error, match="kv_heads"):
        jt.compile_train_step(MODEL.replace(kv_heads=1), mesh_shape=MESH)


def test_reprs_are_readable(run):
    assert "loss 6." in repr(run) and "per device" in repr(run.memory)
    assert "<table>" in run._repr_html_()
    assert "V=" in repr(run.arrays[0])
