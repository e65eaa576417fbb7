"""Self-graded problems: the bank, `check()`, and grading of filled notebooks.

Each chapter's problems live in `scalebook/exercises/bank/<chapter>.py`, one solver function
per problem, registered with `@problem(...)`. `check(id, answer)` compares a reader's answer
(a number in the problem's unit, or a string with units such as "3.2 ms") with the key and
returns a `CheckResult`: correct, close (with a hint) or wrong (with the likely slip).
With the environment variable SCALEBOOK_STRICT=1 a wrong or missing answer raises
`AnswerError`, which is how the book's tests prove that the reference solutions are right.
"""
from __future__ import annotations

import html
import importlib
import json
import re
import math
import os
import pkgutil
from dataclasses import dataclass

from .. import units
from ..errors import Error
from .problem import _BANK, Problem, problem

__all__ = ["check", "problems", "get", "CheckResult", "AnswerError", "Problem", "problem"]


class AnswerError(AssertionError):
    """Raised by `check` in strict mode (SCALEBOOK_STRICT=1) for a wrong or missing answer."""


def _load_banks() -> None:
    from . import bank

    for mod in pkgutil.iter_modules(bank.__path__):
        importlib.import_module(f"{bank.__name__}.{mod.name}")


def _id_part(x: str) -> tuple[int, str]:
    """Sort key of one part of an id: '2' -> (2, ''), '2g' -> (2, 'g') (a page inside chapter 2)."""
    m = re.match(r"(\d*)(.*)", x)
    return (int(m.group(1)) if m.group(1) else -1, m.group(2))


def problems(chapter: str | None = None) -> list[Problem]:
    """Every problem in the bank (or those whose id starts with `chapter` + '.'), in id order."""
    _load_banks()
    out = [p for p in _BANK.values() if chapter is None or p.id.split(".")[0] == str(chapter)]
    return sorted(out, key=lambda p: tuple(_id_part(x) for x in p.id.split(".")))


def get(id: str) -> Problem:
    """The problem with this id; raises `Error` listing valid ids if there is none."""
    _load_banks()
    if id not in _BANK:
        raise Error(f"no problem {id!r}; valid ids: {', '.join(p.id for p in problems())}")
    return _BANK[id]


@dataclass(frozen=True)
class CheckResult:
    """The verdict on one answer."""

    id: str
    status: str  # 'correct' | 'close' | 'wrong' | 'missing'
    given: float | None
    expected: float
    unit: str
    message: str

    @property
    def score(self) -> float:
        return {"correct": 1.0, "close": 0.5}.get(self.status, 0.0)

    def __repr__(self) -> str:
        mark = {"correct": "✓", "close": "~", "wrong": "✗", "missing": "·"}[self.status]
        return f"{mark} {self.id} {self.status}: {self.message}"

    def _repr_html_(self) -> str:
        color = {"correct": "#1a7f37", "close": "#9a6700", "wrong": "#cf222e", "missing": "#57606a"}[self.status]
        message = re.sub(r"`([^`]*)`", r"<code>\1</code>", html.escape(self.message))
        return (f"<div style='border-left:4px solid {color};padding:2px 8px'>"
                f"<b style='color:{color}'>{self.id} {self.status}</b>: {message}</div>")


def _near(ratio: float, target: float, tol: float) -> bool:
    return target > 0 and abs(math.log(ratio / target)) <= math.log1p(tol)


