#!/usr/bin/env python3
"""Decode step time across batch sizes and context lengths, measured against the serving model.

Runs `scalebook.jax_decode` (a real decoder with a preallocated KV cache) on jax's default device
and times one decode step per (batch, context): the cache holds `context` positions and the step
attends to all of them. Beside each time it prints what the serving model predicts:

- memory: the bytes a decode step reads in `scalebook.inference` (every weight once and the KV
  cache of batch x context positions, `jax_decode.predicted_decode`) over the bandwidth measured
  here with `scalebook.measure.copy`;
- roofline: the larger of that and the step's FLOPs (the same model) over the FLOP/s of a
  [batch, D] x [D, F] matmul measured here with `scalebook.measure.matmul` at the same batch.
  At a small batch that matmul is a matrix-vector product: on a CPU, XLA's kernel for it runs
  well below the stream bandwidth (measured: [2, 1024] x [1024, 4096] in float32 reads its
  weights at about 3.6 GB/s on a 2-core machine that streams 21 GB/s), so there the step is bound
  by the kernels' FLOP rate, not by memory, and the memory-only prediction is far too fast.

Ratios to the smallest case compare the shapes whatever the device's absolute speed. Not a
test: `python benchmarks/decode.py [--json out.json]`; under a minute on a 2-core CPU.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from scalebook import jax_decode as jd, units  # noqa: E402
from scalebook.models import Transformer  # noqa: E402

def run(*, batches, contexts, dtype: str, repeats: int, model: Transformer = jd.BENCH) -> dict:
    t0 = time.perf_counter()
    curve = jd.decode_curve(model, batches=tuple(batches), contexts=tuple(contexts), dtype=dtype, repeats=repeats)
    rows = [{**p.__dict__} for p in curve.points]
    return {"device_kind": curve.device_kind, "model": curve.model_name, "dtype": dtype,
            "measured_bytes_per_s": curve.measured_bytes_per_s, "rows": rows, "seconds": time.perf_counter() - t0}


def table(result: dict) -> str:
    f = units.format_quantity
    rows = result["rows"]
    base = min(rows, key=lambda r: (r["batch"] * r["context"], r["batch"]))
    rates = {r["batch"]: r["matmul_flops_per_s"] for r in rows}
    head = (f"{result['model']} ({result['dtype']}) on {result['device_kind']}: measured stream "
            f"{f(result['measured_bytes_per_s'], 'B/s')}; [B, D] x [D, F] matmuls "
            + ", ".join(f"B={b}: {f(v, 'FLOP/s')}" for b, v in rates.items())
            + f"; ratios to B={base['batch']}, context {base['context']}")
    cols = ("batch", "context", "model bytes", "KV share", "step", "ratio", "memory pred", "ratio",
            "roofline pred", "ratio", "step / roofline")
    lines = [head, "  ".join(f"{c:>13}" for c in cols)]
    for r in rows:
        model_bytes = r["model_weight_bytes"] + r["model_kv_bytes"]
        cells = (r["batch"], r["context"], f(model_bytes, "B"), f"{r['model_kv_bytes'] / model_bytes:.0%}",
                 f(r["seconds"], "s"), f"{r['seconds'] / base['seconds']:.2f}",
                 f(r["predicted_memory_seconds"], "s"),
                 f"{r['predicted_memory_seconds'] / base['predicted_memory_seconds']:.2f}",
                 f(r["predicted_roofline_seconds"], "s"),
                 f"{r['predicted_roofline_seconds'] / base['predicted_roofline_seconds']:.2f}",
                 f"{r['seconds'] / r['predicted_roofline_seconds']:.2f}")
        lines.append("  ".join(f"{c!s:>13}" for c in cells))
    for b in sorted({r["batch"] for r in rows}):
        by_context = sorted((r for r in rows if r["batch"] == b), key=lambda r: r["context"])
        lo, hi = by_context[0], by_context[-1]
        if hi["context"] > lo["context"]:
            extra = hi["model_kv_bytes"] - lo["model_kv_bytes"]
            lines.append(f"B={b}: context {lo['context']} -> {hi['context']} adds {f(extra, 'B')} of KV cache and "
                         f"{f(hi['seconds'] - lo['seconds'], 's')}: the cache is read at "
                         f"{f(extra / max(hi['seconds'] - lo['seconds'], 1e-12), 'B/s')}")
    lines.append(f"({result['seconds']:.0f} s)")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batches", type=int, nargs="+", default=[2, 8, 32])
    ap.add_argument("--contexts", type=int, nargs="+", default=[256, 1024, 2048])
    ap.add_argument("--dtype", default="float32", choices=["float32", "bfloat16", "float16"],
                    help="float32 on CPU (XLA upcasts bf16 dots there); bfloat16 on a GPU or TPU")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--json", type=Path, help="also write the measurements to this JSON file")
    args = ap.parse_args(argv)
    result = run(batches=args.batches, contexts=args.contexts, dtype=args.dtype, repeats=args.repeats)
    print(table(result))
    if args.json:
        args.json.write_text(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
