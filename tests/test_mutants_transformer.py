"""Counts, tables and messages of `scalebook.transformer` pinned by hand on small models; written to
kill the mutants `make mutate` found surviving.

The models are small enough to count on paper. TINY: L=2 layers, D=8, N=2 query heads, K=1 kv
head, H=4, gated MLP of F=16, V=10, untied, no biases. Per layer: Q and O are 8 x 8 (64 each),
K and V 8 x 4 (32 each), so attention is 192; the MLP is 3 x 8 x 16 = 384; two RMSNorms of 8.
"""
import re

import pytest

from scalebook import Error
from scalebook import transformer as tr
from scalebook.models import Transformer, preset


def tiny(**kw):
    base = dict(name="tiny", layers=2, d_model=8, heads=2, kv_heads=1, head_dim=4, d_ff=16, vocab=10)
    return Transformer(**{**base, **kw})


TINY = tiny()
# MOE: TINY with layer 1 dense and layer 2 MoE: E=4 routed experts of F_e=6, k=1 per token, S=1 shared.
MOE = tiny(name="moe", routed_experts=4, experts_per_token=1, shared_experts=1, expert_d_ff=6, dense_layers=1)
# MLA: one layer, D=8, N=2 heads of H=4, latent d_c=6, RoPE key d_R=2, no query compression.
MLA = Transformer(name="mla", layers=1, d_model=8, heads=2, head_dim=4, d_ff=16, vocab=10,
                  mla_kv_compression_dim=6, mla_rope_head_dim=2)


def table(html):
    """(caption, header cells, rows of cells) of a notebook table."""
    caption = re.search(r"<caption>(.*?)</caption>", html)
    head = re.findall(r"<th(?: [^>]*)?>(.*?)</th>", html)
    rows = [re.findall(r"<td[^>]*>(.*?)</td>", r) for r in re.findall(r"<tr>(.*?)</tr>", html) if "<td" in r]
    return (caption.group(1) if caption else None), head, rows


# --- format_count -------------------------------------------------------------------------------

@pytest.mark.parametrize("n, text", [
    (1.5e12, "1.5T"), (8.03e9, "8.03B"), (1.05e6, "1.05M"), (1000, "1k"), (2500, "2.5k"), (-2500, "-2.5k"),
    (999, "999"), (999_400, "999k"), (999_600, "1M"),   # from 0.9995 of a unit on, the larger unit
    (999.6e9, "1T"), (999.6e6, "1B"), (12, "12"), (0, "0"),
])
def test_a_count_prints_with_a_decimal_suffix_to_three_digits(n, text):
    assert tr.format_count(n) == text


def test_a_count_that_is_not_a_number_is_refused_by_name():
    with pytest.raises(Error, match=r"^n must be a number, got 'x'"):
        tr.format_count("x")


# --- parameters -----------------------------------------------------------------------------------

def test_the_parts_of_tiny_and_how_they_print():
    # embedding and unembedding 10 x 8 = 80 each; attention 2 x 192; MLP 2 x 384; norms (2 x 2 + 1) x 8
    p = tr.params(TINY)
    assert p.model_name == "tiny"
    assert p.parts() == {"embedding": 80, "unembedding": 80, "attention": 384, "MLP": 768, "norms": 40}
    assert repr(p) == "ParamCounts(tiny: total 1.35k; embedding 80, unembedding 80, attention 384, MLP 768, norms 40)"


def test_the_parameter_table_lists_parts_with_their_share():
    # shares of 1352: 80 -> 5.9%, 384 -> 28.4%, 768 -> 56.8%, 40 -> 3.0%
    assert table(tr.params(TINY)._repr_html_()) == ("Parameters of tiny", ["part", "params", "", "share"], [
        ["embedding", "80", "80", "5.9%"], ["unembedding", "80", "80", "5.9%"], ["attention", "384", "384", "28.4%"],
        ["MLP", "768", "768", "56.8%"], ["norms", "40", "40", "3.0%"],
        ["<b>total</b>", "<b>1,352</b>", "<b>1.35k</b>", "100%"]])


