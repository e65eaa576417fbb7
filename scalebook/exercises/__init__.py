"""Self-graded problems: the bank, `check()`, and grading of filled notebooks.

Each problem page's problems live in `scalebook/exercises/bank/chNN_<slug>.py` (the module
`ch02b_gpus` serves the page `exercises/02b-gpus.md`), one solver function per problem,
registered with `@problem(...)`. `check(id, answer)` compares a reader's answer (a number in
the problem's unit, or a string with units such as "3.2 ms") with the key and returns a
`CheckResult` for any answer: correct, close (with the likely cause), wrong (with the likely
slip, or with what is accepted when the answer cannot be read) or missing.
With the environment variable SCALEBOOK_STRICT=1 a wrong or missing answer raises
`AnswerError`, which is how the book's tests prove that the reference solutions are right.
"""
from __future__ import annotations

import functools
import html
import importlib
import re
import math
import os
import pkgutil
from dataclasses import dataclass

from ..errors import Error, require_count
from . import answers
from .problem import _BANK, Problem, _append_record, _running_cell, _solve_quietly, page_of_module, problem  # noqa: F401

__all__ = ["check", "problems", "pages", "get", "CheckResult", "AnswerError", "Problem", "problem"]


class AnswerError(AssertionError):
    """Raised by `check` in strict mode (SCALEBOOK_STRICT=1) for a wrong or missing answer."""


def _load_banks() -> None:
    from . import bank

    for mod in pkgutil.iter_modules(bank.__path__):
        importlib.import_module(f"{bank.__name__}.{mod.name}")


def _id_key(id: str) -> tuple:
    """Sort key of a problem id: '2.3' -> ((2, ''), (3, '')); '2g.1' sorts after chapter 2's
    problems and before chapter 3's (a page inside chapter 2)."""
    parts = (re.match(r"(\d*)(.*)", x) for x in id.split("."))
    return tuple((int(m.group(1)) if m.group(1) else -1, m.group(2)) for m in parts)


def problems(chapter: str | None = None, page: str | None = None) -> list[Problem]:
    """Every problem in the bank, in id order; only those whose id starts with `chapter` + '.'
    when `chapter` is given ('2' -> 2.1, 2.2, ...), only those of problem page `page` when it is
    given ('02b-gpus')."""
    if chapter is not None and not isinstance(chapter, str):
        chapter = str(require_count("chapter", chapter, maximum=99))
    if page is not None and not isinstance(page, str):
        raise Error(f"page must be a page name such as '02b-gpus', got {type(page).__name__}")
    _load_banks()
    out = [p for p in _BANK.values()
           if (chapter is None or p.id.split(".")[0] == str(chapter)) and (page is None or p.page == page)]
    return sorted(out, key=lambda p: _id_key(p.id))


def pages() -> list[str]:
    """The problem pages the bank serves, one per bank module: '01-rooflines', '02-accelerators', ..."""
    from . import bank

    found = (page_of_module(m.name) for m in pkgutil.iter_modules(bank.__path__))
    return sorted(p for p in found if p)


def get(id: str) -> Problem:
    """The problem with this id; raises `Error` listing valid ids if there is none."""
    _load_banks()
    if not isinstance(id, str) or id not in _BANK:
        raise Error(f"no problem {id!r}; valid ids: {', '.join(p.id for p in problems())}")
    return _BANK[id]


@dataclass(frozen=True)
class CheckResult:
    """The verdict on one answer: `given` is the answer read in the problem's unit (None when it
    was missing or could not be read). The key is not part of it, and no message states it: a
    wrong answer learns its direction and order of magnitude, or the slip that explains it."""

    id: str
    status: str  # 'correct' | 'close' | 'wrong' | 'missing'
    given: float | None
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
        # an answer written as it is typed ('5e11', '$2.232e7') shows as code, not as prose
        message = re.sub(r"(?<![\w.>])\$?-?\d+(?:\.\d+)?e-?\d+(?![\w.])", r"<code>\g<0></code>", message)
        return (f"<div style='border-left:4px solid {color};padding:2px 8px'>"
                f"<b style='color:{color}'>{self.id} {self.status}</b>: {message}</div>")


def _log_ratio(given: float, expected: float) -> float:
    """ln(|given| / |expected|), computed as a difference of logs so tiny or huge values never under- or overflow."""
    return math.log(abs(given)) - math.log(abs(expected))


def _window(target: float, tight: float) -> float:
    """How far (in ln) a ratio may sit from a slip's factor and still be blamed on it: 10% for
    the big factors (2, 8, 1000), narrower for factors close to 1 (GiB vs GB, (N - 1)/N)."""
    return max(tight, min(0.10, 0.35 * abs(math.log(target))))


