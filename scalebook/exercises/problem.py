"""A problem of the bank: its id, unit, tolerance, named inputs and the function that answers it.

Reading a key is noted while a notebook is graded: when $SCALEBOOK_RECORD names a file (the
grader sets it in the kernel), `Problem.answer()` and `Problem.solve(...)` append a line
`{"id": ..., "event": "key", ...}` to it, with the running cell, before they return the key. These
are the routes a student reaches without trying (`get(id).answer()`, `getattr(p, "answer")()`, the
bank module's attribute, `_BANK[id]`): each leads to one of these two methods, and the grader
refuses the problem whose key was read. `check()` computes the key through `_solve_quietly`,
which notes nothing. Code that calls the private solver itself is not caught (see
`scalebook.grading`: a determined student can forge anything inside the kernel).
"""
from __future__ import annotations

import json
import os
import re
import sys
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from ..errors import Error

_BANK: dict[str, "Problem"] = {}
_BANK_PACKAGE = "scalebook.exercises.bank."
_MODULE = re.compile(r"^ch(?P<number>\d+[a-z]?)_(?P<slug>\w+)$")


def page_of_module(name: str) -> str:
    """The problem page a bank module serves: `ch02_accelerators` -> '02-accelerators',
    `ch02b_gpus` -> '02b-gpus' (the page is `exercises/<page>.md`); '' for any other module."""
    m = _MODULE.match(name.rsplit(".", 1)[-1])
    return f"{m.group('number')}-{m.group('slug').replace('_', '-')}" if m else ""


@dataclass(frozen=True)
class Problem:
    """One self-graded problem. `answer()` computes the key from the package, never typed by hand."""

    id: str
    title: str
    unit: str
    solve: Callable[..., float]
    inputs: Mapping[str, Any] = field(default_factory=dict)
    rel_tol: float = 0.02
    #: Ratio of a per-chip answer to the total (or the reverse), when the problem has one:
    #: an answer off by exactly this factor earns the "per chip vs total" hint.
    chips: float | None = None
    #: Extra ratio -> hint pairs for slips particular to this problem.
    slips: Mapping[float, str] = field(default_factory=dict)
    hint: str = ""
    #: The problem page it belongs to ("02-accelerators"), from its bank module's name; "" when
    #: it was registered outside the bank (as tests do).
    page: str = ""

    def answer(self) -> float:
        """The reference answer, in `unit`, computed by the package from `inputs`.

        While a notebook is graded, calling it notes that this problem's key was read (see the
        module docstring), and the grader refuses the problem.
        """
        _note_key_read(self.id)
        return _solve_quietly(self)

    def __repr__(self) -> str:
        return f"Problem({self.id}: {self.title} [{self.unit or 'number'}])"


class _Solver:
    """A problem's solver function, called as the function itself (`p.solve(**p.inputs)`), except
    that a call while a notebook is graded notes that the problem's key was read."""

    __slots__ = ("_id", "_fn")

    def __init__(self, id: str, fn: Callable[..., float]):
        self._id, self._fn = id, fn

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        _note_key_read(self._id)
        return self._fn(*args, **kwargs)

    def __repr__(self) -> str:
        return f"<solver of problem {self._id}>"


def _solve_quietly(p: Problem) -> float:
    """The key of `p`, in its unit, without noting a read: the route `check()` takes."""
    fn = p.solve._fn if isinstance(p.solve, _Solver) else p.solve
    return float(fn(**p.inputs))


def _running_cell() -> tuple[int | None, str | None]:
    """(execution count, source) of the cell running in an IPython kernel, else (None, None).

    IPython stores a cell's input (`In[-1]`) before running it; whether its execution count is
    already advanced depends on the IPython version, so the grader matches on the source first.
    """
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None and hasattr(ipython, "get_ipython") else None
    if shell is None:
        return None, None
    count = getattr(shell, "execution_count", None)
    history = getattr(shell, "user_ns", {}).get("In")
    source = history[-1] if isinstance(history, list) and history and isinstance(history[-1], str) else None
    return (count if isinstance(count, int) else None), source


def _append_record(row: dict) -> None:
    """Append `row`, with the running cell's execution count and source, to $SCALEBOOK_RECORD (a
    JSON-lines file the grader reads) when it is set; nothing otherwise."""
    path = os.environ.get("SCALEBOOK_RECORD")
    if path:
        count, source = _running_cell()
        with open(path, "a", encoding="utf-8") as f:
            f.write(json.dumps({**row, "execution_count": count, "source": source}) + "\n")


def _note_key_read(id: str) -> None:
    _append_record({"id": id, "event": "key"})


def _registering_module() -> str:
    """The bank module up the stack whose top level registers a problem ('' when there is none).
    Searched for rather than read from the caller's frame: under `make mutate`, mutmut's
    trampolines (functions of mutmut's own module) sit between the bank module and `problem`."""
    frame = sys._getframe(1)
    while frame is not None and not frame.f_globals.get("__name__", "").startswith(_BANK_PACKAGE):
        frame = frame.f_back
    return frame.f_globals["__name__"] if frame is not None else ""


def problem(
    id: str, *, title: str, unit: str, rel_tol: float = 0.02, chips: float | None = None,
    slips: Mapping[float, str] | None = None, hint: str = "", **inputs: Any,
) -> Callable[[Callable[..., float]], Problem]:
    """Decorator that registers a solver function as problem `id` with its named inputs.

        @problem("1.3", title="Critical batch of a v5e", unit="token", chip="tpu-v5e")
        def critical_batch_v5e(chip):
            return roofline.critical_batch(chip)
    """
    page = page_of_module(_registering_module())

    def register(fn: Callable[..., float]) -> Problem:
        if id in _BANK:
            raise Error(f"problem id {id!r} is registered twice")
        p = Problem(id=id, title=title, unit=unit, solve=_Solver(id, fn), inputs=dict(inputs), rel_tol=rel_tol,
                    chips=chips, slips=dict(slips or {}), hint=hint,
                    page=page)
        _BANK[id] = p
        return p

    return register
