"""Parameter, FLOP, memory and KV-cache counts against hand-worked cases (Chapter 4)."""
import pytest
from hypothesis import given, strategies as st

import scalebook
from scalebook import transformer as tr
from scalebook.models import Transformer, preset

# Published totals, independent of the package: Meta's Llama 3 / 3.1 model cards on Hugging Face
# (safetensors parameter counts; the Llama 3 herd paper, Table 3, gives the shapes).
LLAMA3_PUBLISHED = {"llama3-8b": 8.03e9, "llama3-70b": 70.55e9, "llama3-405b": 405.85e9}


def tiny(**kw):
    """L=2, D=8, N=2, K=1, H=4, F=16, V=10, gated, untied: counted by hand below."""
    base = dict(name="tiny", layers=2, d_model=8, heads=2, kv_heads=1, head_dim=4, d_ff=16, vocab=10)
    return Transformer(**{**base, **kw})


def test_tiny_model_parameters_by_hand():
    p = tr.params(tiny())
    assert p.attention_params == 2 * (2 * 8 * 2 * 4 + 2 * 8 * 1 * 4)  # Q,O: D N H; K,V: D K H
    assert p.mlp_params == 2 * 3 * 8 * 16
    assert p.norm_params == (2 * 2 + 1) * 8
    assert p.embedding_params == p.unembedding_params == 80
    assert p.total_params == 384 + 768 + 40 + 160 == 1352


def test_tied_plain_mlp_with_biases_by_hand():
    p = tr.params(tiny(mlp="plain", tied_embeddings=True, biases=True, learned_positions=5))
    assert p.unembedding_params == 0 and p.embedding_params == 80 + 5 * 8
    assert p.mlp_params == 2 * (2 * 8 * 16 + 16 + 8)
    assert p.attention_params == 2 * (192 + 2 * 4 + 2 * 4 + 8)
    assert p.norm_params == 5 * 16  # scale and shift


def test_moe_active_params_count_only_top_k_routed_experts():
    m = tiny(routed_experts=4, experts_per_token=1, shared_experts=1, expert_d_ff=16, dense_layers=1)
    p = tr.params(m)
    expert = 3 * 8 * 16
    assert p.routed_expert_params == 4 * expert and p.shared_expert_params == expert
    assert p.router_params == 8 * 4 and p.mlp_params == expert
    assert p.total_params - p.active_params == 3 * expert


@pytest.mark.parametrize("name", sorted(LLAMA3_PUBLISHED))
def test_llama3_parameter_counts_agree_with_meta_within_half_a_percent(name):
    total = tr.params(preset(name)).total_params
    assert total == pytest.approx(LLAMA3_PUBLISHED[name], rel=0.005)
    assert total == pytest.approx(preset(name).published_params, rel=0.005)


@pytest.mark.parametrize("name", ["gemma2-2b", "gemma2-9b", "gemma2-27b", "gemma-2b", "gemma-7b"])
def test_gemma_parameter_counts_equal_their_papers_table_2_exactly(name):
    assert tr.params(preset(name)).total_params == preset(name).published_params


@pytest.mark.parametrize("name", ["gpt3-175b", "palm-540b", "mixtral-8x7b", "deepseek-v3"])
def test_other_presets_agree_with_their_published_totals_within_half_a_percent(name):
    assert tr.params(preset(name)).total_params == pytest.approx(preset(name).published_params, rel=0.005)


@pytest.mark.parametrize("name,rel", [("mixtral-8x7b", 0.005), ("deepseek-v3", 0.02)])
def test_moe_active_params_agree_with_published_figures(name, rel):
    # DeepSeek's "37B activated" is rounded down; the count (embedding included) is 37.55B.
    assert tr.params(preset(name)).active_params == pytest.approx(preset(name).published_active_params, rel=rel)


def test_deepseek_v3_mla_attention_by_hand():
    D, N, H, R, dc, dq = 7168, 128, 128, 64, 512, 1536
    per_layer = D * dq + dq * N * (H + R) + D * (dc + R) + dc * 2 * N * H + N * H * D + dc + dq
    assert tr.params(preset("deepseek-v3")).attention_params == 61 * per_layer


def test_forward_flops_without_attention_are_twice_the_matmul_params():
    fl = tr.flops_per_token(tiny())
    assert fl.attention_score_flops == 0
    assert fl.forward_flops == 2 * (2 * (192 + 384) + 80) == 2464


