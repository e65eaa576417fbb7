"""The command line: readable output, --json, and one-line errors with exit status 2."""
import json
import subprocess
import sys

import pytest

from scalebook.cli import main


def run(*args):
    return subprocess.run([sys.executable, "-m", "scalebook.cli", *args], capture_output=True, text=True)


def test_specs_json_lists_every_chip(capsys):
    assert main(["specs", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [c["name"] for c in data][:2] == ["tpu-v4p", "tpu-v5e"]


def test_specs_of_one_chip_prints_its_sources(capsys):
    assert main(["specs", "h100"]) == 0
    assert "source" in capsys.readouterr().out


def test_roofline_matmul_json_has_the_bound(capsys):
    assert main(["roofline", "matmul", "--chip", "tpu-v5e", "--batch", "256", "--d-model", "8192",
                 "--d-ff", "32768", "--weight-dtype", "int8", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["bound"] == "compute" and data["compute_dtype"] == "bf16"


def test_roofline_op_text_names_the_bound(capsys):
    assert main(["roofline", "op", "--chip", "h100", "--flops", "1e12", "--bytes", "1e9"]) == 0
    assert "bound" in capsys.readouterr().out


@pytest.mark.parametrize("args, words", [
    (["roofline", "matmul", "--chip", "tpu-v9", "--batch", "8", "--d-model", "8", "--d-ff", "8"], "valid: tpu-v4p"),
    (["roofline", "matmul", "--chip", "h100", "--batch", "0", "--d-model", "8", "--d-ff", "8"], "positive"),
    (["roofline", "matmul", "--chip", "h100", "--batch", "-4", "--d-model", "8", "--d-ff", "8"], "positive"),
    (["roofline", "matmul", "--chip", "h100", "--batch", "8", "--d-model", "8", "--d-ff", "8", "--dtype", "fp7"], "choose from"),
    (["roofline", "op", "--chip", "h100", "--flops", "x", "--bytes", "1"], "positive number"),
    (["specs", "v9"], "valid:"),
])
def test_bad_input_exits_2_with_one_line_and_no_traceback(args, words):
    proc = run(*args)
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
    assert words in proc.stderr
