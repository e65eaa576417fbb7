"""Chapter 5's answer keys against hand derivations with literal numbers (not the package)."""
import math

import pytest

from scalebook.exercises import check, get, problems

# Spec figures (the package's spec table): bf16 dense peak, per-chip link bandwidth W.
H100_BF16 = 990e12
H100_NVLINK = 450e9  # per GPU, one way (switched)
H100_IB = 50e9  # per GPU: 400 GB/s of node egress over 8 GPUs
V5P_BF16 = 459e12
V5P_ICI = 180e9  # per axis, both directions, where the ring wraps around
V5P_DCN = 6.25e9  # per chip: 25 GB/s per host of 4 chips
V5E_BF16 = 197e12
V5E_ICI = 90e9  # per axis, both directions (16-long axes wrap)
# NCCL's cost model (NVIDIA/nccl src/graph/tuning.cc, as cited in the package's network data): the usable
# share of an H100's NVLink (SM90_NVLINK_BW 20.6 GB/s of NVLink 4's 25 GB/s per link), and per protocol the
# latency of one step and the share of that bandwidth it reaches (LL, LL128, Simple); InfiniBand at line rate.
H100_NVLINK_SHARE = 20.6 / 25
NVLINK_PROTOCOLS = {"LL": (0.6e-6, 0.5), "LL128": (1.9e-6, 0.92), "Simple": (3.4e-6, 1.0)}
IB_PROTOCOLS = {"LL": (2.7e-6, 0.5), "LL128": (4.0e-6, 0.92), "Simple": (14e-6, 1.0)}


def nccl_seconds(steps, bytes_per_gpu, bandwidth, protocols):
    """Additive time of one collective as NCCL's tuner prices it: the fastest protocol's
    steps x step latency + bytes each GPU sends / (bandwidth x the protocol's share)."""
    return min(steps * lat + bytes_per_gpu / (bandwidth * share) for lat, share in protocols.values())


# 5.8 and 5.9: each GPU holds 8192 tokens and sends each to k = 2 experts, D = 4096 in bf16; 7/8 leaves it.
EP_BYTES = 8192 * 2 * 4096 * 2 * 7 / 8
# 5.13: per layer four AllReduce-equivalents (two forward, two backward), each an AllGather plus a
# ReduceScatter with sequence parallelism (N - 1 = 7 steps each), of V = 8192 tokens x 8192 x 2 bytes.
TP_EACH = nccl_seconds(7, 8192 * 8192 * 2 * 7 / 8, H100_NVLINK * H100_NVLINK_SHARE, NVLINK_PROTOCOLS)

# LLaMA-3 70B (Meta model card): L=80, D=8192, N=64, K=8, H=128, F=28672, V=128256.
LLAMA3_70B_PARAMS = 80 * (2 * 8192 * 8192 + 2 * 8192 * 1024 + 3 * 8192 * 28672 + 2 * 8192) \
    + 2 * 128256 * 8192 + 8192


def _gpt3_xl_tp_bound():
    # GPT-3 XL: D=2048, 24 heads of 128 (NH = 3072), plain MLP F=8192, biases and LayerNorms.
    D, NH, F = 2048, 24 * 128, 8192
    layer = 4 * D * NH + 3 * NH + D + 2 * D * F + F + D + 4 * D
    return 6 * layer * H100_NVLINK / (8 * D * 2 * H100_BF16)


