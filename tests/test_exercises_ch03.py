"""Chapter 3 problem keys against hand derivations written with literal numbers."""
import pytest

from scalebook.exercises import check, get, problems

# id -> hand-derived key in the problem's unit. v5e: 45 GB/s one way per ICI link, 90 GB/s both
# ways (the W of a ring with a wraparound), 197 TFLOP/s bf16, 1 us per ICI hop; H100: 450 GB/s NVLink
# egress, of which NCCL moves 20.6 of every 25 GB/s (0.824), and 3.4 us per NVLink ring step (NCCL
# 2.30.7). Times are the additive form: hops x latency + bytes / bandwidth.
HAND = {
    # 8192 x 16384 x 2 B gathered over a 16-long wraparound axis: V (15/16) / 90 GB/s, in ms
    "3.1": (8 * 1e-6 + 8192 * 16384 * 2 * 15 / 16 / 90e9) * 1e3,  # 16 // 2 = 8 hops
    # 0.5e9 x 2 B AllReduced over 16: 2 V (15/16) / 90 GB/s, in ms
    # 3 GB over both axes of the pod: 2 V (255/256) / (2 x 90 GB/s), plus 16 hops each for RS and AG
    "3.2": (32 * 1e-6 + 2 * 1.5e9 * 2 * 255 / 256 / (2 * 90e9)) * 1e3,
    # axis of 8 without a wraparound: 7 hops x 1 us = V (7/8) / 45 GB/s (one way), in kB
    "3.3": 7 * 1e-6 * 45e9 * 8 / 7 / 1e3,
    # 2BDF / (N C) = 2 (2BF) (N - 1) / (N W)  ->  W = 2 (N - 1) C / D = 2 x 15 x 197e12 / 8192, in GB/s
    "3.4": 2 * 15 * 197e12 / 8192 / 1e9,
    # 2 GB / (4 x 90 GB/s), in ms (16 is even: exactly a quarter crosses the cut)
    # a line of 8: the 4 x 4 pairs across its middle send V/64 each through one link one way, 45 GB/s;
    # 7 hops
    "3.5": (7 * 1e-6 + 4 * 4 * 3e9 / 64 / 45e9) * 1e3,
    # 4096 x 16384 x 2 B over two wraparound axes of 256 chips: V (255/256) / (90 + 90 GB/s), in us
    "3.6": (16 * 1e-6 + 4096 * 16384 * 2 * 255 / 256 / 180e9) * 1e6,  # 8 + 8 hops
    # 2 (N - 1) = 14 ring steps of 3.4 us + 2 x 1.4 GB x 7/8 / (0.824 x 450 GB/s), in ms
    "3.7": (14 * 3.4e-6 + 2 * 0.7e9 * 2 * 7 / 8 / (0.824 * 450e9)) * 1e3,
    # 2048 x 1024 x 4 B x 3/4, in MB
    "3.8": 2048 * 1024 * 4 * 3 / 4 / 1e6,
    # 3.1's gather on the 16-ring (8 hops + V (15/16) / 90 GB/s) against the line of 8 of an 8x16 (no
    # wraparound: 7 hops + V (7/8) / W_1); equal at W_1 = V (7/8) / (ring time - 7 us), in GB/s
    "3.9": 8192 * 16384 * 2 * 7 / 8 / ((8e-6 + 8192 * 16384 * 2 * 15 / 16 / 90e9) - 7e-6) / 1e9,
    # W[D_XZ, F]: D / (4 x 2) rows, all of F, 2 bytes, in MB
    "3.10": 8192 / 8 * 28672 * 2 / 1e6,
    # X: 13 apart or 3 the other way round; Y: 9 apart or 7 the other way: 3 + 7
    "3.11": 3 + 7,
    # plain over X: 8 hops x 1 us + V (15/16) / 90 GB/s; over X and Y: 16 hops + V (255/256) / 180 GB/s.
    # Equal at V = 8 us / (15/16 / 90e9 - 255/256 / 180e9) = 1.64 MB
    "3.12": 8e-6 / (15 / 16 / 90e9 - 255 / 256 / 180e9) / 1e6,
    # dense 256 MB / (4 x 90 GB/s) = 711 us; k of 15 destinations carry k/15 of it, plus 8 hops of 1 us:
    # 8 + 47.4 k <= 250 us  ->  k <= 5.1, so 5 destinations
    "3.13": int((250e-6 - 8e-6) / (256e6 / (4 * 90e9) / 15)),
    # option C: local matmul 256 x 2048 x 8192 at its roofline (compute 2 x 256 x 2048 x 8192 / 197e12;
    # HBM (256 x 2048 + 2048 x 8192 + 256 x 8192) x 2 B / 820e9 is larger), then ReduceScatter over X (no
    # wraparound) of Out's partial [256, 8192] bf16: 3 hops x 1 us + V (3/4) / 45 GB/s
    "3.14": ((256 * 2048 + 2048 * 8192 + 256 * 8192) * 2 / 820e9 + 3e-6 + 256 * 8192 * 2 * 3 / 4 / 45e9) * 1e6,
    # the ReduceScatter of the weight gradient, V = 8192 x 32768 x 2 B, over 16 with a wraparound, in ms
    "3.15": (8 * 1e-6 + 8192 * 32768 * 2 * 15 / 16 / 90e9) * 1e3,  # 8 hops
    # C's block [512/4, 640] fp32 = 327.7 kB is smaller than A's gathered block [128, 1024] = 524 kB, so XLA
    # reduces O: AllReduce over Y (N = 2): 2 V (1/2) = V, in kB
    "3.16": 128 * 640 * 4 / 1e3,
    # weights over X only: 2 x 4096 x 16384 x 2 B / 4 = 67 MB > 50 MB; over XY 33.5 MB fits. The first matmul
    # is free (case 1); the second ReduceScatters Out[B, 4096] bf16 over X and Y (4x2, no wraparound:
    # 45 + 45 GB/s) with N = 8, and 3 + 1 hops of 1 us: 4 us + B x 4096 x 2 x 7/8 / 90 GB/s <= 100 us gives
    # B <= 1205.4; the largest multiple of 8 is 1200
    "3.17": 8 * int((100e-6 - 4e-6) * 90e9 / (4096 * 2 * 7 / 8) / 8),
    # AllGather of W (V = D F 2) and ReduceScatter of Out (V = B F 2) over the same axes: the same hops,
    # so the same latency, and equal bytes at B = D
    "3.18": 8192,
    # 3.1 reversed: 8 hops x 1 us + V (15/16) / 90 GB/s = 100 us on the wraparound axis of 16, so
    # V = 92 us x 90 GB/s x 16/15, in MB
    "3.19": 92e-6 * 90e9 * 16 / 15 / 1e6,
    # 1e9 x 2 B of gradients. X (8, a line): 7 + 7 hops + 2 V (7/8) / 45 GB/s = 77.8 ms; Y (16, a ring):
    # 8 + 8 hops + 2 V (15/16) / 90 GB/s = 41.7 ms; the longer axis wins, in ms
    "3.20": min(14e-6 + 2 * 2e9 * 7 / 8 / 45e9, 16e-6 + 2 * 2e9 * 15 / 16 / 90e9) * 1e3,
}

