"""Activation memory against published accounting (issue 18, item 8; Chapter 4).

Two sources, each worked by hand here, not read back from the package:

- Korthikanti et al. 2022, "Reducing Activation Recomputation in Large Transformer Models"
  (`korthikanti2022activation`): bytes per layer of a GPT layer (plain 4h GELU MLP, multi-head
  attention, 16-bit activations, dropout after the attention probabilities, after the attention
  block and after the MLP), with s the sequence, b the microbatch, h the width, a the heads, t the
  tensor-parallel degree: sec. 4.1 eq. 1, s b h (34 + 5 a s / h) without parallelism; sec. 4.2.1
  eq. 2, s b h (10 + 24 / t + 5 a s / (h t)) with tensor parallelism; sec. 4.2.2, s b h / t (34 +
  5 a s / h) with tensor and sequence parallelism; Table 2, 34 s b h / t with selective
  recomputation as well and 2 s b h with full recomputation; sec. 4.2.3 (eq. 5), the first
  pipeline stage holds p microbatches of L / p layers (L layers' worth), times 1 + (p - 1) / (p m)
  with m interleaved chunks per stage.
- Dubey et al. 2024, "The Llama 3 Herd of Models" (`llama3herd2024`), sec. 3.3.2 and Table 4:
  405B pre-trained at 8,192 tokens on TP 8, CP 1, PP 16, DP 64 (32 sequences per DP group) and
  DP 128 (16 per group), "without activation checkpointing"; FSDP that shards gradients and
  optimizer state but keeps the gathered weights (ZeRO-2 over dp); one Transformer layer fewer on
  the first and on the last pipeline stage, to balance memory; an interleaved schedule whose
  number of chunks per stage the paper does not give.
"""
import pytest

from scalebook import step, training
from scalebook import transformer as tr
from scalebook.models import Transformer, preset
from scalebook.strategy import Strategy

# A GPT layer as Korthikanti et al. count it; the sizes are arbitrary (their formulas hold for any).
S, H_, A, T_P = 2048, 1024, 16, 4


def gpt():
    return Transformer(name="gpt-korthikanti", layers=8, d_model=H_, heads=A, d_ff=4 * H_, vocab=1000,
                       mlp="plain", norm="layernorm", biases=True)


def per_layer(policy, *, dropout=True, flash=False):
    return tr.activation_memory(gpt(), batch=1, seq_len=S, policy=policy, dtype="fp16", dropout=dropout,
                                flash_attention=flash).layer_bytes


def split(policy):
    """(D-wide, TP-split) bytes of one layer of the GPT model at b = 1."""
    wide, rest = step.activation_bytes_per_token(gpt(), seq_len=S, policy=policy, dtype="fp16", flash=False,
                                                 dropout=True)
    layers = gpt().layers
    return wide * S / layers, rest * S / layers


def test_no_parallelism_matches_korthikanti_eq_1():
    assert per_layer("none") == S * H_ * (34 + 5 * A * S / H_)


def test_tensor_parallel_matches_korthikanti_eq_2():
    wide, rest = split("none")
    assert wide + rest / T_P == pytest.approx(S * H_ * (10 + 24 / T_P + 5 * A * S / (H_ * T_P)), rel=1e-12)


def test_sequence_parallel_splits_everything_as_in_korthikanti_sec_4_2_2():
    wide, rest = split("none")
    assert (wide + rest) / T_P == pytest.approx(S * H_ / T_P * (34 + 5 * A * S / H_), rel=1e-12)


def test_selective_recomputation_matches_korthikanti_table_2():
    wide, rest = split("attention")
    assert (wide + rest) / T_P == pytest.approx(34 * S * H_ / T_P, rel=1e-12)  # with sequence parallelism
    assert wide + rest / T_P == pytest.approx(S * H_ * (10 + 24 / T_P), rel=1e-12)  # tensor parallel only


def test_full_recomputation_keeps_2sbh():
    assert per_layer("full") == 2 * S * H_


