#!/usr/bin/env python3
"""Calculon and scalebook side by side on the published GPU runs Calculon can express (issue 18).

Calculon (Isaev et al., SC'23, `isaev2023calculon`; github.com/calculon-ai/calculon) is an
analytical model of Megatron-style training: tensor, pipeline and data parallelism on GPUs with
an NVLink tier and an InfiniBand tier. This script translates every run of
`scalebook.runs.published_runs()` that Calculon can express into Calculon's three JSON inputs
(application, execution, system), runs Calculon's `Llm` model on them, and prints one Markdown
table: reported tokens/s per GPU, Calculon's prediction and error, scalebook's
(`scalebook.published._compare`) and a summary of |error| (median, mean, max) for each model on
the runs both score: validation rows, all rows, and the rows where Calculon's memory check passes.
The runs it leaves out are listed with the reason. `benchmarks/calculon.md` holds a measured table.

Calculon is not on PyPI and nothing is downloaded here: export its source yourself and pass its
directory with `--calculon PATH` (or `$CALCULON_PATH`). Without one the script prints how and
exits 0 (it is an optional step of `make bench`). Calculon's package imports pandas and psutil
(for its search commands only); if the Python running this script lacks them, give a Python that
has them with `--calculon-python` (or `$CALCULON_PYTHON`), for example a throwaway venv:

    python -m venv /tmp/calculon-venv && /tmp/calculon-venv/bin/pip install numpy pandas psutil
    git --git-dir=CALCULON.git archive HEAD | tar -x -C /tmp/calculon
    python benchmarks/calculon_side_by_side.py --calculon /tmp/calculon \\
        --calculon-python /tmp/calculon-venv/bin/python \\
        --calculon-commit $(git --git-dir=CALCULON.git rev-parse HEAD)

The Calculon commit is read from the directory when it is a git work tree, else from
`--calculon-commit` (or `$CALCULON_COMMIT`); the output names it, and scalebook's commit.

How a run becomes Calculon's input (`calculon_inputs`), on the same inputs scalebook uses:

- application: hidden = d_model, feedforward = d_ff, attn_heads, attn_size = head_dim,
  num_blocks = layers, seq_size = the run's sequence length. Calculon has no embedding, LM head
  or vocabulary, and always has biases and dropout.
- execution: num_procs, tensor_par, pipeline_par, data_par as published; TP on network tier 0
  (NVLink), PP and DP on tier 1 (InfiniBand); batch_size = global batch in sequences;
  microbatch_size as scalebook resolves an unstated one (1 with pipelining, else the whole
  replica batch); datatype 'float16' (the system files price only float16; A100 and H100 have
  the same bf16 and fp16 tensor-core peaks); remat full -> 'full', selective -> 'attn_only',
  none or unstated -> 'none'; sequence parallelism -> tensor_par_comm_type 'rs_ag' with
  seq_par_ag_redo unless remat is full (Megatron's sequence-parallel backward gathers the layer
  input again; Calculon's own Megatron validation inputs set it so), else 'ar';
  pipeline_interleaving = virtual stages; optimizer_sharding = ZeRO stage 1 or 2 with DP > 1
  (Calculon shards optimizer state and weight gradients over DP); tensor_par_overlap 'none';
  fused_activation false (as in Calculon's validation inputs); data_par_overlap per source
  (`DP_OVERLAP`); no offloading.
- attention: multihead when kv_heads == heads; 'multiquery' when kv_heads == 1, or when
  kv_heads == TP degree (each TP rank then holds one K and one V head, which is exactly what
  Calculon's multiquery layers price per rank: hidden x attn_size projections not split by TP).
- system: Calculon's shipped `systems/a100_80g.json` or `systems/h100_80g_nvl8.json`, read from
  the Calculon directory (not copied here).

Left out (`exclusion`): TPUs and GPUs without a Calculon system file; ZeRO-3/FSDP (Calculon
shards no weights); context parallelism; MoE or expert parallelism; gated MLPs (Calculon's MLP
block is two matmuls around one activation); GQA that is neither MHA, MQA nor one KV head per TP
rank; runs that report no speed.

Calculon raises when memory does not fit (`Llm._check_mem_caps`) after computing the time; the
script keeps the time, and the table marks those rows ("mem x").
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from scalebook import Error, units  # noqa: E402
from scalebook.runs import PublishedRun, published_runs  # noqa: E402

#: Calculon's shipped system file for each scalebook chip it can express.
SYSTEM_FILES = {"a100": "a100_80g.json", "h100": "h100_80g_nvl8.json"}

#: Whether the data-parallel gradient reduction overlaps the backward pass, per source, and why.
DP_OVERLAP = {
    "narayanan2021megatron": (False, "Megatron-LM 2021 all-reduces gradients after the backward pass"),
    "korthikanti2022activation": (False, "Megatron-LM 2022: gradient all-reduce after the backward pass"),
    "smith2022mtnlg": (False, "DeepSpeed pipeline engine: gradient all-reduce after the pipeline flush"),
    "jiang2024megascale": (False, "Megatron-LM baseline: not stated, its overlap_grad_reduce defaults off"),
    "nvidia2024dgxcnemotron": (True, "NeMo config overlaps gradient reduction (overlap_grad_reduce)"),
    "mosaicml2024llmfoundry": (True, "PyTorch DDP/ZeRO-2 reduces gradient buckets during the backward pass"),
}

_REMAT = {"full": "full", "selective": "attn_only", "none": "none", None: "none"}


@dataclass(frozen=True)
class CalculonInputs:
    """Calculon's inputs for one run: its application and execution JSON, the system file's name,
    and what the translation had to approximate."""

    application: dict
    execution: dict
    system_file: str
    approximations: tuple[str, ...] = field(default=())


def exclusion(run: PublishedRun) -> str | None:
    """Why Calculon cannot express `run` (None when it can)."""
    model = run.model_config()
    if run.chip.startswith("tpu"):
        return "TPU: Calculon models GPU systems (an NVLink tier and an InfiniBand tier)"
    if run.chip not in SYSTEM_FILES:
        return f"no Calculon system file for {run.chip}"
    if run.fsdp > 1:
        return "ZeRO-3/FSDP: Calculon shards optimizer state and gradients over DP, never the weights"
    if run.cp > 1:
        return "context parallelism: Calculon splits the sequence only inside TP (sequence parallelism)"
    if run.ep > 1 or model.routed_experts:
        return "MoE: Calculon's block has one dense MLP"
    if model.mlp != "plain":
        return f"{model.mlp} MLP: Calculon's MLP block is two matmuls around one activation"
    if model.kv_heads not in (model.heads, 1, run.tp):
        return (f"GQA with {model.kv_heads} KV heads on TP {run.tp}: Calculon has multihead and multiquery "
                "attention only")
    if run.reported_tokens_per_s_per_chip() is None:
        return "reports no speed that converts to tokens/s"
    return None


def _microbatch(run: PublishedRun) -> int:
    """Sequences per microbatch as scalebook resolves an unstated one (`scalebook.training`)."""
    if run.microbatch is not None:
        return run.microbatch
    return 1 if run.pp > 1 else run.batch_seqs // run.dp


def calculon_inputs(run: PublishedRun) -> CalculonInputs:
    """The run as Calculon's application and execution JSON, and its system file (module docstring).

    Raises `scalebook.Error` when Calculon cannot express the run (`exclusion`).
    """
    reason = exclusion(run)
    if reason:
        raise Error(f"run {run.id!r} is not expressible in Calculon: {reason}")
    m = run.model_config()
    notes = ["no embedding or LM head in Calculon"]
    if m.kv_heads == m.heads:
        attention = "multihead"
    else:
        attention = "multiquery"
        if m.kv_heads != 1:
            notes.append(f"{m.kv_heads} KV heads on TP {run.tp} priced as multiquery (one KV head per TP rank)")
    if run.flash_attention:
        notes.append("flash attention: Calculon materialises the attention scores")
    if not m.biases:
        notes.append("Calculon adds biases the model does not have")
    remat = _REMAT[run.remat]
    sp = bool(run.sequence_parallel)
    dp_overlap, _why = DP_OVERLAP.get(run.source, (False, "not stated"))
    application = {
        "hidden": m.d_model,
        "feedforward": m.d_ff,
        "seq_size": run.seq_len,
        "attn_heads": m.heads,
        "attn_size": m.head_dim,
        "num_blocks": m.layers,
    }
    execution = {
        "num_procs": run.chips,
        "tensor_par": run.tp,
        "pipeline_par": run.pp,
        "data_par": run.dp,
        "tensor_par_net": 0,
        "pipeline_par_net": 1,
        "data_par_net": 1,
        "batch_size": run.batch_seqs,
        "microbatch_size": _microbatch(run),
        "datatype": "float16",
        "fused_activation": False,
        "attention_type": attention,
        "activation_recompute": remat,
        "pipeline_interleaving": run.virtual_stages or 1,
        "optimizer_sharding": bool(run.zero) and run.dp > 1,
        "tensor_par_comm_type": "rs_ag" if sp else "ar",
        "tensor_par_overlap": "none",
        "seq_par_ag_redo": sp and remat != "full",
        "data_par_overlap": dp_overlap and run.dp > 1,
        "weight_offload": False,
        "activations_offload": False,
        "optimizer_offload": False,
        "training": True,
    }
    return CalculonInputs(application=application, execution=execution, system_file=SYSTEM_FILES[run.chip],
                          approximations=tuple(notes))


# Runs inside Calculon's Python: reads [{id, application, execution, system_path}] on stdin, writes
# one JSON result per run. Calculon's `Llm.run` computes the time, then raises Llm.Error when memory
# does not fit; the time is kept and the memory flag set.
_DRIVER = r"""
import json, logging, sys
sys.path.insert(0, sys.argv[1])
try:
    import calculon
    from calculon.llm import Llm
