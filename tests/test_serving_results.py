"""Published serving results (Chapter 8): the data loads, is self-consistent and matches its sources."""
import dataclasses
import json
import re
from pathlib import Path
from types import MappingProxyType

import pytest

import scalebook
from scalebook import serving_results, transformer
from scalebook.serving_results import PublishedServing, published_serving, published_serving_result

IDS = [r.id for r in published_serving()]
BIB = (Path(__file__).resolve().parents[1] / "book" / "references.bib").read_text()
BIB_KEYS = set(re.findall(r"^@\w+\{([^,]+),", BIB, flags=re.M))
REPORTED = ("reported_per_token_latency_seconds", "reported_ttft_seconds", "reported_output_tokens_per_s",
            "reported_output_tokens_per_s_per_chip", "reported_total_tokens_per_s", "reported_prefill_seconds")


def test_there_are_results_with_unique_ids():
    assert len(IDS) >= 25 and len(set(IDS)) == len(IDS)


def test_gpu_and_tpu_dense_and_moe_results_are_all_present():
    rs = published_serving()
    assert {r.family for r in rs} == {"tpu", "gpu"}
    assert {r.chip for r in rs} >= {"a100", "h100", "h200", "tpu-v4p"}
    assert any(r.model_config().is_moe for r in rs) and any(not r.model_config().is_moe for r in rs)


def test_at_most_a_third_of_the_results_are_fitted_on():
    fit = serving_results.results_with_role("fit")
    assert 0 < 3 * len(fit) <= len(IDS)
    for family in ("tpu", "gpu"):
        assert serving_results.results_with_role("fit", family) and serving_results.results_with_role("validation", family)


def test_the_validation_report_covers_every_validation_result_and_no_fit_result():
    rep = serving_results.validation_report()
    ids = {p.id for p in rep.predictions}
    assert ids == {r.id for r in serving_results.results_with_role("validation")}
    assert rep.validation_count == len(ids) and rep.fit_count == len(serving_results.results_with_role("fit"))
    assert sum(g.count for g in rep.by_family.values()) == sum(g.count for g in rep.by_source.values()) == len(ids)
    errs = sorted(abs(p.error) for p in rep.predictions)
    assert rep.overall.max == errs[-1] and rep.overall.mean == pytest.approx(sum(errs) / len(errs))
    assert [abs(p.error) for p in rep.worst] == errs[::-1][:len(rep.worst)]
    assert all(p.reason() for p in rep.worst) and "median" in repr(rep)


def test_a_static_batch_is_compared_as_the_time_of_the_whole_batch():
    # H100, Llama 2 70B, TP2: 96 requests of 2048 in / 128 out at 346 output tokens/s per GPU:
    # 96 x 128 tokens / (346 x 2 GPUs) = 17.757 s for the batch.
    r = published_serving_result("trtllm-h100-llama2-70b-2048-128")
    p = serving_results.predict(r)
    assert p.metric == "static batch end to end"
    assert p.reported_seconds == pytest.approx(96 * 128 / (346 * 2))
    assert p.predicted_seconds == pytest.approx(p.estimate.prefill_batch_seconds + 127 * p.estimate.per_token_latency_seconds)


def test_default_gpu_efficiency_is_the_fit_on_the_fit_results():
    """If the inference model or the fit results change, run tools/fit_serving_efficiency.py."""
    k = serving_results.fit_constants("gpu")
    assert (k.bandwidth_efficiency, k.compute_efficiency) == pytest.approx(
        scalebook.inference.default_efficiency("h100"), abs=1e-3)
    assert k.layer_overhead_seconds == pytest.approx(scalebook.inference.default_layer_overhead("h100"), abs=1e-7)
    assert serving_results.fit_efficiencies("gpu") == (k.bandwidth_efficiency, k.compute_efficiency)


def test_the_gpu_fit_is_a_minimum_of_the_log_loss_on_its_grid():
    # The fitted constants' loss over the fit results is no larger than one grid step away in any
    # direction (1% of efficiency, 1 us of per-layer overhead); the loss is the slow path, predict().
    import math

    k = serving_results.fit_constants("gpu")
    fit = serving_results.results_with_role("fit", "gpu")

    def loss(bw, ce, lo):
        return sum(math.log(p.predicted_seconds / p.reported_seconds) ** 2 for p in (
            serving_results.predict(r, bandwidth_efficiency=bw, compute_efficiency=ce, layer_overhead_seconds=lo)
            for r in fit))

    bw, ce, lo = k.bandwidth_efficiency, k.compute_efficiency, k.layer_overhead_seconds
    best = loss(bw, ce, lo)
    for d in ((0.01, 0, 0), (-0.01, 0, 0), (0, 0.01, 0), (0, -0.01, 0), (0, 0, 1e-6), (0, 0, -1e-6)):
        assert best <= loss(bw + d[0], ce + d[1], lo + d[2]) + 1e-9


