"""The error promise, fuzzed deterministically: one bad argument at a time, for every public call.

Every public function and input dataclass of the public modules of `scalebook` (those named in
`scalebook._LAZY`, the core modules, and the plumbing chapters call: `exercises.answers`,
`rules_of_thumb.*`, `inference_prose`, `notebook`, `cli`'s helpers) is called first with a valid
argument list built from `GOOD`, a small table of example arguments by parameter name. Then each
argument in turn is swapped for each value of `BAD` (one at a time, the others left valid), and:

- the call raises nothing but `scalebook.Error`, whose one-line message names the argument;
- a call that returns gives no NaN, no inf and no negative quantity anywhere in its result
  (numbers, dataclass fields and properties, containers, arrays; text without "inf", "nan" or
  "e+NN");
- no call runs longer than `LIMIT_S` seconds (`signal.setitimer`);
- a value that can never be valid for that argument (NaN, inf, 10**400, an object(), an array where
  a scalar is expected, a bool where a number is, a non-bool where a flag is, a negative or huge
  count, None where None means nothing) is refused, not silently accepted.

Then every CLI subcommand and flag is run through `scalebook.cli.main([...])` with bad values: it
exits 0 or 2; on 2 it prints one line on stderr; never a traceback, never "inf", "nan" or
"e+NN" in its output; a value that is never valid (nan, inf, 1e400, a word, 1e300 for a count)
exits 2.

Set aside as the issue's fuzzer did: jax_*, xla, profile, measure and plots (they compile, time or
draw); the grading functions that execute notebooks; the argparse plumbing of `cli` (driven through
`cli.main`); and the result dataclasses the package builds itself (`RESULT_CLASSES`: nothing reads
them back as input). The draw is deterministic: the same calls every run, no random generator.

`python tests/test_fuzz.py [PREFIX ...]` prints the failures by kind, the CLI's, the number of
calls and the run time (for the callables whose names start with a PREFIX, e.g. `serving`).
"""
from __future__ import annotations

import contextlib
import dataclasses
import importlib
import inspect
import io
import math
import re
import signal
import time
import types

import numpy as np
import pytest

import scalebook
from scalebook import Error

LIMIT_S = 2.0

# --- What is called -------------------------------------------------------------------------------

SET_ASIDE_MODULES = ("xla", "measure", "profile", "plots")  # and every jax_* module
EXTRA_MODULES = ("exercises.answers", "inference_prose", "rules_of_thumb.collectives", "rules_of_thumb.gpus",
                 "rules_of_thumb.inference", "rules_of_thumb.training")
#: Not called, each with why.
SET_ASIDE = {
    "grading.grade": "executes a notebook in a kernel (tests/test_grading.py covers its bad input)",
    "grading.grade_all": "executes notebooks in a kernel (tests/test_grading.py)",
    "cli.main": "driven flag by flag below",
    "cli.build_parser": "argparse plumbing, driven through cli.main",
    "cli.add_json_flag": "argparse plumbing, driven through cli.main",
    "cli.axes_arg": "argparse plumbing, driven through cli.main",
    "cli.emit": "argparse plumbing, driven through cli.main",
    "cli.number_arg": "builds an argparse type; its products (positive_number, ...) are driven",
    "cli.dumps": "the JSON writer: maps NaN and inf to null by design (tests/test_bad_input.py)",
    "exercises.check": "records a graded answer (tests/test_check.py covers its bad input)",
    "training.fit_efficiency": "forwards **kwargs to training.estimate (fuzzed itself) inside a bisection",
    "step.describe": "internal step of training.estimate: takes its pre-validated placement",
    "step.stack": "internal step of training.estimate: takes its pre-validated arrays",
    "step.price": "internal step of training.estimate: takes its pre-validated arrays",
    "step.evaluate": "internal step of training.estimate: takes its pre-validated arrays",
    "planner.evaluate_all": "internal step of planner.plan: takes its pre-validated candidate arrays",
    "training.refit_default_efficiency": "a fit over published runs (a minute); its family check is tested",
    "runs.from_entry": "builds a record from the package's own JSON entry",
}
#: Dataclasses that only the package builds (results and records read from package data).
RESULT_CLASSES = {
    "hardware.Chip", "hardware.Microarchitecture", "roofline.Roofline", "topology.Topology",
    "collectives.CollectiveCost", "collectives.Transfer", "collectives.GatherToOne", "collectives.RingTime",
    "collectives.StagedCost", "sharding.Operand", "sharding.MatmulSpec", "sharding.ShardLayout", "sharding.Step",
    "sharding.Plan", "models.ReportedTraining", "transformer.ParamCounts", "transformer.FlopsPerToken",
    "transformer.TrainingFlops", "transformer.TrainingMemory", "transformer.SavedTensor",
    "transformer.ActivationMemory", "transformer.KVCache", "transformer.AttentionIntensity",
    "transformer.FlashAttentionCost", "transformer.ReportedMfu", "strategy.Placement", "step.ModelFacts",
    "step.Setting", "training.TrainingEstimate", "training.StepCollective", "training.MemoryPerChip",
    "planner.Candidates", "planner.TrainingPlan", "inference.ServingMemory", "inference.StepTime",
    "inference.ServingEstimate", "serving.Workload", "serving.Disaggregation", "serving.ServingPlan",
    "exercises.CheckResult", "grading.Grade", "grading.PageProgress", "grading.Progress", "runs.PublishedRun",
    "runs.NotModelled", "serving_results.PublishedServing", "serving_results.Prediction",
    "serving_results.ServingConstants", "serving_results.ErrorStats", "serving_results.ValidationReport",
    "memory_levels.LevelRoofline", "gpu_network.FatTree", "gpu_network.Stage", "gpu_network.HierarchicalCollective",
    "gpu_network.ParallelismLimits", "published.ErrorSummary", "published.RunComparison",
    "published.TrainingReport", "efficiency.Tiling", "transformer.ElementwiseFlops", "efficiency.AttentionRates",
}


def _modules() -> list[str]:
    names = ["units", "hardware", "roofline", *scalebook._LAZY, *EXTRA_MODULES]
    return [n for n in dict.fromkeys(names) if not n.startswith("jax_") and n not in SET_ASIDE_MODULES]


