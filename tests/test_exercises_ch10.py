"""Chapter 10's answer keys against hand derivations with literal numbers (not the package)."""
import math

import pytest

from scalebook.exercises import check, get, problems

# Spec figures (the package's spec table): bf16 dense peak; ICI per axis, one direction of a link.
V5E_BF16, V5E_ONE_WAY = 197e12, 45e9  # 90 GB/s both ways
V5P_BF16, V5P_ONE_WAY = 459e12, 90e9  # 180 GB/s both ways
H100_NVLINK = 450e9                   # B/s a GPU sends over NVLink (900 GB/s both directions)
HOP = 1e-6

# jax_training.SMALL: L=2, D=256, 8 query heads, 4 kv heads of 32, gated F=512, V=512, untied.
D, N, K, H, F, V, L = 256, 8, 4, 32, 512, 512, 2
LAYER = 2 * D * N * H + 2 * D * K * H + 3 * D * F + 2 * D
PARAMS = L * LAYER + 2 * V * D + D


def _ag_matmul_overlapped(n, block, send, arrivals):
    return sum(max(send, a * block) for a in arrivals[:-1]) + arrivals[-1] * block


# 10.7: v5e axis of 16, one way, I=16384, J=8192, K=32768
_B7 = 2 * (16384 / 16) * 8192 * (32768 / 16) / V5E_BF16
_S7 = (16384 / 16) * 8192 * 2 / V5E_ONE_WAY
# 10.8: out[T_X, D] = h[T, F_X] @ W[F_X, D] on v5e 16, both ways: T=16384, F=32768, D=8192.
# A device's part of one block of rows: 2 (T/16)(F/16) D FLOPs; a running sum: (T/16) D bf16 values.
# k = 8 rounds to the right, m = 7 to the left: 2 parts to start, 2 per round while both directions
# run (rounds 1..6), 1 in round 7 (the leftward sum ends without a part), 1 in round 8.
_B8 = 2 * (16384 / 16) * (32768 / 16) * 8192 / V5E_BF16
_S8 = (16384 / 16) * 8192 * 2 / V5E_ONE_WAY
# 10.13: v5p axis of 8, both ways, I=J=K=8192: rounds bring 2, 2, 2, 1 blocks after the own one.
_B13 = 2 * (8192 / 8) * 8192 * (8192 / 8) / V5P_BF16
_S13 = (8192 / 8) * 8192 * 2 / V5P_ONE_WAY

HAND = {
    # 10.1: a ReduceScatter ring and an AllGather ring, each N - 1 = 15 permutes (8 right, 7 left).
    "10.1": 2 * 15,
    # 10.2: the fastest ring on the wrapped 16-ring goes both ways and splits the opposite chip's block:
    # 7 steps of a whole V/16 block each way, then half a block each way, over one link direction each:
    # 7.5 (V/16) / W_1 = V (N - 1) / (N W), plus 8 hops of latency (chapter 3's additive form). In us.
    "10.2": (7.5 * (128e6 / 16) / V5E_ONE_WAY + 8 * HOP) * 1e6,
    # 10.3: 8x8 has no wraparound: N - 1 = 7 block-times of bytes either way (both ways, the closing
    # edges share the line's links); both ways takes N/2 = 4 steps instead of 7, each as long as the
    # closing edge's 7 hops: 4 x 7 hops of latency. 200 us = 28 us + 7 (V/8) / 45 GB/s, solved for V. In MB.
    "10.3": (200e-6 - 4 * 7 * HOP) * V5E_ONE_WAY * 8 / 7 / 1e6,
    # 10.4: 8 steps of 16 kB (2.8 us of bandwidth) plus 8 hops of 1 us (chapter 3's additive form). In us.
    "10.4": (8 * (256e3 / 16) / V5E_ONE_WAY + 8 * HOP) * 1e6,
    # 10.5: AllToAll over N = 8 of V = 8192^2 x 2 bytes: each device sends V (N - 1) / N^2. In MB.
    "10.5": 8192 * 8192 * 2 * 7 / 64 / 1e6,
    # 10.6: 2 (I/N) J (K/N) / C >= 2 x (I/N) J x 2 bytes / W_1 (two blocks per step): K/N >= C / (2 W_1)
    # = 2550 columns, so N <= 32768 / 2550 = 12.9: of the rings of 4, 8 and 16, the largest is 8.
    "10.6": max(n for n in (4, 8, 16) if 32768 / n >= V5P_BF16 / (2 * V5P_ONE_WAY)),
    # 10.7: 15 rounds of max(send, block), then the last block. In ms.
    "10.7": (15 * max(_S7, _B7) + _B7) * 1e3,
    "10.8": (7 * max(_S8, 2 * _B8) + max(_S8, _B8) + _B8) * 1e3,
    # 10.9: between steps a device holds weights and Adam moments only (gradients are temporaries of
    # the step): P params x (4 weights + 8 Adam) bytes over 8 devices. In kB.
    "10.9": PARAMS * 12 / 8 / 1e3,
    # 10.10: one layer in fp32, gathered over fsdp, still halved by tp. In MB.
    "10.10": LAYER * 4 / 2 / 1e6,
    # 10.11: ReduceScatter both ways on the wrapped 8-ring, the opposite chip's running sum split in two:
    # 3 whole steps of 1 GB / 8 plus a half step, over one link direction, plus 4 hops. In ms.
    "10.11": (3.5 * (1e9 / 8) / V5P_ONE_WAY + 4 * HOP) * 1e3,
    # 10.12: 7 running sums of (4096 / 8) x 8192 bf16 values. In MB.
    "10.12": 7 * (4096 / 8) * 8192 * 2 / 1e6,
    # 10.13: sequential / overlapped = (4 s + 8 b) / (max(s, b) + 3 max(s, 2 b) + b), s a block's send, b its
    # matmul (b grows with K). For b <= s/2: (4 s + 8 b) / (4 s + b), rising; for s/2 <= b <= s:
    # (4 s + 8 b) / (s + 7 b), falling (8 (s + 7 b) - 7 (4 s + 8 b) = -20 s). The peak, at b = s/2: 8 / 4.5.
    "10.13": (4 + 8 * 0.5) / (4 + 0.5),
    # 10.14: 8 H100s behind NVSwitches, a ring both ways: 4 steps of one hop, but each GPU still sends 7
    # blocks of 256 MB / 8 through its own 450 GB/s. In us.
    "10.14": (7 * (256e6 / 8) / H100_NVLINK + 4 * HOP) * 1e6,
    # 10.15: 16 devices on X; 1.25 x 4096 / 16 = 320 slots per destination of 4096 bf16 values; the
    # AllToAll sends 15 of the 16 blocks. In MB.
    "10.15": 15 * 320 * 4096 * 2 / 1e6,
}


