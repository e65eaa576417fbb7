"""`scalebook specs [CHIP]`: the spec table, or one chip's figures with their sources."""
from __future__ import annotations

import dataclasses

from .. import hardware, units
from ..cli import add_json_flag, emit, table


def register(sub) -> None:
    p = sub.add_parser("specs", help="hardware spec table (TPUs and GPUs)")
    p.add_argument("chip", nargs="?", help=f"one of: {', '.join(hardware.chip_names())}")
    add_json_flag(p)
    p.set_defaults(run=run)


def _as_dict(c: hardware.Chip) -> dict:
    d = {f.name: getattr(c, f.name) for f in dataclasses.fields(c)}
    d["flops_per_s"] = dict(c.flops_per_s)
    d["sources"] = dict(c.sources)
    d["collective_bytes_per_s"] = c.collective_bytes_per_s
    return d


def run(args) -> int:
    if args.chip:
        c = hardware.chip(args.chip)
        emit(args, _as_dict(c), lambda: "\n".join(
            [f"{k}: {v}" for k, v in hardware.spec_row(c).items()]
            + [f"source ({k}): {units.prose_numbers(v)}" for k, v in c.sources.items()]
            + ([f"notes: {units.prose_numbers(c.notes)}"] if c.notes else [])))
    else:
        cs = hardware.chips()
        emit(args, [_as_dict(c) for c in cs], lambda: table([hardware.spec_row(c) for c in cs]))
    return 0
