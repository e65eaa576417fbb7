"""Chapter 1's answer keys against hand derivations from the spec figures, and the usual slips.

Each expected value below is worked out by hand from the published figures (Austin et al. 2025,
NVIDIA datasheets), typed as literals: it never calls the package function that computes the
key, so a bug in `scalebook.roofline` cannot make its own key agree with it.
"""
import math

import pytest

from scalebook.exercises import check, get, problems

# Spec figures used below (SI units), as published:
H100_HBM = 3.4e12           # B/s
H200_BF16, H200_HBM = 990e12, 4.8e12
V6E_BF16, V6E_HBM = 920e12, 1.6e12
V5P_BF16, V5P_HBM, V5P_ICI_ONE_WAY = 459e12, 2.8e12, 9e10
B200_FP8, B200_HBM = 4.5e15, 8e12
V5E_BF16, V5E_HBM, V5E_ICI_BIDI = 197e12, 820e9, 9e10
A100_HBM = 2.0e12
H100_BF16, H100_NVLINK_ONE_WAY = 990e12, 450e9
H100_FP32_CUDA_CORES = 66e12  # FLOP/s, CUDA cores in fp32 (the problem states it)


def _projection_us():
    B, D, F = 512, 4096, 14336
    compute = 2 * B * D * F / V6E_BF16
    memory = 2 * (B * D + D * F + B * F) / V6E_HBM
    assert memory > compute  # B = 512 is below the v6e's ~575: memory-bound
    return max(compute, memory) * 1e6


def _overlap_ms():
    compute = 3.0e12 / V5E_BF16
    memory = 12e9 / V5E_HBM
    comm = 0.9e9 / V5E_ICI_BIDI
    return (compute + memory + comm - max(compute, memory, comm)) * 1e3


HAND = {
    "1.1": 13e9 * 2 / H100_HBM * 1e3,                 # 26 GB over 3.4 TB/s, in ms
    "1.2": H200_BF16 / 128 / 1e12,                    # B* = peak / W  =>  W = peak / 128 tokens, TB/s
    "1.3": _projection_us(),
    # 1.4: int8 weights make the intensity 2B = 128 FLOP/B, below 459 / 2.8 = 164: memory-bound
    "1.4": 100 * 2 * 64 / (V5P_BF16 / V5P_HBM),
    "1.5": 72 * B200_FP8 / B200_HBM / 2,              # 2B FLOPs per weight byte: 72 x 562.5 / 2
    "1.6": 2 * V5P_BF16 / 4096 / 1e9,                 # D = 2 peak / W  =>  W = 2 peak / 4096, GB/s
    "1.7": _overlap_ms(),
    "1.8": 3 * 4096 * 8192 * 2 / V6E_HBM * 1e6,       # read a, read b, write a+b; bf16
    "1.9": (2 * 5e8) / (2 * 5e8 * 4) * A100_HBM,      # 0.25 FLOP/B times 2 TB/s
    "1.10": 256 * V5E_BF16 / V5E_HBM,                 # 256 chips x 240 tokens
    # 1.11: 2 FLOPs per 4-byte element read (fp32 squared norm) = 0.5 FLOP/B, x 3.4 TB/s against
    # the CUDA cores' 66 TFLOP/s, in percent
    "1.11": 100 * 0.5 * H100_HBM / H100_FP32_CUDA_CORES,
    # 1.12: 400 FLOP/B below the v6e's 920 / 1.6 = 575: memory-bound at 400 / 575 of peak
    "1.12": 100 * 400 / (V6E_BF16 / V6E_HBM),
    # 1.13: intensity 4096 / 3 = 1365 > 291: compute-bound, 2 n^3 / peak, in us
    "1.13": 2 * 4096 ** 3 / H100_BF16 * 1e6,
    # 1.14: B D F W >= P (B D + D F + B F)  <=>  B >= P D F / (D F W - P (D + F)), rounded up
    "1.14": math.ceil(H100_BF16 * 4096 * 14336 / (4096 * 14336 * H100_HBM - H100_BF16 * (4096 + 14336))),
    # 1.15: (2 B F / W) / (B D F / P) = 2 P / (W D)
    "1.15": 2 * H100_BF16 / (H100_NVLINK_ONE_WAY * 8192),
}

IDS = [p.id for p in problems("1")]


def test_chapter_1_has_at_least_15_problems_each_with_a_hand_derivation():
    assert len(IDS) >= 15
    assert set(IDS) == set(HAND)


@pytest.mark.parametrize("pid", sorted(HAND, key=lambda s: int(s.split(".")[1])))
def test_key_equals_hand_derivation(pid):
    assert get(pid).answer() == pytest.approx(HAND[pid], rel=1e-9)


@pytest.mark.parametrize("pid", sorted(HAND, key=lambda s: int(s.split(".")[1])))
def test_key_is_correct(pid):
    assert check(pid, HAND[pid]).status == "correct"


@pytest.mark.parametrize("pid", sorted(HAND, key=lambda s: int(s.split(".")[1])))
@pytest.mark.parametrize("factor, words", [(2, "factor of 2"), (0.5, "factor of 2"),
                                           (1000, "1000"), (1e-3, "1000"),
                                           (8, "bits vs bytes"), (1 / 8, "bits vs bytes")])
def test_common_slips_are_wrong_with_the_matching_hint(pid, factor, words):
    r = check(pid, HAND[pid] * factor)
    assert r.status == "wrong"
    assert words in r.message, r.message


def test_total_instead_of_per_chip_is_named_for_the_data_parallel_problem():
    r = check("1.10", HAND["1.10"] / 256)
    assert r.status == "wrong" and "per-chip" in r.message


def test_a_string_with_units_is_accepted():
    assert check("1.1", f"{HAND['1.1'] / 1e3:.5f} s").status == "correct"
    assert check("1.9", "500 GFLOP/s").status == "correct"


def test_whole_token_answers_are_checked_as_integers():
    assert check("1.14", 321).status == "correct"
    assert check("1.14", 322).status != "correct"        # one token off is wrong, not "close"


def test_tensor_core_share_gets_the_vector_unit_hint():
    r = check("1.11", HAND["1.11"] * H100_FP32_CUDA_CORES / H100_BF16)
    assert r.status == "wrong" and "CUDA cores" in r.message


def test_problem_1_2_asks_for_more_bandwidth_than_the_h200_has():
    # 990 TFLOP/s over 128 tokens = 7.73 TB/s, above the H200's 4.8 TB/s: its critical batch
    # (990 / 4.8 = 206) is above 128, so a smaller one needs faster HBM.
    assert HAND["1.2"] == pytest.approx(7.734375)
    assert HAND["1.2"] > H200_HBM / 1e12
    assert check("1.2", "7.73 TB/s").status == "correct"


def test_problem_1_6_asks_for_a_faster_link_than_the_v5p_has():
    # 2 x 459 TFLOP/s / 4096 = 224 GB/s one way, above the v5p's 90 GB/s link: at its own link
    # a split over D needs D >= 2 x 459e12 / 9e10 = 10,200, so 4096 needs a faster one.
    assert HAND["1.6"] == pytest.approx(224.12109375)
    assert HAND["1.6"] > V5P_ICI_ONE_WAY / 1e9
