"""Chapter 2 problem keys against hand derivations written with literal numbers."""
import math

import pytest

from scalebook.exercises import check, get

# id -> (hand-derived key in the problem's unit, how it was derived)
HAND = {
    # 27e9 params x 2 B (bf16) / 2.8e12 B/s (v5p HBM), in ms
    "2.1": 27e9 * 2 / 2.8e12 * 1e3,
    # 128 x 128 cells x 2 FLOPs x 1.5e9 cycles/s, in TFLOP/s
    # 275 TFLOP/s over 2 cores x 4 MXUs x 2 x 128 x 128 FLOPs per cycle, in GHz
    "2.2": 275e12 / (2 * 4 * 2 * 128 * 128) / 1e9,
    # 320 -> 512 and 640 -> 768 on a 256-wide array
    "2.3": (320 * 640) / (512 * 768),
    # 8x16 v5e: no wraparound on the 8 axis (7 hops), wraparound on the 16 axis (8 hops); 1 us each
    "2.4": (7 + 8) * 1.0,
    # 3.6 GB over one v5e link at 45 GB/s one way, in ms
    "2.5": 3.6e9 / 45e9 * 1e3,
    # 60 GB per chip over its own 16 GB/s PCIe link, in s
    "2.6": 60e9 / 16e9,
    # 40 GB spread over 512 v5p chips, each at 25 GB/s / 4 chips per host = 6.25 GB/s, in ms
    "2.7": 40e9 / 512 / 6.25e9 * 1e3,
    # 13.5 GB at 450 GB/s NVLink egress one way, in ms
    "2.8": 13.5e9 / 450e9 * 1e3,
    # 13.5 GB at 400 Gb/s = 50 GB/s per GPU NIC, in ms
    "2.9": 13.5e9 / 50e9 * 1e3,
    # 405e9 x 2 B = 810 GB over 16 GB chips -> 50.6 -> 51
    "2.10": 51,
    # 1.8e12 x 1 B (fp8) / 72 GPUs / 8e12 B/s, in ms
    "2.11": 1.8e12 / 72 / 8e12 * 1e3,
    # 148 SMs x 4 tensor cores x 2048 FLOPs/cycle x 1.86e9 Hz, in TFLOP/s
    "2.12": 148 * 4 * 2048 * 1.86e9 / 1e12,
    # v5p: 2 TensorCores (megacore) x 4 MXUs
    "2.13": 8,
    # v5e: compute 2e10 / 197e12 = 101.5 us; VMEM 2e9 / (22 x 820e9) = 110.9 us; HBM 5e7 / 820e9 = 61 us
    "2.14": 2e9 / (22 * 820e9) * 1e6,
    # 40 GB over a v5p host's 4 chips, each on its own 16 GB/s PCIe link, in s
    "2.15": 40e9 / 4 / 16e9,
    # 16x16 v5e pod with wraparound on both axes: (0, 0) -> (15, 15) is one hop back on each axis
    "2.16": 2,
    # the reverse of 2.14: VMEM time <= compute time when bytes <= 2e10 x (22 x 820e9) / 197e12 (v5e), in GB
    "2.17": 2e10 * 22 * 820e9 / 197e12 / 1e9,
    # 27e9 x 2 B: one v5p reads 54 GB at 2.8e12 B/s; four v5e read 13.5 GB each at 820e9 B/s at once
    # ratio = (54e9 / 2.8e12) / (13.5e9 / 820e9) = 4 x 820e9 / 2.8e12
    "2.18": (54e9 / 2.8e12) / (13.5e9 / 820e9),
    # 16 v5e chips: time allows 0.01 s x 16 x 820e9 B/s / 2 B = 65.6e9 parameters; memory 16 x 16e9 / 2 = 128e9
    "2.19": min(0.01 * 16 * 820e9 / 2, 16 * 16e9 / 2) / 1e9,
    # 40 GB in 40 ms at 25 GB/s per v5p host / 4 chips = 6.25 GB/s per chip: 40e9 / (0.04 x 6.25e9) = 160 chips
    "2.20": 160,
}

IDS = sorted(HAND, key=lambda s: int(s.split(".")[1]))


def test_integer_keys_are_integers():
    for pid in ("2.13", "2.16", "2.20"):
        p = get(pid)
        assert isinstance(p.solve(**p.inputs), int)


def test_every_chapter_2_problem_has_a_hand_derivation():
    from scalebook.exercises import problems

    assert [p.id for p in problems("2")] == IDS


@pytest.mark.parametrize("pid", IDS)
def test_key_equals_hand_derivation(pid):
    assert math.isclose(get(pid).answer(), HAND[pid], rel_tol=1e-9)


@pytest.mark.parametrize("pid", IDS)
def test_key_is_graded_correct(pid, monkeypatch):
    monkeypatch.delenv("SCALEBOOK_STRICT", raising=False)
    assert check(pid, HAND[pid]).status == "correct"


@pytest.mark.parametrize("pid", IDS)
def test_key_with_its_unit_as_a_string_is_correct(pid, monkeypatch):
    monkeypatch.delenv("SCALEBOOK_STRICT", raising=False)
    p = get(pid)
    if not p.unit:
        pytest.skip("dimensionless answer")
    assert check(pid, f"{HAND[pid]} {p.unit}").status == "correct"


def _expected_hint(pid, factor):
    p = get(pid)
    if factor in p.slips:
        return p.slips[factor].split(":")[0]
    if p.chips == factor:
        return "per chip vs total"
    return {2: "factor of 2", 1000: "factor of 1000", 8: "bits vs bytes"}[factor]


@pytest.mark.parametrize("factor", [2, 1000, 8])
@pytest.mark.parametrize("pid", IDS)
def test_common_slips_are_wrong_with_the_matching_hint(pid, factor, monkeypatch):
    monkeypatch.delenv("SCALEBOOK_STRICT", raising=False)
    for slip in (HAND[pid] * factor, HAND[pid] / factor):
        r = check(pid, slip)
        assert r.status == "wrong", (pid, factor, r)
        assert _expected_hint(pid, factor) in r.message, (pid, factor, r.message)


def test_custom_slip_hints_name_the_bidirectional_convention(monkeypatch):
    monkeypatch.delenv("SCALEBOOK_STRICT", raising=False)
    assert "both directions" in check("2.8", HAND["2.8"] / 2).message
    assert "one-way" in check("2.5", HAND["2.5"] / 2).message


def test_per_chip_vs_total_slip_is_named(monkeypatch):
    monkeypatch.delenv("SCALEBOOK_STRICT", raising=False)
    assert "total instead of the per-chip" in check("2.6", HAND["2.6"] * 4).message
    assert "per-chip value instead of the total" in check("2.7", HAND["2.7"] / 512).message
    assert "per-chip value instead of the total" in check("2.11", HAND["2.11"] / 72).message


def test_strict_mode_raises_on_a_wrong_answer(monkeypatch):
    from scalebook.exercises import AnswerError

    monkeypatch.setenv("SCALEBOOK_STRICT", "1")
    with pytest.raises(AnswerError):
        check("2.1", HAND["2.1"] * 2)
    assert check("2.1", HAND["2.1"]).status == "correct"