def test_the_markup_of_a_table():
    p = tr.params(Transformer(name="t", layers=1, d_model=1, heads=1, d_ff=1, vocab=1, tied_embeddings=True))
    # D=1, N=H=1, K=1, F=1, V=1, tied: embedding 1, attention 4 x 1, MLP 3 x 1, norms (1 x 2 + 1) x 1
    right = "<td style='text-align:right'>"
    assert p._repr_html_() == (
        "<table><caption>Parameters of t</caption><thead><tr>"
        + "".join(f"<th style='text-align:right'>{h}</th>" for h in ("part", "params", "", "share"))
        + "</tr></thead><tbody>"
        + f"<tr>{right}embedding</td>{right}1</td>{right}1</td>{right}9.1%</td></tr>"
        + f"<tr>{right}attention</td>{right}4</td>{right}4</td>{right}36.4%</td></tr>"
        + f"<tr>{right}MLP</td>{right}3</td>{right}3</td>{right}27.3%</td></tr>"
        + f"<tr>{right}norms</td>{right}3</td>{right}3</td>{right}27.3%</td></tr>"
        + f"<tr>{right}<b>total</b></td>{right}<b>11</b></td>{right}<b>11</b></td>{right}100%</td></tr>"
        + "</tbody></table>")


def test_a_moe_model_s_parts_and_active_parameters():
    # one expert: 3 x 8 x 6 = 144. MoE layer: 4 routed (576), 1 shared (144), router 8 x 4 = 32;
    # dense layer MLP 384; attention 384, norms 40, embeddings 80 + 80: total 1720; a token uses one
    # routed expert, so active = 1720 - 576 + 144 = 1288
    p = tr.params(MOE)
    assert p.parts() == {"embedding": 80, "unembedding": 80, "attention": 384, "MLP": 384, "routed experts": 576,
                         "shared experts": 144, "router": 32, "norms": 40}
    assert (p.total_params, p.active_params, p.active_routed_expert_params) == (1720, 1288, 144)
    assert repr(p) == ("ParamCounts(moe: total 1.72k, active 1.29k; embedding 80, unembedding 80, attention 384, "
                       "MLP 384, routed experts 576, shared experts 144, router 32, norms 40)")
    caption, _, rows = table(p._repr_html_())
    assert rows[-1] == ["active per token", "1,288", "1.29k", "74.9%"]  # 1288 / 1720


def test_biases_of_attention_mlp_experts_router_and_norms_by_hand():
    # MOE with K=2 kv heads and biases. Attention per layer: Q, O 64 each, K, V 8 x 8 = 64 each, biases
    # q N H = 8, k and v 2 K H = 16, o D = 8: 288. Dense MLP 384 + biases 2 x 16 + 8 = 424. Expert
    # 144 + 2 x 6 + 8 = 164. Router 32 + 4. Norms with shift: 5 x 16.
    p = tr.params(MOE.replace(kv_heads=2, biases=True))
    assert (p.attention_params, p.mlp_params, p.routed_expert_params, p.shared_expert_params, p.router_params,
            p.norm_params) == (576, 424, 656, 164, 36, 80)
    assert (p.total_params, p.active_params) == (2096, 2096 - 656 + 164)


def test_mla_attention_without_query_compression_by_hand():
    # queries D x N (H + d_R) = 8 x 12 = 96; keys/values down D x (d_c + d_R) = 64, up d_c x 2 N H = 96;
    # O = N H x D = 64; the kv latent's norm 6: 326
    assert tr.params(MLA).attention_params == 326


def test_mla_attention_with_query_compression_and_biases_by_hand():
    # queries D x d'_c + d'_c x N (H + d_R) = 24 + 36; rest 224 as above; biases N H + 2 K H + D = 32
    # (K = N = 2 for MLA); latent norms d_c + d'_c = 9: 60 + 224 + 32 + 9 = 325
    assert tr.params(MLA.replace(mla_q_compression_dim=3, biases=True)).attention_params == 325


# --- FLOPs ---------------------------------------------------------------------------------------------

def test_flops_per_token_of_a_moe_model_by_hand():
    # projections 2 x 2 x 192 = 768; MLP 2 x (384 dense + 3 x 8 x (1 + 1) x 6 MoE) = 1344;
    # router 2 x 8 x 4 = 64; unembedding 2 x 8 x 10 = 160
    f = tr.flops_per_token(MOE, seq_len=10, causal=False)
    assert (f.model_name, f.seq_len, f.causal) == ("moe", 10, False)
    assert f.parts() == {"attention projections": 768, "attention scores": 2 * 2 * 10 * 2 * 8,
                         "MLP / experts": 1344, "router": 64, "unembedding": 160}


