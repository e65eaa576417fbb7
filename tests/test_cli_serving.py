"""`scalebook serve-estimate` and `scalebook plan-serving`: the JSON contract and bad input."""
import json

import pytest

from scalebook import cli

KEYS = {"prefill_seconds", "ttft_seconds", "decode_step_seconds", "per_token_latency_seconds", "output_tokens_per_s",
        "output_tokens_per_s_per_chip", "max_batch", "memory_bytes_per_chip", "fits", "memory_bytes",
        "decode_parts_seconds", "prefill_parts_seconds"}
BASE = ["--chip", "h100", "--prompt-len", "2048", "--output-len", "256"]


def run_json(capsys, *argv):
    assert cli.main([*argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_serve_estimate_json_has_the_contract_keys(capsys):
    d = run_json(capsys, "serve-estimate", "llama3-70b", *BASE, "--chips", "8", "--batch", "32")
    assert KEYS <= set(d) and isinstance(d["fits"], bool)
    assert d["deployment"]["tp"] == 8 and d["batch"] == 32


def test_batch_max_serves_the_largest_batch_that_fits(capsys):
    d = run_json(capsys, "serve-estimate", "llama3-70b", *BASE, "--tp", "8", "--batch", "max", "--weights", "fp8",
                 "--kv", "fp8")
    assert d["batch"] == d["max_batch"] > 0 and d["fits"]


def test_the_prefill_workspace_is_an_input_and_is_reported(capsys):
    args = ("serve-estimate", "llama3-70b", "--chip", "h100", "--prompt-len", "32768", "--output-len", "256",
            "--tp", "8", "--batch", "max")
    whole = run_json(capsys, *args)
    chunked = run_json(capsys, *args, "--workspace-tokens", "2048")
    assert whole["workspace_tokens"] == 32768 and chunked["workspace_tokens"] == 2048
    assert chunked["memory_bytes"]["workspace"] < whole["memory_bytes"]["workspace"]
    assert chunked["max_batch"] >= whole["max_batch"]


def test_serve_estimate_prices_tokens(capsys):
    d = run_json(capsys, "serve-estimate", "llama3-8b", *BASE, "--chips", "1", "--batch", "16",
                 "--usd-per-chip-hour", "3")
    assert d["usd_per_million_output_tokens"] > 0 and d["usd_per_million_input_tokens"] > 0


def test_moe_with_expert_parallelism(capsys):
    d = run_json(capsys, "serve-estimate", "mixtral-8x7b", *BASE, "--tp", "2", "--ep", "4", "--batch", "64")
    assert d["chips"] == 8


@pytest.mark.parametrize("argv, needle", [
    (["serve-estimate", "llama3-70b", *BASE, "--chips", "8", "--tp", "4", "--batch", "8"], "tp x ep x pp"),
    (["serve-estimate", "llama3-70b", *BASE, "--chips", "8", "--batch", "lots"], "whole number"),
    (["serve-estimate", "llama3-70b", *BASE, "--chips", "8", "--batch", "8", "--weights", "int3"], "weights"),
    (["serve-estimate", "llama3-70b", "--chip", "tpu-v5e", "--prompt-len", "2048", "--output-len", "256",
      "--chips", "4", "--batch", "max"], "fit"),
    (["serve-estimate", "llama3-8b", *BASE, "--chips", "3", "--batch", "8", "--attention", "heads"], "heads"),
    (["serve-estimate", "llama3-8b", *BASE, "--chips", "3", "--batch", "8"], "divide"),
])
def test_bad_serving_input_exits_2_with_one_line(argv, needle, capsys):
    assert cli.main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and needle in err


def test_plan_serving_json(capsys):
    d = run_json(capsys, "plan-serving", "llama3-70b", *BASE, "--latency-ms", "30", "--top", "3")
    assert 0 < len(d["best"]) <= 3 and d["meeting_target"] <= d["considered"]
    assert all(b["per_token_latency_seconds"] <= 0.030 for b in d["best"])
    assert KEYS <= set(d["best"][0])


def test_the_per_layer_overhead_is_an_input_with_a_unit(capsys):
    # Llama 3 8B has 32 layers: 100 us per layer is 3.2 ms of every decode step; 0 removes it.
    args = ("serve-estimate", "llama3-8b", *BASE, "--tp", "1", "--batch", "8")
    none = run_json(capsys, *args, "--layer-overhead", "0")
    some = run_json(capsys, *args, "--layer-overhead", "100us")
    assert none["decode_parts_seconds"]["overhead"] == 0
    assert some["decode_parts_seconds"]["overhead"] == pytest.approx(32 * 100e-6)


def test_fp8_mlp_weights_beside_bf16_attention_from_the_command_line(capsys):
    d = run_json(capsys, "serve-estimate", "llama3-70b", *BASE, "--tp", "8", "--batch", "32", "--weights", "fp8",
                 "--attention-weights", "bf16")
    assert d["deployment"]["weights"] == "fp8" and d["deployment"]["attention_weights"] == "bf16"
    assert "fp8 MLP and bf16 other weights" in d["deployment"]["label"]
