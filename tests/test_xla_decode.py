"""XLA cross-check (chapter 7): a real decoder with a KV cache against `scalebook.inference`.

`jax_decode` compiles prefill and one decode step of a small GQA model (`jax_decode.SMALL`: 2
layers, D 512, 8 query / 2 kv heads of 64, gated MLP F 1536, V 2048) in float32 on CPU (XLA
upcasts bf16 dots there, TOOLCHAIN.md, note 14), and `cost_analysis()` is held against the serving model.

Tolerances and what they cover (measured with jax 0.10.2 on CPU):

| quantity          | compared with                                             | tolerance     | measured (2 cases) |
|-------------------|-----------------------------------------------------------|---------------|--------------------|
| prefill FLOPs     | B x estimate.prefill.flops + masked half                  | 0 to +2%      | +0.31%, +0.42%     |
| decode step FLOPs | estimate.decode.flops (context = cache length)            | 0 to +2%      | +0.34%, +0.72%     |
| decode step bytes | estimate.decode.bytes_read + gather table + scores + acts | +-1%          | +0.05%, +0.13%     |
| decode bytes, raw | estimate.decode.bytes_read                                | (information) | +17%, +27%         |

The differences, each explained where it is tested:

- FLOPs: XLA counts each matmul at exactly 2 FLOPs per multiply-add here (the 0.7% of
  TOOLCHAIN.md, note 9 does not show on these shapes) plus about one FLOP per element of every
  elementwise op and reduction (norms, RoPE, SiLU, residual adds, mask, softmax); the package
  counts matmuls only. Hence XLA a little above, never below.
- Prefill: the dense prefill computes all P x P scores and masks the upper half (the model
  counts a causal kernel's half); both unembed only the last position of each prompt.
- Decode bytes: XLA charges the embedding lookup (a gather) for the whole V x D table; the
  [B, N, S] scores and probabilities and the [B, D], [B, F], [B, V] activations pass through
  memory between XLA's fusions. The serving model counts weights and KV cache only, which is
  what a fused kernel reads. With those three added, XLA's bytes are the model's to 0.1%: every
  weight and the whole cache are read exactly once.
- The estimate decodes at the average context prompt + output / 2 and the compiled step attends
  over its whole preallocated cache, so the comparison uses prompt and output lengths whose
  average context is the cache length (e.g. 768 + 512 / 2 = 1024).
- The estimate has no fp32 weights or KV cache: its bf16 bytes are doubled (bytes are linear in
  the element size; FLOPs do not depend on it).
- Batches are >= 2: with B = 1 XLA on CPU drops the unit dimension, compiles copies of the cache
  (+41% bytes at 1024 positions) and counts about 1.5 MB less elsewhere; nothing to do with the model.
"""
import functools

import pytest

from scalebook import xla

xla.use_cpu_devices(8)  # before any JAX computation: other xla tests in this process need 8 devices

from scalebook import Error, inference as inf, jax_decode as jd, jax_training as jt  # noqa: E402
from scalebook import transformer as tr  # noqa: E402
from scalebook.models import Transformer, preset  # noqa: E402


pytestmark = pytest.mark.xla

MODEL = jd.SMALL
F32_OVER_BF16 = 2
# (batch, prompt_len, cache length = decode context, output_len whose half brings the prompt to it)
CASES = {
    "weights dominate": (2, 64, 128, 128),      # KV cache 2% of the bytes
    "KV cache dominates": (16, 256, 1024, 512),  # KV cache 54% of the bytes
}
TINY = Transformer(name="tiny", layers=2, d_model=64, heads=4, kv_heads=2, d_ff=96, vocab=97)


@pytest.fixture(scope="module", params=list(CASES))
def case(request):
    batch, prompt, cache_len, output = CASES[request.param]
    costs = jd.compiled_costs(MODEL, batch=batch, prompt_len=prompt, max_len=cache_len)
    # The estimate at a prompt and output whose average decode context is the cache length.
    avg_prompt = cache_len - output // 2
    est = inf.estimate(MODEL, chip="h100", deployment=inf.Deployment(), batch=batch, prompt_len=avg_prompt,
                       output_len=output)
    prefill_est = inf.estimate(MODEL, chip="h100", deployment=inf.Deployment(), batch=1, prompt_len=prompt,
                               output_len=output)
    return costs, est, prefill_est


def test_the_comparison_uses_the_estimate_at_the_compiled_context(case):
    costs, est, prefill_est = case
    assert est.prompt_len + est.output_len // 2 == costs.max_len
    assert costs.decode_predicted_flops == pytest.approx(est.decode.flops, rel=1e-12)
    assert costs.decode_predicted_weight_bytes == pytest.approx(F32_OVER_BF16 * est.decode.weight_bytes_read, rel=1e-12)
    assert costs.decode_predicted_kv_bytes == pytest.approx(F32_OVER_BF16 * est.decode.kv_bytes_read, rel=1e-12)
    # the estimate prefills one prompt; the compiled prefill runs B of them
    assert costs.prefill_predicted_flops == pytest.approx(costs.batch * prefill_est.prefill.flops, rel=1e-12)


