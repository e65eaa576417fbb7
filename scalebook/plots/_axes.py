"""The one helper every figure module shares: draw into the caller's axes or a new figure."""
from __future__ import annotations


def axes(ax=None, figsize: tuple[float, float] = (6.4, 4.2)):
    """Return `(figure, ax)`: the figure of `ax`, or a new figure of `figsize` inches with one axes."""
    import matplotlib.pyplot as plt

    if ax is None:
        fig, ax = plt.subplots(figsize=figsize)
    return ax.figure, ax
