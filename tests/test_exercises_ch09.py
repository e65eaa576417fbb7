"""Chapter 9's answer keys against hand derivations with literal numbers (not the package)."""
import pytest

from scalebook.exercises import check, get

F32, BF16 = 4, 2
V5E_BF16 = 197e12   # FLOP/s, the spec table's bf16 peak of a TPU v5e
V5E_HBM = 820e9     # B/s
V5E_AXIS_8 = 45e9   # B/s: W of the 8-chip v5e line of topology.for_mesh (chapter 3), one way: no wraparound


def test_the_v5e_figures_used_below_are_the_packages():
    import scalebook
    from scalebook import topology

    v5e = scalebook.chip("tpu-v5e")
    assert (v5e.peak_flops_per_s("bf16"), v5e.hbm_bytes_per_s) == (V5E_BF16, V5E_HBM)
    assert topology.for_mesh("tpu-v5e", {"X": 8}).axis("X").bytes_per_s == V5E_AXIS_8


HAND = {
    # 9.1: result f32[512,4,64] = 512*4*64*4 B; [2,4]<=[4,2]T(1,0) is 2 groups of 4 (fsdp); V * 3/4, in kB.
    "9.1": 512 * 4 * 64 * F32 * 3 / 4 / 1e3,
    # 9.2: f32[4,64,256]; [4,2]<=[8] is 4 groups of 2 neighbours (tp); 2 V (2 - 1) / 2 = V, in kB.
    "9.2": 4 * 64 * 256 * F32 / 1e3,
    # 9.3: a v5e's 16 GB of HBM minus what stays resident (arguments + outputs - aliased), in GB.
    "9.3": 16 - (3.52 + 3.49 - 3.48),
    # 9.4: collective ms per device (12+20, 10+22, 4+16, 17+16) over 4 devices x a 72 ms step.
    "9.4": 100 * (32 + 32 + 20 + 33) / (4 * 72),
    # 9.5: each device finishes its compute at (first op's start) + matmul + fusion:
    # 0+30+8, 0+34+6, 2+42+8, 0+28+5 ms; the step ends with the last (device 2 starts 2 ms late).
    "9.5": max(0 + 38, 0 + 40, 2 + 50, 0 + 33),
    # 9.6: each device sends 58,720,256 B = 4096 x F x 2 B x 7/8 of h[4096, F] bf16 over 8: F = 8192.
    "9.6": 58_720_256 / (4096 * BF16 * 7 / 8),
    # 9.7: AllGather V (N - 1) / (N W) + (N - 1) hops x 1 us with N = 8 against 2 (4096 / 8) 8192 2048 / peak.
    "9.7": (4096 * 8192 * BF16 * 7 / 8 / V5E_AXIS_8 + 7 * 1e-6) / (2 * 512 * 8192 * 2048 / V5E_BF16),
    # 9.8: max(1.1e10 / peak, 2.6e8 / HBM) in us: memory-bound.
    "9.8": max(1.1e10 / V5E_BF16, 2.6e8 / V5E_HBM) * 1e6,
    # 9.9: 8 devices x 1.08 GFLOP in 180 ms.
    "9.9": 8 * 1.08e9 / 0.180,
    # 9.10: an AllReduce of 4.2 MB over 4: 2 V 3 / 4, in MB.
    "9.10": 2 * 4.2 * 3 / 4,
    # 9.11: 6 layers x (9 weights forward + 7 matrices backward) + embed, unembed, final norm.
    "9.11": 6 * (9 + 7) + 3,
    # 9.12: gather 2-10 ms overlaps the matmul 0-6: exposed 6-10; then the all-reduce 11-14.
    "9.12": (10 - 6) + (14 - 11),
    # 9.13: bf16 tile 16 x 128 (8 x 128 words of two rows): [2048, 4, 96] -> [2048, 16, 128] x 2 B, in MB.
    "9.13": 2048 * 16 * 128 * BF16 / 1e6,
    # 9.14: only the start (0-0.1 ms) and done (7.0-9.5 ms) ops hold the device.
    "9.14": (0.1 - 0.0) + (9.5 - 7.0),
}


def test_every_chapter_9_problem_has_a_hand_derivation():
    from scalebook.exercises import problems

    assert sorted(p.id for p in problems("9")) == sorted(HAND)


@pytest.mark.parametrize("pid", sorted(HAND))
def test_key_equals_hand_derivation(pid):
    assert get(pid).answer() == pytest.approx(HAND[pid], rel=1e-9)


@pytest.mark.parametrize("pid", sorted(HAND))
def test_key_is_correct(pid):
    assert check(pid, HAND[pid]).status == "correct"


@pytest.mark.parametrize("pid, wrong, words", [
    ("9.1", 512 * 4 * 64 * F32 * 3 / 4 / 4 / 1e3, "operand"),            # V from the shard
    ("9.1", 512 * 4 * 64 * F32 * 7 / 8 / 1e3, "4 devices"),              # N = 8
    ("9.2", 2 * 4 * 64 * 256 * F32 * 3 / 4 / 1e3, "tp axis"),            # N = 4
    ("9.3", 16 - (3.52 + 3.49), "aliased"),                              # forgot the alias
    ("9.3", 16 - (3.49 - 3.48), "resident"),                             # forgot the arguments
    ("9.5", (38 + 40 + 50 + 33) / 4, "slowest"),                         # the mean device
    ("9.5", 50, "2 ms"),                                                 # device 2's late start forgotten
    ("9.6", 58_720_256 / (4096 * BF16), "(N - 1) / N"),                # sent all of V
    ("9.6", 58_720_256 / (4096 * F32 * 7 / 8), "bf16"),                  # 4 bytes a value
    ("9.7", 8 * HAND["9.7"], "B / 8"),                                   # whole-batch matmul
    ("9.8", 1.1e10 / V5E_BF16 * 1e6, "memory-bound"),                    # the compute time
    ("9.8", (1.1e10 / V5E_BF16 + 2.6e8 / V5E_HBM) * 1e6, "larger"),     # the sum
    ("9.9", 8 * 1.08e9 / 0.045, "step time"),                            # matmul time
    ("9.9", 1.08e9 / 0.180, "per chip"),                                 # one device only
    ("9.10", 4.2 * 3 / 4, "AllReduce"),                                  # the ReduceScatter formula
    ("9.11", 2 * (9 * 6 + 3), "gathered once"),                          # everything twice
    ("9.11", 9 * 6 + 3, "again"),                                        # no regather
    ("9.12", 8 + 3, "beside the matmul"),                                # raw durations
    ("9.13", 2048 * 4 * 96 * BF16 / 1e6, "logical size"),                # no padding
    ("9.13", 2048 * 8 * 128 * BF16 / 1e6, "16 x 128"),                   # the 32-bit tile
    ("9.14", 9.5 - 0.0, "start and done"),                               # start to done
])
def test_slips_get_their_hint(pid, wrong, words):
    r = check(pid, wrong)
    assert r.status == "wrong" and words in r.message, r.message


@pytest.mark.parametrize("pid", ["9.1", "9.3", "9.8"])
def test_unit_prefix_slips_are_named(pid):
    r = check(pid, HAND[pid] * 1000)
    assert r.status == "wrong" and "factor of 1000" in r.message