def _diagnose(p: Problem, ratio: float) -> str:
    """Name the slip that best explains answer/key = ratio."""
    tol = max(p.rel_tol, 0.02)
    for target, hint in p.slips.items():
        for r in (target, 1 / target):
            if _near(ratio, r, tol):
                return hint
    if p.chips and p.chips not in (1, 2, 8):
        if _near(ratio, p.chips, tol):
            return f"your answer is {p.chips:g}x the key: did you give the total instead of the per-chip value?"
        if _near(ratio, 1 / p.chips, tol):
            return f"your answer is 1/{p.chips:g} of the key: did you give a per-chip value instead of the total?"
    checks = [
        (2, "off by a factor of 2: check 2 FLOPs per multiply-add, one-way vs both-ways bandwidth, or bf16's 2 bytes"),
        (8, "off by a factor of 8: bits vs bytes?"),
        (4, "off by a factor of 4: check bytes per element (fp32 = 4, bf16 = 2, int8 = 1)"),
        (1e3, "off by a factor of 1000: a unit prefix (ms vs s, GB vs MB, TFLOP vs GFLOP)?"),
        (1e6, "off by a factor of a million: a unit prefix (us vs s, TB vs MB)?"),
        (1e9, "off by a factor of 1e9: a unit prefix (ns vs s, GB vs B)?"),
        (1e12, "off by a factor of 1e12: a unit prefix (TFLOP vs FLOP)?"),
        (1.024, "off by about 2.4%: GiB (2^30) vs GB (1e9)?"),
        (1.024**3, "off by about 7%: GiB (2^30) vs GB (1e9)?"),
    ]
    if p.chips and p.chips in (2, 8):
        checks.insert(0, (p.chips, f"off by a factor of {p.chips:g}: per chip vs total?"))
    for target, hint in checks:
        if _near(ratio, target, tol):
            return hint + (" (yours is larger)" if ratio > 1 else " (yours is smaller)")
        if _near(ratio, 1 / target, tol):
            return hint + (" (yours is smaller)" if ratio < 1 else " (yours is larger)")
    return ("too large" if ratio > 1 else "too small") + f" by a factor of {max(ratio, 1 / ratio):.3g}" + (
        f"; hint: {p.hint}" if p.hint else "")


# How to ask for an answer in each kind of unit; others read "a number in <unit>".
_UNIT_WORDS = {
    "": "a plain number (no unit)",
    "token": "a number of tokens",
    "param": "a number of parameters",
    "chip": "a number of chips",
    "s": "a time: a number in seconds or a string like '3.2 ms'",
    "B": "a size: a number of bytes or a string like '70 GB'",
    "B/s": "a bandwidth: a number in B/s or a string like '450 GB/s'",
    "FLOP/s": "a rate: a number in FLOP/s or a string like '197 TFLOP/s'",
}


def check(id: str, answer: "float | int | str | None") -> CheckResult:
    """Grade `answer` to problem `id`: a number in the problem's unit or a string with units.

    Returns a `CheckResult`. In strict mode (SCALEBOOK_STRICT=1) raises `AnswerError` unless the
    answer is correct. Never evaluates code; strings are parsed by `units.parse_quantity`.
    """
    p = get(id)
    expected = p.answer()
    unit_text = _UNIT_WORDS.get(p.unit, f"a number in {p.unit} (or a string with its unit, like '2.5 {p.unit}')")
    if answer is None or (isinstance(answer, str) and not answer.strip()):
        result = CheckResult(id, "missing", None, expected, p.unit,
                             f"no answer yet: set `answer` to {unit_text}")
    else:
        given = units.parse_quantity(answer, p.unit)
        show = units.format_quantity(given, p.unit)
        if expected == 0:
            ok = abs(given) <= 1e-12
            ratio = float("inf")
        else:
            ratio = given / expected if given != 0 else 0.0
            ok = ratio > 0 and _near(ratio, 1.0, p.rel_tol)
        if ok:
            result = CheckResult(id, "correct", given, expected, p.unit,
                                 f"{show} is right (key {units.format_quantity(expected, p.unit, 4)})")
        elif ratio > 0 and ratio != float("inf") and _near(ratio, 1.0, 2 * p.rel_tol):
            result = CheckResult(id, "close", given, expected, p.unit,
                                 f"{show} is close but outside the {p.rel_tol:.0%} tolerance: check your rounding"
                                 + (f"; hint: {p.hint}" if p.hint else ""))
        elif ratio <= 0:
            result = CheckResult(id, "wrong", given, expected, p.unit, f"{show}: the sign or the zero is wrong")
        else:
            result = CheckResult(id, "wrong", given, expected, p.unit, f"{show}: {_diagnose(p, ratio)}")
    _record(result)
    if os.environ.get("SCALEBOOK_STRICT") == "1" and result.status != "correct":
        raise AnswerError(f"problem {id}: {result.message}")
    return result


def _record(result: CheckResult) -> None:
    """Append the verdict to $SCALEBOOK_RECORD (a JSON-lines file) when grading a notebook."""
    path = os.environ.get("SCALEBOOK_RECORD")
    if path:
        with open(path, "a", encoding="utf-8") as f:
            f.write(json.dumps({"id": result.id, "status": result.status, "score": result.score,
                                "message": result.message}) + "\n")