def _callables() -> list[tuple[str, object]]:
    found = []
    for modname in _modules():
        mod = importlib.import_module(f"scalebook.{modname}")
        names = getattr(mod, "__all__", None) or [n for n in vars(mod) if not n.startswith("_")]
        for name in names:
            obj, full = getattr(mod, name, None), f"{modname}.{name}"
            if getattr(obj, "__module__", None) != mod.__name__ or full in SET_ASIDE:
                continue
            if isinstance(obj, types.FunctionType):
                found.append((full, obj))
            elif inspect.isclass(obj) and dataclasses.is_dataclass(obj) and full not in RESULT_CLASSES:
                found.append((full, obj))
    return found


# --- Good arguments, by parameter name ----------------------------------------------------------

def _good() -> dict:
    from scalebook import inference, models, strategy, topology

    llama = models.preset("llama3-8b")
    return {
        "model": llama, "chip": "h100", "batch": 8, "dtype": "bf16", "seq_len": 1024, "bytes_": 1e9,
        "topology": topology.slice("tpu-v5e", "4x4"), "d_ff": 4096, "link": "ici", "axes": ("X",),
        "d_model": 1024, "kind": "all-gather", "chips": 8, "model_name": "llama3-8b", "prompt_len": 1024,
        "causal": True, "flops": 1e12, "output_len": 256, "deployment": inference.Deployment(tp=2),
        "hop_latency_seconds": 1e-6, "tokens": 10**6, "flops_per_s": 1e15, "nodes": 4,
        "dims": {"I": 1024, "J": 512, "K": 256}, "mesh": {"X": 2, "Y": 2}, "batch_tokens": 2**20,
        "efficiency": 0.5, "hbm_bytes": 1e9, "latency_seconds": 1e-6, "array_bytes": 1e9,
        "bytes_per_element": 2, "strategy": strategy.Strategy(fsdp=8), "pp": 1, "activation_dtype": "bf16",
        "ici_bytes_per_s": 1e11, "peak_flops_per_s": 1e15, "weight_dtype": "bf16", "size": 4,
        "bandwidth_seconds": 1e-3, "spec": "A[I_X, J] @ B[J, K_Y] -> C[I_X, K_Y]", "tp": 2, "ep": 1,
        "weights": "bf16", "kv": "bf16", "workspace_tokens": 1024, "draft_tokens": 4, "level": "hbm",
        "n_axes": 1, "digits": 3, "hbm_bytes_per_s": 3e12, "compute_seconds": 1e-3, "routed_experts": 8,
        "experts_per_token": 2, "one_way_bytes_per_s": 1e11, "bandwidth_efficiency": 0.8, "shape": "4x4",
        "params": 8e9, "flash_attention": True, "virtual_stages": 1, "d": inference.Deployment(tp=2),
        "prefill": inference.Deployment(tp=2), "decode": inference.Deployment(tp=2), "acceptance_rate": 0.7,
        "draft_cost_ratio": 0.1, "verify_cost_ratio": 1.0, "rows": [{"a": 1, "b": "x"}], "worst": 3, "x": 2.0,
        "bytes_per_s": 1e11, "src": (0, 0), "dst": (1, 1), "link_bytes_per_s": 1e11, "bidirectional": True,
        "wraparound": True, "receiver": 0, "destinations": 2, "routes": 2, "idle": ("Y",),
        "seconds": 1e-3, "microbatches": 8, "microbatch": 1, "context": 2048, "batch_seqs": 64,
        "compute_efficiency": 0.5, "layer_overhead_seconds": 1e-5, "gpus": 8, "sharp": False,
        "ib_sharp": False, "rings": 2, "collective_bytes_per_s": 1e11, "oversubscription": 1.0,
        "nodes_per_leaf": 4, "value": 1e9, "unit": "", "text": "2", "top": 2, "latency_target_s": 0.05,
        "max_chips": 8, "batches": (1, 8), "prefix_hit_rate": 0.5, "tile_m": 128, "tile_n": 128,
        "spec_sheet_flops_per_s": 1e15, "pattern": "2:4", "n": 8e9, "policy": "none", "phase": "prefill",
        "dropout": False, "moe": None, "remat": "none", "family": "gpu", "role": "validation",
        "mfu": 0.4, "model_flops": 1e24, "bytes_per_param": 16, "fsdp_axes": 1, "tp_axes": 1,
        "chips_sharing": 1, "grad_dtype": "bf16", "param_dtype": "bf16", "first_moment_dtype": "fp32",
        "second_moment_dtype": "fp32", "master_dtype": "fp32", "out_dtype": "bf16", "comm_bytes": 0.0,
        "comm_link": "ici", "slices": 2, "names": None, "matrices": 2, "weight_bytes": 2.0,
        "activation_bytes": 2.0, "chip_hours": 1e6, "chips_to_hold": 1, "bidirectional_bytes_per_s": 2e11,
        "dp": 1, "fsdp": 8, "cp": 1, "sequence_parallel": False, "schedule": "1f1b", "zero": 0,
        "optimizer_dtype": "fp32", "tp_overlap": False, "reshard_after_forward": True,
        "activations": "bf16", "attention": "auto", "attention_weights": None, "layers": 32, "heads": 32,
        "kv_heads": 8, "vocab": 32000, "seqs": 64, "estimate": None, "answer": 1.0,
        "data": {"a": 1.5}, "columns": None, "fields": None, "result": None, "experts": 64, "group": 8,
        "node_bytes_per_s": 4e11, "gpu_bytes_per_s": 4.5e11, "model_parallel": 8, "gpus_per_node": 8,
    }