def test_hand_numbers_behind_the_choices():
    assert PARAMS == 1_443_072
    assert 8 * (256e3 / 16) / V5E_ONE_WAY < 8 * HOP  # 10.4 is latency-bound
    assert _S7 > _B7  # 10.7: K/N = 2048 is below the one-way hiding width C / W_1
    assert 2048 < V5E_BF16 / V5E_ONE_WAY
    assert _S8 > 2 * _B8  # 10.8: even two parts per round do not hide a send (F/N = 2048 < C / W)
    assert _S13 > 2 * _B13  # 10.13: communication-bound even both ways (K/N = 1024 < 2550)


def test_every_chapter_10_problem_has_a_hand_derivation():
    assert sorted(p.id for p in problems("10")) == sorted(HAND)
    assert len(HAND) >= 10


@pytest.mark.parametrize("pid", sorted(HAND))
def test_key_equals_hand_derivation(pid):
    assert get(pid).answer() == pytest.approx(HAND[pid], rel=1e-6)


@pytest.mark.parametrize("pid", sorted(HAND))
def test_key_is_correct(pid):
    assert check(pid, HAND[pid]).status == "correct"


@pytest.mark.parametrize("pid, wrong, words", [
    ("10.1", 16, "steps"),
    ("10.1", 15, "two rings"),
    ("10.2", (15 * (128e6 / 16) / V5E_ONE_WAY + 15 * HOP) * 1e6, "one-way"),
    ("10.2", (8 * (128e6 / 16) / V5E_ONE_WAY + 8 * HOP) * 1e6, "whole-block"),
    ("10.3", (200e-6 - 4 * HOP) * V5E_ONE_WAY * 8 / 4 / 1e6, "no wraparound"),  # as a ring: 4 steps of 1 hop
    ("10.3", (200e-6 - 7 * 7 * HOP) * V5E_ONE_WAY * 8 / 7 / 1e6, "one-way ring"),  # 7 steps of 7 hops
    ("10.3", 200e-6 * V5E_ONE_WAY * 8 / 7 / 1e6, "latency"),
    ("10.4", 8 * (256e3 / 16) / V5E_ONE_WAY * 1e6, "bandwidth term"),
    ("10.4", 8 * HOP * 1e6, "max approximation"),
    ("10.5", 8192 * 8192 * 2 * 7 / 8 / 1e6, "AllToAll"),
    ("10.6", 4, "halves"),                                                # the one-way limit
    ("10.6", 16, "below the hiding width"),
    ("10.7", (15 * _S7 + 16 * _B7) * 1e3, "sequential"),
    ("10.7", 16 * _B7 * 1e3, "compute alone"),
    ("10.8", (8 * _S8 + 16 * _B8) * 1e3, "sequential"),
    ("10.9", PARAMS * 16 / 8 / 1e3, "temporaries"),
    ("10.9", PARAMS * 12 / 4 / 1e3, "both mesh axes"),
    ("10.9", PARAMS * 12 / 2 / 1e3, "not only the moments"),
    ("10.10", LAYER * 4 / 1e6, "still cut over tp"),
    ("10.11", 2 * 3.5 * (1e9 / 8) / V5P_ONE_WAY * 1e3, "ReduceScatter ring"),
    ("10.11", (7 * (1e9 / 8) / V5P_ONE_WAY + 7 * HOP) * 1e3, "both ways"),
    ("10.11", (4 * (1e9 / 8) / V5P_ONE_WAY + 4 * HOP) * 1e3, "whole-block"),
    ("10.12", 8 * (4096 / 8) * 8192 * 2 / 1e6, "N - 1 blocks"),
    ("10.13", 1 / HAND["10.13"], "how many times faster"),
    ("10.14", (4 * (256e6 / 8) / H100_NVLINK + 4 * HOP) * 1e6, "share"),
    ("10.15", 16 * 320 * 4096 * 2 / 1e6, "stays home"),
    ("10.15", 15 * 256 * 4096 * 2 / 1e6, "capacity_factor"),
])
def test_slips_get_their_hint(pid, wrong, words):
    r = check(pid, wrong)
    assert r.status == "wrong"
    assert words in r.message, r.message


@pytest.mark.parametrize("pid", sorted(HAND))
def test_unit_slips_are_wrong(pid):
    assert check(pid, HAND[pid] * 1000).status == "wrong"


def test_choice_problems_are_at_least_half():
    choice = {"10.2", "10.3", "10.4", "10.5", "10.7", "10.8", "10.9", "10.11", "10.13", "10.14", "10.15"}
    assert choice <= set(HAND) and len(choice) >= math.ceil(len(HAND) / 2)
