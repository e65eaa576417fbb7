"""More figures of chapter 3 (Sharded matrices and collectives): distances on a torus and idle axes.

`hop_map` shades every chip of a 2D slice by its distance in hops from one chip, so the effect
of wraparound links is visible at a glance; `idle_axes` compares a collective over one axis with
the same collective helped by an idle axis (`collectives.with_idle_axes`). Every function imports
matplotlib inside, takes an optional `ax` and returns the `Figure`; costs and distances come
from `scalebook.collectives` and `scalebook.topology`, never typed here.
"""
from __future__ import annotations

from typing import Sequence

from ._axes import axes
from .. import collectives, topology as _topology, units
from ..errors import Error

__all__ = ["hop_grid", "hop_map", "idle_axes"]


def hop_grid(topo: "_topology.Topology", src: Sequence[int]) -> list[list[int]]:
    """Hops from chip `src` to every chip of a 2D slice: rows along the first axis, columns along the second."""
    if not isinstance(topo, _topology.Topology) or len(topo.axes) != 2:
        raise Error("hop_grid draws a 2D slice, e.g. topology.slice('tpu-v5e', '16x16')")
    nx, ny = (a.size for a in topo.axes)
    return [[_topology.hops(topo, src, (x, y)) for y in range(ny)] for x in range(nx)]


def hop_map(topo: "_topology.Topology", src: Sequence[int] = (0, 0), *, ax=None):
    """Each chip of a 2D slice shaded and labelled by its hop distance from `src` (chapter 3).

    The farthest chip is marked; with wraparound links it is the centre of the torus, not the
    opposite corner.
    """
    from matplotlib.patches import Rectangle

    grid = hop_grid(topo, src)
    fig, ax = axes(ax, (6.4, 6.0))
    nx, ny = len(grid), len(grid[0])
    img = ax.imshow(grid, cmap="viridis", origin="upper")
    far = max(max(row) for row in grid)
    for x in range(nx):
        for y in range(ny):
            h = grid[x][y]
            ax.text(y, x, str(h), ha="center", va="center", fontsize=10 if max(nx, ny) <= 8 else 8,
                    color="white" if h < 0.6 * far else "black", fontweight="bold" if h == far else None)
    sx, sy = src
    ax.add_patch(Rectangle((sy - 0.5, sx - 0.5), 1, 1, fill=False, edgecolor="red", linewidth=2.5))
    names = topo.names
    wrap = ", ".join(f"{a.name} {'wraps' if a.wraparound else 'open'}" for a in topo.axes)
    ax.set_xlabel(f"{names[1]} coordinate")
    ax.set_ylabel(f"{names[0]} coordinate")
    ax.set_title(f"Hops from chip {tuple(src)}\n{topo.chip.display_name} {topo.shape} ({wrap})")
    fig.colorbar(img, ax=ax, label="hops", shrink=0.8)
    return fig


def idle_axes(topo: "_topology.Topology", *, axis: str, idle: str, bytes_: float,
              kinds: Sequence[str] = ("all-gather", "reduce-scatter", "all-reduce"), ax=None):
    """Bars: each collective over `axis` alone, and with the copies along `idle` sharing the work."""
    fig, ax = axes(ax, (6.4, 4.0))
    labels, plain, helped = [], [], []
    for k in kinds:
        s = collectives.with_idle_axes(k, topo, axes=axis, idle=idle, bytes_=bytes_)
        labels.append(collectives.label(k))
        plain.append(s.plain.seconds * 1e3)
        helped.append(s.seconds * 1e3)
    xs = range(len(labels))
    ax.bar([x - 0.2 for x in xs], plain, width=0.4, label=f"over {axis} only", color="#4C72B0")
    ax.bar([x + 0.2 for x in xs], helped, width=0.4, label=f"slice along {idle} first, then use its links too",
           color="#55A868")
    for x, p, h in zip(xs, plain, helped):
        ax.text(x + 0.2, h, f"{p / h:.1f}x faster", ha="center", va="bottom", fontsize=10)
    ax.set_xticks(list(xs), labels)
    ax.set_ylabel("time (ms)")
    ax.set_title(f"{units.format_quantity(bytes_, 'B')} on a {topo.chip.display_name} {topo.shape}, "
                 f"copies along {idle}")
    ax.legend(loc="upper left", frameon=False)
    ax.set_ylim(0, max(plain) * 1.25)
    return fig
