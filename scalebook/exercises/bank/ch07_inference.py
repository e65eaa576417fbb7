"""Answer keys of chapter 7 (inference): decode bounds, KV cache, quantisation, sharding, batching,
speculative decoding, disaggregation and cost.

Every problem that times a step states its efficiencies (`BW`, `CE` below) and leaves out the fitted
fixed cost per layer, instead of taking the package's fitted defaults, so that its answer is pinned
by its statement.
"""
from __future__ import annotations

import math

from ... import inference as inf
from ... import serving, training
from ... import transformer as tr
from ...errors import Error
from ...models import preset
from ..problem import problem

#: Fraction of HBM bandwidth and of peak FLOP/s the problems assume, and no fixed cost per layer
#: (the package's fitted default adds one to every forward pass; the problems leave it out).
BW, CE = 0.8, 0.6
_EFF = dict(bandwidth_efficiency=BW, compute_efficiency=CE, layer_overhead_seconds=0.0)


def _decode(model, chip, deployment, batch, context):
    """A decode step at exactly `context` tokens of context (prompt = context, one output token)."""
    return inf.estimate(preset(model), chip=chip, deployment=deployment, batch=batch, prompt_len=context,
                        output_len=1, **_EFF)


@problem("7.1", title="The decode floor of LLaMA-3 8B on one H100", unit="ms",
         model="llama3-8b", chip="h100", context=1024,
         hint="at batch 1 a step reads every weight once (not the input embedding table: one row is looked up) "
              "and the sequence's KV cache, at 80% of the HBM bandwidth")
def decode_floor(model, chip, context):
    return _decode(model, chip, inf.Deployment(), 1, context).decode.seconds * 1e3


@problem("7.2", title="Short prompts at batch 512", unit="ms",
         model="llama3-8b", chip="h100", batch=512, context=128,
         hint="compare the matmul time (2 FLOPs per weight per sequence, plus 4 N_q H S per layer (S tokens of context) for attention, "
              "at 60% of peak) with the read time (weights once, plus every sequence's cache, at 80% of HBM); "
              "the step takes the longer")
def short_prompts(model, chip, batch, context):
    return _decode(model, chip, inf.Deployment(), batch, context).decode.seconds * 1e3


@problem("7.3", title="The effective critical batch of three 8-bit-or-less formats", unit="token",
         chip="h200", options=("fp8", "int8", "int4"),
         slips={2: "off by 2: weight-only int4 is converted to bf16 before the matmul, so the bf16 peak applies "
                   "to half a byte per weight; fp8 runs on the fp8 tensor cores at twice the bf16 peak"},
         hint="B* = peak FLOP/s x bytes per weight / (2 x HBM bandwidth), with the peak of the dtype the "
              "matmul actually runs in; at 60% of peak and 80% of HBM the crossover moves to B* x 0.6 / 0.8")
def critical_batch_choice(chip, options):
    return min(inf.critical_decode_batch(chip, weights=w) for w in options) * CE / BW


@problem("7.4", title="Attention intensity in prefill", unit="FLOP/B",
         model="llama3-8b", prompt_len=1024,
         hint="one layer, T queries over S = T keys: 4 N_q H S T FLOPs (every query sees every key) against "
              "2 K H S bytes of keys and values read plus 2 N_q H T of queries read and outputs written, "
              "all bf16")
def prefill_attention_intensity(model, prompt_len):
    m = preset(model)
    S = T = prompt_len
    beta = 2  # bf16
    flops = tr.layer_flops_per_token(m, seq_len=S, causal=False).attention_score_flops * T  # 4 N_q H S per query
    bytes_ = beta * m.head_dim * (2 * m.kv_heads * S + 2 * m.heads * T)
    return flops / bytes_


@problem("7.5", title="Which KV dtype lets the batch fit", unit="",
         model="llama3-70b", chip="h100", tp=8, batch=48, context=32768, options=("bf16", "fp8", "int4"),
         hint="per chip: HBM - weights / tp - prefill workspace, divided by the KV cache of one sequence per "
              "chip (2 L K H x bytes x context / tp); the widest dtype whose largest batch reaches 48")
def kv_dtype_for_batch(model, chip, tp, batch, context, options):
    m = preset(model)
    for kv in options:  # widest first
        most = inf.max_batch(m, chip=chip, deployment=inf.Deployment(tp=tp, kv=kv), context=context)
        if most >= batch:
            return most
    raise Error("no KV dtype fits the batch")


@problem("7.6", title="The largest tp that stays memory-bound", unit="chip",
         model="llama3-8b", chip="h200", context=2048, candidates=(1, 2, 4, 8),
         hint="memory time falls as 1/tp; each of the 2 L AllReduces of a step is latency-bound at batch 1: "
              "NCCL's LL protocol, 2 (tp - 1) steps of 0.6 us each plus a small bandwidth term at half of "
              "NVLink's usable rate")
def largest_memory_bound_tp(model, chip, context, candidates):
    best = None
    for tp in candidates:
        s = _decode(model, chip, inf.Deployment(tp=tp), 1, context).decode
        if s.tp_seconds <= s.memory_seconds:
            best = tp
    if best is None:
        raise Error("no candidate stays memory-bound")
    return best


