"""Answer keys of chapter 8 (a serving plan for LLaMA 3): chips, batch, context, latency, layouts, cost,
405B, an MoE, disaggregation and a published result."""
from __future__ import annotations

from ... import hardware, serving, training
from ... import inference as inf
from ...errors import Error
from ...models import preset
from ..problem import problem

D = inf.Deployment


def _estimate(model, chip, d, batch, prompt_len, output_len) -> inf.ServingEstimate:
    return inf.estimate(preset(model), chip=chip, deployment=d, batch=batch, prompt_len=prompt_len,
                        output_len=output_len)


@problem("8.1", title="The smallest v5e slice for a long-context batch", unit="chip",
         model="llama3-70b", chip="tpu-v5e", candidates=(4, 8, 16, 32), batch=64, prompt_len=7680, output_len=512,
         hint="per chip: weights / tp, a prefill workspace, and the KV cache of every request, split by kv head up "
              "to 8 chips and by request beyond; the smallest tp whose largest batch reaches 64")
def smallest_slice(model, chip, candidates, batch, prompt_len, output_len):
    m = preset(model)
    for n in candidates:
        d = D(tp=n, weights="int8", kv="int8")
        if inf.max_batch(m, chip=chip, deployment=d, context=prompt_len + output_len, prompt_len=prompt_len) >= batch:
            return n
    raise Error("no candidate slice holds the batch")


@problem("8.2", title="The largest batch on an H100 node", unit="", chips=8,
         model="llama3-70b", chip="h100", tp=8, prompt_len=7680, output_len=512,
         hint="(HBM - weights / 8 - workspace) / (8192 tokens x 2 L K H x 1 byte / 8), rounded down")
def largest_batch_h100(model, chip, tp, prompt_len, output_len):
    d = D(tp=tp, weights="fp8", kv="fp8")
    return inf.max_batch(preset(model), chip=chip, deployment=d, context=prompt_len + output_len, prompt_len=prompt_len)


@problem("8.3", title="The longest context for a batch of 32", unit="token",
         model="llama3-70b", chip="tpu-v5e", tp=8, batch=32, chunk=2048,
         hint="free bytes per chip / (32 requests x KV bytes per token per chip); the free bytes leave room for the "
              "weights and the workspace of one 2048-token prefill chunk")
def longest_context(model, chip, tp, batch, chunk):
    m, d = preset(model), D(tp=tp, weights="int8", kv="int8")

    def fits(c):
        return inf.max_batch(m, chip=chip, deployment=d, context=c, prompt_len=chunk) >= batch

    lo, hi = 1, 2
    while fits(hi):
        lo, hi = hi, 2 * hi
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if fits(mid) else (lo, mid)
    return lo


@problem("8.4", title="The latency floor of eight v6e chips", unit="ms",
         model="llama3-70b", chip="tpu-v6e", tp=8,
         hint="every chip streams its share of the int8 weights once per step; divide by the HBM bandwidth")
def latency_floor(model, chip, tp):
    return inf.weights_per_chip(preset(model), D(tp=tp, weights="int8")) / hardware.chip(chip).hbm_bytes_per_s * 1e3


@problem("8.5", title="Enough tensor parallelism for 25 ms", unit="chip",
         model="llama3-70b", chip="h100", candidates=(1, 2, 4, 8), batch=64, prompt_len=2048, output_len=512,
         target_s=0.025,
         hint="per tp: the HBM time of weights / tp plus 64 caches at the average context, plus 160 AllReduces of "
              "64 x D activations (latency-bound: 2 (tp - 1) hops), plus the fitted fixed time of each of the 80 "
              "layers, which no tp shrinks; the smallest tp that fits and meets 25 ms")
def choose_tp(model, chip, candidates, batch, prompt_len, output_len, target_s):
    m = preset(model)
    for t in candidates:
        d = D(tp=t, weights="fp8", kv="fp8")
        e = _estimate(model, chip, d, batch, prompt_len, output_len)
        if e.fits and e.per_token_latency_seconds <= target_s:
            return t
    raise Error("no candidate tp meets the target")


#: The configurations problem 8.6 offers: (chip, tp, weight and KV dtype, batch).
OPTIONS_8_6 = {
    "A": ("tpu-v5e", 8, "int8", 96),
    "B": ("tpu-v5e", 16, "int8", 256),
    "C": ("h100", 8, "fp8", 512),
    "D": ("tpu-v5e", 16, "int8", 128),
    "E": ("h100", 8, "bf16", 256),
}