def test_without_dropout_the_masks_and_the_dropout_output_go():
    # 2 s b h of 1-byte masks on the residual stream, and on the scores a 1-byte mask and the
    # 16-bit dropout output: 3 a s^2 b. What is left is 32 s b h + 2 a s^2 b.
    assert per_layer("none", dropout=False) == S * H_ * 32 + 2 * A * S * S


def test_flash_attention_keeps_only_the_fp32_log_sum_exp_of_the_scores():
    # No [a, s, s] tensor: 32 s b h plus 4 bytes per head and token.
    assert per_layer("none", dropout=False, flash=True) == S * H_ * 32 + 4 * A * S
    assert per_layer("attention", dropout=False, flash=True) == per_layer("none", dropout=False, flash=True)


def test_gated_gqa_layer_departs_from_korthikanti_as_documented():
    # Gated MLP: gate, up and act(gate) * up (3 F); GQA: K and V K H wide. No dropout, no scores.
    D, N, K, H, F = 64, 4, 2, 16, 176
    m = Transformer(name="gated-gqa", layers=1, d_model=D, heads=N, kv_heads=K, head_dim=H, d_ff=F, vocab=10)
    got = tr.activation_memory(m, batch=1, seq_len=32, policy="none", flash_attention=True).layer_bytes
    assert got == 32 * (2 * (4 * D + 2 * N * H + 2 * K * H + 3 * F) + 4 * N)


def _gpt_estimate(**kw):
    s = Strategy(tp=T_P, pp=4, dp=1, sequence_parallel=True, microbatch=1, flash_attention=False, **kw)
    return training.estimate(gpt(), strategy=s, seq_len=S, batch_seqs=8, chip="h100", chips=16).memory


def test_first_pipeline_stage_holds_L_layers_of_one_microbatch():
    # sec. 4.2.3: p microbatches of L / p layers each; with no dropout and sequence parallelism one
    # layer is (32 s b h + 2 a s^2 b) / t bytes.
    layer = (S * H_ * 32 + 2 * A * S * S) / T_P
    assert _gpt_estimate(remat="none").activation_bytes == pytest.approx(gpt().layers * layer, rel=1e-12)


def test_interleaved_schedule_adds_korthikanti_factor():
    base = _gpt_estimate(remat="none").activation_bytes
    two = _gpt_estimate(remat="none", schedule="interleaved", virtual_stages=2).activation_bytes
    assert two == pytest.approx(base * (1 + (4 - 1) / (4 * 2)), rel=1e-12)


# --- Llama 3 405B as published -------------------------------------------------------------------

L3 = dict(L=126, D=16384, N=128, K=8, H=128, F=53248, V=128256)  # Llama 3 herd paper, Table 3


def _llama_hand(dp):
    """Bytes per chip of each candidate for the fullest stage of the Table 4 layout, remat none.

    126 layers on 16 stages: 14 stages of 8 and, as the paper balances its pipeline, the first
    and the last of 7. 1F1B keeps 16 - r microbatches (one 8,192-token sequence each) in flight
    on stage r. Per token and layer a chip keeps, in bf16 and split over tp = 8 by tensor and
    sequence parallelism: the layer input, two norm outputs and the residual (4 D), Q and the
    attention output (2 N H = 2 D), K and V (2 K H), gate, up and their product (3 F), plus flash
    attention's fp32 log-sum-exp (4 N bytes). Weights: the stage's layers, and the embedding on
    the first stage (the unembedding and final norm on the last), split over tp; bf16 gradients
    and Adam's fp32 moments and master weights (12 bytes) sharded over dp (ZeRO-2). The last
    stage also holds one microbatch's fp32 logits, vocab-parallel over tp.
    """
    L, D, N, K, H, F, V = (L3[k] for k in ("L", "D", "N", "K", "H", "F", "V"))
    tp, tokens = 8, 8192
    layer_micro = tokens * (2 * (4 * D + 2 * D + 2 * K * H + 3 * F) + 4 * N) / tp
    layer_params = 2 * D * N * H + 2 * D * K * H + 3 * D * F + 2 * D
    top = (2 * V * D + D) / 2

    def stage(layers, flight, top_params, logits):
        p = (layers * layer_params + top_params) / tp
        return dict(params=2 * p, grads=2 * p / dp, optimizer=12 * p / dp, activations=layer_micro * layers * flight,
                    logits=tokens * V * 4 / tp if logits else 0.0)

    return [stage(7, 16, top, False), stage(8, 15, 0, False), stage(7, 1, top, True)]