@problem("7.7", title="Weights dtype and batch under a latency target", unit="token/s",
         model="llama3-70b", chip="h100", tp=8, prompt_len=2048, output_len=512, target_s=0.020,
         weights=("bf16", "fp8"),
         hint="for each weights dtype, try batches 1, 2, 4, ... up to the largest that fits; keep those whose "
              "per-token latency meets the target and take the most tokens/s per chip")
def dtype_under_target(model, chip, tp, prompt_len, output_len, target_s, weights):
    m = preset(model)
    rates = [e.output_tokens_per_s_per_chip for w in weights
             for e in serving.frontier(m, chip=chip, deployment=inf.Deployment(tp=tp, weights=w),
                                       prompt_len=prompt_len, output_len=output_len, **_EFF)
             if e.per_token_latency_seconds <= target_s]
    if not rates:
        raise Error("no configuration meets the target")
    return max(rates)


@problem("7.8", title="The best draft length", unit="",
         acceptance_rate=0.7, draft_cost_ratio=0.1, candidates=(1, 2, 3, 4, 5, 6),
         hint="for each g: tokens per round (1 - a^(g+1)) / (1 - a), over a round cost of g c + 1 target "
              "steps; the extra token pays only while a^g, the chance of reaching it, exceeds what it costs")
def speculation(acceptance_rate, draft_cost_ratio, candidates):
    return max(serving.speculative_decoding(acceptance_rate=acceptance_rate, draft_tokens=g,
                                            draft_cost_ratio=draft_cost_ratio).speedup for g in candidates)


def verify_step_seconds(e: inf.ServingEstimate, tokens: int) -> float:
    """A target step that checks `tokens` tokens per sequence: FLOPs x tokens, same reads, and
    collectives that carry `tokens` x the activations (`inference.verify_step`)."""
    return inf.verify_step(e, tokens=tokens).seconds


@problem("7.9", title="Does speculation pay at batch 256?", unit="",
         model="llama3-70b", chip="h100", tp=8, weights="fp8", batch=256, context=2048,
         acceptance_rate=0.8, draft_tokens=4, draft_cost_ratio=0.05,
         hint="plain decoding: one token per sequence per step. Speculation: tokens per round over "
              "(g c x step + verify step), the verify step = max((g + 1) x compute, memory) + collectives of "
              "(g + 1) x the tokens")
def speculation_at_batch(model, chip, tp, weights, batch, context, acceptance_rate, draft_tokens, draft_cost_ratio):
    e = _decode(model, chip, inf.Deployment(tp=tp, weights=weights), batch, context)
    spec = serving.speculative_decoding(acceptance_rate=acceptance_rate, draft_tokens=draft_tokens,
                                        draft_cost_ratio=draft_cost_ratio)
    step = e.decode.seconds
    round_s = draft_tokens * draft_cost_ratio * step + verify_step_seconds(e, draft_tokens + 1)
    return spec.tokens_per_round * step / round_s


@problem("7.10", title="Sizing the prefill pool", unit="chip",
         model="llama3-70b", chip="h100", tp=8, weights="fp8", batch=64, prompt_len=2048, output_len=512,
         decode_chips=64,
         hint="prefill chip-seconds per request over decode chip-seconds per request, times the decode chips, "
              "rounded up to whole 8-GPU servers")
def prefill_pool(model, chip, tp, weights, batch, prompt_len, output_len, decode_chips):
    d = inf.Deployment(tp=tp, weights=weights)
    dis = serving.disaggregation(preset(model), chip=chip, prefill=d, decode=d, batch=batch, prompt_len=prompt_len,
                                 output_len=output_len, **_EFF)
    return tp * math.ceil(dis.prefill_chips_per_decode_chip * decode_chips / tp)


@problem("7.11", title="The prefix hit rate for a prefill budget", unit="%",
         model="llama3-70b", chip="h100", tp=8, weights="fp8", batch=128, prompt_len=2048, output_len=512,
         share=0.20,
         hint="with hit rate h each step carries (B / O) (1 - h) prefills; solve (1 - h) p / (d + (1 - h) p) = "
              "share for h, p the refill work per step without a cache and d the decode step")
def prefix_hit_rate(model, chip, tp, weights, batch, prompt_len, output_len, share):
    w = serving.continuous_batching(preset(model), chip=chip, deployment=inf.Deployment(tp=tp, weights=weights),
                                    batch=batch, prompt_len=prompt_len, output_len=output_len, **_EFF)
    e = w.estimate
    p = batch / output_len * e.prefill.seconds  # refill work per step with no cache, each prompt on its own
    d = e.decode.seconds  # the decode step on its own
    return 100 * max(0.0, 1 - share * d / ((1 - share) * p))


@problem("7.12", title="Experts read by a small Mixtral batch", unit="GB",
         model="mixtral-8x7b", chip="h100", tp=2, batch=4, context=2048, chips=2,
         hint="a routed expert is read only if some token picks it: E (1 - (1 - k/E)^B) of the E experts "
              "per layer, expected; all attention weights and the unembedding are read; split over tp")