def test_prefill_flops_agree_once_the_dense_mask_is_accounted(case):
    costs, _, prefill_est = case
    B, P, L = costs.batch, costs.prompt_len, MODEL.layers
    N, H, D, V = MODEL.heads, MODEL.head_dim, MODEL.d_model, MODEL.vocab
    # The model counts a causal kernel: 4 N H (P / 2) score FLOPs per token and layer. The dense
    # prefill computes all P x P scores and masks the upper half: 2 N H P more per token and layer.
    assert costs.prefill_masked_score_flops == pytest.approx(B * L * P * 2 * N * H * P)
    # Both unembed only the last position of a prompt (2 D V once), not every prompt token.
    causal = tr.flops_per_token(MODEL, seq_len=P, causal=True)
    one_prompt = (causal.forward_flops - causal.unembedding_flops) * P + 2 * D * V
    assert prefill_est.prefill.flops == pytest.approx(one_prompt)
    # What is left: elementwise FLOPs (softmax over the P x P scores, norms, RoPE, SiLU), under 2%.
    assert 1.0 <= costs.prefill_flops_ratio < 1.02


def test_decode_step_flops_agree_with_the_estimate(case):
    costs, est, _ = case
    # Same matmuls: 2 x active weights per token (unembedding included) and 4 N H C of attention
    # per layer over the C = max_len cached positions (the masked ones are multiplied too, and the
    # model counts the full context). XLA adds elementwise work: per score the mask, the max, exp,
    # sum and divide (about 6 FLOPs against 4 H = 256 of matmul), and the norms and SiLU per token.
    assert 1.0 <= costs.decode_xla_flops / est.decode.flops < 1.02


def test_decode_step_bytes_are_weights_and_kv_cache_once_plus_what_xla_materialises(case):
    costs, est, _ = case
    B, S = costs.batch, costs.max_len
    model_bytes = F32_OVER_BF16 * est.decode.bytes_read  # every weight once + B x S positions of K and V
    # 1. XLA's cost model charges a gather for its whole operand: the V x D embedding table, though
    #    the lookup reads B rows (and the model rightly counts none of it).
    assert costs.decode_gather_table_bytes == MODEL.vocab * MODEL.d_model * 4
    # 2. The scores and probabilities [B, N, S] go through memory between XLA's attention fusions:
    #    QK^T written, mask read and written, max (fused with exp) read and written, sum read,
    #    normalise read and written, AV read: about 9 passes a layer. A fused decode-attention
    #    kernel keeps them on chip.
    passes_per_layer = costs.decode_score_bytes / (MODEL.layers * B * MODEL.heads * S * 4)
    assert 8 <= passes_per_layer <= 11
    # 3. The [B, D], [B, F] and [B, V] activations between fusions (about 30 [B, D] and 6 [B, F]
    #    passes a layer: norms, residual adds, the gated product, the logits).
    per_layer_activation_bytes = B * 4 * (30 * MODEL.d_model + 6 * MODEL.d_ff)
    assert 0.5 <= costs.decode_activation_bytes / (MODEL.layers * per_layer_activation_bytes) <= 1.5
    # With those three added, XLA's bytes are the model's: each weight and the whole preallocated
    # cache read once (the in-place dynamic_update_slice only moves the new position).
    accounted = model_bytes + costs.decode_gather_table_bytes + costs.decode_score_bytes + costs.decode_activation_bytes
    assert costs.decode_xla_bytes == pytest.approx(accounted, rel=0.01)
    assert costs.decode_bytes_ratio == pytest.approx(1.0, abs=0.01)


def test_reading_one_layer_of_a_stacked_cache_costs_a_copy_on_cpu():
    """Why the cache is one array per layer in [B, K, S, H] order (module doc of jax_decode)."""
    import jax
    import jax.numpy as jnp

    B, K, S, H, L = 4, 2, 512, 64, 2
    q = jax.ShapeDtypeStruct((B, K, 4, H), jnp.float32)
    scores = functools.partial(jax.lax.dot_general, dimension_numbers=(((3,), (3,)), ((0, 1), (0, 1))))
    one_layer_bytes = B * K * S * H * 4
    own = xla.cost(scores, q, jax.ShapeDtypeStruct((B, K, S, H), jnp.float32))
    stacked = xla.cost(lambda q, k: scores(q, k[1]), q, jax.ShapeDtypeStruct((L, B, K, S, H), jnp.float32))
    heads_last = xla.cost(lambda q, k: jnp.einsum("bkgh,bskh->bkgs", q, k), q,
                          jax.ShapeDtypeStruct((B, S, K, H), jnp.float32))
    query_and_scores = B * K * 4 * (H + S) * 4
    assert own.bytes_accessed == pytest.approx(one_layer_bytes + query_and_scores, rel=0.01)
    # read the keys, write a copy, read the copy: three times the keys
    assert stacked.bytes_accessed == pytest.approx(3 * one_layer_bytes + query_and_scores, rel=0.01)
    assert heads_last.bytes_accessed == pytest.approx(3 * one_layer_bytes + query_and_scores, rel=0.01)