except ModuleNotFoundError as exc:
    print(json.dumps({"import_error": str(exc)}))
    sys.exit(0)
log = logging.getLogger("calculon")
out = []
for job in json.load(sys.stdin):
    syst = calculon.System({**calculon.io.read_json_file(job["system_path"]), **job.get("system_overrides", {})})
    model = Llm(Llm.Application(job["application"]), log)
    result = {"id": job["id"], "error": "", "memory_ok": True}
    try:
        model.compile(syst, Llm.Execution.from_json(job["execution"]))
        model.run(syst)
    except (Llm.Error, AssertionError) as exc:
        result["error"] = " ".join(str(a) for a in getattr(exc, "args", ())) or type(exc).__name__
        if not result["error"].startswith("Mem tier"):
            out.append(result)
            continue
        result["memory_ok"] = False
    result.update(
        total_s=model.get_total_time(), fw_s=model.get_fw_time(), bw_s=model.get_bw_time(),
        optim_s=model.get_optim_step_time(), recompute_s=model.get_recompute_time(),
        recomm_s=model.get_recomm_exposed_time(), bubble_s=model.get_bubble_time(),
        tp_s=model.get_tp_comm_exposed_time(), pp_s=model.get_pp_comm_exposed_time(),
        dp_s=model.get_dp_comm_exposed_time(), mem_bytes=model.get_mem_tier1_cap_req(),
        mem_capacity_bytes=syst.mem1.capacity)
    out.append(result)