def test_mla_score_flops_by_hand():
    # QK^T over H + d_R = 6 and AV over H = 4: 2 x T x N x 10 = 400 per layer at T = 10
    assert tr.flops_per_token(MLA, seq_len=10, causal=False).attention_score_flops == 400


def test_the_flops_repr_and_table():
    # TINY at T=16, causal (8 keys per query): scores 2 x 2 x 8 x 2 x 8 = 512; projections 768,
    # MLP 1536, unembedding 160: forward 2976, training 8928, attention 17.2%
    f = tr.flops_per_token(TINY, seq_len=16)
    assert repr(f) == "FlopsPerToken(tiny, T=16, causal: forward 2.98 kFLOP, training 8.93 kFLOP, attention 17.2%)"
    assert repr(tr.flops_per_token(TINY, causal=False)) == ("FlopsPerToken(tiny, T=0: forward 2.46 kFLOP, "
                                                            "training 7.39 kFLOP, attention 0%)")
    assert table(f._repr_html_()) == ("FLOPs per token of tiny, T=16 (causal)", ["part", "FLOPs per token", "share"], [
        ["attention projections", "768 FLOP", "25.8%"], ["attention scores", "512 FLOP", "17.2%"],
        ["MLP / experts", "1.54 kFLOP", "51.6%"], ["unembedding", "160 FLOP", "5.4%"],
        ["<b>forward</b>", "<b>2.98 kFLOP</b>", "100%"], ["training (3x)", "8.93 kFLOP", "300%"]])
    assert table(tr.flops_per_token(TINY, seq_len=16, causal=False)._repr_html_())[0] == "FLOPs per token of tiny, T=16"


def test_one_layer_by_default_has_no_scores_and_is_the_moe_kind_when_there_is_one():
    # MOE's MoE layer: projections 384, experts 2 x 3 x 8 x 12 = 576, router 64, no unembedding
    f = tr.layer_flops_per_token(MOE)
    assert (f.model_name, f.seq_len, f.causal) == ("moe", 0, True)
    assert f.parts() == {"attention projections": 384, "MLP / experts": 576, "router": 64}
    assert tr.layer_flops_per_token(MOE, moe=False).parts() == {"attention projections": 384, "MLP / experts": 768}


def test_one_layer_halves_the_scores_by_default():
    # 2 x T/2 x N x 2H at T=16: 2 x 8 x 2 x 8 = 256
    assert tr.layer_flops_per_token(TINY, seq_len=16).attention_score_flops == 256


def test_an_all_moe_model_has_a_moe_layer_and_no_dense_one():
    all_moe = MOE.replace(name="all-moe", dense_layers=0)
    assert tr.layer_flops_per_token(all_moe).mlp_flops == 576
    with pytest.raises(Error, match=r"^all-moe has no dense layers; use moe=True$"):
        tr.layer_flops_per_token(all_moe, moe=False)
    with pytest.raises(Error, match=r"^tiny has no MoE layers; use moe=False$"):
        tr.layer_flops_per_token(TINY, moe=True)


def test_the_crossover_of_each_layer_kind():
    # score FLOPs per unit of T, not causal: 2 N 2H = 32. Dense layer: (384 + 768) / 32 = 36;
    # MoE layer: (384 + 576 + 64) / 32 = 32; causal halves the scores, doubling T*
    assert tr.attention_crossover_seq_len(MOE, moe=False) == 36
    assert tr.attention_crossover_seq_len(MOE) == 32
    assert tr.attention_crossover_seq_len(MOE, causal=True) == 64


