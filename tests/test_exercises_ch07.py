"""Chapter 7's answer keys against hand derivations with literal numbers (not the package).

The decode and prefill steps are re-derived here from the model shapes and the spec table, with the
book's conventions written out: step = max(FLOPs / (peak x 0.6), bytes / (HBM x 0.8)) + collectives.
A collective on NVLink is priced as NCCL prices it (src/graph/tuning.cc): with the fastest of its
three protocols, latency + bytes / bandwidth -- steps x the protocol's latency per ring step, plus
the bytes each GPU sends over (its NVLink egress x 20.6 / 25 usable x the protocol's share). An
AllReduce of V bytes over n GPUs sends 2 V (n-1) / n in 2 (n-1) steps; an AllGather half that.
"""
import math

import pytest

from scalebook.exercises import check, get

BW, CE = 0.8, 0.6
# B/s per GPU one way that a collective moves over NVLink 4 (H100 and H200): 450 GB/s egress x
# NCCL's usable 20.6 of the 25 GB/s per link (topo.h, SM90_NVLINK_BW).
NVLINK = 450e9 * 20.6 / 25
# NCCL's protocols on NVLink (tuning.cc): name -> (latency per ring step, share of the bandwidth).
NCCL_NVLINK = {"LL": (0.6e-6, 0.5), "LL128": (1.9e-6, 0.92), "Simple": (3.4e-6, 1.0)}

# Spec table: HBM bytes, HBM bytes/s, peak FLOP/s by dtype, on-demand USD per chip-hour.
H100 = dict(hbm=80e9, bw=3.4e12, bf16=990e12, fp8=2000e12, usd=10.8)
H200 = dict(hbm=141e9, bw=4.8e12, bf16=990e12, fp8=2000e12)
V5E = dict(hbm=16e9, bw=0.82e12, bf16=197e12, usd=1.2)


def llama(L, D, N, K, H, F, V):
    """Shapes and counts of a LLaMA-3 model (untied embeddings, gated MLP, two norms a layer + a final one)."""
    layer = 2 * D * N * H + 2 * D * K * H + 3 * D * F
    norms = L * 2 * D + D
    total = L * layer + norms + 2 * V * D
    return dict(L=L, D=D, N=N, K=K, H=H, F=F, V=V, total=total,
                read=total - V * D,  # every weight but the input embedding table (one row is looked up)
                matmul=L * layer + V * D,  # weights in matmuls: layers and the unembedding
                per_layer=L * layer + norms,  # everything but the two tables, all layers
                kv_token=2 * L * K * H * 2)  # bf16 KV bytes per token


L8 = llama(32, 4096, 32, 8, 128, 14336, 128256)
L70 = llama(80, 8192, 64, 8, 128, 28672, 128256)
L405 = llama(126, 16384, 128, 8, 128, 53248, 128256)


def test_hand_counts_are_the_published_shapes():
    assert L8["total"] == 8_030_261_248
    assert L70["total"] == 70_553_706_496
    assert L8["kv_token"] == 131_072 and L70["kv_token"] == 327_680 and L405["kv_token"] == 516_096


def nccl_nvlink(sent, steps):
    """The fastest protocol's steps x latency + bytes sent per GPU / (usable NVLink x its share)."""
    return min(steps * lat + sent / (NVLINK * share) for lat, share in NCCL_NVLINK.values())


def allreduce_nvlink(v, n):
    return nccl_nvlink(2 * v * (n - 1) / n, 2 * (n - 1)) if n > 1 else 0.0


def allgather_nvlink(v, n):
    return nccl_nvlink(v * (n - 1) / n, n - 1) if n > 1 else 0.0


def decode(m, chip, *, batch, context, tp=1, w=2.0, kv=2.0, peak="bf16"):
    """(compute, memory, tp) seconds of one decode step on one chip, heads split, KV split by min(tp, K).
    The weight matmuls run at the weights' peak (fp8 for fp8 weights); the attention scores multiply
    bf16 queries and keys, so they run at the bf16 peak whatever the weights."""
    matmul = batch * 2 * m["matmul"] / tp
    scores = batch * m["L"] * 4 * context * m["N"] * m["H"] / tp
    reads = m["read"] * w / tp + batch * context * m["kv_token"] / 2 * kv / min(tp, m["K"])
    comm = 2 * m["L"] * allreduce_nvlink(batch * m["D"] * 2, tp)
    return matmul / (chip[peak] * CE) + scores / (chip["bf16"] * CE), reads / (chip["bw"] * BW), comm


def step(parts):
    c, mem, comm = parts
    return max(c, mem) + comm