#: Where a parameter name means different things in different functions.
GOOD_FOR = {
    "units.parse_quantity": {"value": "1 GB"}, "units.parse_unit": {"text": "GB"},
    "units.format_quantity": {"unit": "B"}, "units.fmt_percent": {"fraction": 0.0072}, "hardware.chip": {"name": "h100"},
    "hardware.spec_row": {"c": "h100"}, "hardware.microarchitecture": {"name": "tpu-v5e"},
    "models.preset": {"name": "llama3-8b"}, "models.reported_training": {"name": "llama3-405b"},
    "models.from_spec": {"spec": "layers=2,d_model=64,heads=4,d_ff=256,vocab=1000"},
    "models.from_dict": {"fields": {"layers": 2, "d_model": 64, "heads": 4, "d_ff": 256, "vocab": 1000}},
    "models.Transformer": {"layers": 2, "d_model": 64, "heads": 4, "d_ff": 256, "vocab": 1000},
    "topology.Axis": {"name": "X", "size": 4, "link": "ici", "wraparound": True, "bytes_per_s": 1e11,
                      "one_way_bytes_per_s": 5e10},
    "topology.for_chips": {"chip": "tpu-v5p"}, "topology.slice": {"chip": "tpu-v5e"},
    "topology.multislice": {"chip": "tpu-v5e"}, "topology.published_shapes": {"chip": "tpu-v5e"},
    "topology.slice_sizes": {"chip": "tpu-v5e"}, "topology.for_mesh": {"chip": "tpu-v5e"},
    "topology.gpu_node": {"chip": "h100", "shape": None}, "topology.gpu_cluster": {"chip": "h100"},
    "collectives.label": {"kind": "all-gather"}, "sharding.format_axes": {"axes": ("X",)},
    "sharding.format_operand": {"name": "A", "dims": "IJ", "sharding": {"I": ("X",)}},
    "sharding.layout": {"array": "A[I_X, J]"}, "sharding.local_shape": {"array": "A[I_X, J]"},
    "sharding.plan": {"chip": "tpu-v5e"}, "transformer.format_count": {"n": 8e9},
    "transformer.activation_memory_saving": {"saved": ("layer input", "attention output")},
    "training.refit_default_efficiency": {"family": "gpu"}, "training.fit_runs": {"family": "gpu"},
    "training.fit_efficiency": {"target": 0.4}, "inference.refit_default_efficiency": {"family": "gpu"},
    "serving_results.fit_constants": {"family": "gpu"}, "serving_results.fit_efficiencies": {"family": "gpu"},
    "serving_results.results_with_role": {"role": "fit", "family": None}, "runs.runs_with_role": {"role": "fit"},
    "published.summarize": {"errors": (0.1, -0.2)}, "published.chip_family": {"chip": "h100"},
    "exercises.get": {"id": "1.1"}, "exercises.problems": {"chapter": None, "page": None},
    "exercises.answers.read_answer": {"value": 2.0, "unit": "ms"}, "exercises.answers.show": {"unit": "ms"},
    "exercises.answers.asks_for": {"unit": "ms"}, "notebook.fmt": {"value": 2.5, "unit": "ms"},
    "notebook.glue": {"name": "fuzz_value", "value": 2.5, "unit": "ms"}, "notebook.table": {"rows": [{"a": 1}]},
    "cli.flatten_axes": {"values": ["X,Y"]}, "cli.dumps": {"data": {"a": 1.5}}, "cli.table": {"rows": [{"a": 1}]},
    "cli.whole_number": {"text": "4"}, "cli.fraction": {"text": "0.5"}, "cli.fraction_or_zero": {"text": "0.5"},
    "inference_prose.listing": {"names": ["a", "b"]},
    "inference_prose.tight_target": {"met": 2, "missed": 1, "target": "50 ms"},
    "inference_prose.relative_change": {"new": 1.0, "old": 2.0},
    "inference_prose.pays": {"cost_new": 1.0, "cost_old": 2.0, "option": "speculation"},
    "inference_prose.gap_over_batches": {"gaps": [0.1, 0.2], "batches": [1, 8]},
    "inference_prose.speculation_under_load": {"speedup_small": 2.0, "speedup_large": 0.9, "large_batch": 64},
    "inference_prose.bound_cases": {"bounds": ["memory", "compute"]},
    "inference_prose.plan_reasons": {"pp": 1}, "inference_prose.speculation_break_even": {"batch": 16},
    "inference_prose.signed_percent": {"x": 0.1},
    "inference_prose.deviation": {"measured": 1.01, "reference": 1.0, "what": "the formula"},
    "inference_prose.goal_sentence": {"median": 0.1, "goal": 0.2, "gpu_median": 0.1, "tpu_median": 0.1},
    "inference_prose.error_directions": {"errors": [0.1, -0.1]},
    "inference_prose.firmer_ground": {"subset_median": 0.1, "family_median": 0.2},
    "rules_of_thumb.training.fsdp_tp_best_fsdp_degree": {"fsdp_axes": 2},
    "rules_of_thumb.inference.weight_stationary_2d_best_x": {"chips": 16},
    "rules_of_thumb.inference.weight_stationary_2d_comm_seconds": {"chips": 16, "x": None},
    "gpu_network.superpod": {"nodes": None}, "planner.candidates": {"remat": ("none",)},
    "planner.plan": {"remat": ("none",), "chips": 8, "batch_tokens": None},
    "training.estimate": {"batch_tokens": None, "chips": None, "topology": None, "efficiency": None},
    "serving.Speculation": {"draft_tokens": 4},
    "efficiency.quantisation": {"m": 1024, "k": 1024, "n": 1024},
    "efficiency.matmul_seconds": {"m": 1024, "k": 1024, "n": 1024, "eff_kernel": 0.8, "dtype_bytes": 2.0},
    "efficiency.attention_flops_per_s": {"chip": "h100", "kernel": "flash-attention-2", "matmul_flops_per_s": 6e14},
    "units.parse_quantity": {"value": 1e9, "unit": "B"},
    "sharding.format_operand": {"name": "A", "dims": ("I", "J"), "sharding": {"I": ("X",)}},
    "sharding.plan": {"chip": "tpu-v5e", "topology": None},
    "models.Transformer": {"layers": 2, "d_model": 64, "heads": 4, "kv_heads": 2, "d_ff": 256, "vocab": 1000,
                           "expert_d_ff": 128},
    "models.from_spec": {"spec": "llama3-8b"},
    "strategy.place": {"strategy": "_fsdp16"},
    "step.activation_bytes_per_token": {"flash": True},
    "step.score_elements": {"remat_forwards": 1, "dropout": True, "dtype_bytes": 2.0},
    "step.fsdp_backward_exposed": {"gather_seconds": 1e-3, "scatter_seconds": 2e-3, "compute_seconds": 5e-3,
                                   "prefetch": False},
    "training.estimate": {"chip": "h100", "chips": 8, "topology": None, "efficiency": None, "batch_tokens": None},
    "training.critical_batch_per_chip": {"chip": "h100", "chips": 8, "topology": None},
    "planner.plan": {"remat": ("none",), "chip": "h100", "chips": 8, "topology": None, "batch_tokens": None},
    "inference.mixed_step": {"e": "_serving", "prompts": 1.0},
    "inference.verify_step": {"e": "_serving", "tokens": 3},
    "inference.fit_efficiencies": {"chip": "h100", "decode": {"deployment": None, "batch": 1, "prompt_len": 128,
                                                              "output_len": 128},
                                   "prefill": {"deployment": None, "batch": 8, "prompt_len": 1024, "output_len": 1},
                                   "decode_seconds_per_token": 0.01, "prefill_batch_seconds": 0.5},
    "inference.refit_default_efficiency": {"family": "tpu"},
    "serving.plan_serving": {"weights": ("bf16",), "kv": ("bf16",), "max_chips": 4},
    "serving.plan_serving_for_targets": {"latency_targets_s": (0.05, 0.1), "weights": ("bf16",), "kv": ("bf16",),
                                         "max_chips": 4},
    "grading.notebooks_in": {"folder": "_folder"}, "grading.read_notebook": {"path": "_notebook"},
    "grading.page_of": {"nb": "_nb", "path": "01-rooflines.ipynb"}, "grading.solutions_in": {"nb": "_nb"},
    "grading.solution_cells": {"nb": "_nb"},
    "runs.published_run": {"id": "palm-540b-tpuv4"},
    "serving_results.published_serving_result": {"id": "palm-540b-tpuv4-decode-low-latency"},
    "serving_results.predict": {"result": "_published_serving"},
    "gpu_network.pipeline_min_layers_per_stage": {"link": "infiniband"},
    "published.simplifications": {"run": "_run", "estimate": None},
    "inference_prose.tight_target": {"met": ["h100"], "missed": ["a100"], "target": "50 ms"},
    "inference_prose.bound_cases": {"bounds": {"a": "memory", "b": "compute"}}, "inference.chips_to_hold": {"batch": 8, "context": 2048},
}
#: Alternatives tried in order when the first valid call is refused (a TPU-only or GPU-only call).
ALTERNATIVES = [{}, {"chip": "tpu-v5e"}, {"chip": "tpu-v5p"}, {"model": "llama3-8b"}]