def test_attention_score_flops_by_hand_and_causal_halves_them():
    full = tr.flops_per_token(tiny(), seq_len=16, causal=False)
    assert full.attention_score_flops == 2 * (2 * 16 * 2 * 4 + 2 * 16 * 2 * 4)  # L x (QK^T + AV)
    assert tr.flops_per_token(tiny(), seq_len=16, causal=True).attention_score_flops == full.attention_score_flops / 2
    assert full.forward_flops_without_attention == 2464


def test_training_is_three_forwards():
    fl = tr.flops_per_token(preset("llama3-8b"), seq_len=8192)
    assert fl.backward_flops == 2 * fl.forward_flops and fl.training_flops == 3 * fl.forward_flops


def test_attention_equals_dense_flops_at_t_equals_8d_for_a_gated_mha_layer_with_f_4d():
    m = Transformer(layers=1, d_model=1024, heads=16, d_ff=4096, vocab=8)  # 8 D^2 + 24 D^2 = 4 T D
    fl = tr.layer_flops_per_token(m, seq_len=8 * 1024, causal=False)
    assert fl.attention_score_flops == pytest.approx(fl.forward_flops_without_attention)


def test_moe_flops_use_active_experts_only():
    fl = tr.flops_per_token(preset("mixtral-8x7b"))
    p = tr.params(preset("mixtral-8x7b"))
    assert fl.forward_flops == 2 * (p.active_params - p.embedding_params - p.norm_params)


def test_training_flops_for_a_budget_sit_beside_six_n_d():
    t = tr.training_flops(preset("llama3-70b"), tokens=15e12)
    assert t.six_nd_flops == 6 * tr.params(preset("llama3-70b")).total_params * 15e12
    assert t.flops == 3 * tr.flops_per_token(preset("llama3-70b")).forward_flops * 15e12
    assert 0.97 < t.ratio < 1.0  # the embedding lookup costs nothing
    assert tr.training_flops(preset("llama3-70b"), tokens=15e12, seq_len=8192).ratio > 1.05


@given(tokens=st.floats(1, 1e15), more=st.floats(0, 1e15), seq=st.integers(0, 10**6), extra=st.integers(0, 10**6))
def test_more_tokens_never_cost_fewer_flops(tokens, more, seq, extra):
    m = tiny()
    assert tr.training_flops(m, tokens=tokens + more, seq_len=seq).flops >= tr.training_flops(m, tokens=tokens, seq_len=seq).flops
    assert tr.flops_per_token(m, seq_len=seq + extra).forward_flops >= tr.flops_per_token(m, seq_len=seq).forward_flops


def test_default_training_state_is_sixteen_bytes_per_param():
    mem = tr.training_memory(preset("llama3-8b"))
    assert mem.bytes_per_param == 16 and mem.bytes == 16 * tr.params(preset("llama3-8b")).total_params


def test_training_state_precisions_are_configurable():
    mem = tr.training_memory(tiny(), first_moment_dtype="bf16", second_moment_dtype="bf16", master_dtype=None)
    assert mem.bytes_per_param == 8 and mem.master_bytes == 0


@pytest.mark.parametrize("mlp,counts", [("gated", {"none": 12, "matmul_outputs": 7, "full": 1}),
                                        ("plain", {"none": 11, "matmul_outputs": 6, "full": 1})])
def test_remat_policies_save_the_stated_number_of_tensors(mlp, counts):
    for policy, n in counts.items():
        assert tr.activation_memory(tiny(mlp=mlp), batch=1, seq_len=8, policy=policy).saved_tensors == n


def test_activations_without_remat_by_hand():
    m = Transformer(layers=3, d_model=64, heads=4, d_ff=256, vocab=8)  # MHA, H = 16
    B, T, D, N, H, F = 2, 32, 64, 4, 16, 256
    act = tr.activation_memory(m, batch=B, seq_len=T, dtype="bf16")
    assert act.bytes == 3 * 2 * (B * T * (4 * D + 4 * N * H + 3 * F) + B * N * T * T)


def test_flash_attention_drops_the_t_squared_tensor():
    m = Transformer(layers=1, d_model=64, heads=4, d_ff=256, vocab=8)
    dense = tr.activation_memory(m, batch=1, seq_len=1024)
    flash = tr.activation_memory(m, batch=1, seq_len=1024, flash_attention=True)
    assert dense.bytes - flash.bytes == 1024 * 4 * (1024 * 2 - 4)  # probs in bf16 -> fp32 log-sum-exp


def test_full_remat_keeps_only_layer_inputs():
    act = tr.activation_memory(preset("llama3-8b"), batch=1, seq_len=8192, policy="full")
    assert act.bytes == 32 * 8192 * 4096 * 2