print(json.dumps(out))
"""


def run_calculon(calculon_path: Path, python: str, jobs: list[dict]) -> list[dict]:
    """Calculon's results for `jobs` (one subprocess of `python` for all of them)."""
    proc = subprocess.run([python, "-c", _DRIVER, str(calculon_path)], input=json.dumps(jobs),
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"Calculon failed:\n{proc.stderr[-2000:]}")
    data = json.loads(proc.stdout.strip().splitlines()[-1])
    if isinstance(data, dict) and "import_error" in data:
        raise SystemExit(f"Calculon does not import with {python}: {data['import_error']}. Its package imports "
                         "numpy, pandas and psutil; install them in a throwaway venv and pass its python with "
                         "--calculon-python (or $CALCULON_PYTHON).")
    return data


def _git_commit(path: Path) -> str | None:
    """HEAD of `path` when `path` is the top of a git work tree (marked when it has local changes)."""
    def git(*args: str) -> str | None:
        proc = subprocess.run(["git", "-C", str(path), *args], capture_output=True, text=True)
        return proc.stdout.strip() if proc.returncode == 0 else None

    top = git("rev-parse", "--show-toplevel")
    if top is None or Path(top).resolve() != path.resolve():
        return None  # not a work tree, or a directory inside another repository
    head = git("rev-parse", "HEAD")
    return head and head + (" (with local changes)" if git("status", "--porcelain") else "")


def _signed(err: float | None) -> str:
    return "n/a" if err is None else units.fmt_percent(err, 1, signed=True)