@pytest.mark.parametrize("dp", [64, 128])
def test_llama3_405b_published_layout_fits_80gb_without_remat(dp):
    s = Strategy(dp=dp, tp=8, pp=16, sequence_parallel=True, microbatch=1, zero=2, remat="none",
                 flash_attention=True)
    mem = training.estimate(preset("llama3-405b"), strategy=s, seq_len=8192, batch_seqs=2048, chip="h100",
                            chips=8 * 16 * dp).memory
    stages = _llama_hand(dp)
    hand = max(stages, key=lambda x: sum(x.values()))
    assert hand is stages[1]  # the second stage: 8 layers x 15 microbatches beats 7 x 16
    assert mem.params_bytes == pytest.approx(hand["params"], rel=1e-9)
    assert mem.grads_bytes == pytest.approx(hand["grads"], rel=1e-9)
    assert mem.optimizer_bytes == pytest.approx(hand["optimizer"], rel=1e-9)
    assert mem.activation_bytes == pytest.approx(hand["activations"], rel=1e-9)
    assert mem.logits_bytes == 0 and mem.gathered_weights_bytes == 0
    assert mem.bytes == pytest.approx(sum(hand.values()), rel=1e-9)
    assert sum(hand.values()) < 80e9 and mem.fits  # about 71.1 GB (dp 64), 70.6 GB (dp 128)


def test_bad_dropout_or_policy_raises_naming_what_is_valid():
    import scalebook
    with pytest.raises(scalebook.Error, match="dropout"):
        tr.activation_memory(gpt(), batch=1, seq_len=8, dropout="yes")
    with pytest.raises(scalebook.Error, match="attention"):
        tr.activation_memory(gpt(), batch=1, seq_len=8, policy="selective")


@pytest.mark.parametrize("v, layer_microbatches", [(2, 180), (4, 154)])
def test_interleaved_peak_matches_a_step_by_step_count_of_megatron_schedule(v, layer_microbatches):
    # Counted by replaying Megatron's interleaved order for 16 stages, 32 microbatches and v chunks
    # of 8 / v layers (Llama 3's split: the first and last chunk one layer short): the second stage
    # peaks at 2 x 14 + (v - 1) x 16 + 1 chunk passes, 8 / v layers each.
    assert (2 * 14 + (v - 1) * 16 + 1) * 8 // v == layer_microbatches
    s = Strategy(dp=64, tp=8, pp=16, sequence_parallel=True, microbatch=1, zero=2, remat="none",
                 flash_attention=True, schedule="interleaved", virtual_stages=v)
    mem = training.estimate(preset("llama3-405b"), strategy=s, seq_len=8192, batch_seqs=2048, chip="h100",
                            chips=8192).memory
    L, D, N, K, H, F = (L3[k] for k in ("L", "D", "N", "K", "H", "F"))
    layer_micro = 8192 * (2 * (6 * D + 2 * K * H + 3 * F) + 4 * N) / 8
    assert mem.activation_bytes == pytest.approx(layer_micro * layer_microbatches, rel=1e-9)


def test_logits_count_only_where_the_last_stage_is_the_fullest():
    # GPipe keeps all M microbatches on every stage, so the last stage (same layers, the
    # unembedding instead of the embedding, plus one microbatch's fp32 logits over tp) is the
    # fullest; under 1F1B the first stage holds pp microbatches and the last one, so no logits.
    gpipe = _gpt_estimate(remat="none", schedule="gpipe")
    assert gpipe.logits_bytes == S * 1000 * 4 / T_P
    assert _gpt_estimate(remat="none").logits_bytes == 0
