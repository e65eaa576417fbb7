"""`scalebook measure`: time matmuls and memory streams on this machine's default JAX device."""
from __future__ import annotations

import sys

from .. import measure
from ..cli import add_json_flag, emit, table, whole_number


def register(sub) -> None:
    p = sub.add_parser("measure", help="measure matmul FLOP/s and memory bandwidth of this device (needs jax)")
    p.add_argument("--repeats", type=whole_number, default=5, help="timed runs per measurement (median kept)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    add_json_flag(p)
    p.set_defaults(run=run)


def run(args) -> int:
    try:
        import jax  # noqa: F401
    except ImportError:
        from ..errors import Error

        raise Error("`scalebook measure` needs jax: pip install 'scalebook[jax]'") from None
    # The bar goes to stderr, and only when stderr is a terminal, so that stdout stays clean
    # for --json and for pipes.
    m = measure.run(repeats=int(args.repeats), progress=False if args.quiet else None,
                    progress_stream=sys.stderr)
    emit(args, m.to_dict(), lambda: m.summary() + "\n\n" + table(m.rows()))
    return 0
