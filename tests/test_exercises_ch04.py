"""Chapter 4's answer keys against hand derivations with literal numbers (not the package)."""
import math

import pytest

from scalebook.exercises import check, get

H100_BF16 = 990e12  # FLOP/s, the spec table's dense bf16 peak of an H100 SXM

# LLaMA-3 shapes (Meta model cards): L, D, N, K, H, F, V.
#   8B:  32, 4096, 32, 8, 128, 14336, 128256
#   70B: 80, 8192, 64, 8, 128, 28672, 128256
LLAMA3_8B_PARAMS = 32 * (2 * 4096 * 4096 + 2 * 4096 * 1024 + 3 * 4096 * 14336 + 2 * 4096) \
    + 2 * 128256 * 4096 + 4096
LLAMA3_70B_PARAMS = 80 * (2 * 8192 * 8192 + 2 * 8192 * 1024 + 3 * 8192 * 28672 + 2 * 8192) \
    + 2 * 128256 * 8192 + 8192


def test_llama_hand_counts_are_what_the_tests_below_assume():
    assert LLAMA3_8B_PARAMS == 8_030_261_248
    assert LLAMA3_70B_PARAMS == 70_553_706_496


HAND = {
    # 4.1: per layer attention 2*3072*3072 + 2*3072*1024, MLP 3*3072*8192, norms 2*3072; 32 layers;
    # two 100000 x 3072 tables; final norm.
    "4.1": 32 * (18_874_368 + 6_291_456 + 75_497_472 + 6_144) + 2 * 100_000 * 3072 + 3072,
    # 4.2: 6 P D / (2048 x 990e12 x 0.4) seconds, in days.
    "4.2": 6 * LLAMA3_70B_PARAMS * 2e12 / (2048 * H100_BF16 * 0.4) / 86400,
    # 4.3: 2 x 126 layers x 8 kv heads x 128 x 2 bytes, in kB.
    "4.3": 2 * 126 * 8 * 128 * 2 / 1e3,
    # 4.4: 2 x 80 x 8 x 128 x 2 bytes per token x 32 x 8192 tokens, in GB.
    "4.4": 327_680 * 32 * 8192 / 1e9,
    # 4.5: 16 bytes per parameter over 64 chips, in GB.
    "4.5": 16 * LLAMA3_8B_PARAMS / 64 / 1e9,
    # 4.6: per layer attention 2*2048*2048 + 2*2048*512, 5 experts x 3*2048*1024 (4 routed + 1 shared),
    # router 2048*64, norms 2*2048; 24 layers; two 50000 x 2048 tables; final norm.
    "4.6": 24 * (8_388_608 + 2_097_152 + 5 * 6_291_456 + 131_072 + 4096) + 2 * 50_000 * 2048 + 2048,
    # 4.7: T = D + D K / N + 3 D F / (2 N H) = 5120 + 1024 + 20736.
    "4.7": 5120 + 5120 * 8 / 40 + 3 * 5120 * 13824 / (2 * 40 * 128),
    # 4.8: 32 layers x 4 x (8192 / 2) x 32 x 128 FLOPs per token x 256 x 8192 tokens, in PFLOP.
    "4.8": 32 * 4 * 4096 * 32 * 128 * 256 * 8192 / 1e15,
    # 4.9: floor(40e9 / (2 x 118 x 256 x 2 bytes x 32768)).
    "4.9": 40e9 // (2 * 118 * 256 * 2 * 32768),
    # 4.10: 6 P D_tok over 7.0 million H100-hours at 990 TFLOP/s, in percent.
    "4.10": 100 * 6 * LLAMA3_70B_PARAMS * 15e12 / (7.0e6 * 3600 * H100_BF16),
    # 4.11: 405B has N = 128, K = 8, H = 128. FLOPs 4 B T N H over bytes 2 B (2 T K H + 2 N H).
    "4.11": 4 * 16 * 32768 * 128 * 128 / (2 * 16 * (2 * 32768 * 8 * 128 + 2 * 128 * 128)),
    # 4.12: causal prefill in bf16: 2 (T/2) N / (2 (N + K)) = 32 T / 80 = 0.4 T >= 197e12 / 820e9.
    "4.12": math.ceil(197e12 / 820e9 / 0.4),
    # 4.13: fp8 on a B200: 4.5e15 / 8e12 FLOP/B, one byte per weight, 2 FLOPs per weight use:
    # 281.25 tokens per expert, times E / k = 256 / 8.
    "4.13": 4.5e15 / 8e12 / 2 * 256 / 8,
    # 4.14: one causal T_eff x T x H matmul over 64 heads and 4 sequences, 2 x 4 x 4096 x 8192 x 64 x 128
    # FLOPs; two forward plus five backward, in TFLOP.
    "4.14": 7 * 2 * 4 * 4096 * 8192 * 64 * 128 / 1e12,
    # 4.15: read 32 x 8192^2 bf16 numbers at 3.4 TB/s against 2 x 8192^2 x 32 x 128 FLOPs at 990 TFLOP/s.
    "4.15": (2 * 32 * 8192 ** 2 / 3.4e12) / (2 * 8192 ** 2 * 32 * 128 / H100_BF16),
    # 4.16: GPT-3 175B layer (h = 12288, a = 96), s = 2048, b = 1: Korthikanti et al.'s eq. 1,
    # s b h (34 + 5 a s / h), over 32 s b h (16 h elements per token at 2 bytes) + 4 a s (fp32 log-sum-exp).
    "4.16": 2048 * 12288 * (34 + 5 * 96 * 2048 / 12288) / (32 * 2048 * 12288 + 4 * 96 * 2048),
}