def test_training_flops_beside_six_n_d_and_how_they_print():
    # TINY, 1000 tokens at T=16, causal by default: 3 x 2976 x 1000 = 8.928e6; 6 x 1352 x 1000 = 8.112e6
    t = tr.training_flops(TINY, tokens=1000, seq_len=16)
    assert (t.model_name, t.tokens, t.seq_len, t.causal, t.active_params) == ("tiny", 1000.0, 16, True, 1352)
    assert (t.flops, t.six_nd_flops) == (8_928_000, 8_112_000)
    assert repr(t) == "TrainingFlops(tiny, 1k tokens at T=16: 8.93M FLOPs exact, 6ND = 8.11M FLOPs, ratio 1.101)"
    assert tr.training_flops(TINY, tokens=1000, seq_len=16, causal=False).flops == 3 * (2464 + 1024) * 1000


# --- training state ---------------------------------------------------------------------------------

def test_the_training_state_parts_repr_and_table():
    # 1352 parameters x (2 + 2 + 4 + 4 + 4) bytes
    m = tr.training_memory(TINY)
    assert m.parts() == {"parameters": 2704, "gradients": 2704, "Adam first moment": 5408,
                         "Adam second moment": 5408, "master weights": 5408}
    assert repr(m) == ("TrainingMemory(tiny: 21.6 kB = 16 B/param x 1.35k; parameters 2.7 kB, gradients 2.7 kB, "
                       "Adam first moment 5.41 kB, Adam second moment 5.41 kB, master weights 5.41 kB)")
    assert table(m._repr_html_()) == ("Training state of tiny", ["state", "bytes", "bytes/param"], [
        ["parameters", "2.7 kB", "2"], ["gradients", "2.7 kB", "2"], ["Adam first moment", "5.41 kB", "4"],
        ["Adam second moment", "5.41 kB", "4"], ["master weights", "5.41 kB", "4"],
        ["<b>total</b>", "<b>21.6 kB</b>", "<b>16</b>"]])


# --- activations ------------------------------------------------------------------------------------

def saved(act):
    return [(t.name, t.shape, t.elements_per_token, t.bytes_per_element) for t in act.tensors]


def test_a_gated_layer_without_remat_saves_twelve_named_tensors():
    # TINY at T=5, bf16: probabilities N T = 10 per token
    act = tr.activation_memory(TINY, batch=1, seq_len=5)
    assert saved(act) == [
        ("layer input", "[B,T,D]", 8, 2), ("norm1 output", "[B,T,D]", 8, 2), ("Q", "[B,T,N,H]", 8, 2),
        ("K", "[B,T,K,H]", 4, 2), ("V", "[B,T,K,H]", 4, 2), ("softmax probabilities", "[B,N,T,T]", 10, 2),
        ("attention output", "[B,T,N*H]", 8, 2), ("residual after attention", "[B,T,D]", 8, 2),
        ("norm2 output", "[B,T,D]", 8, 2), ("gate", "[B,T,F]", 16, 2), ("up", "[B,T,F]", 16, 2),
        ("act(gate) * up", "[B,T,F]", 16, 2)]


def test_a_plain_parallel_layer_with_flash_attention_saves_no_middle_norm_and_a_fp32_statistic():
    act = tr.activation_memory(tiny(mlp="plain", parallel_block=True), batch=1, seq_len=5, flash_attention=True)
    assert saved(act) == [
        ("layer input", "[B,T,D]", 8, 2), ("norm1 output", "[B,T,D]", 8, 2), ("Q", "[B,T,N,H]", 8, 2),
        ("K", "[B,T,K,H]", 4, 2), ("V", "[B,T,K,H]", 4, 2), ("softmax log-sum-exp", "[B,N,T] fp32", 2, 4.0),
        ("attention output", "[B,T,N*H]", 8, 2), ("up", "[B,T,F]", 16, 2), ("act(up)", "[B,T,F]", 16, 2)]


def test_matmul_outputs_saves_the_input_q_k_v_the_output_projection_and_the_mlp_inputs():
    gated = tr.activation_memory(TINY, batch=1, seq_len=5, policy="matmul_outputs")
    assert saved(gated) == [("layer input", "[B,T,D]", 8, 2), ("Q", "[B,T,N,H]", 8, 2), ("K", "[B,T,K,H]", 4, 2),
                            ("V", "[B,T,K,H]", 4, 2), ("output projection", "[B,T,D]", 8, 2),
                            ("gate", "[B,T,F]", 16, 2), ("up", "[B,T,F]", 16, 2)]
    plain = tr.activation_memory(tiny(mlp="plain"), batch=1, seq_len=5, policy="matmul_outputs")
    assert saved(plain)[-2:] == [("output projection", "[B,T,D]", 8, 2), ("up", "[B,T,F]", 16, 2)]


