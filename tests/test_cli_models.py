"""`scalebook models` and `scalebook model NAME`: tables, --json, one-line errors."""
import json

from scalebook.cli import main


def test_models_json_lists_every_preset_with_totals_and_source(capsys):
    assert main(["models", "--json"]) == 0
    rows = {r["name"]: r for r in json.loads(capsys.readouterr().out)}
    assert rows["mixtral-8x7b"]["active_params"] < rows["mixtral-8x7b"]["total_params"]
    assert all(r["source"] for r in rows.values())


def test_models_table_is_readable(capsys):
    assert main(["models"]) == 0
    out = capsys.readouterr().out
    assert "llama3-405b" in out and "406B" in out


def test_model_json_reports_params_flops_kv_cache_and_memory(capsys):
    assert main(["model", "llama3-70b", "--seq-len", "4096", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["seq_len"] == 4096 and d["kv_cache_bytes_per_token_bf16"] == 2 * 80 * 8 * 128 * 2
    assert d["training_flops_per_token"] == 3 * d["forward_flops_per_token"]
    assert d["training_bytes_per_param"] == 16


def test_model_text_names_the_model(capsys):
    assert main(["model", "deepseek-v3"]) == 0
    assert "MLA" in capsys.readouterr().out


def test_unknown_model_exits_2_with_one_line(capsys):
    assert main(["model", "gpt-5"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "llama3-8b" in err


def test_fractional_sequence_length_exits_2(capsys):
    assert main(["model", "llama3-8b", "--seq-len", "10.5"]) == 2