@problem("8.6", title="The cheapest configuration within 45 ms", unit="$",
         model="llama3-70b", options=OPTIONS_8_6, prompt_len=2048, output_len=512, target_s=0.045,
         hint="price each at the spec data's USD per chip-hour: chips x price / (batch / per-token latency x 3600) x "
              "1e6, but only among the options whose per-token latency meets 45 ms")
def cheapest_within(model, options, prompt_len, output_len, target_s):
    best = None
    for chip, tp, dt, batch in options.values():
        e = _estimate(model, chip, D(tp=tp, weights=dt, kv=dt), batch, prompt_len, output_len)
        if e.fits and e.per_token_latency_seconds <= target_s:
            cost = e.usd_per_million_output_tokens(training.price_per_chip_hour(chip))
            best = cost if best is None else min(best, cost)
    if best is None:
        raise Error("no option meets the target")
    return best


@problem("8.7", title="Does int4 pay on the v5e?", unit="$",
         model="llama3-70b", chip="tpu-v5e", prompt_len=2048, output_len=512,
         hint="at the largest batch of each: int8 weights on 8 chips, int4 weights on 4 (both with an int8 cache); "
              "cost = chips x price / output tokens per hour; answer the cheaper")
def int4_pays(model, chip, prompt_len, output_len):
    price = training.price_per_chip_hour(chip)
    costs = [_estimate(model, chip, d, "max", prompt_len, output_len).usd_per_million_output_tokens(price)
             for d in (D(tp=8, weights="int8", kv="int8"), D(tp=4, weights="int4", kv="int8"))]
    return min(costs)


@problem("8.8", title="When a v6e decode with int4 weights turns compute-bound", unit="token", chip="tpu-v6e",
         weights="int4",
         hint="peak bf16 FLOP/s x half a byte per weight / (2 x HBM bandwidth): int4 weights are upcast for the "
              "matmul")
def critical_batch_v6e(chip, weights):
    return inf.critical_decode_batch(chip, weights=weights)


@problem("8.9", title="Output tokens under continuous batching", unit="$",
         model="llama3-70b", chip="h100", tp=8, batch=256, prompt_len=2048, output_len=512,
         hint="each step also prefills batch / output_len prompts; the step's decode share of chips x price buys "
              "batch output tokens")
def continuous_output_cost(model, chip, tp, batch, prompt_len, output_len):
    w = serving.continuous_batching(preset(model), chip=chip, deployment=D(tp=tp, weights="fp8", kv="fp8"),
                                    batch=batch, prompt_len=prompt_len, output_len=output_len)
    return w.usd_per_million(training.price_per_chip_hour(chip))[1]


@problem("8.10", title="405B: one fp8 node or two bf16 nodes", unit="",
         model="llama3-405b", chip="h100", batch=32, prompt_len=2048, output_len=512,
         hint="fp8 on TP8: one step per token; bf16 on TP8 x PP2: each stage streams its half of the weights per "
              "micro-batch of 16 and a token takes two stage steps; tokens/s per GPU = 32 / latency / GPUs")
def layout_405b(model, chip, batch, prompt_len, output_len):
    rates = [_estimate(model, chip, d, batch, prompt_len, output_len).output_tokens_per_s_per_chip
             for d in (D(tp=8, weights="fp8", kv="fp8"), D(tp=8, pp=2))]
    return max(rates)


@problem("8.11", title="Expert or tensor parallelism for DeepSeek-V3", unit="",
         model="deepseek-v3", chip="h200", prompt_len=8192, output_len=1024,
         hint="TP8 holds 1/8 of every weight but a whole latent cache per request on every chip; EP8 holds the dense "
              "part whole and 1/8 of the routed experts, and each group caches only its own requests")
def ep_or_tp(model, chip, prompt_len, output_len):
    m = preset(model)
    return max(inf.max_batch(m, chip=chip, deployment=d, context=prompt_len + output_len, prompt_len=prompt_len)
               for d in (D(ep=8, weights="fp8", kv="bf16"), D(tp=8, weights="fp8", kv="bf16")))


#: Problem 8.12's request mix: share of requests, prompt tokens, output tokens.
MIX_8_12 = ((0.5, 1024, 1024), (0.5, 8192, 256))


