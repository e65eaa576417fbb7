"""The `scalebook` command line: each subcommand lives in `scalebook/commands/<name>.py`.

Every command prints a readable table, or JSON with `--json`. Bad input exits with status 2
and one line on stderr saying what is wrong and what is valid; never a traceback.
"""
from __future__ import annotations

import argparse
import importlib
import json
import math
import re
import sys
from typing import Any, Callable, Sequence

from .errors import Error

#: Modules under scalebook.commands, each with `register(subparsers)`; order is help order.
COMMAND_MODULES = ("specs", "roofline", "measure", "grade", "models", "model", "collective", "shard_matmul",
                   "train_estimate", "plan", "serve_estimate", "plan_serving")


class _Parser(argparse.ArgumentParser):
    """One-line errors, and `'-1e12'` read as a (negative) number, not as an unknown option."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("epilog", NUMBERS_HELP)  # every command's --help says how numbers are read
        super().__init__(*args, **kwargs)
        self._negative_number_matcher = re.compile(r"^-(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$")

    def error(self, message: str) -> None:  # argparse's own errors: one line, status 2
        raise Error(f"{self.prog}: {message}")


def build_parser() -> argparse.ArgumentParser:
    """The `scalebook` argument parser, with one subcommand per module of `COMMAND_MODULES`."""
    parser = _Parser(prog="scalebook", description="The arithmetic of scaling LLMs, from the scalebook textbook.")
    parser.add_argument("--version", action="store_true", help="print the version and exit")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for name in COMMAND_MODULES:
        importlib.import_module(f"scalebook.commands.{name}").register(sub)
    return parser


def add_json_flag(p: argparse.ArgumentParser) -> None:
    """Give a subcommand's parser the `--json` flag (machine-readable output, see `emit`)."""
    p.add_argument("--json", action="store_true", help="print machine-readable JSON")


def emit(args: argparse.Namespace, data: Any, text: Callable[[], str]) -> None:
    """Print `data` as JSON under --json, else the human text."""
    if getattr(args, "json", False):
        print(dumps(data))
    else:
        print(text())


def table(rows: Sequence[dict[str, Any]]) -> str:
    """A plain-text table with a header, columns padded to fit."""
    if not isinstance(rows, (list, tuple)) or not all(isinstance(r, dict) for r in rows):
        raise Error(f"rows must be a list of dicts (column -> value), got {type(rows).__name__}")
    if not rows:
        return "(nothing)"
    cols = list(rows[0])
    widths = {c: max(len(str(c)), *(len(str(r.get(c, ""))) for r in rows)) for c in cols}
    line = "  ".join(str(c).ljust(widths[c]) for c in cols)
    out = [line, "  ".join("-" * widths[c] for c in cols)]
    out += ["  ".join(str(r.get(c, "")).ljust(widths[c]) for c in cols) for r in rows]
    return "\n".join(out)


NUMBERS_HELP = (
    "Numbers: every numeric flag takes a plain number (4096, 1e9, 2.5e-3; negative values such as "
    "-1e12 are read, then refused where they make no sense). A flag measured in a unit (bytes, "
    "seconds, FLOPs) also takes an SI-prefixed quantity of that unit ('2 GB', '1 us', '3 TFLOP'); "
    "counts (chips, batch, lengths) take plain numbers only. Thousands separators ('1,000') are refused."
)