def test_the_fit_set_holds_short_forward_passes_for_the_per_layer_overhead():
    # The per-layer overhead is identified only by forward passes short enough for it to matter:
    # the GPU fit set holds first-token latencies of 128-token prompts on every GPU it fits.
    fit = serving_results.results_with_role("fit", "gpu")
    short = {r.chip for r in fit if r.reported_ttft_seconds is not None and r.prompt_len == 128}
    assert short == {r.chip for r in fit}


def test_a100_mixtral_2048_2048_is_left_out_as_faster_than_the_hbm_allows():
    # TensorRT-LLM 0.9.0, A100 FP16 table: Mixtral 8x7B, batch 32, TP 2, 2048 in / 2048 out, 801 tokens/s
    # per GPU. The batch took 32 x 2048 / (801 x 2) = 40.9 s, so a decode step took at most 40.9 / 2048 s.
    # Each step reads all weights but the input embedding, 46.70e9 - 32000 x 4096 parameters (Jiang et al.
    # 2024: 46.7B), at 2 bytes, half on each GPU: at least 2.3 TB/s, above the A100's 2.0 TB/s.
    step = 32 * 2048 / (801 * 2) / 2048
    weights_per_gpu = (46.70e9 - 32000 * 4096) * 2 / 2
    assert weights_per_gpu / step > 1.15 * scalebook.chip("a100").hbm_bytes_per_s
    assert "trtllm-a100-mixtral-8x7b-2048-2048" not in IDS
    left = {n.id: n for n in serving_results.not_modelled()}["trtllm-a100-mixtral-8x7b-2048-2048"]
    assert "2.33 TB/s" in left.reason and "801" in left.reported


@pytest.mark.parametrize("result_id", IDS)
def test_each_model_builds_and_matches_the_published_size(result_id):
    r = published_serving_result(result_id)
    total = transformer.params(r.model_config()).total_params
    assert total == pytest.approx(r.published_params, rel=0.05)


@pytest.mark.parametrize("result_id", IDS)
def test_degrees_multiply_to_the_chip_count(result_id):
    r = published_serving_result(result_id)
    if r.tp is not None:
        assert r.tp * (r.ep or 1) * (r.pp or 1) == r.chips
    if r.ep not in (None, 1):
        assert r.model_config().routed_experts % r.ep == 0


@pytest.mark.parametrize("result_id", IDS)
def test_fields_are_valid_and_cited(result_id):
    r = published_serving_result(result_id)
    assert r.chip in scalebook.chip_names()
    assert r.weights in ("bf16", "fp16", "int8", "fp8", "int4", "fp4")
    assert r.kv in (None, "bf16", "fp16", "int8", "fp8")
    assert r.role in ("fit", "validation")
    assert r.phase in serving_results.PHASES
    assert r.source in BIB_KEYS and r.where and r.notes
    assert set(r.inferred) <= {f.name for f in dataclasses.fields(PublishedServing)}
    assert any(getattr(r, name) is not None for name in REPORTED), "each result reports a latency or throughput"
    assert r.batch is not None or r.max_batch, "an unknown batch must be a max-throughput run"
    assert r.prompt_len > 0 and r.output_len > 0 and r.chips > 0
    assert r.reported_mfu is None or 0 < r.reported_mfu < 1


@pytest.mark.parametrize("result_id", IDS)
def test_reported_throughputs_agree_with_each_other(result_id):
    r = published_serving_result(result_id)
    if r.reported_output_tokens_per_s is not None and r.reported_output_tokens_per_s_per_chip is not None:
        assert r.reported_output_tokens_per_s / r.chips == pytest.approx(r.reported_output_tokens_per_s_per_chip, rel=1e-3)
    if r.reported_output_tokens_per_s is not None and r.reported_per_token_latency_seconds and r.batch:
        assert r.batch / r.reported_per_token_latency_seconds == pytest.approx(r.reported_output_tokens_per_s, rel=1e-3)


