"""How the package's result objects read on a page: `str()` and the notebook display.

Each result class keeps a developer's `repr()`, `ClassName(summary)`, which tests and tracebacks
use. A reader should see the summary alone: `print(obj)`, `f"{obj}"` and a notebook cell that ends
with the object (IPython's plain-text display, which goes through `_repr_pretty_`, also for
objects inside a tuple, list or dict) all show the text inside the outer brackets, e.g.
``Roofline(compute-bound: compute 15.2 ms, ...)`` reads ``compute-bound: compute 15.2 ms, ...``.
Classes that define `_repr_html_` still show their table in HTML-capable front ends.
"""
from __future__ import annotations

_OPEN, _CLOSE = "([{", ")]}"


def reader_text(text: str, name: str) -> str:
    """`text` without a leading ``name(`` and its matching ``)``; unchanged when it has no such wrapper.

    Brackets inside the summary (``f32[256,128]``, ``(N=4)``) are matched, so only the outer pair
    goes; whatever follows the closing bracket (further lines of a multi-line repr) is kept.
    """
    if not text.startswith(name + "("):
        return text
    depth = 0
    for i in range(len(name), len(text)):
        ch = text[i]
        if ch in _OPEN:
            depth += 1
        elif ch in _CLOSE:
            depth -= 1
            if depth == 0:
                return text[len(name) + 1:i] + text[i + 1:]
    return text  # unbalanced: leave it as it is


def _reader_str(self) -> str:
    return reader_text(repr(self), type(self).__name__)


def _repr_pretty_(self, p, cycle) -> None:  # IPython's plain-text display
    p.text(str(self))


class Readable:
    """Mixin: `str()` and the notebook's plain-text display give the repr without its class wrapper.

    `__init_subclass__` puts `_repr_pretty_` on every subclass itself because IPython's printer
    takes a class's own `__repr__` before looking at its bases.
    """

    __slots__ = ()
    __str__ = _reader_str

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if "__str__" not in cls.__dict__:
            cls.__str__ = _reader_str
        cls._repr_pretty_ = _repr_pretty_