def _summary_line(name: str, errors: list[float]) -> str:
    if not errors:
        return f"| {name} | 0 | n/a | n/a | n/a |"
    mags = [abs(e) for e in errors]
    return (f"| {name} | {len(mags)} | {units.fmt_percent(statistics.median(mags), 1)} | "
            f"{units.fmt_percent(statistics.fmean(mags), 1)} | {units.fmt_percent(max(mags), 1)} |")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calculon", default=os.environ.get("CALCULON_PATH"),
                        help="directory of Calculon's source (default: $CALCULON_PATH)")
    parser.add_argument("--calculon-python", default=os.environ.get("CALCULON_PYTHON", sys.executable),
                        help="Python that imports Calculon (default: $CALCULON_PYTHON, else this one)")
    parser.add_argument("--calculon-commit", default=os.environ.get("CALCULON_COMMIT"),
                        help="Calculon's commit when PATH is not a git work tree (default: $CALCULON_COMMIT)")
    parser.add_argument("--processing-mode", choices=("no_overlap", "roofline"),
                        help="sensitivity: override the system files' processing_mode (Calculon's own: no_overlap, "
                             "compute time plus memory time per layer; roofline: the larger of the two)")
    parser.add_argument("--tp-overlap", choices=("none", "ring", "pipe"), default="none",
                        help="sensitivity: Calculon's tensor_par_overlap for every run with TP > 1 (default none)")
    args = parser.parse_args(argv)
    if not args.calculon:
        print("Calculon side by side skipped: no Calculon source given. Export calculon-ai/calculon to a "
              "directory and pass it with --calculon PATH or $CALCULON_PATH (see this script's docstring).")
        return 0
    path = Path(args.calculon).expanduser()
    if not (path / "calculon" / "llm" / "llm.py").is_file():
        print(f"--calculon {path}: not a Calculon source directory (no calculon/llm/llm.py there)", file=sys.stderr)
        return 2
    commit = _git_commit(path) or args.calculon_commit or "unknown (pass --calculon-commit)"

    from scalebook.published import _compare

    rows, excluded, jobs = [], [], []
    for run in published_runs():
        reason = exclusion(run)
        if reason:
            excluded.append((run, reason))
            continue
        inputs = calculon_inputs(run)
        execution = dict(inputs.execution)
        if run.tp > 1:
            execution["tensor_par_overlap"] = args.tp_overlap
        overrides = {"processing_mode": args.processing_mode} if args.processing_mode else {}
        jobs.append({"id": run.id, "application": inputs.application, "execution": execution,
                     "system_path": str(path / "systems" / inputs.system_file), "system_overrides": overrides})
        rows.append((run, inputs))
    results = {r["id"]: r for r in run_calculon(path, args.calculon_python, jobs)}

    ours = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    print(f"Calculon side by side, {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC; Calculon commit {commit}; "
          f"scalebook commit {ours.stdout.strip() or 'unknown'}")
    variant = [f"processing_mode {args.processing_mode}" if args.processing_mode else "",
               f"tensor_par_overlap {args.tp_overlap}" if args.tp_overlap != "none" else ""]
    print(f"Calculon variant: {', '.join(v for v in variant if v) or 'as translated (see the docstring)'}\n")
    print("| run | role | reported tok/s/GPU | Calculon | error | mem | scalebook | error |")
    print("| --- | --- | ---: | ---: | ---: | --- | ---: | ---: |")
    scored = []
    for run, inputs in rows:
        res = results[run.id]
        reported = run.reported_tokens_per_s_per_chip()
        cmp = _compare(run)
        if res["error"] and res["memory_ok"]:
            calc, calc_err, mem = None, None, f"failed: {res['error']}"
        else:
            calc = run.batch_tokens / res["total_s"] / run.chips
            calc_err = calc / reported - 1
            mem = "ok" if res["memory_ok"] else f"x ({res['mem_bytes'] / 2**30:.0f} GiB)"
        ours_tok = cmp.predicted_tokens_per_s_per_chip
        print(f"| {run.id} | {run.role} | {units.fmt_number(reported)} | "
              f"{'n/a' if calc is None else units.fmt_number(calc)} | {_signed(calc_err)} | {mem} | "
              f"{'n/a' if ours_tok is None else units.fmt_number(ours_tok)} | {_signed(cmp.error)} |")
        if calc_err is not None and cmp.error is not None:
            scored.append((run, calc_err, cmp.error, res["memory_ok"]))

    print("\n|Δ| on the runs both models score:\n")
    print("| rows | model | runs | median | mean | max |")
    print("| --- | --- | ---: | ---: | ---: | ---: |")
    groups = [("validation", [s for s in scored if s[0].role == "validation"]),
              ("all", scored),
              ("Calculon's memory check passes", [s for s in scored if s[3]]),
              ("validation, memory check passes", [s for s in scored if s[3] and s[0].role == "validation"])]
    for label, group in groups:
        for name, idx in (("Calculon", 1), ("scalebook", 2)):
            print(_summary_line(f"{label} | {name}", [s[idx] for s in group]))

    print("\nBy source, all rows (|error| median; which model is closer on how many runs):\n")
    print("| source | runs | Calculon | scalebook | Calculon closer | scalebook closer |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for source in dict.fromkeys(s[0].source for s in scored):
        group = [s for s in scored if s[0].source == source]
        calc_wins = sum(abs(s[1]) < abs(s[2]) for s in group)
        print(f"| {source} | {len(group)} | {units.fmt_percent(statistics.median(abs(s[1]) for s in group), 1)} | "
              f"{units.fmt_percent(statistics.median(abs(s[2]) for s in group), 1)} | {calc_wins} | "
              f"{len(group) - calc_wins} |")

    print("\nLeft out (Calculon cannot express them), by reason:\n")
    by_reason: dict[str, list[str]] = {}
    for run, reason in excluded:
        by_reason.setdefault(reason, []).append(run.id)
    for reason, ids in by_reason.items():
        print(f"- {reason} ({len(ids)}): {', '.join(ids)}")
    approximations = sorted({a for _, inputs in rows for a in inputs.approximations})
    if approximations:
        print("\nApproximations in the translated runs: " + "; ".join(approximations) + ".")
    return 0


if __name__ == "__main__":
    sys.exit(main())
