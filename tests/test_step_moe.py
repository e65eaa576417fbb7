"""scalebook.step: what an MoE layer costs beyond its expert matmuls (issue 18), pinned by hand.

Megatron-Core's alltoall token dispatcher (bib key megatroncore2025dispatcher) permutes each token's
k routed copies into expert order, AllToAlls them, sorts the received chunks by local expert when a
chip holds more than one, and undoes all three after the experts. Each copy reads and writes the
k D elements of a token's routed copies; the router adds a narrow (M x D) @ (D x E) matmul and a
softmax/top-k over E logits.
"""
import pytest

import scalebook
from scalebook import models, step, training
from scalebook.training import Strategy

# Two MoE layers, 8 experts of width 1,024, 2 per token, plain MLP (2 elementwise passes of F in
# its activation), 8 query and 8 KV heads of 128 (RoPE: 2 (N + K) H = 4,096 elements per token).
MOE = models.Transformer(name="moe", layers=2, d_model=1024, heads=8, kv_heads=8, head_dim=128, vocab=1024,
                         mlp="plain", routed_experts=8, experts_per_token=2, expert_d_ff=1024, dense_layers=0)
H100 = scalebook.chip("h100")
L, D, E, k, F = 2, 1024, 8, 2, 1024


def _elementwise_forward():
    """Elements per token of one forward pass, all layers: norms and residuals 10 D, the expert
    activation 2 k F (plain MLP), RoPE 2 (N + K) H, the router's softmax/top-k 2 E."""
    return L * (10 * D + 2 * k * F + 2 * (8 + 8) * 128 + 2 * E)


def _seconds(elements_per_token, tokens):
    return elements_per_token * 2 * tokens / H100.hbm_bytes_per_s  # bf16


def _estimate(strategy, batch_seqs):
    return training.estimate(MOE, strategy=strategy, seq_len=1024, batch_seqs=batch_seqs, chip="h100",
                             chips=strategy.chips)


def test_one_chip_holding_every_expert_pays_permute_unpermute_and_both_chunk_sorts():
    # ep = 1: 8 local experts, so 4 copies of k D read + k D written per MoE layer and pass,
    # forward and backward: 8 k D x 2 passes per layer; elementwise work 3 passes of the forward's.
    e = _estimate(Strategy(), batch_seqs=4)
    tokens = 4 * 1024
    copies = L * 8 * k * D * 2
    assert e.memory_bound_seconds == pytest.approx(_seconds(3 * _elementwise_forward() + copies, tokens))


def test_one_expert_per_chip_skips_the_chunk_sorts():
    # ep = E = 8: one local expert per chip, no chunk sort: permute + unpermute only, 4 k D per layer and pass.
    e = _estimate(Strategy(dp=8, ep=8), batch_seqs=32)
    tokens = 32 * 1024 / 8
    copies = L * 4 * k * D * 2
    assert e.memory_bound_seconds == pytest.approx(_seconds(3 * _elementwise_forward() + copies, tokens))


def test_full_recompute_repeats_the_copies_once_more():
    e = _estimate(Strategy(remat="full"), batch_seqs=4)
    tokens = 4 * 1024
    copies = L * 8 * k * D * 3
    assert e.memory_bound_seconds == pytest.approx(_seconds(4 * _elementwise_forward() + copies, tokens))


def test_a_dense_model_pays_no_moe_copies():
    dense = models.Transformer(name="dense", layers=2, d_model=1024, heads=8, kv_heads=8, head_dim=128, vocab=1024,
                               mlp="plain", d_ff=2048)
    assert step.model_facts(dense, 1024).moe_permute_elements == 0


def test_router_logits_are_priced_by_their_narrow_shape():
    # One layer of MOE at 256 tokens on one H100, efficiency 0.6. The router (256 x 1024) @ (1024 x 8)
    # gets one 256 x 16 tile (a side shorter than 128 gets the next power of two, at least 16): one
    # tile in a wave of 132 SMs, q = 256 x 8 / (132 x 256 x 16), compute-bound (1 wave of a 4 MFLOP
    # matmul: 7 us against 0.6 us of HBM traffic).
    one = models.Transformer(name="moe1", layers=1, d_model=1024, heads=8, kv_heads=8, head_dim=128, vocab=1024,
                             mlp="plain", routed_experts=8, experts_per_token=2, expert_d_ff=1024, dense_layers=0)
    peak, eff, bw = H100.peak_flops_per_s("bf16"), 0.6, H100.hbm_bytes_per_s
    flat = lambda m, kk, n, batch=1: 2 * batch * m * kk * n / (peak * eff)
    mem = lambda m, kk, n, batch=1: 2 * batch * (m * kk + kk * n + m * n) / bw
    router = max(flat(256, 1024, 8) * 132 * 256 * 16 / (256 * 8), mem(256, 1024, 8))
    assert router == pytest.approx(flat(256, 1024, 8) * 132 * 16 / 8)
    with_router = float(step._shape_ratio(step.model_facts(one, 256), H100, tokens=256, tp=1, ep=1, efficiency=eff,
                                          peak_flops_per_s=peak, dtype_bytes=2))
    # Everything else of the layer, hand-priced: QKV (256 x 1024) @ (1024 x 3072) and out (256 x
    # 1024) @ (1024 x 1024), 24 and 8 tiles in one wave of 132; 8 experts of (64 x 1024) @ (1024 x
    # 1024), 64 rows each: the 1,024-wide side along the tile's 256, the 64 rows in a 64-wide tile,
    # 8 x 4 = 32 tiles of 256 x 64, twice (up and down), one wave.
    qkv = flat(256, 1024, 3072) * 132 * 256 * 128 / (256 * 3072)
    out = flat(256, 1024, 1024) * 132 * 256 * 128 / (256 * 1024)
    experts = 2 * max(flat(64, 1024, 1024, 8) * 132 * 256 * 64 / (8 * 64 * 1024), mem(64, 1024, 1024, 8))
    flats = flat(256, 1024, 3072) + flat(256, 1024, 1024) + 2 * flat(64, 1024, 1024, 8) + flat(256, 1024, 8)
    assert with_router == pytest.approx((qkv + out + experts + router) / flats)
