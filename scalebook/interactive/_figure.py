"""An interactive figure: controls, the values the package computes for each setting, and a chart.

An `InteractiveFigure` is the same thing in three places:

- **On the site** (the book build, where the Sphinx extension sets `SCALEBOOK_SITE_BUILD`): every
  value is computed by the package at build time over the grid of control settings (`grid`), and
  embedded in the page as data of a Vega-Lite chart whose controls (HTML selects and sliders bound
  to Vega-Lite parameters) only *filter* those rows; no formula runs in JavaScript. The page loads
  the Vega scripts the site serves itself (`_site.py`); while they are missing (scripts off, or a
  notebook outside the site) a static PNG of the default setting, drawn by `scalebook.plots`,
  shows instead.
- **In Jupyter and Colab**: `live()` (what the figure displays as there when `ipywidgets` is
  installed) gives controls that call the package for whatever setting is chosen, including
  settings off the grid, and redraw the same chart for that one setting.
- **In tests**: `rows(**setting)` is what both of the above show for a setting, and `readout`
  the one line of text the chart prints for it (the browser check compares the shown line with it).

AUTHORING.md ("Interactive figures") says why Vega-Lite, and how to add a figure.
"""
from __future__ import annotations

import itertools
import json
import os
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

from ..errors import Error

#: Set in the book build's kernels (by book/_ext/scalebook_site.py): figures emit the site version.
SITE_ENV = "SCALEBOOK_SITE_BUILD"
#: Fields of the rows a figure computes, which no control may be named after.
RESERVED = frozenset({"kind", "text", "on", "x"})


@dataclass(frozen=True)
class Control:
    """One control of a figure: the keyword `name` of its compute function and the grid of values
    the site offers. `kind` is "select" (a drop-down) or "range" (a slider over the values, in
    order). `live_range` (min, max), for a numeric control, lets the live version take any number
    in it; without it the live version offers the grid values."""

    name: str
    label: str
    values: tuple
    labels: tuple[str, ...] | None = None
    kind: str = "select"
    default: Any = None
    live_range: tuple[float, float] | None = None
    integer: bool = True

    def __post_init__(self):
        if not self.name.isidentifier():
            raise Error(f"control name {self.name!r} must be an identifier (it names a Vega-Lite parameter)")
        if self.name in RESERVED:
            raise Error(f"control name {self.name!r} is a field every row has; use another than {sorted(RESERVED)}")
        if not self.values:
            raise Error(f"control {self.name!r} needs at least one value")
        if self.kind not in ("select", "range"):
            raise Error(f"control kind {self.kind!r}: valid kinds are 'select' and 'range'")
        if self.labels is not None and len(self.labels) != len(self.values):
            raise Error(f"control {self.name!r}: {len(self.labels)} labels for {len(self.values)} values")
        if self.default is not None and self.default not in self.values:
            raise Error(f"control {self.name!r}: default {self.default!r} is not one of {list(self.values)}")

    @property
    def initial(self) -> Any:
        """The value shown first: `default`, else the first value."""
        return self.values[0] if self.default is None else self.default

    def label_of(self, value: Any) -> str:
        """What the control shows for `value` (its label, or the value itself)."""
        if self.labels is not None and value in self.values:
            return self.labels[self.values.index(value)]
        return str(value)

    @property
    def field(self) -> str:
        """The column of a row that the site's filter compares with this control's parameter: the
        value itself for a select, its position in `values` for a slider (a range input moves in
        steps of one)."""
        return self.name if self.kind == "select" else f"{self.name}_i"