def test_a_moe_layer_saves_expert_widths_and_mla_saves_its_latents():
    # MoE layer: (k + S) F_e = 12 per token, shapes in k F_e; MLA with d'_c = 3: q latent 3, kv latent
    # d_c + d_R = 8, Q and K over H + d_R = 6 per head, V over H
    moe = tr.activation_memory(MOE, batch=1, seq_len=5, policy="matmul_outputs")
    assert saved(moe)[-2:] == [("gate", "[B,T,k F_e]", 12, 2), ("up", "[B,T,k F_e]", 12, 2)]
    mla = tr.activation_memory(MLA.replace(mla_q_compression_dim=3), batch=1, seq_len=5, policy="matmul_outputs")
    assert saved(mla)[1:6] == [("q latent", "[B,T,d'_c]", 3, 2), ("kv latent", "[B,T,d_c+d_R]", 8, 2),
                               ("Q", "[B,T,N,H+d_R]", 12, 2), ("K", "[B,T,N,H+d_R]", 12, 2), ("V", "[B,T,K,H]", 8, 2)]
    no_q = tr.activation_memory(MLA, batch=1, seq_len=5, policy="none")
    assert [t.name for t in no_q.tensors][2:6] == ["kv latent", "Q", "K", "V"]


def test_full_remat_saves_the_layer_input_only():
    assert saved(tr.activation_memory(TINY, batch=1, seq_len=5, policy="full")) == [("layer input", "[B,T,D]", 8, 2)]


def test_a_mixed_model_sums_each_layer_kind():
    # full remat keeps D = 8 elements per token whatever the kind; 'matmul_outputs': dense layer
    # 8 + 16 + 8 + 2 x 16 = 64, MoE layer 8 + 16 + 8 + 2 x 12 = 56; B T = 10, 2 bytes each
    assert tr.activation_memory(MOE, batch=2, seq_len=5, policy="matmul_outputs").bytes == (64 + 56) * 10 * 2


def test_remat_flops_of_each_kind_of_layer():
    # full: a layer forward less the down projection, per layer kind. Dense: 384 + 768 - 2 x 8 x 16 = 896;
    # MoE: 384 + 576 + 64 - 2 x 8 x 12 = 832. With a parallel block the output projection 2 x N H D = 128
    # is skipped too. matmul_outputs: the scores, 2 x 8 x 2 x 8 = 256 per layer at T = 16, causal by default
    assert tr.activation_memory(MOE, batch=1, seq_len=16, policy="full").remat_flops_per_token == 896 + 832 + 2 * 256
    assert tr.activation_memory(TINY.replace(parallel_block=True), batch=1, seq_len=16,
                                policy="full").remat_flops_per_token == 2 * (896 + 256 - 128)
    assert tr.activation_memory(TINY, batch=1, seq_len=16, policy="matmul_outputs",
                                causal=False).remat_flops_per_token == 2 * 512


def test_the_activation_repr_and_table():
    # full remat of TINY, B=2, T=5: 8 x 2 bytes x 10 tokens = 160 B per layer, 320 B for both
    act = tr.activation_memory(TINY, batch=2, seq_len=5, policy="full")
    assert (act.model_name, act.policy, act.batch, act.seq_len, act.tokens) == ("tiny", "full", 2, 5, 10)
    assert repr(act) == "ActivationMemory(tiny, remat='full', B=2, T=5: 1 tensors, 160 B per layer, 320 B in all)"
    assert table(act._repr_html_()) == ("Saved activations of tiny, remat='full', B=2, T=5", ["tensor", "shape", "bytes"],
                                        [["layer input", "[B,T,D]", "160 B"], ["<b>one layer</b>", "", "<b>160 B</b>"],
                                         ["all layers", "", "320 B"]])


# --- KV cache ---------------------------------------------------------------------------------------