def mixtral_weight_reads(model, chip, tp, batch, context):
    return _decode(model, chip, inf.Deployment(tp=tp), batch, context).decode.weight_bytes_read / 1e9


@problem("7.13", title="KV per chip when tp exceeds the kv heads", unit="MB",
         model="llama3-405b", tp=32, context=4096,
         slips={4: "off by 4: with attention split by heads, 32 chips share 8 kv heads, so each kv head (and its "
                   "cache) sits on four chips"},
         hint="the head split gives each chip min(tp, K) of the cache's kv heads")
def kv_when_tp_exceeds_k(model, tp, context):
    d = inf.Deployment(tp=tp, attention="heads")
    return inf.kv_bytes_per_sequence_per_chip(preset(model), d, context) / 1e6


#: The four setups of problem 7.14: label -> (chip, deployment).
SETUPS_7_14 = {
    "one H100, bf16": ("h100", inf.Deployment()),
    "one H100, fp8 weights": ("h100", inf.Deployment(weights="fp8")),
    "one TPU v5e, int8 weights": ("tpu-v5e", inf.Deployment(weights="int8")),
    "one TPU v5e, int4 weights": ("tpu-v5e", inf.Deployment(weights="int4")),
}


@problem("7.14", title="The cheapest way to serve LLaMA-3 8B", unit="$",
         model="llama3-8b", prompt_len=2048, output_len=512,
         hint="for each setup: the largest batch that fits, its output tokens/s, and chips x price per hour / "
              "tokens per hour x 1e6; take the cheapest")
def cheapest_setup(model, prompt_len, output_len):
    m = preset(model)
    costs = []
    for chip, d in SETUPS_7_14.values():
        e = inf.estimate(m, chip=chip, deployment=d, batch="max", prompt_len=prompt_len, output_len=output_len, **_EFF)
        costs.append(e.usd_per_million_output_tokens(training.price_per_chip_hour(chip)))
    return min(costs)


@problem("7.15", title="Pipeline or fp8 for LLaMA-3 405B", unit="ms",
         model="llama3-405b", chip="h100", batch=32, prompt_len=2048, output_len=512,
         layouts=(dict(tp=8, pp=2), dict(tp=8, weights="fp8")),
         hint="with pp stages a token passes through every stage in turn: per-token latency = pp x the step of "
              "one stage; fp8 halves the weight bytes on one 8-GPU node")
def pipeline_or_fp8(model, chip, batch, prompt_len, output_len, layouts):
    m = preset(model)
    return 1e3 * min(inf.estimate(m, chip=chip, deployment=inf.Deployment(**kw), batch=batch, prompt_len=prompt_len,
                                  output_len=output_len, **_EFF).per_token_latency_seconds for kw in layouts)


@problem("7.16", title="When Mixtral's experts turn compute-bound", unit="token",
         model="mixtral-8x7b", chip="h100", weights="bf16",
         hint="each routed expert sees B k / E of the batch's B tokens; it is compute-bound once that reaches "
              "the chip's critical batch for the weights' format")
def moe_critical_batch(model, chip, weights):
    m = preset(model)
    return inf.critical_decode_batch(chip, weights=weights) * m.routed_experts / m.experts_per_token


@problem("7.17", title="1D or 2D weight-stationary on 128 chips", unit="",
         model="llama3-70b", chip="tpu-v5e", n_chips=128, batch=64, n_axes=3,
         hint="1D over three axes moves 4 B D / (3 W) per MLP block whatever the chip count; 2D at its best "
              "split X = sqrt(N D / (2 F)) moves 2 B D / (X W) + 4 B F / ((N / X) W); give 1D over 2D")
def weight_stationary_ratio(model, chip, n_chips, batch, n_axes):
    from ...hardware import chip as get_chip
    from ...rules_of_thumb import inference as rot

    m, w = preset(model), get_chip(chip).collective_bytes_per_s
    one = rot.weight_stationary_1d_comm_seconds(batch=batch, d_model=m.d_model, ici_bytes_per_s=w, n_axes=n_axes)
    two = rot.weight_stationary_2d_comm_seconds(batch=batch, d_model=m.d_model, d_ff=m.d_ff, chips=n_chips,
                                                ici_bytes_per_s=w)
    return one / two


@problem("7.18", title="Reload a conversation's cache or prefill it again", unit="",
         model="llama3-70b", chip="h100", tp=8, context=16384,
         hint="reload: the bf16 cache of the whole context, each of the 8 GPUs pulling its eighth over its own "
              "host link; recompute: the prefill of the context under the page's conventions; give recompute "
              "over reload")
def reload_or_recompute(model, chip, tp, context):
    from ...hardware import chip as get_chip

    m, c = preset(model), get_chip(chip)
    reload = tr.kv_cache(m, seq_len=context).bytes_per_sequence / (tp * c.pcie_bytes_per_s)
    e = inf.estimate(m, chip=chip, deployment=inf.Deployment(tp=tp), batch=1, prompt_len=context, output_len=1, **_EFF)
    return e.prefill_seconds / reload