def prefill(m, chip, *, prompt, tp, w, peak):
    """One prompt's prefill: causal scores (T/2 keys per query), weights read once, its KV written;
    logits (the unembedding) only at the last position."""
    layers = m["matmul"] - m["V"] * m["D"]
    matmul = (prompt * 2 * layers + 2 * m["V"] * m["D"]) / tp
    scores = prompt * m["L"] * 4 * (prompt / 2) * m["N"] * m["H"] / tp  # at the bf16 peak, as in decode()
    compute = matmul / (chip[peak] * CE) + scores / (chip["bf16"] * CE)
    reads = m["read"] * w / tp + prompt * m["kv_token"] / min(tp, m["K"])
    reduce_acts = 2 * m["L"] * allreduce_nvlink(prompt * m["D"] * 2, tp)
    gather_weights = m["L"] * allgather_nvlink(m["per_layer"] / m["L"] * w, tp)
    return max(compute, reads / (chip["bw"] * BW)) + min(reduce_acts, gather_weights)


def max_batch(m, chip, *, context, prompt, tp=1, w=2.0, kv=2.0):
    weights = m["total"] * w / tp
    workspace = prompt * (4 * m["D"] + 3 * m["F"] / tp) * 2 + m["V"] * 4
    per_seq = context * m["kv_token"] / 2 * kv / min(tp, m["K"])
    return int((chip["hbm"] - weights - workspace) // per_seq)


# --- 7.7: best tokens/s per chip within 20 ms, bf16 or fp8 weights, TP8 ---------------------------

def _best_within_target():
    best = 0.0
    for w, peak in ((2.0, "bf16"), (1.0, "fp8")):
        most = max_batch(L70, H100, context=2560, prompt=2048, tp=8, w=w)
        for b in sorted({2 ** i for i in range(20) if 2 ** i <= most} | {most}):
            t = step(decode(L70, H100, batch=b, context=2048 + 256, tp=8, w=w, peak=peak))
            if t <= 0.020:
                best = max(best, b / t / 8)
    return best


# --- 7.9: speculation at batch 256 ---------------------------------------------------------------

def _speculation_at_256():
    c, mem, comm = decode(L70, H100, batch=256, context=2048, tp=8, w=1.0, peak="fp8")  # c: fp8 matmuls + bf16 scores
    plain = max(c, mem) + comm
    comm5 = 2 * 80 * allreduce_nvlink(5 * 256 * 8192 * 2, 8)  # the verify step's AllReduces carry 5 tokens each
    verify = max(5 * c, mem) + comm5
    tokens = (1 - 0.8 ** 5) / (1 - 0.8)
    return tokens * plain / (4 * 0.05 * plain + verify)


# --- 7.10 and 7.11: prefill of 2048-token prompts beside decode at 512 output tokens ------------

PRE_70B_FP8 = prefill(L70, H100, prompt=2048, tp=8, w=1.0, peak="fp8")


def _prefill_pool():
    dec = step(decode(L70, H100, batch=64, context=2048 + 256, tp=8, w=1.0, peak="fp8"))
    ratio = (8 * PRE_70B_FP8) / (8 * 512 * dec / 64)
    return 8 * math.ceil(ratio * 64 / 8)


def _hit_rate():
    d = step(decode(L70, H100, batch=128, context=2048 + 256, tp=8, w=1.0, peak="fp8"))
    p = 128 / 512 * PRE_70B_FP8
    return 100 * (1 - 0.2 * d / (0.8 * p))


# --- 7.12: Mixtral at batch 4 --------------------------------------------------------------------

def _mixtral_reads():
    L, D, H, V, E, k, Fe = 32, 4096, 128, 32000, 8, 2, 14336
    attention = L * (2 * D * 32 * H + 2 * D * 8 * H)
    router, norms = L * D * E, L * 2 * D + D
    touched = E * (1 - (1 - k / E) ** 4)  # each token picks k distinct experts
    experts = L * touched * 3 * D * Fe
    return (attention + router + norms + experts + V * D) * 2 / 2 / 1e9


# --- 7.14: cost of LLaMA-3 8B at the largest batch, four single-chip setups ----------------------

def _cheapest():
    costs = []
    for chip, w, peak in ((H100, 2.0, "bf16"), (H100, 1.0, "fp8"), (V5E, 1.0, "bf16"), (V5E, 0.5, "bf16")):
        b = max_batch(L8, chip, context=2560, prompt=2048, w=w)
        t = step(decode(L8, chip, batch=b, context=2048 + 256, w=w, peak=peak))
        costs.append(chip["usd"] / 3600 / (b / t) * 1e6)
    return min(costs)


# --- 7.15: LLaMA-3 405B, fp8 on one node against bf16 over two pipeline stages ------------------

def _405b():
    fp8 = step(decode(L405, H100, batch=32, context=2048 + 256, tp=8, w=1.0, peak="fp8"))
    # bf16 over TP8 x PP2: each stage reads half the layers in bf16 -- as much as the fp8 node reads --
    # and a token passes both stages, so its latency is at least twice the fp8 memory time.
    _, mem_fp8, _ = decode(L405, H100, batch=32, context=2048 + 256, tp=8, w=1.0, peak="fp8")
    assert 2 * mem_fp8 > fp8
    return fp8 * 1e3


HAND = {
    # 7.1: (7,504,924,672 weights x 2 B + 1024 x 131,072 B) / (3.4e12 x 0.8), memory-bound.
    "7.1": 1e3 * step(decode(L8, H100, batch=1, context=1024)),
    # 7.2: 512 x (2 x matmul weights + 4 x 128 x 32 x 128 x 32) FLOPs at 594 TFLOP/s beats the reads.
    "7.2": 1e3 * max(decode(L8, H100, batch=512, context=128)[:2]),
    # 7.3 (H200): weight-only int4 runs bf16 matmuls on half a byte: 990e12 x 0.5 / (2 x 4.8e12) = 51.6
    # (int8: 103, fp8: 2000e12 x 1 / 9.6e12 = 208), then x 0.6 / 0.8 for the efficiencies.
    "7.3": 990e12 * 0.5 / (2 * 4.8e12) * 0.6 / 0.8,
    # 7.4: LLaMA-3 8B, T = S = 1024, bf16: 4 x 32 x 128 x 1024^2 FLOPs over
    # 2 x 128 x (2 x 8 x 1024 + 2 x 32 x 1024) bytes = 32 x 1024 / 40.
    "7.4": 4 * 32 * 128 * 1024 ** 2 / (2 * 128 * (2 * 8 * 1024 + 2 * 32 * 1024)),
    # 7.5: bf16 holds 44 < 48 sequences of 32k; fp8 holds twice as many.
    "7.5": max_batch(L70, H100, context=32768, prompt=32768, tp=8, kv=1.0),
    # 7.6 (on H200): tp=8 spends 64 AllReduces x (14 LL steps x 0.6 us + 14 kB / (371 GB/s x 0.5)) = 0.54 ms
    # against 0.50 ms of reads; tp=4 (64 x (6 x 0.6 us + ...) = 0.23 ms against 0.99 ms) stays below.
    "7.6": 4,
    "7.7": _best_within_target(),
    # 7.8: a = 0.7, c = 0.1; g = 4 is best: (1 - 0.7^5) / 0.3 = 2.773 tokens over 1.4 steps
    # (g = 3: 2.533 / 1.3 = 1.949; g = 5: 2.941 / 1.5 = 1.961).
    "7.8": (1 - 0.7 ** 5) / 0.3 / (4 * 0.1 + 1),
    "7.9": _speculation_at_256(),
    "7.10": _prefill_pool(),
    "7.11": _hit_rate(),
    "7.12": _mixtral_reads(),
    # 7.13: LLaMA-3 405B, 4096 tokens x 2 x 126 x 8 x 128 x 2 B / min(32, 8), in MB.
    "7.13": 4096 * 2 * 126 * 8 * 128 * 2 / 8 / 1e6,
    "7.14": _cheapest(),
    "7.15": _405b(),
    # 7.16: Mixtral in bf16 on H100: 990e12 x 2 B / (2 x 3.4e12) per expert, times E / k = 8 / 2.
    "7.16": 990e12 * 2 / (2 * 3.4e12) * 8 / 2,
    # 7.17: 1D over 3 axes moves 4 B D / (3 W); 2D at X = sqrt(N D / 2F) moves (4 B / W) sqrt(2 D F / N);
    # their ratio is sqrt(N D / (18 F)) = sqrt(128 x 8192 / (18 x 28672)) = 1.43, whatever B and W.
    "7.17": math.sqrt(128 * 8192 / (18 * 28672)),
    # 7.18: recompute a 16,384-token prefill on 8 H100s (bf16) against reloading its cache,
    # 16,384 x 327,680 B, an eighth per GPU over 64 GB/s host links.
    "7.18": prefill(L70, H100, prompt=16384, tp=8, w=2.0, peak="bf16") / (16384 * 327_680 / (8 * 64e9)),
}


def test_hand_choices_hold():
    # 7.2 is compute-bound; 7.5 needs fp8 (bf16 holds 44); 7.6: on H200 tp=8 is collective-bound, tp=4 is not.
    c, mem, _ = decode(L8, H100, batch=512, context=128)
    assert c > mem
    assert max_batch(L70, H100, context=32768, prompt=32768, tp=8) == 44
    c8, m8, t8 = decode(L8, H200, batch=1, context=2048, tp=8)
    c4, m4, t4 = decode(L8, H200, batch=1, context=2048, tp=4)
    assert t8 > m8 and t4 < m4
    # a batch-1 AllReduce of 8 kB is latency-bound: NCCL's LL protocol wins
    v = 4096 * 2
    assert allreduce_nvlink(v, 8) == pytest.approx(14 * 0.6e-6 + 2 * v * 7 / 8 / (NVLINK * 0.5))


def test_every_chapter_7_problem_has_a_hand_derivation():
    from scalebook.exercises import problems

    assert sorted(p.id for p in problems("7")) == sorted(HAND)


def test_at_least_twelve_problems():
    assert len(HAND) >= 12


@pytest.mark.parametrize("pid", sorted(HAND))
def test_key_equals_hand_derivation(pid):
    assert get(pid).answer() == pytest.approx(HAND[pid], rel=1e-6)


@pytest.mark.parametrize("pid", sorted(HAND))
def test_key_is_correct(pid):
    assert check(pid, HAND[pid]).status == "correct"


@pytest.mark.parametrize("pid", sorted(set(HAND) - {"7.6"}))
@pytest.mark.parametrize("factor, words", [(2, "factor of 2"), (1000, "factor of 1000"), (8, "factor of 8")])
def test_slips_are_wrong_with_a_hint(pid, factor, words):
    r = check(pid, HAND[pid] * factor)
    assert r.status == "wrong"
    if pid not in ("7.3", "7.13"):  # these carry their own hint for a factor of 2
        assert words in r.message


def test_problem_specific_slips():
    r = check("7.3", HAND["7.3"] * 2)
    assert r.status == "wrong" and "bf16 before the matmul" in r.message
    r = check("7.13", HAND["7.13"] / 4)
    assert r.status == "wrong" and "four chips" in r.message
    # 7.6: the tp that minimises latency (8) is not the one that stays memory-bound on H200.
    assert check("7.6", 8).status == "wrong"
    # 7.12: reading all eight experts is the slip of forgetting the routing.
    all_experts = (32 * (2 * 4096 * 4096 + 2 * 4096 * 1024 + 4096 * 8 + 8 * 3 * 4096 * 14336 + 2 * 4096)
                   + 4096 + 32000 * 4096) / 1e9
    assert check("7.12", all_experts).status == "wrong"


def test_7_9_by_the_verify_cost_ratio_route():
    # Second way: the verify step as a multiple v of a plain step (serving.verify_cost_ratio), then
    # tokens per round / (g c + v). It must agree with the hand derivation above, which prices the
    # verify step as max(5 x compute, memory) + AllReduces of 5 tokens per sequence.
    from scalebook import inference as inf
    from scalebook import serving
    from scalebook.models import preset

    v = serving.verify_cost_ratio(preset("llama3-70b"), chip="h100", deployment=inf.Deployment(tp=8, weights="fp8"),
                                  batch=256, prompt_len=2048, output_len=1, draft_tokens=4,
                                  bandwidth_efficiency=BW, compute_efficiency=CE, layer_overhead_seconds=0.0)
    c, mem, comm = decode(L70, H100, batch=256, context=2048, tp=8, w=1.0, peak="fp8")
    hand_v = (max(5 * c, mem) + 2 * 80 * allreduce_nvlink(5 * 256 * 8192 * 2, 8)) / (max(c, mem) + comm)
    assert v == pytest.approx(hand_v, rel=1e-6)
    assert (1 - 0.8 ** 5) / 0.2 / (4 * 0.05 + v) == pytest.approx(HAND["7.9"], rel=1e-6)
    assert v > 1  # at batch 256 the verify step costs more than a plain one: the speedup is below 7.8's


def test_7_12_counts_distinct_top_k_not_independent_picks():
    # Each token picks k = 2 distinct experts of 8: an expert escapes a token with 6/8, a batch of 4
    # with (6/8)^4, so 8 (1 - (3/4)^4) = 5.469 experts are read per layer. Independent picks
    # (8 (1 - (7/8)^8) = 5.253) would be a different, wrong, model of top-k routing.
    assert 8 * (1 - 0.75 ** 4) == pytest.approx(5.46875)
    L, D, Fe = 32, 4096, 14336
    distinct = L * 8 * (1 - 0.75 ** 4) * 3 * D * Fe * 2 / 2 / 1e9
    independent = L * 8 * (1 - (7 / 8) ** 8) * 3 * D * Fe * 2 / 2 / 1e9
    assert HAND["7.12"] == pytest.approx(32.3, abs=0.05)
    assert check("7.12", HAND["7.12"] - distinct + independent).status != "correct"