def test_remat_recompute_flops():
    m = tiny()
    fl = tr.flops_per_token(m, seq_len=16)
    assert tr.activation_memory(m, batch=1, seq_len=16).remat_flops_per_token == 0
    assert tr.activation_memory(m, batch=1, seq_len=16, policy="matmul_outputs").remat_flops_per_token == fl.attention_score_flops
    down = 2 * 2 * 8 * 16  # L x 2 D F: the down projection's output is never needed
    assert tr.activation_memory(m, batch=1, seq_len=16, policy="full").remat_flops_per_token == \
        fl.forward_flops - fl.unembedding_flops - down


def test_kv_cache_per_token_is_two_l_k_h_bytes():
    kv = tr.kv_cache(preset("llama3-70b"), seq_len=8192, batch=4)
    assert kv.bytes_per_token == 2 * 80 * 8 * 128 * 2
    assert kv.bytes == 4 * 8192 * kv.bytes_per_token


def test_mla_caches_the_latent_and_rope_key():
    assert tr.kv_cache(preset("deepseek-v3")).bytes_per_token == 61 * (512 + 64) * 2


def test_gqa_shrinks_the_kv_cache_by_heads_over_kv_heads():
    mha = Transformer(layers=4, d_model=256, heads=8, d_ff=512, vocab=8)
    assert tr.kv_cache(mha).bytes_per_token == 8 * tr.kv_cache(mha.replace(kv_heads=1)).bytes_per_token


@pytest.mark.parametrize("call", [
    lambda: tr.flops_per_token(tiny(), seq_len=-1),
    lambda: tr.training_flops(tiny(), tokens=0),
    lambda: tr.activation_memory(tiny(), batch=1, seq_len=8, policy="selective"),
    lambda: tr.activation_memory(tiny(), batch=0, seq_len=8),
    lambda: tr.kv_cache(tiny(), dtype="fp12"),
    lambda: tr.training_memory(tiny(), grad_dtype="double"),
    lambda: tr.layer_flops_per_token(tiny(), moe=True),
])
def test_bad_input_raises_error(call):
    with pytest.raises(scalebook.Error):
        call()


def test_reprs_and_html_tables_show_the_parts():
    m = preset("deepseek-v3")
    assert "routed experts" in repr(tr.params(m)) and "<table>" in tr.params(m)._repr_html_()
    for obj in (tr.flops_per_token(m, seq_len=4096), tr.training_memory(m),
                tr.activation_memory(m, batch=1, seq_len=4096)):
        assert m.name in repr(obj) and "<table>" in obj._repr_html_()
    assert "per token" in repr(tr.kv_cache(m)) and "ratio" in repr(tr.training_flops(m, tokens=1e12))


def test_crossover_of_the_textbook_layer_is_8d_and_16d_causal():
    m = Transformer(layers=1, d_model=1024, heads=8, d_ff=4096, vocab=1000, mlp="gated")
    assert tr.attention_crossover_seq_len(m) == pytest.approx(8 * 1024)
    assert tr.attention_crossover_seq_len(m, causal=True) == pytest.approx(16 * 1024)


# --- attention intensity, FlashAttention, MFU from chip-hours (Chapter 4) ------------------------

def test_prefill_attention_intensity_by_hand():
    # tiny: N=2, K=1, H=4, bf16. B=3, T=10, no causal halving:
    # FLOPs 4 B T T N H = 4*3*10*10*2*4 = 9600; bytes 2 * B T (2 N H + 2 K H) = 2*30*(16+8) = 1440
    a = tr.attention_intensity(tiny(), seq_len=10, batch=3, phase="prefill", causal=False)
    assert (a.flops, a.hbm_bytes) == (9600, 1440)
    assert a.intensity_flops_per_byte == pytest.approx(9600 / 1440)


def test_causal_prefill_halves_the_flops_not_the_bytes():
    full = tr.attention_intensity(tiny(), seq_len=10, phase="prefill", causal=False)
    half = tr.attention_intensity(tiny(), seq_len=10, phase="prefill", causal=True)
    assert (half.flops, half.hbm_bytes) == (full.flops / 2, full.hbm_bytes)


def test_decode_attention_intensity_by_hand():
    # one new token against T=10 cached: FLOPs 4 B T N H = 4*3*10*2*4 = 960;
    # bytes 2 * B (2 T K H + 2 N H) = 2*3*(80 + 16) = 576
    a = tr.attention_intensity(tiny(), seq_len=10, batch=3, phase="decode")
    assert (a.flops, a.hbm_bytes) == (960, 576)


def test_decode_intensity_tends_to_the_group_size_whatever_the_batch():
    m = preset("llama3-70b")          # N = 64, K = 8: 8 query heads share each cached head
    for batch in (1, 64):
        a = tr.attention_intensity(m, seq_len=1_000_000, batch=batch, phase="decode")
        assert a.intensity_flops_per_byte == pytest.approx(8, rel=1e-4)