def number_arg(unit: str = "", *, whole: bool = False, low: float = 0.0, low_inclusive: bool = False,
               high: "float | None" = None, scale: float = 1.0, words: str = "") -> Callable[[str], Any]:
    """An argparse type that reads one number; the single parser behind every numeric flag.

    Plain numbers are taken in the flag's own unit; with `unit`, a quantity such as '2 GB' is read
    with `units.parse_quantity` and divided by `scale` (so `--latency-ms` reads '5 ms' or 5).
    The value must be > `low` (>= with `low_inclusive`), <= `high` if given, finite, and a whole
    number with `whole` (returned as int). Errors name the flag's expectation in one line.
    Sizes a model can mean: a nonzero value lies between 10⁻³⁰ and 10³⁰ in magnitude, a whole number
    is at most 10**15 (`errors.MAX_TOKENS`; chips, batches and lengths are far below it).
    """
    from .errors import MAX_NUMBER, MAX_TOKENS, MIN_POSITIVE
    from . import units

    kind = f"{'whole ' if whole else ''}number"
    if low == 0 and not low_inclusive:
        kind, bound = f"positive {kind}", ""
    else:
        bound = f" {'>=' if low_inclusive else '>'} {low:g}"
    if high is not None:
        bound += f"{' and' if bound else ''} <= {high:g}"
    expect = words or (f"a {kind}{bound}"
                       + (f" (or a quantity in {unit}, e.g. '2 G{unit}')" if unit else ""))
    cap = MAX_TOKENS if whole else MAX_NUMBER
    expect += (f", at most {cap:.0e}" + ("" if whole else f" and, unless 0, at least {MIN_POSITIVE:.0e} in size")).replace("e+", "e")

    def parse(text: str) -> Any:
        """Read a command-line value; refuse one outside the range `number_arg` was given."""
        def refuse() -> "argparse.ArgumentTypeError":
            # ArgumentTypeError keeps this message; argparse would replace a ValueError's.
            return argparse.ArgumentTypeError(f"expected {expect}, got {text!r}")

        if not isinstance(text, str):
            raise Error(f"text must be the command-line string to read, got {type(text).__name__}")
        t = text.strip()
        if "," in t or "_" in t:
            raise refuse()
        try:
            value = float(t)
        except ValueError:
            if not unit:
                raise refuse() from None
            try:
                value = units.parse_quantity(t, unit) / scale
            except (Error, OverflowError):
                raise refuse() from None
        ok = value == value and abs(value) != float("inf")
        ok = ok and (value >= low if low_inclusive else value > low) and (high is None or value <= high)
        ok = ok and abs(value) <= cap and (whole or value == 0 or abs(value) >= MIN_POSITIVE)
        if not ok or (whole and not float(value).is_integer()):
            raise refuse()
        return int(value) if whole else value

    return parse


#: argparse types shared by the commands (all built on `number_arg`).
positive_number = number_arg()
whole_number = number_arg(whole=True)
fraction = number_arg(high=1.0)
fraction_or_zero = number_arg(high=1.0, low_inclusive=True)
positive_number.__doc__ = "A number above 0 (argparse type)."
whole_number.__doc__ = "A whole number above 0 (argparse type)."
fraction.__doc__ = "A number above 0 and at most 1 (argparse type)."
fraction_or_zero.__doc__ = "A number from 0 to 1, both included (argparse type)."


def axes_arg(p: argparse.ArgumentParser, help: str) -> None:
    """`--axes X Y`, `--axes X,Y` and `--axes X --axes Y` all mean the axes X and Y."""
    p.add_argument("--axes", nargs="+", action="extend", required=True, help=help)


def flatten_axes(values: Sequence[str]) -> list[str]:
    """Split comma-separated entries: ['X,Y', 'Z'] -> ['X', 'Y', 'Z']; empty pieces are refused."""
    if not isinstance(values, (list, tuple)) or not all(isinstance(v, str) for v in values):
        raise Error(f"values must be a list of axis names, got {type(values).__name__}")
    out = []
    for v in values:
        for piece in v.split(","):
            if not piece.strip():
                raise Error(f"--axes has an empty axis name in {v!r}; write e.g. --axes X,Y or --axes X Y")
            out.append(piece.strip())
    return out


def _json_safe(value: Any) -> Any:
    """Non-finite floats become null (JSON has no Infinity or NaN); numpy scalars become floats."""
    if isinstance(value, dict):
        return {k: _json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_safe(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _json_default(value: Any) -> Any:
    try:
        x = float(value)
    except (TypeError, ValueError):
        return str(value)
    return x if math.isfinite(x) else None


def dumps(data: Any) -> str:
    """JSON text of `data` that standard parsers read: never Infinity or NaN."""
    return json.dumps(_json_safe(data), indent=2, default=_json_default, allow_nan=False)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line on `argv` (default: `sys.argv[1:]`); return the exit status."""
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