@pytest.mark.parametrize("result_id", [i for i in IDS if published_serving_result(i).source == "pope2022efficiently"])
def test_pope_latencies_reproduce_their_mfu(result_id):
    """Pope et al. quote MFU beside each latency: 2 N FLOPs per token on chips x 275 TFLOP/s (TPU v4 bf16)."""
    r = published_serving_result(result_id)
    peak = 275e12
    if r.phase == "prefill":
        tokens, seconds = r.batch * r.prompt_len, r.reported_prefill_seconds
    else:
        tokens, seconds = r.batch * r.output_len, r.reported_per_token_latency_seconds * r.output_len
    mfu = 2 * r.published_params * tokens / (r.chips * peak * seconds)
    assert mfu == pytest.approx(r.reported_mfu, abs=0.01)


def test_not_modelled_results_are_cited_with_a_reason():
    left_out = serving_results.not_modelled()
    assert left_out and len({n.id for n in left_out}) == len(left_out)
    for n in left_out:
        assert n.source in BIB_KEYS and n.reason and n.reported and n.where
        assert n.id not in IDS


def test_unknown_id_raises_error_listing_valid_ids():
    with pytest.raises(scalebook.Error, match="palm-540b-tpuv4-decode-low-latency"):
        published_serving_result("gpt-5-on-abacus")


@pytest.mark.parametrize("result_id", IDS)
def test_cli_args_are_strings_for_serve_estimate(result_id, tmp_path):
    r = published_serving_result(result_id)
    path = str(tmp_path / "model.json")
    args = r.cli_args(model_path=path)
    assert all(isinstance(a, str) for a in args)
    assert args[0] == (r.model if isinstance(r.model, str) else path)
    for flag, value in (("--chip", r.chip), ("--prompt-len", r.prompt_len), ("--output-len", r.output_len),
                        ("--weights", r.weights)):
        assert args[args.index(flag) + 1] == str(value)
    assert ("--tp" in args) == (r.tp is not None) and ("--chips" in args) == (r.tp is None)
    assert args[args.index("--batch") + 1] == ("max" if r.batch is None else str(r.batch))


def _with_inline_model(**changes) -> PublishedServing:
    r = published_serving_result(IDS[0])
    fields = {"name": "my-62b", "num_hidden_layers": 64, "hidden_size": 8192, "num_attention_heads": 32,
              "num_key_value_heads": 1, "head_dim": 256, "intermediate_size": 32768, "vocab_size": 256000}
    return dataclasses.replace(r, model=MappingProxyType(fields), **changes)


def test_inline_model_needs_a_path_and_round_trips_through_json(tmp_path):
    r = _with_inline_model()
    with pytest.raises(scalebook.Error, match="model_path"):
        r.cli_args()
    path = tmp_path / "model.json"
    path.write_text(json.dumps(r.model_json()))
    assert scalebook.models.from_spec(str(path)) == r.model_config()
    assert r.model_config().layers == 64 and r.model_name == "my-62b"
    with pytest.raises(scalebook.Error, match="preset"):
        published_serving_result(IDS[0]).model_json()


def test_unknown_fields_are_left_out_and_unknown_batch_is_max():
    r = _with_inline_model(tp=None, ep=None, pp=None, batch=None, max_batch=True, kv=None)
    args = r.cli_args(model_path="m.json")
    assert args[args.index("--chips") + 1] == str(r.chips)
    assert "--tp" not in args and "--ep" not in args and "--pp" not in args and "--kv" not in args
    assert args[args.index("--batch") + 1] == "max"
    assert "--batch" not in dataclasses.replace(r, max_batch=False).cli_args(model_path="m.json")


def test_repr_names_the_result():
    text = repr(published_serving_result("palm-540b-tpuv4-decode-low-latency"))
    assert "palm-540b" in text and "tpu-v4p" in text and "29 ms" in text and "pope2022efficiently" in text


def test_implied_bandwidth_is_the_bytes_the_model_counts_over_the_reported_time():
    # A100 (2.0 TB/s), Llama 2 70B TP4 fp16, 64 requests of 2048 in / 2048 out at 289 tokens/s per GPU:
    # the batch took 64 x 2048 / (289 x 4) s; the model reads its prefill's bytes once and each of the
    # 2047 decode steps' bytes once.
    p = serving_results.predict(published_serving_result("trtllm-a100-llama2-70b-2048-2048"))
    e = p.estimate
    seconds = 64 * 2048 / (289 * 4)
    hand = (e.prefill_batch.bytes_read + 2047 * e.decode.bytes_read) / seconds / 2.0e12
    assert p.implied_hbm_fraction == pytest.approx(hand)
