"""XLA cross-check: one JAX Transformer layer's compiled FLOPs against Chapter 4's counts."""
import functools

import pytest

from scalebook import xla

xla.use_cpu_devices(8)  # before any JAX computation: other xla tests in this process need 8 devices

import scalebook  # noqa: E402
from scalebook import jax_layer  # noqa: E402
from scalebook.models import Transformer, preset  # noqa: E402

pytestmark = pytest.mark.xla

# Small layers whose matmuls dominate (D >= 256, H >= 64), in float32 (CPU upcasts bf16 dots).
CONFIGS = {
    "dense MHA, plain MLP": Transformer(name="mha-plain", layers=1, d_model=512, heads=8, d_ff=2048,
                                        vocab=8, mlp="plain"),
    "GQA, gated MLP": Transformer(name="gqa-gated", layers=1, d_model=512, heads=8, kv_heads=2, d_ff=1536, vocab=8),
    "MQA, gated MLP, N H != D": Transformer(name="mqa-gated", layers=1, d_model=256, heads=4, kv_heads=1,
                                            head_dim=128, d_ff=1024, vocab=8),
}


@pytest.fixture(scope="module", params=list(CONFIGS))
def compiled(request):
    return jax_layer.block_flops(CONFIGS[request.param], batch=2, seq_len=256)


def test_forward_flops_agree_with_xla_within_two_percent(compiled):
    # XLA also counts elementwise ops (norms, softmax, mask, activation): it reads a little above.
    assert 1.0 <= compiled.forward_ratio < 1.02


def test_forward_plus_backward_flops_agree_with_xla_within_two_percent(compiled):
    assert 1.0 <= compiled.training_ratio < 1.02


def test_full_remat_costs_one_more_forward_less_the_down_projection():
    r = jax_layer.block_flops(CONFIGS["GQA, gated MLP"], batch=2, seq_len=128, remat="full")
    assert 1.0 <= r.training_ratio < 1.02


def test_gqa_layer_equals_mha_with_each_kv_head_repeated():
    import jax
    import jax.numpy as jnp
    import numpy as np

    gqa = CONFIGS["GQA, gated MLP"].replace(d_model=64, heads=4, kv_heads=2, head_dim=16, d_ff=96)
    w = jax_layer.init_block(gqa, seed=1)
    mha_w = {**w, "wk": jnp.repeat(w["wk"], 2, axis=1), "wv": jnp.repeat(w["wv"], 2, axis=1)}
    x = jnp.asarray(np.random.default_rng(0).normal(size=(2, 8, 64)), jnp.float32)
    got = jax.jit(functools.partial(jax_layer.block_apply, model=gqa))(w, x)
    want = jax.jit(functools.partial(jax_layer.block_apply, model=gqa.replace(kv_heads=4)))(mha_w, x)
    assert got.shape == (2, 8, 64)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_causal_layer_output_at_a_position_ignores_later_tokens():
    import jax
    import jax.numpy as jnp
    import numpy as np

    m = CONFIGS["MQA, gated MLP, N H != D"].replace(d_model=64, head_dim=32, d_ff=96)
    w = jax_layer.init_block(m)
    x = jnp.asarray(np.random.default_rng(0).normal(size=(1, 8, 64)), jnp.float32)
    apply = jax.jit(functools.partial(jax_layer.block_apply, model=m))
    y1, y2 = apply(w, x), apply(w, x.at[:, 5:].set(0.0))
    np.testing.assert_allclose(y1[:, :5], y2[:, :5], rtol=1e-5, atol=1e-6)


def test_moe_and_mla_configs_are_refused_with_a_reason():
    for name in ("mixtral-8x7b", "deepseek-v3"):
        with pytest.raises(scalebook.Error, match="dense"):
            jax_layer.init_block(preset(name))


def test_comparison_reprs_show_both_numbers(compiled):
    assert "XLA" in repr(compiled) and "<table>" in compiled._repr_html_()
