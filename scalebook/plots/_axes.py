"""The one helper every figure module shares: draw into the caller's axes or a new figure."""
from __future__ import annotations


def axes(ax=None, figsize: tuple[float, float] = (6.4, 4.2)):
    """Return `(figure, ax)`: the figure of `ax`, or a new figure of `figsize` inches with one axes."""
    import matplotlib.pyplot as plt

    if ax is None:
        fig, ax = plt.subplots(figsize=figsize)
    return ax.figure, ax


#: Width in inches of a figure that the site shows at its own size (under `_style.COLUMN_PX`).
COLUMN_IN = 6.4


def panels(rows: int = 2, height_in: float = 4.4):
    """Return `(figure, [ax, ...])`: `rows` panels stacked one above the other, each `COLUMN_IN`
    wide and `height_in` tall.

    For figures of several panels (two chips, two models side by side): stacked, each panel keeps
    the width of a one-panel figure, so the page shows it at its own size with 9-pt text, and on a
    phone the column shrinks one panel's width rather than two (a side-by-side pair at 12 inches is
    shrunk to the column and its texts enlarged until they collide). Draw each panel by passing
    its axes as `ax=` to a figure function.
    """
    import matplotlib.pyplot as plt

    from ..errors import Error

    if not isinstance(rows, int) or isinstance(rows, bool) or rows < 1:
        raise Error(f"panels: rows must be a whole number of panels, at least 1 (got {rows!r})")
    if not height_in > 0:
        raise Error(f"panels: height_in must be positive inches (got {height_in!r})")
    fig, axs = plt.subplots(rows, 1, figsize=(COLUMN_IN, height_in * rows), squeeze=False)
    return fig, [row[0] for row in axs]
