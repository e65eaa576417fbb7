"""A problem of the bank: its id, unit, tolerance, named inputs and the function that answers it."""
from __future__ import annotations

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
        """The reference answer, in `unit`, computed by the package from `inputs`."""
        return float(self.solve(**self.inputs))

    def __repr__(self) -> str:
        return f"Problem({self.id}: {self.title} [{self.unit or 'number'}])"


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
        p = Problem(id=id, title=title, unit=unit, solve=fn, inputs=dict(inputs), rel_tol=rel_tol,
                    chips=chips, slips=dict(slips or {}), hint=hint,
                    page=page)
        _BANK[id] = p
        return p

    return register