def test_every_chapter_4_problem_has_a_hand_derivation():
    from scalebook.exercises import problems

    assert sorted(p.id for p in problems("4")) == sorted(HAND)


@pytest.mark.parametrize("pid", sorted(HAND))
def test_key_equals_hand_derivation(pid):
    assert get(pid).answer() == pytest.approx(HAND[pid], rel=1e-9)


@pytest.mark.parametrize("pid", sorted(HAND))
def test_key_is_correct(pid):
    assert check(pid, HAND[pid]).status == "correct"


@pytest.mark.parametrize("pid", sorted(HAND))
@pytest.mark.parametrize("factor, words", [(2, "factor of 2"), (1000, "factor of 1000"), (8, "factor of 8")])
def test_slips_are_wrong_with_the_matching_hint(pid, factor, words):
    r = check(pid, HAND[pid] * factor)
    assert r.status == "wrong"
    assert words in r.message


def test_total_instead_of_per_chip_gets_the_per_chip_hint():
    r = check("4.5", HAND["4.5"] * 64)
    assert r.status == "wrong" and "per-chip" in r.message
    r = check("4.2", HAND["4.2"] * 2048)
    assert r.status == "wrong" and "per-chip" in r.message


def test_chapter_4_has_at_least_15_problems():
    from scalebook.exercises import problems

    assert len(problems("4")) >= 15


def test_the_prompt_length_is_checked_as_an_integer():
    assert check("4.12", 601).status == "correct"
    assert check("4.12", 600).status != "correct"


def test_forgetting_the_recomputation_gets_its_hint():
    r = check("4.14", HAND["4.14"] * 6 / 7)
    assert r.status == "wrong" and "recomputes" in r.message


def test_scaling_decode_intensity_with_the_batch_gets_its_hint():
    r = check("4.11", HAND["4.11"] * 16)
    assert r.status == "wrong" and "cancels" in r.message


def test_whole_sequences_are_checked_as_an_integer():
    assert check("4.9", HAND["4.9"]).status == "correct"
    assert check("4.9", HAND["4.9"] + 1).status != "correct"