IDS = sorted(HAND, key=lambda s: int(s.split(".")[1]))

# Expected words in the hint for an answer 2x, 1000x and 8x the key.
HINT_X2 = {"3.2": "ReduceScatter", "3.12": "hops double", "3.4": "2 FLOPs", "3.5": "wraparound", "3.6": "two axes",
           "3.7": "twice", "3.9": "one direction", "3.10": "Y is not named", "3.15": "transpose",
           "3.17": "ReduceScatter onto the batch"}
HINT_X8 = {"3.7": "per chip vs total"}


def test_every_chapter_3_problem_has_a_hand_derivation():
    assert sorted(p.id for p in problems("3")) == sorted(HAND)


@pytest.mark.parametrize("pid", IDS)
def test_key_matches_hand_derivation(pid):
    assert get(pid).answer() == pytest.approx(HAND[pid], rel=1e-6)


@pytest.mark.parametrize("pid", IDS)
def test_key_is_correct(pid):
    assert check(pid, HAND[pid]).status == "correct"


@pytest.mark.parametrize("pid", IDS)
def test_factor_two_slip(pid):
    r = check(pid, 2 * HAND[pid])
    assert r.status == "wrong"
    assert HINT_X2.get(pid, "factor of 2") in r.message


@pytest.mark.parametrize("pid", IDS)
def test_factor_thousand_slip(pid):
    r = check(pid, 1000 * HAND[pid])
    assert r.status == "wrong"
    assert "1000" in r.message