@dataclass(frozen=True)
class InteractiveFigure:
    """A figure whose every shown value comes from `compute(**setting)` (a list of row dicts, each a
    mark of the chart, exactly one of them with `kind == "readout"` and a `text`; a row's optional
    `on` names the controls it depends on, all by default, none if empty), drawn by `chart(rows, filters)` (an
    Altair chart; `filters` says whether to keep only the rows of the controls' current setting,
    with `filter_expression`). `static(**setting)` draws the fallback picture with
    `scalebook.plots`."""

    name: str
    title: str
    controls: tuple[Control, ...]
    compute: Callable[..., list[dict]]
    chart: Callable[..., Any]
    caption: str
    alt: str
    static: Callable[..., Any] | None = None
    size_budget_bytes: int = 300_000
    _cache: dict = field(default_factory=dict, compare=False, repr=False)

    # ------------------------------------------------------------------ values
    def control(self, name: str) -> Control:
        """The control called `name` (an `Error` names the figure's controls otherwise)."""
        for c in self.controls:
            if c.name == name:
                return c
        raise Error(f"figure {self.name!r} has no control {name!r}; its controls are {[c.name for c in self.controls]}")

    @property
    def default_setting(self) -> dict[str, Any]:
        """The setting the figure opens with: each control at its initial value."""
        return {c.name: c.initial for c in self.controls}

    def settings(self) -> list[dict[str, Any]]:
        """Every setting of the site's grid (the product of the controls' values)."""
        return [dict(zip([c.name for c in self.controls], combo))
                for combo in itertools.product(*(c.values for c in self.controls))]

    def rows(self, **setting: Any) -> list[dict]:
        """The rows drawn for one setting (any setting the package accepts, not only the grid's),
        each tagged with the setting's values and, for sliders, their grid position."""
        unknown = set(setting) - {c.name for c in self.controls}
        if unknown:
            raise Error(f"figure {self.name!r} has no control {sorted(unknown)}; its controls are {[c.name for c in self.controls]}")
        full = {**self.default_setting, **setting}
        key = tuple(sorted(full.items()))
        if key not in self._cache:
            tagged = []
            for row in self.compute(**full):
                row = dict(row)
                on = row.pop("on", None)
                on = [c.name for c in self.controls] if on is None else on  # () : no control
                for c in self.controls:
                    if c.name in on:
                        row[c.name] = full[c.name]
                        if c.kind == "range":
                            row[c.field] = c.values.index(full[c.name]) if full[c.name] in c.values else -1
                tagged.append(row)
            self._cache[key] = tagged
        return self._cache[key]

    def readout(self, **setting: Any) -> str:
        """The line of text the chart prints for `setting`."""
        texts = [r["text"] for r in self.rows(**setting) if r.get("kind") == "readout"]
        if len(texts) != 1:
            raise Error(f"figure {self.name!r}: compute() must return exactly one readout row, got {len(texts)}")
        return texts[0]

    def grid(self) -> list[dict]:
        """Every row of every setting of the grid, once each: what the site embeds. A row that
        depends on some controls only (its `on` names them, e.g. a chip's roof does not depend on
        the batch) is kept once for all values of the others."""
        seen, out = set(), []
        for s in self.settings():
            for r in self.rows(**s):
                key = json.dumps(r, sort_keys=True, default=str)
                if key not in seen:
                    seen.add(key)
                    out.append(r)
        return out

    # ------------------------------------------------------------------ charts
    def chart_for(self, setting: Mapping[str, Any] | None = None):
        """The Altair chart of one setting (no controls): what the live version draws."""
        return self.chart(self.rows(**dict(setting or {})), filters=False)

    def site_chart(self):
        """The Altair chart of the whole grid, its controls bound to HTML inputs."""
        import altair as alt

        params = []
        for c in self.controls:
            if c.kind == "select":
                bind = alt.binding_select(options=list(c.values), labels=[c.label_of(v) for v in c.values],
                                          name=c.label + " ")
                value = c.initial
            else:
                bind = alt.binding_range(min=0, max=len(c.values) - 1, step=1, name=c.label + " ")
                value = c.values.index(c.initial)
            params.append(alt.param(name=c.name, value=value, bind=bind))
        chart = self.chart(self.chart_rows(self.grid()), filters=True)
        return chart.add_params(*params).properties(description=self.alt)

    @staticmethod
    def chart_rows(rows: Sequence[dict]) -> list[dict]:
        """`rows` as the chart gets them: the readout's text left out (the page prints it as HTML
        beside the chart, `readouts`), each distinct row once. A readout row stays when it carries
        more than its text (the point it marks on the chart)."""
        seen, out = set(), []
        for r in rows:
            if r.get("kind") == "readout":
                r = {k: v for k, v in r.items() if k != "text"}
            key = json.dumps(r, sort_keys=True, default=str)
            if key not in seen:
                seen.add(key)
                out.append(r)
        return out

    def readouts(self) -> dict[str, str]:
        """The readout of every setting of the grid, keyed by the controls' positions in their
        values joined by commas ("0,2,1"): what the page's script shows as the controls move."""
        return {",".join(str(c.values.index(s[c.name])) for c in self.controls): self.readout(**s)
                for s in self.settings()}

    def filter_expression(self, extra: str = "") -> str:
        """The Vega expression that keeps the rows of the controls' current setting."""
        parts = [f"(datum.{c.field} == null || datum.{c.field} == {c.name})" for c in self.controls]
        return " && ".join(parts + ([extra] if extra else []))

    # ------------------------------------------------------------------ display
    def site_html(self) -> str:
        """The HTML of the site version (`scalebook.interactive._site`)."""
        from ._site import figure_html

        return figure_html(self)

    def live(self):
        """The live version for Jupyter and Colab (`scalebook.interactive._live`)."""
        from ._live import live

        return live(self)

    def _repr_mimebundle_(self, include=None, exclude=None):
        """The site version; outside the book build, without Altair, the static picture and the
        line that installs what the interactive version needs."""
        text = f"{self.title}: {self.caption}"
        try:
            return {"text/html": self.site_html(), "text/plain": text}
        except ImportError:
            if os.environ.get(SITE_ENV):
                raise
        from ._site import fallback_png

        png, _ = fallback_png(self)
        hint = " (for the interactive version: pip install 'scalebook[interactive]')"
        return {"image/png": png, "text/plain": text + hint} if png else {"text/plain": text + hint}

    def _ipython_display_(self):
        from IPython.display import display

        if not os.environ.get(SITE_ENV):
            try:
                display(self.live())
                return
            except ImportError:  # no ipywidgets or altair: the site version or the static picture
                pass
        display(self._repr_mimebundle_(), raw=True)

    def __repr__(self) -> str:
        controls = ", ".join(f"{c.name} ({len(c.values)})" for c in self.controls)
        return f"InteractiveFigure({self.name}: {self.title}; controls {controls})"


def select(name: str, label: str, values: Sequence, labels: Sequence[str] | None = None, default=None) -> Control:
    """A drop-down control over `values` (shown as `labels`)."""
    return Control(name, label, tuple(values), tuple(labels) if labels is not None else None, "select", default)


def slider(name: str, label: str, values: Sequence[float], default=None, live_range=None, integer=True) -> Control:
    """A slider over the ordered `values`; live, a number box over `live_range` when given."""
    return Control(name, label, tuple(values), tuple(str(v) for v in values), "range", default,
                   live_range, integer)
