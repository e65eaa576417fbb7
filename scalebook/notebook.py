"""Helpers for the book's notebooks: glue numbers into the prose, in Jupyter Book or in Colab.

`glue(name, value)` hands the value to myst-nb so that `` {glue:text}`name` `` in the
Markdown shows it. Where myst-nb is absent (Colab, plain Jupyter) it is silent: the generated
notebook's prose already shows the value the book computed (`tools/make_notebooks.py`), and
the cells a reader runs show their own results. With the environment variable
`SCALEBOOK_GLUE_LOG` set to a file, every glued value is also appended to it as a JSON line
`{"name": ..., "text": repr(value)}`; the notebook generator and the install test read it.
"""
from __future__ import annotations

import json
import math
import os
from typing import Any

from ._readable import Readable
from . import units


class Text(str):
    """A string whose repr is itself, so that glued text shows without quotes."""

    def __repr__(self) -> str:
        return str(self)


def fmt(value: float, unit: str = "", digits: int = 3) -> Text:
    """`units.format_quantity` as glue-ready text: `fmt(3.2e-3, 's')` -> 3.2 ms."""
    return Text(units.format_quantity(value, unit, digits))


def glue(name: str, value: Any, unit: str | None = None, digits: int = 3) -> Any:
    """Glue `value` (formatted with `unit` when given) under `name`; returns what was glued.

    Numbers without a unit are glued as they are, so the Markdown can format them
    (`` {glue:text}`name:.1f` ``); strings are glued as plain text.
    """
    from .errors import Error, text

    text("name", name)
    if type(value).__module__ == "numpy" and getattr(value, "shape", ()) != ():
        raise Error(f"value must be one number or a string, got an array of shape {value.shape}")
    if type(value).__module__ == "numpy" and hasattr(value, "item"):
        value = value.item()
    if value is None:
        raise Error("value must be a number or a string to glue, got None")
    if isinstance(value, float) and not math.isfinite(value):
        raise Error(f"value must be a finite number, got {value!r}: a page never shows nan or inf")  # numpy 2 scalars repr as 'np.float64(2.2)', which glue cannot format
    if unit is not None:
        value = fmt(value, unit, digits)
    elif isinstance(value, str) and not isinstance(value, Text):
        value = Text(value)
    log = os.environ.get("SCALEBOOK_GLUE_LOG")
    if log:
        with open(log, "a", encoding="utf-8") as f:
            f.write(json.dumps({"name": name, "text": repr(value)}) + "\n")
    try:
        from myst_nb import glue as _glue
    except ImportError:
        return value
    _glue(name, value, display=False)
    return value


class Table(Readable):
    """Rows shown as an HTML table in Jupyter, Colab and the book (fixed-width text elsewhere)."""

    def __init__(self, rows: list[dict[str, Any]], columns: list[str]):
        self.rows = rows
        self.columns = columns

    @staticmethod
    def _cell(value: Any) -> str:
        if isinstance(value, float):
            return f"{value:,.0f}" if abs(value) >= 100 else f"{value:.3g}"
        return str(value)

    def _repr_html_(self) -> str:
        import html

        head = "".join(f"<th>{html.escape(c)}</th>" for c in self.columns)
        body = "".join("<tr>" + "".join(f"<td>{html.escape(self._cell(r.get(c, '')))}</td>" for c in self.columns)
                       + "</tr>" for r in self.rows)
        return f'<table class="scalebook-table"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'

    def __repr__(self) -> str:
        cells = [[self._cell(r.get(c, "")) for c in self.columns] for r in self.rows]
        widths = [max([len(c)] + [len(row[i]) for row in cells]) for i, c in enumerate(self.columns)]
        lines = ["  ".join(c.ljust(w) for c, w in zip(self.columns, widths))]
        lines += ["  ".join(v.ljust(w) for v, w in zip(row, widths)) for row in cells]
        return "\n".join(lines)


def table(rows: "list[dict[str, Any]]", columns: "list[str] | None" = None) -> Table:
    """A table of `rows` (dicts) for display: `table([{"chips": 8, "seconds": 1.5}])` as the last
    line of a cell shows an HTML table. `columns` picks and orders the keys (default: the first
    row's). Floats of 100 or more print with thousands separators and no decimals, smaller ones
    with three significant digits.
    """
    from .errors import Error

    if not isinstance(rows, (list, tuple)) or not all(isinstance(r, dict) for r in rows):
        raise Error(f"rows must be a list of dicts (column -> value), got {type(rows).__name__}")
    if columns is not None and (not isinstance(columns, (list, tuple)) or not columns
                                or not all(isinstance(c, str) for c in columns)):
        raise Error(f"columns must be a non-empty list of column names, got {columns!r:.60}")
    rows = [dict(r) for r in rows]
    if not rows:
        raise Error("rows must hold at least one row (a dict of column -> value)")
    return Table(rows, list(columns) if columns is not None else list(rows[0]))
