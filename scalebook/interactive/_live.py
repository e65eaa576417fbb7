"""The live version of an interactive figure, for Jupyter and Colab: ipywidgets controls whose
every change calls the package (`InteractiveFigure.rows`) for that setting and redraws the same
Altair chart. Drop-downs offer the grid's values; a slider control with a `live_range` becomes a
number box that takes any value in that range (so any batch, not only the grid's powers of two).
Colab ships both ipywidgets and Altair; elsewhere `pip install 'scalebook[interactive]'`.
"""
from __future__ import annotations

from typing import Any

from ..errors import Error


class Live:
    """Controls and a chart kept in step: `set(**setting)` (or a control's change) recomputes
    `rows` with the package and redraws. `widget` is what a notebook shows."""

    def __init__(self, fig):
        import ipywidgets as w

        self.fig = fig
        self.controls: dict[str, Any] = {}
        for c in fig.controls:
            if c.kind == "range" and c.live_range is not None:
                lo, hi = c.live_range
                box = w.BoundedIntText if c.integer else w.BoundedFloatText
                widget = box(value=c.initial, min=lo, max=hi, description=c.label)
            else:
                widget = w.Dropdown(options=[(c.label_of(v), v) for v in c.values], value=c.initial,
                                    description=c.label)
            widget.observe(self._changed, names="value")
            self.controls[c.name] = widget
        self.output = w.Output()
        self.caption = w.HTML(f"<p>{fig.caption}</p>")
        self.readout_line = w.HTML()  # the readout, above the chart as on the site
        self.widget = w.VBox([w.HBox(list(self.controls.values())), self.readout_line, self.output, self.caption])
        self.rows: list[dict] = []
        self.readout = ""
        self._draw()

    @property
    def setting(self) -> dict[str, Any]:
        return {name: widget.value for name, widget in self.controls.items()}

    def set(self, **setting: Any) -> None:
        """Move the controls to `setting` (as a reader would) and redraw once."""
        unknown = set(setting) - set(self.controls)
        if unknown:
            raise Error(f"figure {self.fig.name!r} has no control {sorted(unknown)}; its controls are {list(self.controls)}")
        for name, value in setting.items():
            self.controls[name].unobserve(self._changed, names="value")
            try:
                self.controls[name].value = value
            finally:
                self.controls[name].observe(self._changed, names="value")
        self._draw()

    def _changed(self, change) -> None:
        self._draw()

    def _draw(self) -> None:
        from IPython import get_ipython
        from IPython.display import display

        self.rows = self.fig.rows(**self.setting)
        self.readout = self.fig.readout(**self.setting)
        from ._site import readout_html

        self.readout_line.value = f"<p>{readout_html(self.readout)}</p>"
        self.chart = self.fig.chart(self.rows, filters=False).properties(description=self.fig.alt)
        if get_ipython() is None:  # not in a notebook (a script, a test): nothing to draw into
            return
        self.output.clear_output(wait=True)
        with self.output:
            display(self.chart)

    def _ipython_display_(self) -> None:
        from IPython.display import display

        display(self.widget)


def live(fig) -> Live:
    """The live version of `fig` (needs ipywidgets and altair)."""
    return Live(fig)
