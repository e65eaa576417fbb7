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


def test_continuous_batching_pays_prefill_between_decode_steps():
    w = serving.continuous_batching(L70, chip="h100", deployment=Deployment(tp=8), batch=64, prompt_len=2048,
                                    output_len=512)
    e = w.estimate
    assert w.step_seconds == pytest.approx(e.decode.seconds + 64 / 512 * e.prefill.seconds)
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