@problem("8.12", title="Prefill chips for a request mix", unit="",
         model="llama3-70b", chip="h100", mix=MIX_8_12, batch=256,
         hint="per request: prefill chip-seconds = 8 x prefill time; decode chip-seconds = 8 x output tokens x "
              "per-token latency / 256; sum each over the mix, weighted by share, then divide")
def prefill_ratio(model, chip, mix, batch):
    d = D(tp=8, weights="fp8", kv="fp8")
    pre = dec = 0.0
    for share, p, o in mix:
        x = serving.disaggregation(preset(model), chip=chip, prefill=d, decode=d, batch=batch, prompt_len=p,
                                   output_len=o)
        pre += share * x.prefill_chip_seconds_per_request
        dec += share * x.decode_chip_seconds_per_request
    return pre / dec


@problem("8.13", title="Disaggregate for 30 ms?", unit="ms",
         model="llama3-70b", chip="h100", batch=256, prompt_len=2048, output_len=512, target_s=0.030,
         hint="colocated, each step also carries batch / output_len prefills; split, the decode servers run pure "
              "decode. Answer the per-token latency of the arrangement that meets 30 ms (colocated if both do)")
def disaggregate_or_not(model, chip, batch, prompt_len, output_len, target_s):
    d = D(tp=8, weights="fp8", kv="fp8")
    w = serving.continuous_batching(preset(model), chip=chip, deployment=d, batch=batch, prompt_len=prompt_len,
                                    output_len=output_len)
    if w.per_token_latency_seconds <= target_s:
        return w.per_token_latency_seconds * 1e3
    split = w.estimate.per_token_latency_seconds
    if split > target_s:
        raise Error("neither arrangement meets the target")
    return split * 1e3


@problem("8.14", title="Predict a published PaLM prefill", unit="s", rel_tol=0.05,
         result="palm-62b-tpuv4-prefill-high-throughput",
         hint="512 prompts of 2048 tokens: decide which roofline binds (FLOPs at the fitted compute efficiency, or the "
              "bytes of one pass over the weights), ignore the collectives, and price that side")
def palm_prefill(result):
    from ... import serving_results

    r = serving_results.published_serving_result(result)
    e = inf.estimate(r.model_config(), chip=r.chip, deployment=D(tp=r.tp or r.chips, weights=r.weights, kv=r.kv),
                     batch=r.batch, prompt_len=r.prompt_len, output_len=r.output_len)
    step = e.prefill_batch
    return max(step.compute_seconds, step.memory_seconds)


@problem("8.15", title="Meta's fp8 recipe on an H200 node", unit="",
         model="llama3-405b", chip="h200", tp=8, prompt_len=2048, output_len=512,
         hint="Meta quantised only the feed-forward weights to fp8 (3 L D F parameters at 1 byte); everything "
              "else stays bf16. Per GPU: HBM - weights / 8 - the 2048-token prefill workspace, over one request's "
              "bf16 cache per GPU (2 L K H x 2 bytes x 2560 tokens / 8), rounded down")
def meta_fp8_batch(model, chip, tp, prompt_len, output_len):
    d = D(tp=tp, weights="fp8", attention_weights="bf16", kv="bf16")  # fp8 MLP, everything else bf16
    return float(inf.max_batch(preset(model), chip=chip, deployment=d, context=prompt_len + output_len,
                               prompt_len=prompt_len))


@problem("8.16", title="Up to what batch speculation pays", unit="",
         model="llama3-70b", chip="h100", prompt_len=2048, output_len=512, acceptance_rate=0.8, draft_tokens=4,
         draft_cost_ratio=0.05,
         hint="speedup(B) = tokens per round / (g c + v(B)), v(B) = verify step / plain step at batch B: the "
              "verify step does 5 x the FLOPs, reads the same bytes, AllReduces 5 x the activations and pays "
              "the same fixed time per layer; find the largest B with a speedup above 1")
def speculation_break_even(model, chip, prompt_len, output_len, acceptance_rate, draft_tokens, draft_cost_ratio):
    b = serving.speculation_break_even_batch(preset(model), chip=chip, deployment=D(tp=8, weights="fp8", kv="fp8"),
                                             prompt_len=prompt_len, output_len=output_len,
                                             acceptance_rate=acceptance_rate, draft_tokens=draft_tokens,
                                             draft_cost_ratio=draft_cost_ratio)
    if not b:
        raise Error("speculation pays at no batch, or at every batch that fits: no break-even to find")
    return float(b)