#: Callables whose refusal is another exception by protocol (argparse types raise ArgumentTypeError).
PROTOCOL_ERRORS = {"cli.positive_number", "cli.whole_number", "cli.fraction", "cli.fraction_or_zero"}
#: Callables whose messages speak to a student about what was given, not to a programmer about a parameter.
STUDENT_FACING = {"exercises.answers.read_answer"}
#: Results that are inf by design, each with why (the property documents it).
INF_BY_DESIGN = {("roofline.op", "hbm_bytes", "0"): "an op that moves no bytes has infinite intensity",
                 ("memory_levels.roofline", "bytes_", "0"): "a transfer of no bytes has infinite intensity"}
#: Callables that pass a signed number through (a parser, a reader): a negative result is the input's.
SIGNED_RESULTS = {"units.parse_quantity", "exercises.answers.read_answer"}
#: Arguments that take an array of values as well as one (a sweep priced at once).
ARRAY_ARGS = {(f, a) for f in ("efficiency.quantisation", "efficiency.matmul_seconds") for a in ("m", "k", "n", "batch")}
#: A value that is valid for one callable though the rules below call it never valid, with why.
VALID_HERE = {("units.format_quantity", "value", "None"): "None formats as 'n/a' (a table's empty cell)",
              ("notebook.fmt", "value", "None"): "None formats as 'n/a' (a table's empty cell)",
              ("units.fmt_seconds", "value", "None"): "None formats as 'n/a'",
              ("units.fmt_bytes", "value", "None"): "None formats as 'n/a'",
              ("units.format_quantity", "value", "nan"): "NaN formats as 'n/a' (a missing value)",
              ("notebook.fmt", "value", "nan"): "NaN formats as 'n/a'",
              ("units.fmt_seconds", "value", "nan"): "NaN formats as 'n/a'",
              ("units.fmt_bytes", "value", "nan"): "NaN formats as 'n/a'",
              **{(f"units.{f}", a, v): f"{v} formats as 'n/a'" for f, a in (("fmt_number", "value"), ("fmt_count", "value"),
                                                                          ("fmt_percent", "fraction")) for v in ("None", "nan")},
              **{(f"units.{f}", a, v): "an infinity prints as '∞' (an intensity when no bytes move)"
                 for f, a in (("fmt_number", "value"), ("fmt_count", "value"), ("fmt_percent", "fraction")) for v in ("inf", "-inf")},
              ("inference_prose.speculation_break_even", "batch", "None"): "None: speculation never breaks even"}

#: Names of real-valued arguments that are quantities (never below zero); others (x, value, new) may be.
QUANTITY = re.compile(r"bytes|seconds|_per_s|flops|efficiency|rate|ratio|latency|_len|tokens|batch|chips|size|"
                      r"params|hours|oversubscription|_s$|bandwidth|capacity|width|mfu|cost")


class _Opaque:
    def __repr__(self) -> str:
        return "<object>"


NAN, INF = float("nan"), float("inf")
#: The bad values, each swapped in alone; the label names it in failure lists.
BAD = [("10**400", 10**400), ("-1", -1), ("0", 0), ("nan", NAN), ("inf", INF), ("-inf", -INF), ("1e300", 1e300),
       ("1e-300", 1e-300), ("True", True), ("'x'", "x"), ("None", None), ("array", np.array([1.0, 2.0])),
       ("[]", []), ("object()", _Opaque())]

#: Fields whose value may be below zero (a signed error or change).
SIGNED = re.compile(r"error|change|delta|diff|margin|slack|gain|saving|log|offset|signed|bias|median|mean|worst")


def _kind(value) -> str:
    if value is None:
        return "optional"
    if isinstance(value, (bool, np.bool_)):
        return "flag"
    if isinstance(value, (int, np.integer)):
        return "count"
    if isinstance(value, (float, np.floating)):
        return "real"
    if isinstance(value, str):
        return "text"
    if isinstance(value, (tuple, list)):
        return "sequence"
    return "object"


def _never_valid(label: str, value, good, param: inspect.Parameter) -> bool:
    """True when `value` can never be a valid `param` (whose valid example is `good`)."""
    kind = _kind(good)
    if label in ("10**400", "nan", "inf", "-inf", "object()"):
        return True
    if label == "None":
        return param.default is not None and "None" not in str(param.annotation)
    if kind == "optional":
        return label in ("array", "[]")
    if kind == "flag":
        return label != "True"
    if kind in ("count", "real"):
        if label in ("True", "'x'", "array", "[]"):
            return True
        if label == "-1":
            return kind == "count" or bool(QUANTITY.search(param.name))
        return label == "1e300" and kind == "count"
    if kind == "text":
        return label in ("-1", "0", "1e300", "1e-300", "True", "array", "[]")
    if kind == "sequence":
        return label in ("-1", "0", "1e300", "1e-300", "True")
    return label in ("-1", "0", "1e300", "1e-300", "True", "array", "[]")


