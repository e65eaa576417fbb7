"""scalebook.inference and scalebook.serving: decode and prefill on hand-worked cases, and their rules."""
import pytest
from hypothesis import given, settings, strategies as st

import scalebook
from scalebook import inference as inf, models, serving, transformer as tr
from scalebook.inference import Deployment

L70 = models.preset("llama3-70b")
L8 = models.preset("llama3-8b")
H100 = scalebook.chip("h100")


def _e(model=L8, chip="h100", batch=8, prompt=1024, output=256, **kw):
    d = kw.pop("deployment", Deployment(**{k: kw.pop(k) for k in list(kw) if k in ("tp", "ep", "pp", "weights", "kv")}))
    return inf.estimate(model, chip=chip, deployment=d, batch=batch, prompt_len=prompt, output_len=output, **kw)


def test_decode_at_batch_one_streams_the_weights_from_hbm():
    e = _e(batch=1, bandwidth_efficiency=1.0)
    # Llama 3 8B: 8,030,261,248 parameters less the 128256 x 4096 embedding rows (gathered, not
    # streamed), 2 bytes each; KV: K and V x 32 layers x 8 heads x 128 x 2 bytes = 131072 B a token,
    # at the average decode context 1024 + 256 / 2 = 1152 tokens. H100 HBM: 3.4 TB/s.
    weights = (8_030_261_248 - 128256 * 4096) * 2
    kv = 2 * 32 * 8 * 128 * 2 * 1152
    assert e.decode.memory_seconds == pytest.approx((weights + kv) / 3.4e12, rel=1e-6)
    assert e.decode.bound == "memory"


def test_decode_flops_are_twice_the_active_params_plus_attention_per_token():
    e = _e(batch=4)
    per_token = tr.flops_per_token(L8, seq_len=1024 + 128, causal=False).forward_flops
    assert e.decode.flops == pytest.approx(4 * per_token)


def test_attention_in_decode_is_memory_bound_at_any_batch():
    model = L8
    kv_per_token = tr.kv_cache(model).bytes_per_token
    score_flops = tr.flops_per_token(model, seq_len=1, causal=False).attention_score_flops
    assert score_flops / kv_per_token < scalebook.roofline.critical_intensity("h100")


def test_critical_decode_batch_is_chapter_one_critical_batch():
    # 990 TFLOP/s bf16 over 3.4 TB/s of HBM: a bf16 weight (2 bytes) must serve 291 tokens
    assert inf.critical_decode_batch("h100") == pytest.approx(990e12 / 3.4e12)
    assert inf.critical_decode_batch("h100") == pytest.approx(scalebook.roofline.critical_batch("h100"))
    assert inf.critical_decode_batch("h100", weights="int8") == pytest.approx(inf.critical_decode_batch("h100") / 2)


def test_tensor_parallel_decode_pays_two_allreduces_a_layer():
    e = _e(model=L70, tp=8, batch=1)
    each = scalebook.collectives.all_reduce(scalebook.topology.gpu_node("h100", "8"), axes="X",
                                            bytes_=L70.d_model * 2).seconds
    assert e.decode.tp_seconds == pytest.approx(2 * L70.layers * each)


def test_quantised_weights_halve_the_weight_bytes():
    bf16, int8 = _e(model=L70, tp=8, batch=1), _e(model=L70, tp=8, batch=1, weights="int8")
    assert int8.decode.weight_bytes_read == pytest.approx(bf16.decode.weight_bytes_read / 2)
    assert int8.memory.weight_bytes == pytest.approx(bf16.memory.weight_bytes / 2)


def test_an_moe_step_reads_only_the_experts_its_tokens_pick():
    moe = models.preset("mixtral-8x7b")
    one, many = _e(model=moe, tp=2, batch=1), _e(model=moe, tp=2, batch=256)
    assert one.decode.weight_bytes_read < many.decode.weight_bytes_read
    p = tr.params(moe)
    assert many.decode.weight_bytes_read == pytest.approx((p.total_params - p.embedding_params) * 2 / 2, rel=0.01)