@pytest.mark.parametrize("pid", IDS)
def test_factor_eight_slip(pid):
    r = check(pid, 8 * HAND[pid])
    assert r.status == "wrong"
    assert HINT_X8.get(pid, "bits vs bytes") in r.message


def test_problem_specific_slips():
    assert "quarter" in check("3.5", 4 * HAND["3.5"]).message
    assert "middle" in check("3.5", HAND["3.5"] / 4).message
    # 3.4 by the large-N rule: 2 N C / D = 2 x 16 x 197e12 / 8192
    assert "large-N" in check("3.4", 2 * 16 * 197e12 / 8192 / 1e9).message
    assert "(N - 1)/N" in check("3.8", HAND["3.8"] * 4 / 3).message
    assert "(N - 1)/N" in check("3.7", HAND["3.7"] * 8 / 7).message
    assert "total" in check("3.1", 16 * HAND["3.1"]).message
    # 3.9 with both directions counted on the line: half the one-way figure
    assert "one direction" in check("3.9", HAND["3.9"] / 2).message
    # 3.9 by the large-N rule: the line's W_1 equals the ring's W, 90 GB/s
    assert "large-N" in check("3.9", 90).message
    assert "round down" in check("3.13", HAND["3.13"] + 1).message
    assert "reduces O" in check("3.16", 128 * 1024 * 4 / 2 / 1e3).message
    # as a ring: 4 hops x 1 us x 90 GB/s x 8/7
    assert "no wraparound" in check("3.3", 4 * 1e-6 * 90e9 * 8 / 7 / 1e3).message
    # 3.19 without the hops' latency: 100 us x 90 GB/s x 16/15
    assert "latency comes off" in check("3.19", 100e-6 * 90e9 * 16 / 15 / 1e6).message
    # 3.20 on the axis of 8: 7 + 7 hops + 2 x 2 GB x 7/8 / 45 GB/s
    assert "axis of 8" in check("3.20", (14e-6 + 2 * 2e9 * 7 / 8 / 45e9) * 1e3).message


def test_the_fastest_layout_is_the_reduce_scatter():
    from scalebook import sharding
    from scalebook.exercises.bank.ch03_sharding import MIN_LATENCY_OPTIONS

    times = [sharding.plan(o, mesh={"X": 4, "Y": 2}, dims={"B": 256, "D": 8192, "F": 16384}, chip="tpu-v5e").seconds
             for o in MIN_LATENCY_OPTIONS]
    assert min(times) == times[2] and sorted(times)[1] > 1.1 * times[2]  # a clear choice


def test_the_longer_axis_reduces_faster():
    # 3.20's point: the 16-chip axis wraps around, the 8-chip one does not, so the longer axis is faster
    from scalebook import collectives, topology

    t = topology.slice("tpu-v5e", "8x16")
    x, y = (collectives.all_reduce(t, axes=a, bytes_=2e9).seconds for a in "XY")
    assert t.axis("X").size == 8 and t.axis("Y").size == 16 and y < x


def test_the_sparse_alltoall_key_is_a_whole_count():
    p = get("3.13")
    assert isinstance(p.solve(**p.inputs), int)


def test_a_budget_below_the_latency_is_refused():
    import pytest as _pytest

    p = get("3.19")
    with _pytest.raises(Exception, match="latency"):
        p.solve(**{**p.inputs, "seconds": 5e-6})


def test_answers_with_units_are_parsed():
    assert check("3.1", f"{HAND['3.1'] * 1e3} us").status == "correct"
    assert check("3.3", f"{HAND['3.3'] / 1e3} MB").status == "correct"