# --- the cache is correct: decoding with it equals recomputing the whole sequence ---------------

@pytest.fixture(scope="module")
def tiny():
    import jax
    import jax.numpy as jnp
    import numpy as np

    w = jd.init_weights(TINY, seed=3)
    tokens = jnp.asarray(np.random.default_rng(0).integers(0, TINY.vocab, (3, 12)), jnp.int32)
    forward = jax.jit(functools.partial(jt.forward, model=TINY))  # [B, T, V], no cache
    return w, tokens, forward


def test_decode_steps_equal_a_full_recompute_forward_pass(tiny):
    import jax
    import numpy as np

    w, tokens, forward = tiny
    prompt, max_len = 4, 16  # the shapes `generate` below compiles for, so it compiles nothing new
    full = forward(w, tokens)
    prefill, step = jd.jitted()
    logits, cache = prefill(w, tokens[:, :prompt], model=TINY, max_len=max_len)
    np.testing.assert_allclose(logits, full[:, prompt - 1], rtol=1e-5, atol=1e-5)
    for p in range(prompt, tokens.shape[1]):
        logits, cache = step(w, cache, tokens[:, p], p, model=TINY)
        np.testing.assert_allclose(logits, full[:, p], rtol=1e-5, atol=1e-5)
    # every position written once (the prefill's, then one per step); those not yet written are zero
    T = tokens.shape[1]
    for layer in cache:
        assert layer["k"].shape == layer["v"].shape == jd.cache_shape(TINY, batch=3, max_len=max_len)
        for kv in (np.asarray(layer["k"]), np.asarray(layer["v"])):
            assert np.all(np.any(kv[:, :, :T] != 0, axis=-1)) and not np.any(kv[:, :, T:])


def test_greedy_generation_matches_the_argmax_of_a_full_forward_pass(tiny):
    import jax.numpy as jnp
    import numpy as np

    w, tokens, forward = tiny
    prompt = tokens[:, :4]
    got = jd.generate(w, prompt, 8, model=TINY, max_len=16)  # the shapes compiled above
    full = forward(w, jnp.concatenate([prompt, got], axis=1))
    # each generated token is the argmax at the position before it (causal: later tokens do not matter)
    np.testing.assert_array_equal(got, np.argmax(full[:, 3:-1], axis=-1))


def test_rope_at_positions_is_jax_layers_rope():
    import jax
    import jax.numpy as jnp
    import numpy as np

    from scalebook import jax_layer

    x = jnp.asarray(np.random.default_rng(1).normal(size=(2, 7, 3, 16)), jnp.float32)
    ours, theirs = jax.jit(lambda x: (jd._rope_at(x, jnp.arange(7)), jd._rope_at(x[:, 4:5], jnp.array([4]))))(x)
    want = jax.jit(jax_layer._rope)(x)
    np.testing.assert_allclose(ours, want, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(theirs, want[:, 4:5], rtol=1e-6, atol=1e-6)


def test_what_jax_decode_refuses():
    with pytest.raises(Error, match="dense"):
        jd.init_weights(preset("mixtral-8x7b"))
    with pytest.raises(Error, match="float32"):
        jd.weight_shapes(TINY, dtype="int8")
    with pytest.raises(Error, match="does not fit"):
        jd.compiled_costs(TINY, batch=2, prompt_len=32, max_len=16)


def test_time_decode_runs_and_reports():
    t = jd.time_decode(TINY, batch=2, context=32, repeats=2)
    assert t.seconds > 0 and t.xla_bytes > 0 and t.tokens_per_s > 0
    assert "DecodeTiming" in repr(t) and t.to_dict()["context"] == 32


def test_reprs_show_both_sides(case):
    costs = case[0]
    assert "XLA" in repr(costs) and "gather table" in repr(costs) and "<table>" in costs._repr_html_()


def test_kv_bytes_of_the_model_are_the_caches_size():
    # the serving model's KV read at context C is exactly what the preallocated cache holds
    B, S = 4, 256
    elems = 2 * MODEL.layers * B * MODEL.kv_heads * S * MODEL.head_dim
    assert tr.kv_cache(MODEL, seq_len=S, batch=B, dtype="bf16").bytes == pytest.approx(elems * 2)
    pred = jd.predicted_decode(MODEL, batch=B, context=S)
    assert pred["kv_bytes"] == pytest.approx(elems * 4)
