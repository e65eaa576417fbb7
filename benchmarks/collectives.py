#!/usr/bin/env python3
"""Hand-written ring collectives and collective matmuls against the library, as time ratios.

Runs `scalebook.jax_collectives` on 8 simulated CPU devices (one mesh axis of 8) and times, for
each array size:

- each ring (one way and both ways) against the library collective (`all_gather`,
  `psum_scatter`, `psum` in shard_map): ratio = ring time / library time;
- each collective matmul (ring, overlapped) against gathering first and then multiplying (or
  multiplying, then scattering) in shard_map, and against the plain `jnp.dot` under `jax.jit`
  with shardings: ratio = overlapped time / sequential time.

Beside each ratio it prints what `jax_collectives.ring_cost` / `collective_matmul_cost` predict
for the same shapes on the X axis (8 chips, with a wraparound) of a TPU v5p 8x8x8 slice, in bf16. The
simulated devices are threads of one process sharing the machine's cores and memory: a
"send" is a copy, no link runs beside the compute, so the measured ratios describe this machine,
not a TPU. Not a test: `python benchmarks/collectives.py [--json out.json]`; under a minute on a
2-core CPU.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from scalebook import xla  # noqa: E402

xla.use_cpu_devices(8)

from scalebook import jax_collectives as jc, topology  # noqa: E402

TPU = topology.slice("tpu-v5p", "8x8x8")  # a ring of 8 with a wraparound, like the mesh axis


def _time(f, args, repeats: int) -> float:
    return xla.time_call(f, *args, repeats=repeats, warmup=1)


def run(*, rows_per_device=(64, 512), cols: int = 1024, matmul_dims=((1024, 1024, 1024), (2048, 1024, 2048)),
        repeats: int = 5) -> dict:
    t0 = time.perf_counter()
    mesh = xla.mesh({"X": 8})
    out = []
    for kind in jc.COLLECTIVES:
        for r in rows_per_device:
            shape = (8 * r, cols)
            args = jc.random_inputs(kind, mesh, axis="X", shape=shape)
            lib = _time(jc.build(kind, mesh, axis="X", impl="library"), args, repeats)
            for bidi in (False, True):
                ring = _time(jc.build(kind, mesh, axis="X", bidirectional=bidi), args, repeats)
                v = shape[0] * shape[1] * 2  # the same array in bf16 on the TPU
                pred = (jc.ring_cost(kind, TPU, axis="X", bytes_=v, bidirectional=bidi).seconds
                        / jc.ring_cost(kind, TPU, axis="X", bytes_=v).seconds)
                out.append({"kind": kind, "shape": shape, "bidirectional": bidi, "ring_seconds": ring,
                            "library_seconds": lib, "measured_ratio": ring / lib, "predicted_ratio_tpu": pred})
    for kind in jc.MATMULS:
        for dims in matmul_dims:
            args = jc.random_inputs(kind, mesh, axis="X", shape=dims)
            seq = _time(jc.build(kind, mesh, axis="X", impl="library"), args, repeats)
            plain = _time(jc.build(kind, mesh, axis="X", impl="xla"), args, repeats)
            for bidi in (False, True):
                ring = _time(jc.build(kind, mesh, axis="X", bidirectional=bidi), args, repeats)
                i, j, k = dims
                c = jc.collective_matmul_cost(kind, TPU, axis="X", dims=dict(I=i, J=j, K=k),
                                              bidirectional=bidi)
                out.append({"kind": kind, "shape": dims, "bidirectional": bidi, "ring_seconds": ring,
                            "library_seconds": seq, "xla_seconds": plain, "measured_ratio": ring / seq,
                            "measured_ratio_vs_xla": ring / plain,
                            "predicted_ratio_tpu": c.overlapped_seconds / c.sequential_seconds})
    import jax

    return {"device_kind": xla.device_kind(), "devices": len(jax.devices("cpu")), "rows": out,
            "seconds": time.perf_counter() - t0}


def main(argv: "list[str] | None" = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", help="also write the results to this file")
    ap.add_argument("--repeats", type=int, default=5)
    a = ap.parse_args(argv)
    res = run(repeats=a.repeats)
    print(f"{res['devices']} simulated {res['device_kind']} devices, ring over 8; TPU prediction on a v5p axis of 8")
    print(f"{'kind':22s} {'shape':>18s} {'ways':>5s} {'ring/library':>13s} {'TPU model':>10s}")
    for r in res["rows"]:
        ways = "both" if r["bidirectional"] else "one"
        extra = f"   ring/jit {r['measured_ratio_vs_xla']:.2f}" if "measured_ratio_vs_xla" in r else ""
        print(f"{r['kind']:22s} {str(r['shape']):>18s} {ways:>5s} {r['measured_ratio']:13.2f} "
              f"{r['predicted_ratio_tpu']:10.2f}{extra}")
    print(f"({res['seconds']:.1f} s)")
    if a.json:
        Path(a.json).write_text(json.dumps(res, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