class _Hang(BaseException):
    pass


def _alarm(signum, frame):
    raise _Hang()


@contextlib.contextmanager
def _time_limit(seconds: float):
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


_NONSENSE = re.compile(r"(?<![A-Za-z_])(inf|nan|-inf)(?![A-Za-z_])|\de\+\d\d", re.IGNORECASE)


def _bad_numbers(value, path: str = "result", depth: int = 0, seen=None) -> list[str]:
    """Paths in `value` that hold NaN, inf, a negative quantity or nonsense text."""
    seen = set() if seen is None else seen
    if depth > 4 or id(value) in seen:
        return []
    out: list[str] = []
    field = path.rsplit(".", 1)[-1]
    if isinstance(value, (bool, np.bool_)) or value is None:
        return []
    if isinstance(value, (int, float, np.integer, np.floating)):
        x = float(value) if not (isinstance(value, int) and abs(value) > 1e308) else INF
        if not math.isfinite(x):
            out.append(f"{path}={value!r}")
        elif x < 0 and not SIGNED.search(field):
            out.append(f"{path}={value!r}")
        return out
    if isinstance(value, str):
        return [f"{path}={value[:60]!r}"] if _NONSENSE.search(value) else []
    seen.add(id(value))
    if isinstance(value, np.ndarray):
        if value.dtype.kind in "fiu" and value.size:
            if not np.all(np.isfinite(value)):
                out.append(f"{path}: non-finite array entries")
            elif np.any(value < 0) and not SIGNED.search(field):
                out.append(f"{path}: negative array entries")
        return out
    if isinstance(value, dict):
        for k, v in list(value.items())[:50]:
            out += _bad_numbers(v, f"{path}.{k}", depth + 1, seen)
        return out
    if isinstance(value, (list, tuple)):
        for i, v in enumerate(value[:50]):
            out += _bad_numbers(v, f"{path}[{i}]", depth + 1, seen)
        return out
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        for f in dataclasses.fields(value):
            out += _bad_numbers(getattr(value, f.name), f"{path}.{f.name}", depth + 1, seen)
        if depth == 0:
            for name, attr in inspect.getmembers(type(value), lambda a: isinstance(a, property)):
                if not name.startswith("_"):
                    out += _bad_numbers(getattr(value, name), f"{path}.{name}", depth + 1, seen)
        return out
    return out


_LAZY_VALUES: dict = {}


def _lazy(value):
    """Objects of the table too costly or too stateful to build at import ('_serving', ...)."""
    if not (isinstance(value, str) and value.startswith("_")):
        return value
    if value not in _LAZY_VALUES:
        import json
        import pathlib
        import tempfile

        from scalebook import inference, models, runs, serving_results, strategy

        if value == "_serving":
            made = inference.estimate(models.preset("llama3-8b"), chip="h100", batch=8, prompt_len=1024, output_len=256)
        elif value == "_fsdp16":
            made = strategy.Strategy(fsdp=16)
        elif value == "_run":
            made = runs.published_run("palm-540b-tpuv4")
        elif value == "_published_serving":
            made = serving_results.published_serving_result("palm-540b-tpuv4-decode-low-latency")
        else:
            nb = {"cells": [{"cell_type": "code", "metadata": {}, "source": "answer = 1.0", "outputs": [],
                             "execution_count": None}],
                  "metadata": {"scalebook": {"page": "01-rooflines"}}, "nbformat": 4, "nbformat_minor": 5}
            folder = pathlib.Path(tempfile.mkdtemp(prefix="scalebook-fuzz-"))
            (folder / "01-rooflines.ipynb").write_text(json.dumps(nb))
            from scalebook import grading

            made = {"_folder": str(folder), "_notebook": str(folder / "01-rooflines.ipynb"),
                    "_nb": grading.read_notebook(folder / "01-rooflines.ipynb")}[value]
        _LAZY_VALUES[value] = made
    return _LAZY_VALUES[value]


