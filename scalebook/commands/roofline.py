"""`scalebook roofline matmul|op`: time of a matmul or a generic op on one chip."""
from __future__ import annotations

from .. import hardware, roofline, units
from ..cli import add_json_flag, emit, number_arg, positive_number

_DTYPES = ("fp32", "bf16", "fp16", "fp8", "int8", "int4", "fp4")


def register(sub) -> None:
    p = sub.add_parser("roofline", help="roofline time of a matmul or a generic op")
    kinds = p.add_subparsers(dest="kind", metavar="KIND", required=True, parser_class=type(p))
    m = kinds.add_parser("matmul", help="[B, D] x [D, F] on one chip")
    m.add_argument("--chip", required=True, help=f"one of: {', '.join(hardware.chip_names())}")
    m.add_argument("--batch", type=positive_number, required=True, help="B, rows of the activations")
    m.add_argument("--d-model", type=positive_number, required=True, help="D, the contracting dimension")
    m.add_argument("--d-ff", type=positive_number, required=True, help="F, columns of the weights")
    m.add_argument("--dtype", default="bf16", choices=_DTYPES, help="activation dtype (default bf16)")
    m.add_argument("--weight-dtype", default=None, choices=_DTYPES, help="weight dtype (default: --dtype)")
    add_json_flag(m)
    m.set_defaults(run=run_matmul)
    o = kinds.add_parser("op", help="an op of given FLOPs and HBM bytes")
    o.add_argument("--chip", required=True, help=f"one of: {', '.join(hardware.chip_names())}")
    o.add_argument("--flops", type=number_arg("FLOP"), required=True, help="FLOPs of the op, e.g. 1e12 or '1 TFLOP'")
    o.add_argument("--bytes", type=number_arg("B"), required=True, help="bytes to and from HBM, e.g. 1e9 or '1 GB'")
    o.add_argument("--dtype", default="bf16", choices=_DTYPES)
    add_json_flag(o)
    o.set_defaults(run=run_op)


def _report(r: roofline.Roofline, extra: dict) -> dict:
    return {**extra, "flops": r.flops, "hbm_bytes": r.hbm_bytes, "compute_seconds": r.compute_seconds,
            "memory_seconds": r.memory_seconds, "lower_seconds": r.lower_seconds,
            "upper_seconds": r.upper_seconds, "bound": r.bound,
            "intensity_flops_per_byte": r.intensity_flops_per_byte,
            "critical_intensity_flops_per_byte": r.critical_intensity_flops_per_byte}


def _text(r: roofline.Roofline, head: str) -> str:
    f = units.format_quantity
    return "\n".join([
        head,
        f"  FLOPs              {f(r.flops, 'FLOP')}",
        f"  HBM bytes          {f(r.hbm_bytes, 'B')}",
        f"  compute time       {f(r.compute_seconds, 's')}  (at {f(r.peak_flops_per_s, 'FLOP/s')})",
        f"  memory time        {f(r.memory_seconds, 's')}  (at {f(r.hbm_bytes_per_s, 'B/s')})",
        f"  bound              {r.bound}",
        f"  time               {f(r.lower_seconds, 's')} overlapped, {f(r.upper_seconds, 's')} serial",
        f"  intensity          {units.fmt_number(r.intensity_flops_per_byte, 4)} FLOP/B (critical {units.fmt_number(r.critical_intensity_flops_per_byte, 4)})",
    ])


def run_matmul(args) -> int:
    c = hardware.chip(args.chip)
    r = roofline.matmul(c, batch=args.batch, d_model=args.d_model, d_ff=args.d_ff,
                        dtype=args.dtype, weight_dtype=args.weight_dtype)
    compute = roofline.matmul_compute_dtype(c, args.dtype, args.weight_dtype)
    extra = {"chip": c.name, "batch": args.batch, "d_model": args.d_model, "d_ff": args.d_ff,
             "dtype": args.dtype, "weight_dtype": args.weight_dtype or args.dtype, "compute_dtype": compute}
    head = (f"[{args.batch:g}, {args.d_model:g}] x [{args.d_model:g}, {args.d_ff:g}] on {c.display_name}, "
            f"{args.dtype} activations, {args.weight_dtype or args.dtype} weights, computed in {compute}")
    emit(args, _report(r, extra), lambda: _text(r, head))
    return 0


def run_op(args) -> int:
    c = hardware.chip(args.chip)
    r = roofline.op(c, flops=args.flops, hbm_bytes=args.bytes, dtype=args.dtype)
    emit(args, _report(r, {"chip": c.name, "dtype": args.dtype}),
         lambda: _text(r, f"op of {units.format_quantity(args.flops, 'FLOP')} and {units.format_quantity(args.bytes, 'B')} on {c.display_name}"))
    return 0