def test_the_kv_cache_fields_and_repr():
    # 2 K H = 8 elements per token per layer, 16 B in bf16; 32 B per token over 2 layers
    kv = tr.kv_cache(TINY, seq_len=10, batch=3, dtype="bfloat16")
    assert (kv.model_name, kv.dtype, kv.elements_per_token_per_layer, kv.bytes) == ("tiny", "bf16", 8, 960)
    assert repr(kv) == "KVCache(tiny, bf16: 32 B per token, 320 B per sequence of 10, 960 B for batch 3)"
    assert tr.kv_cache(TINY).bytes == 32  # one token of one sequence


@pytest.mark.parametrize("call", [lambda: tr.kv_cache(TINY, seq_len=0),
                                  lambda: tr.activation_memory(TINY, batch=1, seq_len=0),
                                  lambda: tr.attention_intensity(TINY, seq_len=0)])
def test_a_sequence_of_no_tokens_is_refused(call):
    with pytest.raises(Error, match="seq_len must be a positive number"):
        call()


@pytest.mark.parametrize("call", [lambda: tr.kv_cache(TINY, batch=0), lambda: tr.attention_intensity(TINY, seq_len=1, batch=0),
                                  lambda: tr.mfu_from_chip_hours(TINY, tokens=1, chip_hours=0, chip="h100")])
def test_an_empty_batch_or_no_chip_hours_is_refused(call):
    with pytest.raises(Error, match="must be a positive number"):
        call()


def test_mfu_needs_tokens():
    with pytest.raises(Error, match="^tokens must be a positive number"):
        tr.mfu_from_chip_hours(TINY, tokens=0, chip_hours=1, chip="h100")


@pytest.mark.parametrize("call, what", [
    (lambda: tr.activation_memory(TINY, batch=1, seq_len=1, policy="some"), "unknown remat policy 'some'"),
    (lambda: tr.attention_intensity(TINY, seq_len=1, phase="train"), "unknown phase 'train'"),
    (lambda: tr.flash_attention_cost(TINY, batch=1.5, seq_len=1), "batch must be a whole number"),
    (lambda: tr.flash_attention_cost(TINY, batch=1, seq_len=1.5), "seq_len must be a whole number"),
    (lambda: tr.flash_attention_cost(TINY, batch=1, seq_len=1, causal=1), "causal"),
    (lambda: tr.mfu_from_chip_hours(TINY, tokens=1, chip_hours=1, chip="h100", seq_len=1.5),
     "seq_len must be a whole number"),
])
def test_bad_arguments_are_refused_by_name(call, what):
    with pytest.raises(Error) as e:
        call()
    assert str(e.value).startswith(what)


# --- attention intensity and FlashAttention ----------------------------------------------------------

GQA = tiny(name="gqa", heads=4, kv_heads=2, d_model=16)  # N = 4 query heads share K = 2 kv heads of H = 4


def test_prefill_by_default_causal_with_two_kv_heads_by_hand():
    # B=3, T=10, causal: FLOPs 4 B (T/2) T N H = 4 x 3 x 5 x 10 x 16 = 9600;
    # bytes 2 x B T (2 N H + 2 K H) = 2 x 30 x (32 + 16) = 2880
    a = tr.attention_intensity(GQA, seq_len=10, batch=3)
    assert (a.model_name, a.phase, a.batch, a.seq_len, a.causal, a.flops, a.hbm_bytes) == (
        "gqa", "prefill", 3, 10, True, 9600, 2880)
    assert repr(a) == "AttentionIntensity(gqa, prefill, B=3, T=10: 9.6 kFLOP over 2.88 kB, 3.33 FLOP/B)"
    assert tr.attention_intensity(GQA, seq_len=10, batch=3, causal=False).causal is False


def test_decode_is_never_causal():
    # decode with B=3, T=10: FLOPs 4 B T N H = 1920; bytes 2 x B (2 T K H + 2 N H) = 6 x (160 + 32) = 1152
    a = tr.attention_intensity(GQA, seq_len=10, batch=3, phase="decode", causal=True)
    assert (a.phase, a.causal, a.flops, a.hbm_bytes) == ("decode", False, 1920, 1152)


