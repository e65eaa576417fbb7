"""`scalebook train-estimate` and `scalebook plan`: the JSON contract, model files, bad input."""
import json

import pytest

from scalebook import cli, runs

KEYS = {"step_seconds", "tokens_per_s", "tokens_per_s_per_chip", "model_flops_per_s_per_chip", "mfu", "hfu",
        "memory_bytes_per_chip", "fits", "comm_seconds", "exposed_seconds", "memory_bytes", "compute_seconds",
        "bubble_seconds", "breakdown_seconds"}


def run_json(capsys, *argv):
    assert cli.main([*argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_train_estimate_json_has_the_contract_keys(capsys):
    d = run_json(capsys, "train-estimate", "llama3-8b", "--chip", "h100", "--chips", "64", "--fsdp", "8", "--tp", "8",
                 "--batch-tokens", str(2 ** 20), "--seq-len", "8192", "--remat", "selective")
    assert KEYS <= set(d)
    assert isinstance(d["fits"], bool) and 0 < d["mfu"] < 1
    assert d["strategy"]["fsdp"] == 8 and d["strategy"]["tp"] == 8


def test_train_estimate_reports_days_and_cost_for_a_token_budget(capsys):
    d = run_json(capsys, "train-estimate", "llama3-8b", "--chip", "tpu-v5p", "--chips", "64", "--fsdp", "64",
                 "--batch-seqs", "256", "--seq-len", "4096", "--train-tokens", "1e12")
    assert d["days"] == pytest.approx(1e12 / d["tokens_per_s"] / 86400)
    assert d["cost_usd"] == pytest.approx(d["chip_hours"] * d["usd_per_chip_hour"])


def test_train_estimate_reads_a_model_file_with_aliases(tmp_path, capsys):
    path = tmp_path / "mine.json"
    path.write_text(json.dumps({"num_hidden_layers": 4, "hidden_size": 1024, "num_attention_heads": 16,
                                "num_key_value_heads": 4, "intermediate_size": 4096, "vocab_size": 32000}))
    d = run_json(capsys, "train-estimate", str(path), "--chip", "h100", "--chips", "8", "--dp", "8",
                 "--batch-seqs", "16", "--seq-len", "2048")
    assert d["model"] == "mine"


def test_every_published_run_goes_through_the_cli(tmp_path, capsys):
    for run in runs.published_runs():
        path = None
        if not isinstance(run.model, str):
            path = tmp_path / f"{run.id}.json"
            path.write_text(json.dumps(run.model_json()))
        d = run_json(capsys, "train-estimate", *run.cli_args(model_path=str(path) if path else None))
        assert 0 < d["mfu"] < 1, run.id


@pytest.mark.parametrize("argv, needle", [
    (["train-estimate", "llama3-8b", "--chip", "h100", "--chips", "64", "--fsdp", "63", "--batch-seqs", "64",
      "--seq-len", "2048"], "chips"),
    (["train-estimate", "nosuch", "--chip", "h100", "--chips", "8", "--batch-seqs", "8", "--seq-len", "2048"],
     "unknown model"),
    (["train-estimate", "llama3-8b", "--chip", "h100", "--chips", "8", "--seq-len", "2048"], "required"),
    (["train-estimate", "llama3-8b", "--chip", "h100", "--chips", "8", "--batch-seqs", "8", "--seq-len", "2048",
      "--dtype", "int3"], "dtype"),
    (["train-estimate", "llama3-8b", "--chip", "h100", "--chips", "-8", "--batch-seqs", "8", "--seq-len", "2048"],
     "positive"),
    (["plan", "llama3-405b", "--chip", "h100", "--chips", "8", "--batch-seqs", "8", "--seq-len", "4096"], "fits"),
])
def test_bad_input_exits_2_with_one_line(argv, needle, capsys):
    assert cli.main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and needle in err and "Traceback" not in err


def test_bad_model_file_exits_2(tmp_path, capsys):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({"layers": 2, "d_model": 64, "heads": 4, "vocab": 100, "d_ff": 256, "colour": "red"}))
    assert cli.main(["train-estimate", str(path), "--chip", "h100", "--chips", "8", "--dp", "8", "--batch-seqs", "8",
                     "--seq-len", "128"]) == 2
    assert "unknown model field 'colour'" in capsys.readouterr().err


def test_plan_json_lists_the_best_strategies(capsys):
    d = run_json(capsys, "plan", "llama3-8b", "--chip", "tpu-v5p", "--chips", "64", "--batch-tokens", str(2 ** 20),
                 "--seq-len", "4096", "--top", "3")
    assert len(d["best"]) == 3 and d["fitting"] <= d["considered"]
    assert d["best"][0]["step_seconds"] <= d["best"][-1]["step_seconds"]
    assert KEYS <= set(d["best"][0])


def test_plan_prints_a_table(capsys):
    assert cli.main(["plan", "llama3-8b", "--chip", "h100", "--chips", "16", "--batch-seqs", "64", "--seq-len",
                     "2048", "--top", "2"]) == 0
    assert "Pareto" in capsys.readouterr().out
