"""Transformer configs and the published presets (Chapter 4)."""
import dataclasses

import pytest
from hypothesis import given, strategies as st

import scalebook
from scalebook.models import Transformer, preset, preset_names

ISSUE_PRESETS = ("llama2-70b", "llama3-8b", "llama3-70b", "llama3-405b", "gemma2-2b", "gemma2-9b",
                 "gemma2-27b", "mixtral-8x7b", "deepseek-v3", "gpt3-175b", "palm-540b")


def small(**kw):
    base = dict(layers=2, d_model=64, heads=4, d_ff=128, vocab=100)
    return Transformer(**{**base, **kw})


def test_presets_include_every_model_the_issue_names():
    assert set(ISSUE_PRESETS) <= set(preset_names())


@pytest.mark.parametrize("name", preset_names())
def test_every_preset_builds_and_cites_its_source(name):
    m = preset(name)
    assert m.name == name and m.source


def test_unknown_preset_raises_error_listing_valid_names():
    with pytest.raises(scalebook.Error, match="llama3-8b"):
        preset("llama-9000")


def test_llama3_8b_preset_has_the_published_dimensions():
    m = preset("llama3-8b")
    assert (m.layers, m.d_model, m.heads, m.kv_heads, m.head_dim, m.d_ff, m.vocab) == \
        (32, 4096, 32, 8, 128, 14336, 128256)
    assert m.mlp == "gated" and not m.tied_embeddings and m.attention == "GQA"


def test_presets_carry_published_totals_with_a_citation():
    for name in ("llama3-8b", "llama3-70b", "llama3-405b", "deepseek-v3", "mixtral-8x7b"):
        m = preset(name)
        assert m.published_params > 0 and m.published_source


def test_gemma2_27b_heads_times_head_dim_need_not_equal_d_model():
    m = preset("gemma2-27b")
    assert m.heads * m.head_dim == 4096 != m.d_model == 4608
    assert m.d_ff == 36864 and m.tied_embeddings and m.norms_per_layer == 4


def test_palm_540b_is_a_parallel_multi_query_block():
    m = preset("palm-540b")
    assert m.parallel_block and m.attention == "MQA" and m.norms_per_layer == 1


def test_gpt3_175b_is_plain_mlp_with_tied_embeddings_and_learned_positions():
    m = preset("gpt3-175b")
    assert m.mlp == "plain" and m.tied_embeddings and m.learned_positions == 2048 and m.biases


def test_mixtral_is_all_moe_layers_top_2_of_8():
    m = preset("mixtral-8x7b")
    assert (m.routed_experts, m.experts_per_token, m.dense_layers, m.moe_layers) == (8, 2, 0, 32)


def test_deepseek_v3_has_mla_shared_experts_and_three_dense_layers():
    m = preset("deepseek-v3")
    assert m.attention == "MLA" and m.mla_kv_compression_dim == 512 and m.mla_rope_head_dim == 64
    assert (m.dense_layers, m.moe_layers, m.shared_experts, m.experts_per_token) == (3, 58, 1, 8)


def test_attention_kind_follows_kv_heads():
    assert small().attention == "MHA"
    assert small(kv_heads=2).attention == "GQA"
    assert small(kv_heads=1).attention == "MQA"


def test_head_dim_defaults_to_d_model_over_heads():
    assert small().head_dim == 16 and small().kv_heads == 4


def test_heads_not_dividing_d_model_need_an_explicit_head_dim():
    with pytest.raises(scalebook.Error, match="head_dim"):
        small(heads=3)
    assert small(heads=3, head_dim=32).head_dim == 32


def test_kv_heads_not_dividing_heads_raises_listing_valid_values():
    with pytest.raises(scalebook.Error, match="valid kv_heads: 1, 2, 4"):
        small(kv_heads=3)


@pytest.mark.parametrize("field", ["layers", "d_model", "heads", "vocab"])
@pytest.mark.parametrize("value", [0, -1])
def test_non_positive_sizes_raise(field, value):
    with pytest.raises(scalebook.Error, match=field):
        small(**{field: value})