def test_mla_decode_for_a_batch_by_hand():
    # B=3, T=10, N=2, d_c=6, d_R=2: FLOPs 2 B T N (2 d_c + d_R) = 2 x 3 x 10 x 2 x 14 = 1680;
    # bytes 2 x B (T (d_c + d_R) + N (2 d_c + d_R)) = 6 x (80 + 28) = 648
    a = tr.attention_intensity(MLA, seq_len=10, batch=3, phase="decode")
    assert (a.model_name, a.phase, a.batch, a.seq_len, a.causal, a.flops, a.hbm_bytes) == (
        "mla", "decode", 3, 10, False, 1680, 648)


def test_mla_prefill_is_refused_with_the_phase_to_use():
    with pytest.raises(Error) as e:
        tr.attention_intensity(MLA, seq_len=10)
    assert str(e.value) == ("attention_intensity models MLA (mla) in decode only, where its kernels attend to the "
                            "cached latent directly; use phase='decode'")


def test_attention_intensity_takes_a_preset_name_like_the_other_counts():
    by_name = tr.attention_intensity("llama3-8b", seq_len=128, phase="decode")
    assert by_name == tr.attention_intensity(preset("llama3-8b"), seq_len=128, phase="decode")
    with pytest.raises(Error, match="preset"):
        tr.attention_intensity(5, seq_len=128)


def test_flash_attention_by_default_causal_for_a_batch_with_two_kv_heads_by_hand():
    # B=3, T=10, causal: one T/2 x T x H matmul over N=4 heads = 2 x 3 x 5 x 10 x 4 x 4 = 4800 FLOPs;
    # forward 2 x 4800, backward 5 x 4800, D term 2 B T N H = 960. Bytes (bf16, fp32 statistics, N H = 16,
    # K H = 8): forward B T (2 (32 + 16) + 4 x 4) = 30 x 112 = 3360; backward B T (2 (80 + 32) + 3 x 4 x 4)
    # = 30 x 272 = 8160; probabilities 2 B N T^2 = 2400
    c = tr.flash_attention_cost(GQA, batch=3, seq_len=10)
    assert (c.model_name, c.batch, c.seq_len, c.causal) == ("gqa", 3, 10, True)
    assert (c.forward_flops, c.backward_flops, c.recompute_flops, c.d_term_flops) == (9600, 24000, 4800, 960)
    assert (c.forward_hbm_bytes, c.backward_hbm_bytes, c.probabilities_bytes) == (3360, 8160, 2400)
    assert (c.forward_intensity_flops_per_byte, c.backward_intensity_flops_per_byte) == (9600 / 3360, 24000 / 8160)
    assert repr(c) == ("FlashAttentionCost(gqa, B=3, T=10, causal: forward 9.6 kFLOP / 3.36 kB, "
                       "backward 24 kFLOP / 8.16 kB (2.50x forward))")
    assert repr(tr.flash_attention_cost(GQA, batch=3, seq_len=10, causal=False)).startswith(
        "FlashAttentionCost(gqa, B=3, T=10: forward 19.2 kFLOP")


def test_flash_attention_of_mla_is_refused_with_the_reason():
    with pytest.raises(Error) as e:
        tr.flash_attention_cost(MLA, batch=1, seq_len=4)
    assert str(e.value) == ("flash_attention_cost models standard attention (MHA, GQA, MQA); mla uses MLA, whose "
                            "cache is a shared latent: use a model with mla_kv_compression_dim=0")


# --- MFU from chip-hours ---------------------------------------------------------------------------

def test_mfu_counts_attention_at_the_sequence_length_and_prints():
    # TINY at T=16, causal: 3 x 2976 = 8928 FLOPs per token, 8.928e12 for 1e9 tokens; 6ND = 6 x 1352 x 1e9
    # = 8.112e12. 1e-5 H100-hours at 990 TFLOP/s = 3.564e13 FLOPs: MFU 25.05%, 6ND 22.76%
    r = tr.mfu_from_chip_hours(TINY, tokens=1e9, chip_hours=1e-5, chip="h100", seq_len=16)
    assert (r.model_name, r.chip, r.tokens, r.chip_hours) == ("tiny", "h100", 1e9, 1e-5)
    assert r.model_flops == pytest.approx(8.928e12) and r.six_nd_flops == pytest.approx(8.112e12)
    assert repr(r) == "ReportedMfu(tiny on h100: 1B tokens in 1 × 10⁻⁵ chip-hours: MFU 25.1% (6ND: 22.8%))"
