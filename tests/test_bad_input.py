"""The error promise: bad input to any public function raises `scalebook.Error`, nothing else.

Public functions are discovered, not listed: every function defined in a public module of
`scalebook` (the modules named in `scalebook._LAZY` plus the core ones), taken from the module's
`__all__` when it has one, else every public name defined there. Each parameter gets values drawn
from a pool chosen by its name and annotation: some valid (a preset model, a chip name, a small
topology), most bad (bools, NaN, inf, -1, 0, 10**400, numpy arrays, strings, None, containers).
A call may succeed or raise `scalebook.Error`; any other exception fails the test. So a new
public function written by anyone is covered without touching this file.

Excluded are functions that compile or run JAX programs, execute notebooks, time hardware or
change process state (the list below, each named with why); their cheap argument checks are
covered through the cost models they call.
"""
from __future__ import annotations

import importlib
import inspect
import math
import types

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import scalebook
from scalebook import Error

# Modules whose functions run code we do not want a fuzzer to run: JAX compilation and execution,
# timing loops, notebook execution, figures. Their pure helpers are listed in ALSO_DRIVEN.
_HEAVY_MODULES = {"xla", "jax_layer", "jax_training", "jax_decode", "jax_collectives", "measure",
                  "profile", "grading", "plots", "notebook", "cli"}
#: Pure functions (text in, numbers out) of the heavy modules, driven like the rest.
ALSO_DRIVEN = {
    "xla": ("sent_bytes_per_device", "parse_replica_groups", "group_axes", "collectives_in_hlo"),
    "jax_collectives": ("ring_split", "ring_steps", "ring_holdings", "ring_cost", "collective_matmul_cost",
                        "hiding_width", "global_shapes"),
    "jax_decode": ("cache_shape", "predicted_decode", "predicted_prefill_flops"),
    "profile": ("hlo_ops", "hlo_instruction", "fusions", "categorize", "parse_trace"),
    "measure": ("chip_for_device",),
}
#: Internal plumbing that is public by name but takes pre-validated arrays from other modules.
NOT_DRIVEN = {"step.stack", "step.price", "step.evaluate", "step.describe", "training.arrays",
              "planner.evaluate_all", "runs.from_entry",
              # forwards **kwargs to training.estimate, which is driven itself
              "training.fit_efficiency"}


def _public_modules() -> list[str]:
    names = ["units", "hardware", "roofline", *scalebook._LAZY]
    return [n for n in dict.fromkeys(names) if n not in _HEAVY_MODULES or n in ALSO_DRIVEN]


def _public_functions() -> list[tuple[str, object]]:
    found = []
    for modname in _public_modules():
        mod = importlib.import_module(f"scalebook.{modname}")
        names = getattr(mod, "__all__", None) or [n for n in vars(mod) if not n.startswith("_")]
        for name in names:
            fn = getattr(mod, name, None)
            if not isinstance(fn, types.FunctionType) or fn.__module__ != mod.__name__:
                continue
            if modname in ALSO_DRIVEN and modname in _HEAVY_MODULES and name not in ALSO_DRIVEN[modname]:
                continue
            if f"{modname}.{name}" in NOT_DRIVEN:
                continue
            found.append((f"{modname}.{name}", fn))
    return found


FUNCTIONS = _public_functions()

class _Opaque:
    def __repr__(self) -> str:
        return "<opaque object>"


# Bad values of every kind; each must be refused (or, where it happens to be valid, accepted).
BAD_SCALARS = [None, True, False, float("nan"), float("inf"), -float("inf"), -1, 0, -1e300, 10**400,
               1e308, 0.5, np.float64("nan"), np.int64(-3), np.array([1.0, 2.0]), np.array(4.0)]
BAD_OTHER = ["abc", "", "1 GB", "-1", "nan", [], [1, "x"], {}, {"x": -1}, (), _Opaque(), b"bytes"]
bad = st.sampled_from(BAD_SCALARS + BAD_OTHER)


