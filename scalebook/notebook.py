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
import os
from typing import Any

from . import units


class Text(str):
    """A string whose repr is itself, so that glued text shows without quotes."""

    def __repr__(self) -> str:
        return str(self)


def fmt(value: float, unit: str = "", digits: int = 3) -> Text:
    """`units.format_quantity` as glue-ready text: fmt(3.2e-3, 's') -> 3.2 ms."""
    return Text(units.format_quantity(value, unit, digits))


def glue(name: str, value: Any, unit: str | None = None, digits: int = 3) -> Any:
    """Glue `value` (formatted with `unit` when given) under `name`; returns what was glued.

    Numbers without a unit are glued as they are, so the Markdown can format them
    (`` {glue:text}`name:.1f` ``); strings are glued as plain text.
    """
    if type(value).__module__ == "numpy" and hasattr(value, "item"):
        value = value.item()  # numpy 2 scalars repr as 'np.float64(2.2)', which glue cannot format
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
