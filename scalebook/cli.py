"""The `scalebook` command line: each subcommand lives in `scalebook/commands/<name>.py`.

Every command prints a readable table, or JSON with `--json`. Bad input exits with status 2
and one line on stderr saying what is wrong and what is valid; never a traceback.
"""
from __future__ import annotations

import argparse
import importlib
import json
import sys
from typing import Any, Callable, Sequence

from .errors import Error

#: Modules under scalebook.commands, each with `register(subparsers)`; order is help order.
COMMAND_MODULES = ("specs", "roofline", "measure", "grade", "models", "model", "collective", "shard_matmul",
                   "train_estimate", "plan", "serve_estimate", "plan_serving")


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # argparse's own errors: one line, status 2
        raise Error(f"{self.prog}: {message}")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="scalebook", description="The arithmetic of scaling LLMs, from the scalebook textbook.")
    parser.add_argument("--version", action="store_true", help="print the version and exit")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for name in COMMAND_MODULES:
        importlib.import_module(f"scalebook.commands.{name}").register(sub)
    return parser


def add_json_flag(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true", help="print machine-readable JSON")


def emit(args: argparse.Namespace, data: Any, text: Callable[[], str]) -> None:
    """Print `data` as JSON under --json, else the human text."""
    if getattr(args, "json", False):
        print(json.dumps(data, indent=2, default=float))
    else:
        print(text())


def table(rows: Sequence[dict[str, Any]]) -> str:
    """A plain-text table with a header, columns padded to fit."""
    if not rows:
        return "(nothing)"
    cols = list(rows[0])
    widths = {c: max(len(str(c)), *(len(str(r.get(c, ""))) for r in rows)) for c in cols}
    line = "  ".join(str(c).ljust(widths[c]) for c in cols)
    out = [line, "  ".join("-" * widths[c] for c in cols)]
    out += ["  ".join(str(r.get(c, "")).ljust(widths[c]) for c in cols) for r in rows]
    return "\n".join(out)


def positive_number(text: str) -> float:
    """argparse type: a number > 0 (accepts 1e9, 4096, 2**20 is not code and is refused)."""
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not value > 0 or value == float("inf"):
        # ArgumentTypeError keeps this message; argparse would replace a ValueError's.
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}")
    return value


def main(argv: Sequence[str] | None = None) -> int:
    try:
        parser = build_parser()
        args = parser.parse_args(argv)
        if args.version:
            from . import __version__

            print(__version__)
            return 0
        if not args.command:
            parser.print_help()
            return 0
        return int(args.run(args) or 0)
    except Error as e:
        print(f"scalebook: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # `scalebook specs | head`: the reader stopped reading
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