def _valid_pool(name: str):
    """A few valid values for a parameter, by its name, so later checks are reached too."""
    from scalebook import inference, models, strategy, topology

    n = name.lower()
    if n == "model":
        return [models.preset("llama3-8b"), models.preset("mixtral-8x7b"), "llama3-8b"]
    if n in ("chip", "c"):
        return ["h100", "tpu-v5e", "tpu-v5p"]
    if n == "topology":
        return [topology.slice("tpu-v5e", "4x4"), topology.gpu_node("h100")]
    if n == "strategy":
        return [strategy.Strategy(dp=2, tp=2), strategy.Strategy(fsdp=4)]
    if n in ("deployment", "prefill", "decode", "d"):
        return [inference.Deployment(tp=2), inference.Deployment()]
    if "dtype" in n or n in ("weights", "kv"):
        return ["bf16", "fp8", "int8"]
    if n in ("kind",):
        return ["all-gather", "all-reduce", "collective-permute"]
    if n in ("axes", "axis", "group"):
        return ["X", ("X", "Y")]
    if n in ("link",):
        return ["ici", "hbm", "dcn"]
    if n in ("mesh", "mesh_shape", "dims"):
        return [{"X": 2, "Y": 2}]
    if n in ("hlo", "text", "spec", "name", "id", "family", "path", "value", "unit"):
        return ["bd,df->bf", "X", "1 GB"]
    return [1, 2, 8, 64, 0.25]


def _arg(param: inspect.Parameter):
    return st.one_of(bad, st.sampled_from(_valid_pool(param.name)))


def _call_strategy(fn):
    sig = inspect.signature(fn)
    pos, kw = [], {}
    for p in sig.parameters.values():
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        required = p.default is p.empty
        value = _arg(p) if required else st.one_of(st.just(inspect.Parameter.empty), _arg(p))
        if p.kind == p.POSITIONAL_ONLY:
            pos.append(value)
        else:
            kw[p.name] = value
    return st.tuples(st.tuples(*pos), st.fixed_dictionaries(kw))


def test_discovery_finds_the_public_api():
    names = {n for n, _ in FUNCTIONS}
    assert len(names) > 100
    for expected in ("units.parse_quantity", "roofline.matmul", "collectives.cost", "sharding.plan",
                     "transformer.kv_cache", "inference.estimate", "exercises.check", "xla.parse_replica_groups"):
        assert expected in names
    for mod, fns in ALSO_DRIVEN.items():  # the allow-list does not rot silently
        for fn in fns:
            assert callable(getattr(importlib.import_module(f"scalebook.{mod}"), fn)), f"{mod}.{fn}"