HAND = {
    # 5.1: AllReduce 2 x 4P bytes / W behind a backward of 4 P b / C: b >= 2 C / W.
    "5.1": 2 * H100_BF16 / H100_NVLINK,
    # 5.2: FSDP over both wrapped axes of a 16x16 v5e: W = 2 x 90 GB/s; b >= C / W.
    "5.2": V5E_BF16 / (2 * V5E_ICI),
    # 5.3: in-slice FSDP over 3 axes needs C / (3 W) per chip x 1024 chips; the DCN needs C / W_dcn per
    # slice x 16 slices. The DCN bound is larger.
    "5.3": max(V5P_BF16 / (3 * V5P_ICI) * 16 * 64, V5P_BF16 / V5P_DCN * 16),
    # 5.4: width bound about 4.9; degrees dividing 24 heads: 1, 2, 3, 4, 6, 8 -> 4.
    "5.4": 4,
    # 5.5: bf16 weights and gradients split 8 ways by TP; 12 bytes of Adam state split 8 x 64 ways.
    "5.5": LLAMA3_70B_PARAMS * (2 / 8 + 2 / 8 + 12 / (8 * 64)) / 1e9,
    # 5.6: 7 / (m + 7) <= 0.1 needs m >= 63 microbatches of 256 / m sequences: m = 64, 4 sequences each.
    "5.6": 4,
    # 5.7: 1.75 / (m + 1.75) <= 0.1 needs m >= 15.75: m = 16 microbatches of 16 sequences.
    "5.7": 16,
    # 5.8: one AllToAll step over NVLink (NCCL's usable share of 450 GB/s). In ms.
    "5.8": nccl_seconds(1, EP_BYTES, H100_NVLINK * H100_NVLINK_SHARE, NVLINK_PROTOCOLS) * 1e3,
    # 5.9: the same bytes per GPU over its 50 GB/s InfiniBand share, one step at InfiniBand's latency. In ms.
    "5.9": nccl_seconds(1, EP_BYTES, H100_IB, IB_PROTOCOLS) * 1e3,
    # 5.10: per node 3 x 2P bytes over 400 GB/s against 8 x 6 P b / C: b >= C / (8 x 50 GB/s) per GPU,
    # above the NVLink bound C / 450 GB/s.
    "5.10": max(H100_BF16 / (8 * H100_IB), H100_BF16 / H100_NVLINK),
    # 5.11: FSDP over two axes with TP4: b >= C / (2 W x 4) = 318.75 -> N <= 2^21 / 318.75 = 6579 -> 4096;
    # but 512 sequences allow at most 512 FSDP replicas of 4 chips: 2048.
    "5.11": 2048,
    # 5.12: 16 sequences of 512 tokens per chip; C / (3 W) = 850 tokens per microbatch per chip:
    # 8 microbatches of 1024 tokens pass, 16 of 512 do not.
    "5.12": 8,
    # 5.13: 80 layers x 4 AllReduce-equivalents x (an AllGather + a ReduceScatter). In ms.
    "5.13": 80 * 4 * 2 * TP_EACH * 1e3,
    # 5.14: 16 bytes/param over 8 GPUs is 141 GB > 80 GB; over 16 it is 70.6 GB, and with full remat
    # and small microbatches the rest fits.
    "5.14": 16,
    # 5.15: the original's X_opt = sqrt(B N M_X / (F M_Y)) with B = 2^21, N = 8192, F = 28,672 (LLaMA-3 70B),
    # M_X = 2, M_Y = 1: X = 1,094.7; the TP degree is N / X = 7.48.
    "5.15": 8192 / (2**21 * 8192 * 2 / 28672) ** 0.5,
    # 5.16: the AllReduce (2 x 2 P bytes over 3 x 180 GB/s) hides behind the last microbatch's backward
    # (4 P b / C) when b >= C / (3 W) = 850 tokens: 2 sequences of 512 (1,024) pass, 1 (512) does not:
    # 16 / 2 = 8 microbatches.
    "5.16": 8,
    # 5.17: 6 x 405e9 x 15e12 FLOPs over 90 days of one H100 at 40% of 990 TFLOP/s, rounded up.
    "5.17": math.ceil(6 * 405e9 * 15e12 / (H100_BF16 * 0.40 * 90 * 86400)),
}


def test_hand_numbers_behind_the_integer_answers():
    assert 16 * LLAMA3_70B_PARAMS / 8 > 80e9 > 16 * LLAMA3_70B_PARAMS / 16
    assert 4 < _gpt3_xl_tp_bound() < 6
    assert 7 / (64 + 7) <= 0.1 < 7 / (32 + 7)
    assert 1.75 / (16 + 1.75) <= 0.1 < 1.75 / (8 + 1.75)
    assert 512 < V5P_BF16 / (3 * V5P_ICI) < 1024
    assert 2 ** 21 / (V5P_BF16 / (8 * V5P_ICI)) >= 4096 and 4096 // 4 > 512


def test_new_problems_hand_numbers():
    assert V5P_BF16 / (3 * V5P_ICI) == pytest.approx(850)
    assert 512 < 850 <= 1024
    assert HAND["5.17"] == 11838
    assert HAND["5.17"] / math.ceil(16 * 405e9 / 80e9) > 100  # far above the memory floor of 81 GPUs


def test_collective_keys_pick_the_protocol_nccl_would():
    # Large arrays: Simple wins on both networks (all of the bandwidth, the longest step).
    big = 8192 * 2 * 4096 * 2 * 7 / 8
    assert nccl_seconds(1, big, H100_IB, IB_PROTOCOLS) == pytest.approx(14e-6 + big / H100_IB)
    # The additive time lies above the bandwidth-only time of the old convention, by the latency.
    assert HAND["5.13"] > 80 * 4 * 2 * (8192 * 8192 * 2) * 7 / 8 / H100_NVLINK * 1e3


def test_every_chapter_5_problem_has_a_hand_derivation():
    assert sorted(p.id for p in problems("5")) == sorted(HAND)


@pytest.mark.parametrize("pid", sorted(HAND))
def test_key_equals_hand_derivation(pid):
    assert get(pid).answer() == pytest.approx(HAND[pid], rel=1e-6)


@pytest.mark.parametrize("pid", sorted(HAND))
def test_key_is_correct(pid):
    assert check(pid, HAND[pid]).status == "correct"


@pytest.mark.parametrize("pid, factor, words", [
    ("5.1", 2, "fp32"), ("5.2", 2, "both axes"), ("5.3", 870_400 / 1_175_040, "DCN bound"),
    ("5.5", 141.1 / 36.93, "without ZeRO-1"), ("5.6", 2, "(p - 1)"), ("5.7", 1 / 4, "without interleaving"),
    ("5.9", 1 / 9, "InfiniBand"), ("5.10", 2200 / 2475, "NVLink bound"), ("5.11", 2, "sequences"),
    ("5.12", 2, "regathers"), ("5.13", 1 / 2, "twice an AllGather"), ("5.14", 1 / 2, "cannot hold"),
])
def test_slips_get_their_hint(pid, factor, words):
    r = check(pid, HAND[pid] * factor)
    assert r.status == "wrong"
    assert words in r.message


@pytest.mark.parametrize("pid", sorted(HAND))
def test_unit_slips_are_wrong(pid):
    assert check(pid, HAND[pid] * 1000).status == "wrong"
