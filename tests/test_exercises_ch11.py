"""Chapter 11's answer keys against hand derivations with literal numbers (not the package)."""
import math

import pytest

from scalebook.exercises import check, get

# Spec figures (the package's spec table): H100 SXM dense bf16 peak, HBM, HBM bandwidth, InfiniBand per GPU;
# TPU v5e dense bf16 peak, HBM bandwidth, ICI one way per link.
H100_BF16, H100_HBM, H100_HBM_BW, H100_IB = 990e12, 80e9, 3.4e12, 50e9
V5E_BF16, V5E_HBM_BW, V5E_ICI_ONE_WAY = 197e12, 820e9, 45e9

# LLaMA-3 70B (Meta model card): L, D, N, K, H, F, V = 80, 8192, 64, 8, 128, 28672, 128256.
P70 = 80 * (2 * 8192 * 8192 + 2 * 8192 * 1024 + 3 * 8192 * 28672 + 2 * 8192) + 2 * 128256 * 8192 + 8192
KV70_FP8_PER_TOKEN = 2 * 80 * 8 * 128 * 1  # keys and values, every layer, 8 kv heads of 128, 1 byte


def test_hand_counts_are_what_the_derivations_below_assume():
    assert P70 == 70_553_706_496
    assert KV70_FP8_PER_TOKEN == 163_840


# 11.1: FSDP across nodes needs C / W_ib = 19,800 tokens per node, 2,475 per GPU; 2^22 / 2475 = 1694.7, so the
# largest power of two is 1024 GPUs (128 nodes), under the 2048 sequences of 2048 tokens.
RULE_PER_GPU = H100_BF16 / H100_IB / 8
GPUS_11_1 = 2 ** math.floor(math.log2(2**22 / RULE_PER_GPU))
TRAIN_GPU_SECONDS = 6 * P70 * 15e12 / (H100_BF16 * 0.4)

# 11.2: weights 70.55 GB + caches 32 x 8192 x 163,840 B = 42.95 GB -> 113.5 GB > 80 GB: two GPUs.
BYTES_11_2 = P70 * 1 + 32 * 8192 * KV70_FP8_PER_TOKEN
TP_11_2 = 2 ** math.ceil(math.log2(math.ceil(BYTES_11_2 / H100_HBM)))
FLOOR_11_2 = BYTES_11_2 / TP_11_2 / H100_HBM_BW

# 11.3: V = 8192 x 4096 x 2 bytes over a non-wrapping 4-chip axis at 45 GB/s one way, each chip taking
# in the 3/4 it lacks, plus 3 hops of 1 us (chapter 3's additive form), against a compute-bound
# [2048, 4096] x [4096, 8192] matmul at 197 TFLOP/s.
GATHER_11_3 = 8192 * 4096 * 2 * 3 / 4 / V5E_ICI_ONE_WAY + 3 * 1e-6
MATMUL_11_3 = 2 * 2048 * 4096 * 8192 / V5E_BF16

HAND = {
    "11.1": TRAIN_GPU_SECONDS / GPUS_11_1 / 86400,
    "11.2": FLOOR_11_2 * 1e3,
    "11.3": GATHER_11_3 / MATMUL_11_3,
    # 11.4: training GPU-seconds over serving GPU-seconds per output token (2 GPUs x floor / 32 requests).
    "11.4": TRAIN_GPU_SECONDS / (TP_11_2 * FLOOR_11_2 / 32),
    # 11.5: F / N = 28672 / 16 columns per chip against the bidirectional hiding width on a v6e axis,
    # beta C / (4 W_1) = 2 x 920e12 / (4 x 90e9) (two blocks per round, 90 GB/s each way).
    "11.5": (28672 / 16) / (2 * 920e12 / (4 * 90e9)),
}


def test_the_choices_are_the_ones_the_solutions_describe():
    assert GPUS_11_1 == 1024 and 2**22 // 2048 == 2048  # the FSDP rule binds, not the sequence count
    assert TP_11_2 == 2
    # the matmul of 11.3 is compute-bound: its memory time is below its compute time
    assert (2048 * 4096 + 4096 * 8192 + 2048 * 8192) * 2 / V5E_HBM_BW < MATMUL_11_3


def test_the_v6e_figures_of_11_5_are_the_packages():
    import scalebook
    from scalebook import topology

    assert scalebook.chip("tpu-v6e").peak_flops_per_s("bf16") == 920e12
    assert topology.slice("tpu-v6e", "16x16").axis("X").one_way_bytes_per_s == 90e9


def test_slip_one_way_width_is_named():
    r = check("11.5", HAND["11.5"] / 2)
    assert r.status == "wrong" and "one-way" in r.message


def test_every_chapter_11_problem_has_a_hand_derivation():
    from scalebook.exercises import problems

    assert sorted(p.id for p in problems("11")) == sorted(HAND)


@pytest.mark.parametrize("pid", sorted(HAND))
def test_key_equals_hand_derivation(pid):
    assert get(pid).answer() == pytest.approx(HAND[pid], rel=1e-9)


@pytest.mark.parametrize("pid", sorted(HAND))
def test_key_is_correct(pid):
    assert check(pid, HAND[pid]).status == "correct"


@pytest.mark.parametrize("pid", sorted(HAND))
@pytest.mark.parametrize("factor", [1000, 1e-3])
def test_unit_slips_are_wrong(pid, factor):
    r = check(pid, HAND[pid] * factor)
    assert r.status == "wrong" and "factor of 1000" in r.message


@pytest.mark.parametrize("pid, wrong, words", [
    # 11.1: only the sequence cap (2048 GPUs), or the per-GPU rule without the node's shared cards (128 GPUs)
    ("11.1", TRAIN_GPU_SECONDS / 2048 / 86400, "below FSDP's threshold"),
    ("11.1", TRAIN_GPU_SECONDS / 128 / 86400, "tokens per node"),
    # 11.2: all the bytes on one GPU's bandwidth; the weights alone; bf16 weights
    ("11.2", BYTES_11_2 / H100_HBM_BW * 1e3, "divide the bytes by the degree"),
    ("11.2", P70 / 2 / H100_HBM_BW * 1e3, "whole KV cache"),
    ("11.2", (2 * P70 + 32 * 8192 * KV70_FP8_PER_TOKEN) / 2 / H100_HBM_BW * 1e3, "one byte per parameter"),
    # 11.3: wraparound assumed; V read from the operand; (N - 1)/N kept; the matmul at its memory time
    ("11.3", GATHER_11_3 / 2 / MATMUL_11_3, "no wraparound"),
    ("11.3", GATHER_11_3 / 4 / MATMUL_11_3, "gathered output"),
    ("11.3", 4 / 3 * GATHER_11_3 / MATMUL_11_3, "(N - 1) / N"),
    ("11.3", GATHER_11_3 / ((2048 * 4096 + 4096 * 8192 + 2048 * 8192) * 2 / V5E_HBM_BW), "compute-bound"),
    # 11.4: one GPU instead of two; one token per step instead of 32
    ("11.4", TRAIN_GPU_SECONDS / (FLOOR_11_2 / 32), "two GPUs"),
    ("11.4", TRAIN_GPU_SECONDS / (TP_11_2 * FLOOR_11_2), "32 requests"),
])
def test_slips_get_their_hint(pid, wrong, words):
    r = check(pid, wrong)
    assert r.status == "wrong", r
    assert words in r.message, r.message
