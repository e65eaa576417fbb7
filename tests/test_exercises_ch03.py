"""Chapter 3 problem keys against hand derivations written with literal numbers."""
import pytest

from scalebook.exercises import check, get, problems

# id -> hand-derived key in the problem's unit. v5e: 45 GB/s one way per ICI link, 90 GB/s both
# ways (the W of a ring with a wraparound), 197 TFLOP/s bf16; H100: 450 GB/s NVLink egress.
HAND = {
    # 8192 x 16384 x 2 B gathered over a 16-long wraparound axis: V / 90 GB/s, in ms
    "3.1": 8192 * 16384 * 2 / 90e9 * 1e3,
    # 0.5e9 x 2 B AllReduced: 2 V / 90 GB/s, in ms
    "3.2": 2 * 0.5e9 * 2 / 90e9 * 1e3,
    # 16 // 2 = 8 hops x 1 us x 90 GB/s, in kB
    "3.3": 8 * 1e-6 * 90e9 / 1e3,
    # D* = 2 N peak / W = 2 x 16 x 197e12 / 90e9
    "3.4": 2 * 16 * 197e12 / 90e9,
    # 2 GB / (4 x 90 GB/s), in ms
    "3.5": 2e9 / (4 * 90e9) * 1e3,
    # 4096 x 16384 x 2 B over two wraparound axes: V / (90 + 90 GB/s), in us
    "3.6": 4096 * 16384 * 2 / 180e9 * 1e6,
    # 2 x 1.4 GB x 7/8 / 450 GB/s, in ms
    "3.7": 2 * 0.7e9 * 2 * 7 / 8 / 450e9 * 1e3,
    # 2048 x 1024 x 4 B x 3/4, in MB
    "3.8": 2048 * 1024 * 4 * 3 / 4 / 1e6,
    # 8-long axis of an 8x16 v5e has no wraparound: V / 45 GB/s, in ms
    "3.9": 8192 * 16384 * 2 / 45e9 * 1e3,
}

IDS = sorted(HAND, key=lambda s: int(s.split(".")[1]))

# Expected words in the hint for an answer 2x, 1000x and 8x the key.
HINT_X2 = {"3.2": "ReduceScatter", "3.4": "2 FLOPs", "3.5": "each shard", "3.6": "two axes",
           "3.7": "twice", "3.9": "wraparound"}
HINT_X8 = {"3.7": "per chip vs total", "3.9": "per chip vs total"}


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
    assert "(N - 1)/N" in check("3.8", HAND["3.8"] * 4 / 3).message
    assert "(N - 1)/N" in check("3.7", HAND["3.7"] * 8 / 7).message
    assert "total" in check("3.1", 16 * HAND["3.1"]).message


def test_answers_with_units_are_parsed():
    assert check("3.1", f"{HAND['3.1'] * 1e3} us").status == "correct"
    assert check("3.3", f"{HAND['3.3'] / 1e3} MB").status == "correct"
