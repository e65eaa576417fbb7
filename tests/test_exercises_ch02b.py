"""Chapter 2b problem keys against hand derivations written with literal numbers."""
import math

import pytest

from scalebook.exercises import check, get, problems

HAND = {
    # 2 x 8192^2 x 65536 FLOPs at the dense half of the 1.98 PFLOP/s sparse figure (990 TFLOP/s), in ms
    "2g.1": 2 * 8192 * 8192 * 65536 / 990e12 * 1e3,
    # 72 GPUs in the rack x 148 SMs x 4 tensor cores
    "2g.2": 72 * 148 * 4,
    # compute 1e12 / 990e12 = 1.01 ms; HBM 2e9 / 3.4e12 = 0.59 ms; SMEM 5e10 / (132 x 128 x 1.98e9) = 1.49 ms
    "2g.3": 5e10 / (132 * 128 * 1.98e9) * 1e3,
    # fp8: 1 byte x 4.5e15 / 8e12 = 562.5 -> 563
    "2g.4": 563,
    # 810 GB over 8 links of 64 GB/s one way, in s
    "2g.5": 810e9 / 8 / 64e9,
    # step: 6 x 8e9 x 16384 FLOPs at 2.5 PFLOP/s = 0.315 s; NVLink-C2C moves 225 GB/s each way meanwhile, in GB
    "2g.6": 6 * 8e9 * 16384 / 2.5e15 * 225e9 / 1e9,
    # rack bisection 36 x 900 GB/s = 32.4 TB/s; n H100 nodes give n / 2 x 400 GB/s -> n = 162
    "2g.7": 162,
    # full bisection 256 / 2 nodes x 400 GB/s = 51.2 TB/s; 51.2 / 40 = 1.28 (about 5:4)
    "2g.8": 128 * 400e9 / 40e12,
    # 4 GB over 8 B200s: ring 2 x 4e9 x 7/8 / 900e9 minus SHARP 4e9 / 900e9, in ms
    "2g.9": (2 * 4e9 * 7 / 8 - 4e9) / 900e9 * 1e3,
    # per byte of gradient: RS and AG in the node 7/8 / 450e9 each, across 32 nodes 2 x (1/8) x 31/32 / 50e9;
    # 0.1 s of it at 2 bytes per parameter, in parameters
    "2g.10": 0.1 / (2 * (2 * 7 / 8 / 450e9 + 2 * (1 / 8) * 31 / 32 / 50e9)),
    # 512 B200s, 1 GB. Hierarchical, back to back: 2 x 1e9 x 7/8 / 900e9 + 2 x (1e9/8) x 63/64 / 50e9;
    # NCCL's flat rings, one per NIC, each carrying an eighth: 2 x (1e9/8) x 511/512 / 50e9
    "2g.11": (2 * 1e9 * 7 / 8 / 900e9 + 2 * 1e9 / 8 * 63 / 64 / 50e9) / (2 * 1e9 / 8 * 511 / 512 / 50e9),
    # 2 GB over 32 H100s: 2e9 x 24 / 1024 through 50 GB/s, in us
    "2g.12": 2e9 * 24 / 1024 / 50e9 * 1e6,
    # two stages: NVLink in the rack, 2.5e15 / 900e9 = 2778, and InfiniBand, 2.5e15 / (72 x 50 GB/s) = 694;
    # the slower (NVLink) stage sets the bound
    "2g.13": max(2.5e15 / 900e9, 2.5e15 / (72 * 50e9)),
    # forward pass: 24 D^2 / (tp C) >= 2 AllReduces x 2 D b / W -> tp <= 6 D W / (b C)
    # = 6 x 4096 x 450e9 / (2 x 990e12) = 5.6 -> 4
    "2g.14": 4,
    # forward pass: 6 k D F_e / C >= 2 AllToAlls x k D b / W -> F_e >= (b/3) C / W = 2/3 x 2.3e15 / 50e9
    "2g.15": 2 / 3 * 2.3e15 / 50e9,
}

IDS = sorted(HAND, key=lambda s: int(s.split(".")[1]))
INTEGER = {"2g.2", "2g.4", "2g.7", "2g.14"}


def test_every_chapter_2b_problem_has_a_hand_derivation():
    assert [p.id for p in problems("2g")] == IDS


@pytest.mark.parametrize("pid", IDS)
def test_key_equals_hand_derivation(pid):
    assert math.isclose(get(pid).answer(), HAND[pid], rel_tol=1e-9)


@pytest.mark.parametrize("pid", sorted(INTEGER))
def test_integer_keys_are_integers(pid):
    p = get(pid)
    assert isinstance(p.solve(**p.inputs), int)


@pytest.mark.parametrize("pid", IDS)
def test_key_is_graded_correct(pid, monkeypatch):
    monkeypatch.delenv("SCALEBOOK_STRICT", raising=False)
    assert check(pid, HAND[pid]).status == "correct"


@pytest.mark.parametrize("pid", IDS)
def test_factor_of_two_slip_is_wrong(pid, monkeypatch):
    monkeypatch.delenv("SCALEBOOK_STRICT", raising=False)
    for slip in (HAND[pid] * 2, HAND[pid] / 2):
        assert check(pid, slip).status == "wrong"


def test_sparse_slip_names_the_datasheet(monkeypatch):
    monkeypatch.delenv("SCALEBOOK_STRICT", raising=False)
    assert "sparsity" in check("2g.1", HAND["2g.1"] / 2).message


def test_problems_sort_with_the_page_inside_chapter_2():
    ids = [p.id for p in problems()]
    assert ids.index("2.16") < ids.index("2g.1") < ids.index("3.1")


def test_single_ring_slip_is_named(monkeypatch):
    # the old comparison: the single ring's time over the hierarchical time, 5.81 on these inputs
    monkeypatch.delenv("SCALEBOOK_STRICT", raising=False)
    single = 2 * 1e9 * 511 / 512 / 50e9 / (2 * 1e9 * 7 / 8 / 900e9 + 2 * 1e9 / 8 * 63 / 64 / 50e9)
    assert "one ring per NIC" in check("2g.11", single).message


def test_averaged_tp_rule_slip_is_named(monkeypatch):
    monkeypatch.delenv("SCALEBOOK_STRICT", raising=False)
    assert "forward" in check("2g.14", 8).message


def test_averaged_ep_rule_slip_is_named(monkeypatch):
    monkeypatch.delenv("SCALEBOOK_STRICT", raising=False)
    assert "forward" in check("2g.15", 4 / 9 * 2.3e15 / 50e9).message