def test_fractional_sizes_raise():
    with pytest.raises(scalebook.Error, match="whole number"):
        small(d_model=64.5)


def test_top_k_above_the_number_of_experts_raises():
    with pytest.raises(scalebook.Error, match="between 1 and routed_experts=8"):
        small(routed_experts=8, experts_per_token=9, expert_d_ff=32)


def test_experts_without_routed_experts_raise():
    with pytest.raises(scalebook.Error, match="routed_experts"):
        small(experts_per_token=2)


def test_dense_layers_beyond_layers_raise():
    with pytest.raises(scalebook.Error, match="dense_layers"):
        small(routed_experts=4, experts_per_token=1, expert_d_ff=32, dense_layers=3)


def test_unknown_mlp_kind_raises():
    with pytest.raises(scalebook.Error, match="gated, plain"):
        small(mlp="swiglu")


def test_mla_needs_kv_heads_equal_to_heads():
    with pytest.raises(scalebook.Error, match="kv_heads must equal heads"):
        small(kv_heads=2, mla_kv_compression_dim=32, mla_rope_head_dim=8)


def test_repr_names_the_shape():
    r = repr(preset("llama3-70b"))
    assert "llama3-70b" in r and "GQA, 8 kv" in r and "F=28672" in r


def test_configs_are_frozen():
    with pytest.raises(dataclasses.FrozenInstanceError):
        small().layers = 3


def test_replace_follows_defaulted_fields_and_revalidates():
    m = small().replace(heads=8)
    assert m.kv_heads == 8 and m.head_dim == 8
    assert preset("llama3-8b").replace(layers=1).published_params is None
    with pytest.raises(scalebook.Error):
        small().replace(kv_heads=3)


@given(heads=st.integers(2, 64), kv_heads=st.integers(1, 64))
def test_kv_heads_that_do_not_divide_heads_always_raise(heads, kv_heads):
    if heads % kv_heads == 0:
        assert small(heads=heads, kv_heads=kv_heads, head_dim=16).kv_heads == kv_heads
    else:
        with pytest.raises(scalebook.Error):
            small(heads=heads, kv_heads=kv_heads, head_dim=16)


@given(field=st.sampled_from(["layers", "d_model", "heads", "vocab", "d_ff", "head_dim", "kv_heads"]),
       value=st.one_of(st.integers(max_value=0), st.floats(allow_nan=True), st.booleans(), st.none()))
def test_bad_sizes_always_raise_error(field, value):
    if value is None and field in ("head_dim", "kv_heads"):
        return  # None means "the default"
    with pytest.raises(scalebook.Error):
        small(**{field: value})


@given(experts=st.integers(1, 64), top_k=st.integers(-2, 80))
def test_top_k_outside_one_to_experts_always_raises(experts, top_k):
    kw = dict(routed_experts=experts, experts_per_token=top_k, expert_d_ff=32)
    if 1 <= top_k <= experts:
        assert small(**kw).experts_per_token == top_k
    else:
        with pytest.raises(scalebook.Error):
            small(**kw)


def test_reported_training_of_llama3_405b_carries_tokens_hours_and_sources():
    from scalebook.models import reported_training
    r = reported_training("llama3-405b")
    assert (r.tokens, r.chip_hours, r.chip) == (15.6e12, 30.84e6, "h100")
    assert "Herd" in r.tokens_source and "model card" in r.chip_hours_source
    assert r.flops == 3.8e25                       # the paper's stated pre-training compute


def test_reported_training_without_stated_flops_has_none():
    from scalebook.models import reported_training
    assert reported_training("llama3-70b").flops is None


def test_reported_training_of_a_model_without_a_report_names_the_valid_ones():
    from scalebook.models import reported_training
    with pytest.raises(scalebook.Error, match="llama3-405b"):
        reported_training("gpt3-175b")


def test_llama3_published_totals_are_cited_as_checkpoint_counts():
    assert "checkpoint" in preset("llama3-8b").published_source
