"""benchmarks/calculon_side_by_side.py: a published run as Calculon's inputs, and the script without Calculon.

The expectations are written by hand from the papers' tables and Calculon's input format
(calculon/llm/llm.py, `Llm.Application` and `Llm.Execution.fields()`); none of Calculon's code is needed.
"""
import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

from scalebook import Error
from scalebook.runs import published_run

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "benchmarks" / "calculon_side_by_side.py"


@pytest.fixture(scope="module")
def side():
    spec = importlib.util.spec_from_file_location("calculon_side_by_side", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def test_megatron_ptdp_175b_on_384_a100s_becomes_calculons_inputs(side):
    # Narayanan et al. 2021, Table 2: 174.6B GPT (96 layers, hidden 12288, 96 heads of 128), TP 8 x PP 12
    # on 384 A100s (DP 4), batch 1536 of 2048 tokens, microbatch 1, full recomputation, no sequence
    # parallelism, a full optimizer copy per replica; gradients all-reduced after the backward pass.
    inputs = side.calculon_inputs(published_run("megatron-ptdp-175b-a100-384"))
    assert inputs.application == {"hidden": 12288, "feedforward": 4 * 12288, "seq_size": 2048,
                                  "attn_heads": 96, "attn_size": 128, "num_blocks": 96}
    assert inputs.execution == {
        "num_procs": 384, "tensor_par": 8, "pipeline_par": 12, "data_par": 4,
        "tensor_par_net": 0, "pipeline_par_net": 1, "data_par_net": 1,
        "batch_size": 1536, "microbatch_size": 1, "datatype": "float16",
        "fused_activation": False, "attention_type": "multihead", "activation_recompute": "full",
        "pipeline_interleaving": 1, "optimizer_sharding": False, "tensor_par_comm_type": "ar",
        "tensor_par_overlap": "none", "seq_par_ag_redo": False, "data_par_overlap": False,
        "weight_offload": False, "activations_offload": False, "optimizer_offload": False, "training": True,
    }
    assert inputs.system_file == "a100_80g.json"


def test_nemotron_gqa_sequence_parallel_and_distributed_optimizer_map_to_calculons_options(side):
    # NeMo's Nemotron-4 340B on 128 H100s: TP 8, PP 8, virtual pipeline 12, 8 query groups (one KV head
    # per TP rank: Calculon's multiquery per rank), sequence parallelism without recomputation (the
    # backward gathers the layer input again), distributed optimizer over DP 2, gradient reduction overlapped.
    inputs = side.calculon_inputs(published_run("nemotron4-340b-h100-128"))
    exe = inputs.execution
    assert (exe["attention_type"], exe["tensor_par_comm_type"], exe["seq_par_ag_redo"]) == ("multiquery", "rs_ag", True)
    assert (exe["pipeline_interleaving"], exe["optimizer_sharding"], exe["data_par_overlap"]) == (12, True, True)
    assert (exe["activation_recompute"], exe["microbatch_size"], exe["data_par"]) == ("none", 1, 2)
    assert inputs.system_file == "h100_80g_nvl8.json"


def test_selective_recompute_with_sequence_parallelism_is_calculons_attn_only_with_the_gather_redone(side):
    # Korthikanti et al. 2022, Table 5 "present work" row for 22B: TP 8, batch 4, microbatch 4, selective + SP.
    exe = side.calculon_inputs(published_run("megatron-sp-22b-a100")).execution
    assert exe["activation_recompute"] == "attn_only"
    assert (exe["tensor_par_comm_type"], exe["seq_par_ag_redo"]) == ("rs_ag", True)
    assert (exe["microbatch_size"], exe["batch_size"], exe["data_par"]) == (4, 4, 1)


@pytest.mark.parametrize("run_id, reason", [
    ("maxtext-32b-v5p-1x64", "TPU"),
    ("megatron-zero3-175b-a100-384", "ZeRO-3/FSDP"),
    ("gpt-oss-120b-h100-64", "MoE"),
    ("bloom-176b-a100", "reports no speed"),
])
def test_a_run_calculon_cannot_express_is_left_out_with_its_reason(side, run_id, reason):
    run = published_run(run_id)
    assert reason in side.exclusion(run)
    with pytest.raises(Error, match=reason):
        side.calculon_inputs(run)


def test_without_a_calculon_path_the_script_says_how_to_give_one_and_exits_0():
    env = {k: v for k, v in os.environ.items() if k not in ("CALCULON_PATH", "CALCULON_PYTHON", "CALCULON_COMMIT")}
    env["PYTHONPATH"] = str(ROOT)
    proc = subprocess.run([sys.executable, str(SCRIPT)], capture_output=True, text=True, env=env, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    assert "--calculon PATH" in proc.stdout and "CALCULON_PATH" in proc.stdout


def test_a_path_that_holds_no_calculon_source_is_refused_with_exit_2(side, tmp_path, capsys):
    assert side.main(["--calculon", str(tmp_path)]) == 2
    assert "not a Calculon source directory" in capsys.readouterr().err