def _good_call(name: str, fn) -> tuple[list[inspect.Parameter], dict] | None:
    """The parameters to fuzz and a valid keyword call, or None when the table cannot build one."""
    sig = inspect.signature(fn)
    params = [p for p in sig.parameters.values() if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
    good, special = _good(), GOOD_FOR.get(name, {})
    for alternative in ALTERNATIVES:
        kwargs = {}
        for p in params:
            if p.name in alternative and p.name not in special:
                kwargs[p.name] = alternative[p.name]
            elif p.name in special:
                kwargs[p.name] = _lazy(special[p.name])
            elif p.name in good:
                kwargs[p.name] = good[p.name]
            elif p.default is not p.empty:
                kwargs[p.name] = p.default
            else:
                return None
        start = time.perf_counter()
        try:
            with _time_limit(4 * LIMIT_S):
                _call(fn, params, kwargs)
        except (Exception, _Hang):
            continue
        return params, kwargs, time.perf_counter() - start
    return None


def _call(fn, params, kwargs):
    args = [kwargs[p.name] for p in params if p.kind == p.POSITIONAL_ONLY]
    kw = {k: v for k, v in kwargs.items() if k not in {p.name for p in params if p.kind == p.POSITIONAL_ONLY}}
    return fn(*args, **kw)


#: Where a message names the thing an argument stands for rather than the argument.
MESSAGE_NAMES = {"kind": ("collective",), "axes": ("axis",), "spec": ("operand", "preset", "model"), "idle": ("axis",), "array": ("operand",),
                 "text": ("unit",), "name": ("chip", "model"), "shape": ("mesh",), "path": ("notebook",)}


def _mentions(message: str, name: str) -> bool:
    m = message.lower()
    if any(word in m for word in MESSAGE_NAMES.get(name, ())):
        return True
    words = {name, name.rstrip("_"), name.replace("_", " "), name.replace("_", "-"), name.rstrip("_").replace("_", " ")}
    return any(w.lower() in m for w in words if w)


CALLABLES = _callables()


def fuzz(entries=CALLABLES, report: bool = False):
    """Run every swap; return the failures by kind (and, with `report`, the counts)."""
    failures = {"not Error": [], "message": [], "NaN/inf/negative": [], "accepted": [], "hang": [], "no valid call": []}
    calls = 0
    for name, fn in entries:
        built = _good_call(name, fn)
        if built is None:
            failures["no valid call"].append(name)
            continue
        params, kwargs, seconds = built
        limit = max(LIMIT_S, 5 * seconds)  # a fit over published runs takes a second or two by itself
        for p in params:
            for label, bad in BAD:
                if kwargs[p.name] is bad or (label == "None" and kwargs[p.name] is None):
                    continue
                trial = dict(kwargs, **{p.name: bad})
                where = f"{name}({p.name}={label})"
                calls += 1
                try:
                    with _time_limit(limit):
                        result = _call(fn, params, trial)
                except Error as e:
                    msg = str(e).strip()
                    if "\n" in msg or not (_mentions(msg, p.name) or name in STUDENT_FACING):
                        failures["message"].append(f"{where}: {msg[:120]!r}")
                    continue
                except _Hang:
                    failures["hang"].append(where)
                    continue
                except Exception as e:  # noqa: BLE001 - the point of the test
                    if name in PROTOCOL_ERRORS and type(e).__name__ == "ArgumentTypeError":
                        continue
                    failures["not Error"].append(f"{where}: {type(e).__name__}: {str(e)[:100]}")
                    continue
                try:
                    with _time_limit(LIMIT_S):
                        bad_paths = _bad_numbers(result)
                    if (name, p.name, label) in INF_BY_DESIGN:
                        bad_paths = [b for b in bad_paths if not b.endswith("=inf")]
                    if name in SIGNED_RESULTS:
                        bad_paths = [b for b in bad_paths if not b.startswith("result=-")]
                except _Hang:
                    bad_paths = ["result properties hang"]
                except Exception as e:  # noqa: BLE001
                    bad_paths = [f"reading the result raised {type(e).__name__}: {e}"]
                if bad_paths:
                    failures["NaN/inf/negative"].append(f"{where}: {bad_paths[0]}")
                elif (_never_valid(label, bad, kwargs[p.name], p) and (name, p.name, label) not in VALID_HERE
                      and not (label == "array" and (name, p.name) in ARRAY_ARGS)):
                    failures["accepted"].append(where)
    return (failures, calls) if report else failures


# --- The tests ------------------------------------------------------------------------------------

def test_the_fuzzer_reaches_the_public_api():
    names = {n for n, _ in CALLABLES}
    for expected in ("units.parse_quantity", "roofline.arithmetic_intensity", "topology.for_chips", "planner.plan",
                     "serving.Speculation", "strategy.Strategy", "inference.Deployment", "notebook.table",
                     "exercises.answers.number", "cli.table", "rules_of_thumb.training.training_days"):
        assert expected in names
    assert len(names) > 200


@pytest.fixture(scope="module")
def fuzzed():
    start = time.perf_counter()
    failures, calls = fuzz(report=True)
    return failures, calls, time.perf_counter() - start


def test_every_callable_has_a_valid_call_from_the_table(fuzzed):
    assert fuzzed[0]["no valid call"] == []


@pytest.mark.parametrize("kind", ["not Error", "message", "NaN/inf/negative", "accepted", "hang"])
def test_no_failures_of_kind(fuzzed, kind):
    found = fuzzed[0][kind]
    assert found == [], f"{len(found)} of {fuzzed[1]} calls:\n" + "\n".join(found[:40])


# --- The shared validators of scalebook.errors ----------------------------------------------------

@pytest.mark.parametrize("bad", [4.0, True, np.array([4]), "4", None], ids=["4.0", "True", "array", "str", "None"])
def test_a_count_is_an_int(bad):
    from scalebook.errors import require_count

    _refused(lambda: require_count("chips", bad), "chips", "positive integer")


def test_a_count_takes_a_numpy_int():
    from scalebook.errors import require_count

    assert require_count("chips", np.int64(8)) == 8 and type(require_count("chips", np.int64(8))) is int


def test_a_count_above_its_cap_is_refused_with_the_cap():
    from scalebook.errors import MAX_CHIPS, require_count

    assert require_count("chips", 10**7, maximum=MAX_CHIPS) == 10**7
    _refused(lambda: require_count("chips", 10**7 + 1, maximum=MAX_CHIPS), "chips", "at most 10,000,000")


def test_zero_is_a_count_where_the_minimum_allows_it():
    from scalebook.errors import require_count

    assert require_count("batch", 0, minimum=0) == 0
    _refused(lambda: require_count("batch", -1, minimum=0), "batch", ">= 0")


@pytest.mark.parametrize("bad", [1, 0, float("nan"), "yes", None, np.array([True])],
                         ids=["1", "0", "nan", "str", "None", "array"])
def test_a_flag_is_a_bool(bad):
    from scalebook.errors import require_flag

    _refused(lambda: require_flag("causal", bad), "causal", "True or False")


def test_a_numpy_bool_is_a_flag():
    from scalebook.errors import require_flag

    assert require_flag("causal", np.bool_(True)) is True


def test_a_number_above_1e30_is_refused_with_the_cap():
    from scalebook.errors import number

    assert number("flops", 1e30) == 1e30
    _refused(lambda: number("flops", 1.1e30), "flops", "at most 1e+30")


def test_a_positive_quantity_below_1e30_is_refused_with_the_floor():
    from scalebook.errors import require_non_negative, require_positive

    require_positive(seconds=1e-30), require_non_negative(seconds=0)
    _refused(lambda: require_positive(seconds=1e-31), "seconds", "at least 1e-30")
    _refused(lambda: require_non_negative(seconds=1e-31), "seconds", "at least 1e-30")


def test_require_finite_names_the_value():
    from scalebook.errors import require_finite

    require_finite(x=-2.5)
    _refused(lambda: require_finite(x=float("inf")), "x", "finite")


# --- The issue's reproducers (issue 21), one behaviour each -------------------------------------

def _refused(call, *names):
    """`call()` raises `scalebook.Error` whose one-line message names every one of `names`."""
    with pytest.raises(Error) as e:
        call()
    message = str(e.value)
    assert "\n" not in message.strip() and all(n in message for n in names), message


def _llama():
    from scalebook import models

    return models.preset("llama3-8b")


@pytest.mark.parametrize("call, name", [
    (lambda: scalebook.collectives.ring("all-gather", size=10**400, bytes_=1e9, one_way_bytes_per_s=1e11), "size"),
    (lambda: scalebook.gpu_network.all_to_all_seconds("h100", bytes_=1e9, gpus=10**400), "gpus"),
    (lambda: scalebook.inference.estimate(_llama(), chip="h100", batch=10**400, prompt_len=128, output_len=8), "batch"),
    (lambda: scalebook.serving.verify_cost_ratio(_llama(), chip="h100", deployment=scalebook.inference.Deployment(),
                                                 batch=8, prompt_len=128, output_len=8, draft_tokens=10**400),
     "draft_tokens"),
    (lambda: scalebook.planner.plan(_llama(), seq_len=10**400, batch_seqs=64, chip="h100", chips=8), "seq_len"),
    (lambda: scalebook.training.rule_of_thumb_batch_per_chip("tpu-v5p", tp=10**400), "tp"),
    (lambda: scalebook.memory_levels.host_transfer_seconds("h100", bytes_=1e9, chips=10**400), "chips"),
    (lambda: scalebook.topology.multislice("tpu-v5e", "4x4", slices=10**400), "slices"),
], ids=["collectives", "gpu_network", "inference", "serving", "planner", "training", "memory_levels", "topology"])
def test_an_integer_too_large_for_a_float_is_refused_by_name(call, name):
    _refused(call, name, "too large")


def test_a_deployment_refuses_a_degree_beyond_the_chip_cap():
    _refused(lambda: scalebook.inference.Deployment(tp=10**400), "tp", "10,000,000")


def test_a_strategy_refuses_a_degree_beyond_the_chip_cap():
    _refused(lambda: scalebook.strategy.Strategy(dp=10**400), "dp", "10,000,000")


def test_for_chips_refuses_a_huge_count_at_once():
    start = time.perf_counter()
    _refused(lambda: scalebook.topology.for_chips("tpu-v5p", chips=10**400), "chips")
    assert time.perf_counter() - start < 1


def test_plan_refuses_a_huge_top_at_once():
    start = time.perf_counter()
    _refused(lambda: scalebook.planner.plan(_llama(), seq_len=4096, batch_seqs=64, chip="h100", chips=8, top=2**60),
             "top", "10,000")
    assert time.perf_counter() - start < 1


@pytest.mark.parametrize("name", ["prompt_len", "output_len"])
@pytest.mark.parametrize("bad", ["1024", float("nan"), -1e300, True], ids=["str", "nan", "-1e300", "True"])
def test_serving_lengths_are_checked(name, bad):
    from scalebook import inference, serving

    kwargs = dict(chip="h100", deployment=inference.Deployment(), batch=8, prompt_len=128, output_len=8,
                  acceptance_rate=0.7, draft_tokens=4, draft_cost_ratio=0.1)
    _refused(lambda: serving.speculative_speedup(_llama(), **{**kwargs, name: bad}), name)


@pytest.mark.parametrize("bad", ["4", float("nan"), -1e300, True], ids=["str", "nan", "-1e300", "True"])
def test_draft_tokens_are_checked(bad):
    _refused(lambda: scalebook.serving.speculative_decoding(acceptance_rate=0.7, draft_tokens=bad,
                                                             draft_cost_ratio=0.1), "draft_tokens")


def test_plan_names_an_unknown_remat_policy():
    _refused(lambda: scalebook.planner.plan(_llama(), seq_len=4096, batch_seqs=64, chip="h100", chips=8,
                                            remat=("bogus",)), "remat", "none, selective, full")


def test_an_array_where_a_flag_is_expected_is_refused_by_name():
    _refused(lambda: scalebook.transformer.flops_per_token("llama3-8b", causal=np.array([1.0, 2.0])), "causal",
             "True or False")


def test_a_number_to_show_must_be_finite():
    _refused(lambda: scalebook.exercises.answers.number(float("nan")), "x", "finite")


def test_an_answer_to_show_must_be_finite():
    _refused(lambda: scalebook.exercises.answers.show(float("inf"), "ms"), "x", "finite")


def test_a_notebook_table_needs_rows_of_dicts():
    _refused(lambda: scalebook.notebook.table(5), "rows")


def test_a_cli_table_needs_rows_of_dicts():
    _refused(lambda: scalebook.cli.table([1, 2]), "rows")


def test_a_deployment_resolves_for_a_preset_name():
    from scalebook import inference, models

    by_name = inference.Deployment(tp=2).resolve("llama3-8b")
    assert by_name == inference.Deployment(tp=2).resolve(models.preset("llama3-8b"))


def test_page_of_needs_a_notebook():
    _refused(lambda: scalebook.grading.page_of(None, "x.ipynb"), "nb")


def test_an_intensity_over_a_tiny_byte_count_is_refused():
    _refused(lambda: scalebook.roofline.arithmetic_intensity(2e15, 1e-300), "bytes_", "1e-30")


def test_a_training_batch_beyond_any_run_is_refused():
    from scalebook import strategy, training

    _refused(lambda: training.estimate(_llama(), strategy=strategy.Strategy(fsdp=8), seq_len=4096, batch_tokens=1e300,
                                       chip="h100", chips=8), "batch_tokens", "too large")


@pytest.mark.parametrize("bad", [float("inf"), True], ids=["inf", "True"])
def test_superpod_oversubscription_must_be_a_finite_number(bad):
    _refused(lambda: scalebook.gpu_network.superpod(oversubscription=bad), "oversubscription")


@pytest.mark.parametrize("field, bad", [("acceptance_rate", float("nan")), ("draft_tokens", -1),
                                        ("draft_cost_ratio", float("inf"))])
def test_a_speculation_checks_its_fields(field, bad):
    kwargs = {"acceptance_rate": 0.7, "draft_tokens": 4, "draft_cost_ratio": 0.1, field: bad}
    _refused(lambda: scalebook.serving.Speculation(**kwargs), field)


def test_chips_to_hold_checks_the_batch_without_a_context():
    _refused(lambda: scalebook.inference.chips_to_hold(_llama(), chip="h100", batch="8", context=0), "batch")


def test_a_strategy_flag_must_be_a_bool():
    _refused(lambda: scalebook.strategy.Strategy(flash_attention=float("nan")), "flash_attention", "True or False")


@pytest.mark.parametrize("argv, flag", [
    (["train-estimate", "llama3-8b", "--chip", "h100", "--chips", "8", "--seq-len", "4096", "--batch-seqs", "1e300",
      "--fsdp", "8"], "--batch-seqs"),
    (["roofline", "op", "--chip", "h100", "--flops", "1e12", "--bytes", "1e-300"], "--bytes"),
], ids=["count-1e300", "bytes-1e-300"])
def test_the_cli_refuses_sizes_no_model_means(argv, flag):
    rc, out, err = _cli(argv)
    assert rc == 2 and flag in err and err.count("\n") == 1 and out == "", err


# --- The command line -----------------------------------------------------------------------------

#: One valid invocation per command; each flag's value is swapped for each bad value in turn.
CLI_VALID = {
    "specs": ["specs", "h100"],
    "roofline": ["roofline", "op", "--chip", "h100", "--flops", "1e12", "--bytes", "1e9"],
    "model": ["model", "llama3-8b", "--seq-len", "4096"],
    "collective": ["collective", "all-gather", "--chip", "tpu-v5e", "--topology", "4x4", "--axes", "X",
                   "--bytes", "1e9", "--hop-latency", "1e-6"],
    "shard_matmul": ["shard-matmul", "A[I_X, J] @ B[J, K_Y] -> C[I_X, K_Y]", "--mesh", "X=2,Y=2",
                     "--dims", "I=1024,J=512,K=256", "--chip", "tpu-v5e"],
    "train_estimate": ["train-estimate", "llama3-8b", "--chip", "h100", "--chips", "8", "--seq-len", "4096",
                       "--batch-seqs", "64", "--fsdp", "8"],
    "plan": ["plan", "llama3-8b", "--chip", "h100", "--chips", "8", "--seq-len", "4096", "--batch-seqs", "64",
             "--top", "2"],
    "serve_estimate": ["serve-estimate", "llama3-8b", "--chip", "h100", "--prompt-len", "1024", "--output-len",
                       "256", "--batch", "8", "--chips", "1"],
    "plan_serving": ["plan-serving", "llama3-8b", "--chip", "h100", "--prompt-len", "1024", "--output-len", "256",
                     "--latency-ms", "50", "--max-chips", "8", "--top", "2"],
}
CLI_BAD = ["nan", "inf", "-inf", "1e400", "abc", "-1", "0", "1e300", "1e-300", "", "True"]
CLI_NEVER = {"nan", "inf", "-inf", "1e400", "abc", "", "True"}


def _cli(argv):
    from scalebook import cli

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            with _time_limit(4 * LIMIT_S):
                rc = cli.main(argv)
        except SystemExit as e:
            rc = e.code
    return rc, out.getvalue(), err.getvalue()


def _flag_values(name: str) -> list[tuple[str, str]]:
    """(flag, a valid value) for every value-taking option of the subcommand, from its parser."""
    from scalebook import cli

    parser = cli.build_parser()
    sub = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    command = CLI_VALID[name][0]
    p = sub.choices[command]
    if name == "roofline":
        p = next(a for a in p._actions if a.__class__.__name__ == "_SubParsersAction").choices["op"]
    argv = CLI_VALID[name]
    out = []
    for action in p._actions:
        if not action.option_strings or action.nargs == 0 or action.dest == "help":
            continue
        flag = max(action.option_strings, key=len)
        given = argv[argv.index(flag) + 1] if flag in argv else None
        out.append((flag, given))
    return out


def _cli_failures(name: str) -> list[str]:
    problems = []
    for flag, given in _flag_values(name):
        for bad in CLI_BAD:
            argv = list(CLI_VALID[name])
            if flag in argv:
                argv[argv.index(flag) + 1] = bad
            else:
                argv += [flag, bad]
            try:
                rc, out, err = _cli(argv)
            except _Hang:
                problems.append(f"{flag} {bad!r}: hangs")
                continue
            except Exception as e:  # noqa: BLE001
                problems.append(f"{flag} {bad!r}: raised {type(e).__name__}: {e}")
                continue
            if "Traceback" in err or rc not in (0, 2):
                problems.append(f"{flag} {bad!r}: rc {rc}, {err[-200:]!r}")
            elif rc == 2 and (err.count("\n") != 1 or not err.startswith("scalebook: error:")):
                problems.append(f"{flag} {bad!r}: stderr not one line: {err[:200]!r}")
            elif rc == 0 and _NONSENSE.search(out):
                problems.append(f"{flag} {bad!r}: nonsense output {_NONSENSE.search(out).group(0)!r}")
            elif rc == 0 and bad in CLI_NEVER:
                problems.append(f"{flag} {bad!r}: accepted")
    return problems


def test_every_command_is_fuzzed():
    from scalebook import cli

    # grade and measure: their one numeric flag is driven below, before anything runs; models takes no flags
    assert set(cli.COMMAND_MODULES) - {"grade", "measure", "models"} == set(CLI_VALID)
    for argv in CLI_VALID.values():
        assert _cli(argv)[0] == 0, argv


@pytest.mark.parametrize("argv", [["measure", "--repeats"], ["grade", "/nonexistent/01-rooflines.ipynb", "--timeout"]],
                         ids=["measure", "grade"])
def test_the_timing_and_grading_commands_refuse_bad_flag_values_before_running(argv):
    """Every bad value is refused while the flags are read: nothing is timed or executed."""
    for bad in CLI_BAD:
        rc, out, err = _cli([*argv, bad])
        assert rc == 2 and err.count("\n") == 1 and err.startswith("scalebook: error:"), (bad, err)


@pytest.mark.parametrize("name", sorted(CLI_VALID))
def test_bad_flag_values_exit_2_with_one_line(name):
    problems = _cli_failures(name)
    assert problems == [], "\n".join(problems[:30])


if __name__ == "__main__":  # a report: counts by kind and the run time (arguments: name prefixes to fuzz)
    import sys

    prefixes = tuple(sys.argv[1:]) or ("",)
    start = time.perf_counter()
    failures, calls = fuzz([(n, f) for n, f in CALLABLES if n.startswith(prefixes)], report=True)
    for kind, found in failures.items():
        print(f"{kind}: {len(found)}")
        for line in found:
            print("   ", line)
    cli_problems = {n: _cli_failures(n) for n in CLI_VALID if "cli" in prefixes or prefixes == ("",)}
    print("CLI:", sum(map(len, cli_problems.values())))
    for n, found in cli_problems.items():
        for line in found:
            print("   ", n, line)
    print(f"{calls} calls in {time.perf_counter() - start:.1f} s")