def _slip_hints(p: Problem) -> list[tuple[float, str, int]]:
    """(factor, hint, priority) for the slips this problem can show: its own (priority 0, either
    way round), per chip vs total (1, one way each), the common ones (2, either way round)."""
    out = [(t, h, 0) for t, h in p.slips.items() if t > 0]
    if p.chips and p.chips in (2, 8):
        out += [(f, f"off by a factor of {p.chips:g}: per chip vs total?", 1) for f in (p.chips, 1 / p.chips)]
    elif p.chips and p.chips != 1:
        out.append((p.chips, f"your answer is {p.chips:g}x the key: did you give the total instead of the per-chip value?", 1))
        out.append((1 / p.chips, f"your answer is 1/{p.chips:g} of the key: did you give a per-chip value instead of the total?", 1))
    generic = [
        (2, "off by a factor of 2: check 2 FLOPs per multiply-add, one-way vs both-ways bandwidth, or bf16's 2 bytes"),
        (8, "off by a factor of 8: bits vs bytes?"),
        (4, "off by a factor of 4: check bytes per element (fp32 = 4, bf16 = 2, int8 = 1)"),
        (100, "off by a factor of 100: a percentage where a fraction is asked (or the reverse)?"),
        (1e3, "off by a factor of 1000: a unit prefix (ms vs s, GB vs MB, TFLOP vs GFLOP)?"),
        (1e6, "off by a factor of a million: a unit prefix (us vs s, TB vs MB)?"),
        (1e9, "off by a factor of 1e9: a unit prefix (ns vs s, GB vs B)?"),
        (1e12, "off by a factor of 1e12: a unit prefix (TFLOP vs FLOP)?"),
    ]
    if answers.asks_for(p.unit).startswith(("a size", "a bandwidth")):  # binary prefixes only measure bytes
        generic += [
            (1024, "off by a factor of 1024: a binary prefix step (KiB to MiB) where a decimal one (kB to MB) is meant?"),
            (1.024**3, "off by about 7%: GiB (2^30 bytes) vs GB (1e9)?"),
            (1.024**2, "off by about 5%: MiB (2^20 bytes) vs MB (1e6)?"),
        ]
    out += [(t, h, 2) for t, h in generic]
    return out


def _diagnose(p: Problem, log_ratio: float) -> str:
    """Name the slip that best explains answer/key = e**log_ratio: a problem's own slip when the ratio
    matches it to within the tolerance, else the nearest known slip whose window holds the ratio."""
    tight = math.log1p(max(p.rel_tol, 0.02))
    best = None
    for target, hint, priority in _slip_hints(p):
        for t in ((target,) if priority == 1 else (target, 1 / target)):  # per-chip hints have a direction
            d = abs(log_ratio - math.log(t))
            exact = priority == 0 and d <= tight
            if d <= _window(t, tight):
                key = (not exact, d, priority)
                if best is None or key < best[0]:
                    best = (key, hint, priority)
    if best is not None:
        _, hint, priority = best
        if priority == 2:  # generic hints say which way the answer is off
            hint += " (yours is larger)" if log_ratio > 0 else " (yours is smaller)"
        return hint
    return ("too large" if log_ratio > 0 else "too small") + f" {_magnitude(log_ratio)}" + (
        f"; hint: {p.hint}" if p.hint else "")


def _magnitude(log_ratio: float) -> str:
    """How far off an answer is, as coarsely as a hint needs and no finer (so that the key cannot be
    read back from it): 'by less than 25%', 'by less than a factor of 2', 'by a factor between 2
    and 10', else 'by roughly a factor of 1000' (the ratio rounded to a power of ten)."""
    x = abs(log_ratio)
    if x < math.log(1.25):
        return "by less than 25%"
    if x < math.log(2):
        return "by less than a factor of 2"
    if x < math.log(10):
        return "by a factor between 2 and 10"
    power = round(x / math.log(10))
    return "by roughly a factor of " + (f"{10 ** power:,}" if power <= 6 else f"10^{power}")


def _close_cause(p: Problem, log_ratio: float) -> str:
    """The likely cause of an answer a few percent off the key."""
    if answers.asks_for(p.unit).startswith(("a size", "a bandwidth")):
        for target, cause in ((1.024, "KiB vs kB (1024 vs 1000)?"), (1.024**2, "MiB (2^20) vs MB (1e6)?")):
            if abs(abs(log_ratio) - math.log(target)) <= 0.002:
                return cause
    return "rounding? Carry three significant digits and take specs from `scalebook.chip(...)`"


