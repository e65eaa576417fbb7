"""scalebook.step: matmuls priced by their shape in the training step (issue 18, item 5), by hand."""
import pytest

import scalebook
from scalebook import models, step, training, transformer
from scalebook.training import Strategy

# One layer whose four weight matmuls, at 2,048 tokens on an A100 (256 x 128 tiles, 108 SMs), fill
# their last wave to different degrees. In units of 2304^2 FLOPs per row, with q the useful share:
#   QKV  (2048 x 2304) @ (2304 x 6912): 27 x 16 = 432 tiles = 4 whole waves   3 units, q = 1
#   out  (2048 x 2304) @ (2304 x 2304):  9 x 16 = 144 tiles of 2 x 108        1 unit,  q = 2/3
#   up   (2048 x 2304) @ (2304 x 9216): 36 x 16 = 576 tiles of 6 x 108        4 units, q = 8/9
#   down (2048 x 9216) @ (9216 x 2304):  9 x 16 = 144 tiles of 2 x 108        4 units, q = 2/3
# All are compute-bound (2,304-wide bf16 matmuls do ~1,000 FLOPs per byte; the A100 needs 153).
# Priced by shape: 3 + 1.5 + 4.5 + 6 = 15 units against 12 at the flat rate: 1.25.
LAYER = models.Transformer(name="one-layer", layers=1, d_model=2304, heads=18, head_dim=128, d_ff=9216,
                           vocab=1024, mlp="plain")


def test_shape_ratio_of_one_layer_is_its_quantised_time_over_its_flat_time():
    a100 = scalebook.chip("a100")
    r = step._shape_ratio(step.model_facts(LAYER, 2048), a100, tokens=2048, tp=1, ep=1, efficiency=0.6,
                         peak_flops_per_s=a100.peak_flops_per_s("bf16"), dtype_bytes=2)
    assert float(r) == pytest.approx(15 / 12)


def test_tensor_parallel_shards_are_priced_at_their_own_shape():
    # tp = 2 halves N of QKV and up, K of out and down. QKV (2048 x 2304) @ (2304 x 3456): 14 x 16 =
    # 224 tiles, 3 waves, q = 2048 x 3456 / (3 x 108 x 256 x 128) = 2/3; out (2048 x 1152) @
    # (1152 x 2304): 144 tiles, q = 2/3; up (2048 x 2304) @ (2304 x 4608): 18 x 16 = 288 tiles, 3
    # waves, q = 8/9; down as out, q = 2/3. Units per chip (2304^2 / 2 FLOPs per row): 3, 1, 4, 4.
    a100 = scalebook.chip("a100")
    r = step._shape_ratio(step.model_facts(LAYER, 2048), a100, tokens=2048, tp=2, ep=1, efficiency=0.6,
                         peak_flops_per_s=a100.peak_flops_per_s("bf16"), dtype_bytes=2)
    assert float(r) == pytest.approx((3 * 1.5 + 1 * 1.5 + 4 * 9 / 8 + 4 * 1.5) / 12)


def test_estimate_charges_the_weight_matmuls_the_ratio_and_attention_the_flat_rate():
    a100 = scalebook.chip("a100")
    e = training.estimate(LAYER, strategy=Strategy(), seq_len=2048, batch_seqs=1, chip="a100", chips=1,
                          efficiency=0.6)
    fl = transformer.flops_per_token(LAYER, seq_len=2048, causal=True)
    share = fl.attention_score_flops / fl.forward_flops  # attention (scores and values) at the flat rate,
    # its backward pass 2.5 forwards (the fused kernel recomputes QK^T; Dao 2023, sec. 4.1) where the
    # flat count has 2
    flat = 3 * fl.forward_flops * 2048 / (a100.peak_flops_per_s("bf16") * 0.6)
    assert e.matmul_seconds == pytest.approx(flat * ((1 - share) * 15 / 12 + share * 3.5 / 3))


def test_few_tokens_per_expert_make_the_expert_matmuls_memory_bound():
    # 64 experts, 2 per token, 256 tokens on one H100 (132 SMs): 8 tokens per expert.
    moe = models.Transformer(name="moe", layers=1, d_model=1024, heads=8, head_dim=128, vocab=1024, mlp="plain",
                             routed_experts=64, experts_per_token=2, expert_d_ff=1024, dense_layers=0)
    h100 = scalebook.chip("h100")
    peak, eff, bw = h100.peak_flops_per_s("bf16"), 0.6, h100.hbm_bytes_per_s
    r = float(step._shape_ratio(step.model_facts(moe, 256), h100, tokens=256, tp=1, ep=1, efficiency=eff,
                               peak_flops_per_s=peak, dtype_bytes=2))
    flat = lambda m, k, n, batch=1: 2 * batch * m * k * n / (peak * eff)
    mem = lambda m, k, n, batch=1: 2 * batch * (m * k + k * n + m * n) / bw
    # QKV (256 x 1024) @ (1024 x 3072): 12 x 2 = 24 tiles of 256 x 128, one wave of 132:
    # q = 256 x 3072 / (132 x 256 x 128); out (256 x 1024) @ (1024 x 1024): 4 x 2 tiles, same wave.
    qkv = max(flat(256, 1024, 3072) * 132 * 256 * 128 / (256 * 3072), mem(256, 1024, 3072))
    out = max(flat(256, 1024, 1024) * 132 * 256 * 128 / (256 * 1024), mem(256, 1024, 1024))
    # each expert's (8 x 1024) @ (1024 x 1024) reads a 2 MiB weight for 16 MFLOP: HBM-bound
    assert mem(8, 1024, 1024, 64) > 10 * flat(8, 1024, 1024, 64)
    experts = 2 * mem(8, 1024, 1024, 64)
    # the router's (256 x 1024) @ (1024 x 64) logits: one 256 x 64 tile, one wave of 132: q = 1/132
    router = max(flat(256, 1024, 64) * 132, mem(256, 1024, 64))
    assert r == pytest.approx((qkv + out + experts + router) / (flat(256, 1024, 3072) + flat(256, 1024, 1024)
                                                                + 2 * flat(8, 1024, 1024, 64) + flat(256, 1024, 64)))
