"""`scalebook shard-matmul SPEC`: the collectives and time of a sharded matmul (chapter 3)."""
from __future__ import annotations

from .. import hardware, sharding
from ..cli import add_json_flag, emit
from ..errors import Error

_DTYPES = ("fp32", "bf16", "fp16", "fp8", "int8")


def register(sub) -> None:
    p = sub.add_parser("shard-matmul", help="plan a sharded matmul such as 'A[I_X, J] @ B[J, K_Y]'")
    p.add_argument("spec", help="e.g. 'A[I_X, J] @ B[J, K_Y] -> C[I_X, K_Y]' (the '-> ...' part is optional)")
    p.add_argument("--mesh", required=True, help="mesh axes and sizes, e.g. X=4,Y=2")
    p.add_argument("--dims", required=True, help="dimension sizes, e.g. I=1024,J=2048,K=512")
    p.add_argument("--chip", required=True, help=f"one of: {', '.join(hardware.chip_names())}")
    p.add_argument("--dtype", default="bf16", choices=_DTYPES)
    add_json_flag(p)
    p.set_defaults(run=run)


def parse_sizes(text: str, what: str) -> dict[str, int]:
    """'X=4,Y=2' -> {'X': 4, 'Y': 2}; raises `Error` naming a bad token."""
    out: dict[str, int] = {}
    for tok in text.split(","):
        name, eq, value = tok.strip().partition("=")
        name, value = name.strip(), value.strip()
        if not eq or not name.isidentifier() or not (value.isascii() and value.isdigit()) or int(value) < 1:
            raise Error(f"bad {what} entry {tok.strip()!r}; write NAME=SIZE pairs joined by commas, e.g. X=4,Y=2")
        if name in out:
            raise Error(f"{what} entry {name!r} given twice")
        out[name] = int(value)
    return out


def _step(s: sharding.Step) -> dict:
    return {"kind": s.kind, "operand": s.operand, "axes": list(s.axes), "before": s.before, "after": s.after,
            "array_bytes": s.array_bytes, "bytes_per_device": s.bytes_per_device, "flops": s.flops,
            "seconds": s.seconds}


def _plan(p: sharding.Plan) -> dict:
    return {"spec": str(p.spec), "cases": list(p.cases), "strategy": p.strategy, "steps": [_step(s) for s in p.steps],
            "seconds": p.seconds, "comm_seconds": p.comm_seconds, "compute_seconds": p.compute_seconds,
            "overlapped_seconds": p.overlapped_seconds, "comm_bytes_per_device": p.comm_bytes_per_device}


def run(args) -> int:
    mesh = parse_sizes(args.mesh, "--mesh")
    dims = parse_sizes(args.dims, "--dims")
    p = sharding.plan(args.spec, mesh=mesh, dims=dims, chip=args.chip, dtype=args.dtype)
    data = {**_plan(p), "chip": p.chip, "mesh": mesh, "dims": dims, "dtype": p.dtype,
            "alternatives": [_plan(a) for a in p.alternatives], "cheapest": p.cheapest.strategy}
    emit(args, data, lambda: str(p))
    return 0