def test_max_batch_fits_and_one_more_does_not():
    e = _e(model=L70, tp=8, batch="max", prompt=4096, output=1024)
    assert e.fits
    more = _e(model=L70, tp=8, batch=e.max_batch + 1, prompt=4096, output=1024)
    assert not more.fits


def test_a_model_that_does_not_fit_has_max_batch_zero():
    assert inf.max_batch(L70, chip="tpu-v5e", deployment=Deployment(tp=4), context=2048) == 0
    with pytest.raises(scalebook.Error, match="fit"):
        _e(model=L70, chip="tpu-v5e", tp=4, batch="max")


def test_chips_to_hold_counts_weights_and_cache():
    assert inf.chips_to_hold(L70, chip="h100") == 2
    kv = 64 * 8192 * 2 * 80 * 8 * 128 * 2  # batch x tokens x (K and V) x layers x kv heads x head dim x bytes
    weights = tr.params(L70).total_params * 2
    assert inf.chips_to_hold(L70, chip="h100", batch=64, context=8192) == -(-(weights + kv) // 80e9) == 4


def test_pipeline_stages_add_latency_but_not_per_chip_throughput_loss():
    flat, piped = _e(model=L70, tp=4, batch=32), _e(model=L70, tp=4, pp=2, batch=32)
    assert piped.per_token_latency_seconds > flat.per_token_latency_seconds * 0.9
    assert piped.memory.weight_bytes == pytest.approx(flat.memory.weight_bytes / 2)


@pytest.mark.parametrize("kw, match", [(dict(tp=3, deployment=Deployment(tp=3, attention="heads")), "heads"), (dict(ep=2), "mixture"), (dict(weights="int3"), "weights"),
                                       (dict(batch=0), "batch"), (dict(prompt=0), "prompt_len"),
                                       (dict(bandwidth_efficiency=2.0), "at most 1")])
def test_bad_serving_input_raises_error(kw, match):
    with pytest.raises(scalebook.Error, match=match):
        _e(**kw)


# --- properties ----------------------------------------------------------------------------------

@settings(max_examples=40, deadline=None)
@given(st.integers(0, 8), st.integers(6, 13), st.sampled_from([1, 2, 4, 8]), st.sampled_from(["bf16", "int8"]))
def test_decode_step_never_gets_faster_as_batch_or_context_grow(log_b, log_ctx, tp, weights):
    kw = dict(model=L8, tp=tp, weights=weights, prompt=2 ** log_ctx, output=64)
    a = _e(batch=2 ** log_b, **kw)
    assert _e(batch=2 ** (log_b + 1), **kw).decode_step_seconds >= a.decode_step_seconds
    kw["prompt"] *= 2
    assert _e(batch=2 ** log_b, **kw).decode_step_seconds >= a.decode_step_seconds


@pytest.mark.parametrize("small, big", [("llama3-8b", "llama3-70b"), ("gemma2-9b", "gemma2-27b")])
def test_decode_step_never_gets_faster_as_the_model_grows(small, big):
    a = _e(model=models.preset(small), tp=8, batch=16)
    b = _e(model=models.preset(big), tp=8, batch=16)
    assert b.decode_step_seconds >= a.decode_step_seconds


@settings(max_examples=30, deadline=None)
@given(st.sampled_from(["tp", "pp"]), st.integers(0, 2), st.integers(0, 5))
def test_more_chips_never_raise_memory_per_chip(kind, log_d, log_b):
    base = {"tp": 1, "pp": 1}
    base[kind] = 2 ** log_d
    grown = dict(base)
    grown[kind] *= 2
    a = _e(model=L70, batch=2 ** log_b, **base)
    assert _e(model=L70, batch=2 ** log_b, **grown).memory.bytes <= a.memory.bytes


# --- serving workloads -------------------------------------------------------------------------------

def test_frontier_trades_latency_for_throughput():
    points = serving.frontier(L70, chip="h100", deployment=Deployment(tp=8), prompt_len=2048, output_len=512)
    lat = [p.per_token_latency_seconds for p in points]
    rate = [p.output_tokens_per_s_per_chip for p in points]
    assert lat == sorted(lat) and rate == sorted(rate) and points[-1].batch == points[-1].max_batch


# Llama 3 8B by hand: weights streamed each step (embedding rows are gathered, not streamed), and the
# KV cache of one token: K and V x 32 layers x 8 kv heads x 128 x 2 bytes. H100: 990 TFLOP/s bf16, 3.4 TB/s.
L8_STREAMED = (8_030_261_248 - 128256 * 4096) * 2
L8_KV_TOKEN = 2 * 32 * 8 * 128 * 2


def test_chunked_prefill_shares_the_decode_step_in_one_roofline():
    # batch 32, 1024-token prompts, 256 output tokens: each step refills 32 / 256 = 0.125 prompts.
    # The mixed step reads the weights once, the decode caches at the mean context 1024 + 128, and
    # writes the chunk's cache; its FLOPs are the decode's plus the chunk's; one max(compute, memory).
    w = serving.continuous_batching(L8, chip="h100", deployment=Deployment(), batch=32, prompt_len=1024,
                                    output_len=256, bandwidth_efficiency=1.0, compute_efficiency=1.0,
                                    layer_overhead_seconds=0.0)
    dec = tr.flops_per_token(L8, seq_len=1152, causal=False).forward_flops * 32
    pre = tr.flops_per_token(L8, seq_len=1024, causal=True)
    pre = 0.125 * (1024 * (pre.forward_flops - pre.unembedding_flops) + pre.unembedding_flops)
    bytes_ = L8_STREAMED + 32 * 1152 * L8_KV_TOKEN + 0.125 * 1024 * L8_KV_TOKEN
    assert w.step_seconds == pytest.approx(max((dec + pre) / 990e12, bytes_ / 3.4e12), rel=1e-9)
    e = w.estimate  # not the old "decode step + prefill on top"
    assert w.step_seconds < e.decode.seconds + 0.125 * e.prefill.seconds


def test_continuous_batching_gets_faster_with_a_prefix_cache():
    w = serving.continuous_batching(L70, chip="h100", deployment=Deployment(tp=8), batch=64, prompt_len=2048,
                                    output_len=512)
    cached = serving.continuous_batching(L70, chip="h100", deployment=Deployment(tp=8), batch=64, prompt_len=2048,
                                         output_len=512, prefix_hit_rate=0.5)
    assert cached.output_tokens_per_s > w.output_tokens_per_s


def test_cost_per_million_splits_chip_time_between_input_and_output():
    w = serving.continuous_batching(L8, chip="h100", deployment=Deployment(tp=1), batch=32, prompt_len=1024,
                                    output_len=256)
    cin, cout = w.usd_per_million(3600.0)  # $1 per chip-second
    assert cin * w.input_tokens_per_s / 1e6 + cout * w.output_tokens_per_s / 1e6 == pytest.approx(1.0)


def test_speculative_decoding_expected_tokens():
    s = serving.speculative_decoding(acceptance_rate=0.8, draft_tokens=4, draft_cost_ratio=0.05)
    assert s.tokens_per_round == pytest.approx(1 + 0.8 + 0.64 + 0.512 + 0.4096)
    assert s.speedup == pytest.approx(s.tokens_per_round / 1.2)
    assert serving.speculative_decoding(acceptance_rate=0.0, draft_tokens=3, draft_cost_ratio=0.1).speedup < 1


def test_disaggregation_ratio_is_chip_seconds_per_request():
    r = serving.disaggregation(L70, chip="h100", prefill=Deployment(tp=8), decode=Deployment(tp=8), batch=64,
                               prompt_len=4096, output_len=256)
    d = r.decode
    assert r.prefill_chips_per_decode_chip == pytest.approx(
        8 * r.prefill.prefill_seconds / (8 * 256 * d.per_token_latency_seconds / 64))


def test_plan_serving_meets_the_target_and_maximises_throughput():
    p = serving.plan_serving(L70, chip="h100", latency_target_s=0.02, prompt_len=2048, output_len=512)
    assert p.best and all(e.per_token_latency_seconds <= 0.02 for e in p.best)
    rates = [e.output_tokens_per_s_per_chip for e in p.best]
    assert rates == sorted(rates, reverse=True)
    assert all(e.fits for e in p.frontier)


@pytest.mark.parametrize("chip", ["h100", "tpu-v5e"])
def test_plan_serving_takes_the_largest_batch_that_meets_the_target_not_only_a_power_of_two(chip):
    # Its winner's batch is either the largest that fits or one more sequence would miss the target.
    target = 0.05
    p = serving.plan_serving(L70, chip=chip, latency_target_s=target, prompt_len=2048, output_len=512)
    best = p.best[0]
    most = inf.max_batch(L70, chip=chip, deployment=best.deployment, context=2048 + 512, prompt_len=2048)
    if best.batch < most:
        one_more = inf.estimate(L70, chip=chip, deployment=best.deployment, batch=best.batch + 1, prompt_len=2048,
                                output_len=512)
        assert one_more.per_token_latency_seconds > target
    assert best.per_token_latency_seconds <= target


def test_plan_serving_with_an_impossible_target_finds_nothing_within_it():
    p = serving.plan_serving(L70, chip="h100", latency_target_s=1e-4, prompt_len=2048, output_len=512)
    assert p.best == () and p.meeting_target == 0 and p.frontier


def test_default_efficiency_reproduces_its_anchor_results():
    """If the inference model changes, run tools/fit_serving_efficiency.py to refit the defaults."""
    bw, ce = inf.refit_default_efficiency("tpu")
    assert (bw, ce) == pytest.approx(inf.default_efficiency("tpu-v4p"), abs=1e-3)


def test_a_big_prefill_gathers_weights_when_that_moves_less_than_activations():
    palm = models.preset("palm-62b")
    e = inf.estimate(palm, chip="tpu-v4p", deployment=Deployment(tp=32), batch=512, prompt_len=2048, output_len=64)
    p = tr.params(palm)
    layer_weights = (p.total_params - p.embedding_params - p.unembedding_params) / palm.layers * 2
    topo = inf.deployment_topology("tpu-v4p", Deployment(tp=32))
    gather = scalebook.collectives.all_gather(topo, axes=topo.names, bytes_=layer_weights).seconds
    assert e.prefill_batch.tp_seconds <= palm.layers * gather * 1.01


def test_multi_query_attention_splits_its_cache_by_batch():
    palm = models.preset("palm-540b")  # one kv head, 48 query heads
    d = Deployment(tp=64).resolve(palm)
    assert d.attention == "batch"
    per_chip = inf.kv_bytes_per_sequence_per_chip(palm, Deployment(tp=64), 1000)
    # K and V x 118 layers x 1 head x 256 x 2 bytes (bf16) x 1000 tokens = 120.832 MB, over 64 chips
    assert per_chip == pytest.approx(2 * 118 * 256 * 2 * 1000 / 64)


def test_verifying_drafts_costs_one_step_while_memory_bound_and_more_when_compute_bound():
    mem = serving.verify_cost_ratio(L8, chip="h100", deployment=Deployment(), batch=1, prompt_len=1024,
                                    output_len=256, draft_tokens=4)
    assert mem == pytest.approx(1.0, abs=0.01)
    busy = serving.verify_cost_ratio(L8, chip="h100", deployment=Deployment(), batch=256, prompt_len=128,
                                     output_len=64, draft_tokens=4, bandwidth_efficiency=1.0, compute_efficiency=0.5)
    assert 1.5 < busy <= 5.0
    s = serving.speculative_decoding(acceptance_rate=0.8, draft_tokens=4, draft_cost_ratio=0.05, verify_cost_ratio=busy)
    assert s.speedup == pytest.approx(s.tokens_per_round / (4 * 0.05 + busy))


def test_time_to_first_token_is_the_prefill():
    # The first token comes from the prefill's logits at the prompt's last position: TTFT = prefill,
    # max(FLOPs of 1024 causal tokens with one logit row / 990 TFLOP/s, weights + cache written / 3.4 TB/s).
    e = _e(batch=1, prompt=1024, output=256, bandwidth_efficiency=1.0, compute_efficiency=1.0,
           layer_overhead_seconds=0.0)
    f = tr.flops_per_token(L8, seq_len=1024, causal=True)
    flops = 1024 * (f.forward_flops - f.unembedding_flops) + f.unembedding_flops
    hand = max(flops / 990e12, (L8_STREAMED + 1024 * L8_KV_TOKEN) / 3.4e12)
    assert e.ttft_seconds == pytest.approx(hand, rel=1e-9)
    assert e.request_seconds == pytest.approx(hand + 255 * e.per_token_latency_seconds)


def test_experts_touched_uses_distinct_top_k_routing():
    moe = models.preset("mixtral-8x7b")  # 8 routed experts, top 2
    assert inf.experts_touched(moe, tokens=1) == pytest.approx(2.0)  # one token reads exactly its k experts
    # B = 4 tokens: an expert escapes a token with probability 6/8, all four with (3/4)^4
    assert inf.experts_touched(moe, tokens=4) == pytest.approx(8 * (1 - 0.75 ** 4))
    assert inf.experts_touched(moe, tokens=4, ep=2) == pytest.approx(4 * (1 - 0.75 ** 4))
    assert inf.experts_touched(L8, tokens=4) == 0.0


def test_max_batch_takes_the_prefill_workspace_as_an_input():
    # Llama 3 70B, TP8 bf16 on H100 (80 GB), 32,768-token context. Workspace of a pass of n tokens:
    # n (4 D + 3 F / 8) x 2 bytes + V x 4 (fp32 logits of one row); D = 8192, F = 28672, V = 128256.
    w = tr.params(L70).total_params * 2 / 8
    per_seq = 32768 * 2 * 80 * 8 * 128 * 2 / 8  # K and V, 80 layers, 8 kv heads x 128, bf16, over 8 chips

    def hand(n):
        return int((80e9 - w - (n * (4 * 8192 + 3 * 28672 / 8) * 2 + 128256 * 4)) // per_seq)

    d = Deployment(tp=8)
    assert inf.max_batch(L70, chip="h100", deployment=d, context=32768) == hand(32768)
    assert inf.max_batch(L70, chip="h100", deployment=d, context=32768, workspace_tokens=2048) == hand(2048)
    assert hand(2048) > hand(32768)
    e = inf.estimate(L70, chip="h100", deployment=d, batch=4, prompt_len=30720, output_len=2048, workspace_tokens=2048)
    assert e.workspace_tokens == e.memory.workspace_tokens == 2048 and e.max_batch == hand(2048)
    assert "2048-token prefill" in repr(e) and e.to_dict()["workspace_tokens"] == 2048
    with pytest.raises(scalebook.Error, match="workspace_tokens"):
        inf.max_batch(L70, chip="h100", deployment=d, context=32768, workspace_tokens=0)


def test_the_verify_step_moves_g_plus_one_tokens_through_every_collective():
    e = _e(model=L70, tp=8, batch=64)
    v = inf.verify_step(e, tokens=5)
    each = scalebook.collectives.all_reduce(scalebook.topology.gpu_node("h100", "8"), axes="X",
                                            bytes_=5 * 64 * L70.d_model * 2).seconds
    assert v.tp_seconds == pytest.approx(2 * L70.layers * each)
    assert v.flops == pytest.approx(5 * e.decode.flops, rel=0.01)
    assert v.weight_bytes_read == e.decode.weight_bytes_read and v.kv_bytes_read == e.decode.kv_bytes_read


def test_a_static_batch_runs_its_prefill_then_output_len_minus_one_steps():
    e = _e(batch=16, prompt=128, output=128)
    t = e.prefill_batch_seconds + 127 * e.per_token_latency_seconds
    assert e.end_to_end_seconds == pytest.approx(t)
    assert e.end_to_end_output_tokens_per_s_per_chip == pytest.approx(16 * 128 / t)


def test_every_forward_pass_pays_the_per_layer_overhead_once_per_layer():
    # 100 us per layer: Llama 3 8B's 32 layers add 3.2 ms to the prefill (TTFT) and to each decode step;
    # with 2 pipeline stages each stage pays its 16 layers and a token crosses both: still 3.2 ms a token.
    kw = dict(batch=8, bandwidth_efficiency=0.8, compute_efficiency=0.5)
    base, slow = _e(layer_overhead_seconds=0.0, **kw), _e(layer_overhead_seconds=1e-4, **kw)
    assert slow.ttft_seconds - base.ttft_seconds == pytest.approx(32e-4, rel=1e-9)
    assert slow.per_token_latency_seconds - base.per_token_latency_seconds == pytest.approx(32e-4, rel=1e-9)
    assert slow.decode.overhead_seconds == pytest.approx(32e-4) and slow.decode.parts()["overhead"] == slow.decode.overhead_seconds
    base, slow = _e(pp=2, layer_overhead_seconds=0.0, **kw), _e(pp=2, layer_overhead_seconds=1e-4, **kw)
    assert slow.decode.overhead_seconds == pytest.approx(16e-4)
    assert slow.per_token_latency_seconds - base.per_token_latency_seconds == pytest.approx(32e-4, rel=1e-9)
    # the overhead is fixed: it does not grow with the batch
    big = _e(layer_overhead_seconds=1e-4, batch=64, bandwidth_efficiency=0.8, compute_efficiency=0.5)
    assert big.decode.overhead_seconds == pytest.approx(32e-4)


def test_the_gpu_default_includes_the_fitted_per_layer_overhead_and_tpus_have_none():
    assert inf.default_layer_overhead("tpu-v5e") == 0.0
    lo = inf.default_layer_overhead("h100")
    assert lo > 0 and _e().decode.overhead_seconds == pytest.approx(32 * lo)


def test_a_negative_layer_overhead_is_refused():
    with pytest.raises(scalebook.Error, match="layer_overhead_seconds"):
        _e(layer_overhead_seconds=-1e-6)


def test_long_prefill_prices_attention_scores_at_the_bf16_rate_and_weight_matmuls_at_fp8():
    # Llama 3 8B, fp8 weights on an H100, one 32k-token prompt at 100%: the weight matmuls (MLP,
    # projections, one logit row) run at the fp8 peak, QK^T and AV (two bf16 activations) at the bf16 peak.
    c = scalebook.chip("h100")
    e = _e(batch=1, prompt=32768, output=1, weights="fp8", bandwidth_efficiency=1.0, compute_efficiency=1.0,
           layer_overhead_seconds=0.0)
    f = tr.flops_per_token(L8, seq_len=32768, causal=True)
    weights = 32768 * (f.mlp_flops + f.attention_projection_flops + f.router_flops) + f.unembedding_flops
    hand = weights / c.flops_per_s["fp8"] + 32768 * f.attention_score_flops / c.flops_per_s["bf16"]
    assert e.prefill.compute_seconds == pytest.approx(hand, rel=1e-9)
    all_fp8 = (weights + 32768 * f.attention_score_flops) / c.flops_per_s["fp8"]
    assert e.prefill.compute_seconds > 1.1 * all_fp8  # at 32k the scores are a real share


def test_fp8_mlp_weights_beside_bf16_attention_as_meta_served_llama3():
    # Llama 3 8B: MLP 32 layers x 3 x 4096 x 14336 = 5,637,144,576 parameters at 1 byte; the other
    # 8,030,261,248 - 5,637,144,576 = 2,393,116,672 (attention, norms, embeddings) at 2 bytes.
    d = Deployment(weights="fp8", attention_weights="bf16")
    mlp = 32 * 3 * 4096 * 14336
    assert inf.weights_per_chip(L8, d) == pytest.approx(mlp * 1 + (8_030_261_248 - mlp) * 2)
    # a decode step at batch 1 streams them all but the input embedding rows (gathered)
    e = _e(batch=1, deployment=d)
    assert e.decode.weight_bytes_read == pytest.approx(mlp + (8_030_261_248 - mlp - 128256 * 4096) * 2)
    assert "fp8 MLP and bf16 other weights" in d.label()
    assert Deployment(weights="fp8", attention_weights="fp8").label() == Deployment(weights="fp8").label()
    assert d.replace(weights="bf16").attention_dtype == "bf16" and Deployment(weights="fp8").attention_dtype == "fp8"


def test_an_unknown_attention_weight_dtype_is_refused_by_name():
    with pytest.raises(scalebook.Error, match="attention_weights"):
        Deployment(attention_weights="fp7")


def _break_even(**kw):
    base = dict(chip="h100", deployment=Deployment(), output_len=1, acceptance_rate=0.8, draft_tokens=4,
                draft_cost_ratio=0.05, bandwidth_efficiency=1.0, compute_efficiency=1.0, layer_overhead_seconds=0.0)
    base.update(kw)
    return serving.speculation_break_even_batch(L8, **base)


def test_speculation_stops_paying_where_the_verify_step_costs_more_than_its_tokens():
    # Llama 3 8B, bf16, one H100 at 100%, 128 tokens of context, a = 0.8, g = 4, c = 0.05:
    # a round yields T = (1 - 0.8^5) / 0.2 = 3.3616 tokens for g c + v = 0.2 + v steps: it pays while
    # v < 3.1616. Per sequence a plain step computes C = FLOPs of a token / 990 TFLOP/s and reads
    # K = 128 tokens of cache / 3.4 TB/s, beside the weights M0 = streamed bytes / 3.4 TB/s. Where the
    # plain step is memory-bound (M0 + K B) and the verify step compute-bound (5 C B),
    # v = 5 C B / (M0 + K B) = 3.1616 at B* = 3.1616 M0 / (5 C - 3.1616 K).
    T = (1 - 0.8 ** 5) / 0.2
    C = tr.flops_per_token(L8, seq_len=128, causal=False).forward_flops / 990e12
    K, M0 = 128 * L8_KV_TOKEN / 3.4e12, L8_STREAMED / 3.4e12
    b_star = (T - 0.2) * M0 / (5 * C - (T - 0.2) * K)
    assert M0 + K * b_star > C * b_star and 5 * C * b_star > M0 + K * b_star  # the regimes assumed
    assert _break_even(prompt_len=128) == int(b_star)


def test_speculation_that_pays_at_every_batch_that_fits_has_no_break_even():
    # At 2048 tokens of context the cache read per sequence (2048 x 131072 B / 3.4 TB/s = 79 us)
    # exceeds even 5 tokens' FLOPs per sequence (5 x 17.1 GFLOP / 990 TFLOP/s = 86 us) so little that
    # v stays below 86 / 79 = 1.09 < 3.16: speculation pays at every batch: None.
    assert _break_even(prompt_len=2048) is None


def test_speculation_with_a_costly_draft_never_pays():
    # a = 0.3, g = 4, c = 0.5: T = (1 - 0.3^5) / 0.7 = 1.43 tokens for at least g c + 1 = 3 steps.
    assert _break_even(prompt_len=128, acceptance_rate=0.3, draft_cost_ratio=0.5) == 0


def test_speculative_speedup_prices_the_verify_step_at_the_batch():
    l70, d = models.preset("llama3-70b"), Deployment(tp=8, weights="fp8", kv="fp8")
    kw = dict(chip="h100", deployment=d, prompt_len=2048, output_len=1)
    spec = dict(acceptance_rate=0.8, draft_tokens=4, draft_cost_ratio=0.05)
    small, large = (serving.speculative_speedup(l70, batch=b, **kw, **spec) for b in (1, 1024))
    assert small.verify_cost_ratio == pytest.approx(serving.verify_cost_ratio(l70, batch=1, draft_tokens=4, **kw))
    assert small.speedup > 2 > 1 > large.speedup  # a latency tool at batch 1, a loss at batch 1024