def test_attention_intensity_models_mla_in_decode_only_and_rejects_unknown_phases():
    with pytest.raises(scalebook.Error, match="MLA"):
        tr.attention_intensity(preset("deepseek-v3"), seq_len=8, phase="prefill")
    with pytest.raises(scalebook.Error, match="decode"):
        tr.attention_intensity(tiny(), seq_len=8, phase="training")


def test_mla_decode_intensity_by_hand():
    # N = 2 heads, d_c = 6, d_R = 2, bf16, B = 1, T = 10 (absorbed form):
    # FLOPs 2 T N (2 d_c + d_R) = 2*10*2*14 = 560; bytes 2 (T (d_c + d_R) + N (2 d_c + d_R)) = 2*(80 + 28) = 216
    m = Transformer(name="mla", layers=1, d_model=8, heads=2, head_dim=4, d_ff=16, vocab=10,
                    mla_kv_compression_dim=6, mla_rope_head_dim=2)
    a = tr.attention_intensity(m, seq_len=10, phase="decode")
    assert (a.flops, a.hbm_bytes) == (560, 216)


def test_mla_decode_intensity_of_deepseek_v3_is_near_its_head_count():
    # 128 heads share one cached latent of 512 + 64: 2 * 128 * 1088 / (2 * 576) = 241.8 FLOP/B at long T
    a = tr.attention_intensity(preset("deepseek-v3"), seq_len=1_000_000, phase="decode")
    assert a.intensity_flops_per_byte == pytest.approx(128 * 1088 / 576, rel=1e-3)


def test_flash_attention_flops_by_hand():
    # tiny, B=1, T=10, not causal: one T x T x H matmul over N=2 heads = 2*10*10*4*2 = 1600 FLOPs
    # forward: QK^T and PV = 3200; backward: QK^T again, dV, dP, dQ, dK = 8000; D: 2 T N H = 160
    c = tr.flash_attention_cost(tiny(), batch=1, seq_len=10, causal=False)
    assert (c.forward_flops, c.backward_flops, c.recompute_flops, c.d_term_flops) == (3200, 8000, 1600, 160)
    assert c.backward_over_forward == 2.5
    assert c.training_flops == 3.5 * c.forward_flops


def test_flash_attention_bytes_by_hand():
    # tiny, B=1, T=10, bf16 (2 B), fp32 statistics (4 B); N H = 8, K H = 4, N = 2
    # forward: Q, K, V read + O written = 10*2*(8+4+4+8) = 480; l written = 10*2*4 = 80
    # backward: O, dO, Q, dO, dQ (5 x 8) and K, V, dK, dV (4 x 4) = 10*2*56 = 1120;
    #           D written, l and D read = 3 * 10*2*4 = 240
    c = tr.flash_attention_cost(tiny(), batch=1, seq_len=10, causal=False)
    assert (c.forward_hbm_bytes, c.backward_hbm_bytes) == (560, 1360)
    assert c.probabilities_bytes == 2 * 2 * 10 * 10          # N T^2 bf16 numbers


def test_mfu_from_chip_hours_by_hand():
    # tiny's matmul weights: per layer Q, O 8x8, K, V 8x4, MLP 3 x 8x16 = 576; 2 layers + unembedding
    # 8x10 = 1232, so 6 x 1232 = 7392 training FLOPs per token (no norms, no embedding lookup).
    # 1000 H100-hours at 990 TFLOP/s = 3.564e21 FLOPs against 1e9 tokens' 7.392e12.
    r = tr.mfu_from_chip_hours(tiny(), tokens=1e9, chip_hours=1000, chip="h100")
    assert r.available_flops == pytest.approx(1000 * 3600 * 990e12)
    assert r.mfu == pytest.approx(7392e9 / 3.564e21)


def test_llama3_405b_mfu_from_its_reported_gpu_hours():
    # 6 N D with N = 405.9e9 (checkpoint count), D = 15.6e12 tokens, 30.84e6 H100-hours at 990 TFLOP/s:
    # 3.80e25 / 1.099e29 = 34.6%
    from scalebook.models import reported_training
    r = reported_training("llama3-405b")
    got = tr.mfu_from_chip_hours(preset("llama3-405b"), tokens=r.tokens, chip_hours=r.chip_hours, chip=r.chip)
    assert got.six_nd_mfu == pytest.approx(6 * 405.85e9 * 15.6e12 / (30.84e6 * 3600 * 990e12), rel=2e-3)