def check(id: str, answer: object) -> CheckResult:
    """Grade `answer` to problem `id`: a number in the problem's unit or a string with units.

    Returns a `CheckResult` for every answer: `missing` for None or an empty string; `wrong`, with
    a message saying what is accepted, for an answer that cannot be read (see
    `scalebook.exercises.answers`: one-value arrays are read as their value; bools, inf, NaN,
    decimal commas and mismatched units are refused); else `correct`, `close` or `wrong`. Only an
    unknown problem id raises (`Error`), since no answer can fix that. In strict mode
    (SCALEBOOK_STRICT=1) raises `AnswerError` unless the answer is correct. Never evaluates code.
    In a plain script (no IPython shell, not the interactive prompt) it also prints the verdict,
    since nothing else would show it; Jupyter and the prompt show the returned result themselves.
    """
    if not isinstance(id, str):
        raise Error(f"check() takes the problem id as a string, like check(\"1.1\", answer); got {id!r}")
    p = get(id)
    if answer is None or (isinstance(answer, str) and not answer.strip()):
        result = CheckResult(id, "missing", None, p.unit,
                             f"no answer yet: set `answer` to {answers.asks_for(p.unit)}")
    else:
        try:
            given = answers.read_answer(answer, p.unit)
        except answers.Unreadable as e:
            given = None
            counted = answers.asks_for(p.unit) == answers.asks_for("") or not answers.asks_for(p.unit).endswith(p.unit)
            accepted = "" if "asks for" in str(e) else (
                f" (this problem asks for {answers.asks_for(p.unit)}"
                + (")" if counted else f": a number in {p.unit} or a string like '1.5 {p.unit}')"))
            result = CheckResult(id, "wrong", None, p.unit, f"{e}{accepted}")
        if given is not None:
            result = _verdict(p, given, _solve_quietly(p))
    _record(result)
    if _plain_script():
        print(repr(result), flush=True)
    if os.environ.get("SCALEBOOK_STRICT") == "1" and result.status != "correct":
        raise AnswerError(f"problem {id}: {result.message}")
    return result


def _verdict(p: Problem, given: float, expected: float) -> CheckResult:
    """The verdict on a readable answer `given` (in the problem's unit) against the key `expected`;
    the grader calls it too, to judge a recorded answer again outside the kernel."""
    show = functools.partial(answers.show, unit=p.unit)

    def result(status: str, message: str) -> CheckResult:
        return CheckResult(p.id, status, given, p.unit, message)

    if expected == 0:
        if given == 0:
            return result("correct", f"{show(given)} is right")
        return result("wrong", f"{show(given)}: the key is zero")
    if given == 0:
        return result("wrong", f"{show(given)}: the answer is zero, the key is not")
    lr = _log_ratio(given, expected)
    if (given > 0) != (expected > 0):
        if abs(lr) <= math.log1p(p.rel_tol):
            return result("wrong", f"{show(given)}: the size is right but the sign is wrong")
        return result("wrong", f"{show(given)}: the sign is wrong, and {_diagnose(p, lr)}")
    if abs(lr) <= math.log1p(p.rel_tol):
        return result("correct", f"{show(given)} is right")
    if abs(lr) <= math.log1p(2 * p.rel_tol):
        return result("close", f"{show(given)} is just {'above' if lr > 0 else 'below'} the key, outside the "
                               f"{_percent(p.rel_tol)} tolerance: {_close_cause(p, lr)}")
    return result("wrong", f"{show(given)}: {_diagnose(p, lr)}")


def _plain_script() -> bool:
    """Whether Python runs a script, where a returned result is shown nowhere: no IPython shell is
    running and this is not the interactive prompt (`python -i`, the REPL)."""
    import sys

    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None and hasattr(ipython, "get_ipython") else None
    return shell is None and not hasattr(sys, "ps1") and not sys.flags.interactive


def _percent(x: float) -> str:
    """A tolerance as a reader writes it: 0.02 -> '2%', 0.005 -> '0.5%'; below 0.01% (a count asked
    exactly, such as rel_tol=1e-9) 'near-exact', never in e-notation."""
    return f"{x * 100:.3g}%" if x >= 1e-4 else "near-exact"


def _record(result: CheckResult) -> None:
    """Append the verdict to $SCALEBOOK_RECORD (a JSON-lines file) when grading a notebook, with
    the answer as read (`given`) and the running cell's execution count and source, so the grader
    knows which cell called check() and can judge the answer again with the key it computes itself."""
    _append_record({"id": result.id, "status": result.status, "given": result.given, "message": result.message})