@pytest.mark.parametrize("name, fn", FUNCTIONS, ids=[n for n, _ in FUNCTIONS])
@settings(max_examples=30, deadline=None, derandomize=True, database=None,
          suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_bad_input_raises_only_scalebook_error(name, fn, data):
    args, kwargs = data.draw(_call_strategy(fn))
    kwargs = {k: v for k, v in kwargs.items() if v is not inspect.Parameter.empty}
    try:
        fn(*args, **kwargs)
    except Error as e:
        message = str(e)
        assert message and "\n" not in message.strip(), f"{name}: the message is not one line: {message!r}"


def test_the_number_check_names_each_kind_of_bad_value():
    from scalebook.errors import integer, number

    for value, words in [(True, "must be a number"), ("3", "must be a number"), (math.nan, "finite"),
                         (math.inf, "finite"), (10**400, "too large"), (np.array([1.0]), "must be a number")]:
        with pytest.raises(Error, match=words):
            number("size", value)
    assert number("size", np.float32(2.5)) == 2.5
    assert integer("chips", 4.0) == 4 and integer("chips", np.int64(8)) == 8
    with pytest.raises(Error, match="whole number"):
        integer("chips", 2.5)
    with pytest.raises(Error, match=">= 1"):
        integer("chips", 0)


# --- The command line: bad values for every flag exit 2 with one line, JSON stays standard. ---

#: One valid invocation per command; the test swaps one flag's value at a time for a bad one.
#: (`grade` executes notebooks and `measure` times the device: their own tests cover them.)
CLI_VALID = {
    "specs": ["specs", "h100"],
    "roofline": ["roofline", "op", "--chip", "h100", "--flops", "1e12", "--bytes", "1e9"],
    "models": ["models"],
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
BAD_FLAG_VALUES = ["nan", "inf", "-inf", "-1", "-1e12", "0", "1e400", "abc", "", "1,000", "True", "1 GB", "2.5",
                   "9" * 400]


def _cli(argv):
    import contextlib
    import io

    from scalebook import cli

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            rc = cli.main(argv)
        except SystemExit as e:  # --help exits through argparse
            rc = e.code
    return rc, out.getvalue(), err.getvalue()


def test_every_command_has_a_valid_invocation_here():
    from scalebook import cli

    assert set(cli.COMMAND_MODULES) - {"grade", "measure"} == set(CLI_VALID)
    for name, argv in CLI_VALID.items():
        rc, out, err = _cli([*argv, "--json"] if name not in ("models", "specs") else argv)
        assert rc == 0, (name, err)


def _value_flags(argv):
    return [i for i, a in enumerate(argv) if a.startswith("--") and i + 1 < len(argv) and not argv[i + 1].startswith("--")]


@pytest.mark.parametrize("name", sorted(CLI_VALID))
@settings(max_examples=15, deadline=None, derandomize=True, database=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_a_bad_flag_value_exits_2_with_one_line(name, data):
    argv = list(CLI_VALID[name])
    flags = _value_flags(argv)
    if not flags:
        return
    i = data.draw(st.sampled_from(flags))
    argv[i + 1] = data.draw(st.sampled_from(BAD_FLAG_VALUES))
    rc, out, err = _cli(argv)
    assert rc in (0, 2), (argv, rc, err)
    if rc == 2:
        assert err.count("\n") == 1 and err.startswith("scalebook: error:") and "Traceback" not in err, err


def test_negative_numbers_are_read_as_numbers_and_refused_by_name():
    rc, _, err = _cli(["roofline", "op", "--chip", "h100", "--flops", "-1e12", "--bytes", "1e9"])
    assert rc == 2 and "--flops" in err and "'-1e12'" in err


def test_units_are_read_where_the_flag_has_one():
    rc, out, _ = _cli(["roofline", "op", "--chip", "h100", "--flops", "2 TFLOP", "--bytes", "1 GB", "--json"])
    import json

    data = json.loads(out)
    assert rc == 0 and data["flops"] == 2e12 and data["hbm_bytes"] == 1e9
    rc, _, err = _cli(["model", "llama3-8b", "--seq-len", "4 GB"])  # a count takes no unit
    assert rc == 2 and "--seq-len" in err


@pytest.mark.parametrize("axes", [["--axes", "X", "Y"], ["--axes", "X,Y"], ["--axes", "X", "--axes", "Y"]])
def test_three_ways_to_name_two_axes_mean_the_same(axes):
    import json

    rc, out, err = _cli(["collective", "all-gather", "--chip", "tpu-v5e", "--topology", "4x4", "--bytes", "1e9",
                         *axes, "--json"])
    assert rc == 0, err
    assert json.loads(out)["axes"] == ["X", "Y"] and json.loads(out)["group_size"] == 16


def test_json_output_maps_non_finite_numbers_to_null():
    import json

    from scalebook.cli import dumps

    text = dumps({"a": float("inf"), "b": [float("nan"), 1.5], "c": np.float64("inf"), "d": np.float32(2.0)})
    assert "Infinity" not in text and "NaN" not in text
    assert json.loads(text) == {"a": None, "b": [None, 1.5], "c": None, "d": 2.0}


def test_a_closed_stdout_ends_quietly():
    import subprocess
    import sys

    p = subprocess.run(f"{sys.executable} -m scalebook.cli specs | head -1", shell=True, capture_output=True,
                       text=True, timeout=120)
    assert p.returncode == 0 and p.stderr == "" and p.stdout.startswith("chip")
