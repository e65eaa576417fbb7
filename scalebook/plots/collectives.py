"""Figures of chapter 3 (Sharded matrices and collectives).

Which device holds which block of a sharded array, a ring AllGather step by step, collective
time against array size (latency and bandwidth regimes), AllGather over one or several axes, and
the collectives a sharding rule predicts next to those XLA compiled. Every function imports
matplotlib inside, takes an optional `ax` (or `fig` for multi-panel figures) and returns the
`Figure`. Costs come from `scalebook.collectives`; nothing here types a hardware number.
"""
from __future__ import annotations

from ._axes import axes

import math
from typing import Mapping, Sequence

from .. import units
from ..errors import Error, require_positive

__all__ = [
    "parse_dims",
    "block_owners",
    "sharded_array",
    "sharded_arrays",
    "ring_states",
    "ring_allgather",
    "collective_times",
    "multi_axis_allgather",
    "predicted_vs_compiled",
]

_COLORS = ["#4C72B0", "#DD8452", "#55A868", "#C44E52", "#8172B3", "#937860", "#DA8BC3", "#8C8C8C",
           "#CCB974", "#64B5CD"]


def _ax(ax, figsize=(6, 4)):
    return axes(ax, figsize)


def parse_dims(dims: str, mesh: Mapping[str, int]) -> list[tuple[str, tuple[str, ...]]]:
    """'I_X, J' -> [('I', ('X',)), ('J', ())]: each dimension's name and the mesh axes sharding it.

    Mesh axis names must be single letters here, so 'I_XY' means I sharded over X then Y.
    Raises `Error` for an unknown or repeated axis.
    """
    out: list[tuple[str, tuple[str, ...]]] = []
    used: list[str] = []
    for tok in dims.split(","):
        tok = tok.strip()
        if not tok:
            raise Error(f"empty dimension in {dims!r}; write e.g. 'I_X, J'")
        name, _, sub = tok.partition("_")
        axes = tuple(sub)
        for a in axes:
            if a not in mesh:
                raise Error(f"mesh axis {a!r} in {dims!r} is not in the mesh; valid: {', '.join(mesh)}")
            if a in used:
                raise Error(f"mesh axis {a!r} shards two dimensions of {dims!r}; an axis may shard one only")
            used.append(a)
        out.append((name, axes))
    return out


def _device_coords(mesh: Mapping[str, int]) -> list[dict[str, int]]:
    """Mesh coordinates of devices 0..N-1, numbered row-major over the mesh axes (as jax.make_mesh on CPU)."""
    names = list(mesh)
    coords = []
    for d in range(math.prod(mesh.values())):
        c, rest = {}, d
        for n in reversed(names):
            c[n] = rest % mesh[n]
            rest //= mesh[n]
        coords.append(c)
    return coords


def _block_index(coord: Mapping[str, int], axes: Sequence[str], mesh: Mapping[str, int]) -> int:
    i = 0
    for a in axes:  # the first axis named varies slowest
        i = i * mesh[a] + coord[a]
    return i


def block_owners(dims: str, mesh: Mapping[str, int]) -> dict[tuple[int, ...], list[int]]:
    """For a 2D (or nD) sharded array, block index -> the devices holding that block.

    `block_owners('I_X, J', {'X': 4, 'Y': 2})` -> {(0, 0): [0, 1], (1, 0): [2, 3], ...}: the
    rows are cut in 4 along X, and both devices of each Y pair hold the same block.
    """
    parsed = parse_dims(dims, mesh)
    owners: dict[tuple[int, ...], list[int]] = {}
    for dev, coord in enumerate(_device_coords(mesh)):
        key = tuple(_block_index(coord, axes, mesh) for _, axes in parsed)
        owners.setdefault(key, []).append(dev)
    return owners


def sharded_array(dims: str = "I_X, J", mesh: "Mapping[str, int] | None" = None, *, name: str = "A", ax=None):
    """Draw a 2D array cut into the blocks that `dims` implies, each labelled with its devices.

    Blocks of one colour are the same data; a dimension with no subscript is not cut, so every
    device along the unused mesh axes holds a copy (replication).
    """
    mesh = dict(mesh or {"X": 4, "Y": 2})
    parsed = parse_dims(dims, mesh)
    if len(parsed) != 2:
        raise Error(f"sharded_array draws 2D arrays; {dims!r} has {len(parsed)} dimensions")
    owners = block_owners(dims, mesh)
    nr = math.prod(mesh[a] for a in parsed[0][1])
    nc = math.prod(mesh[a] for a in parsed[1][1])
    fig, ax = _ax(ax, (3.2, 3.2))
    from matplotlib.patches import Rectangle

    for (r, c), devs in owners.items():
        k = r * nc + c
        ax.add_patch(Rectangle((c / nc, 1 - (r + 1) / nr), 1 / nc, 1 / nr, facecolor=_COLORS[k % len(_COLORS)],
                               alpha=0.55, edgecolor="black", linewidth=1.2))
        label = ",".join(map(str, devs)) if len(devs) <= 4 else f"{devs[0]}..{devs[-1]}"
        ax.text((c + 0.5) / nc, 1 - (r + 0.5) / nr, label, ha="center", va="center",
                fontsize=9 if nr * nc <= 8 else 7)
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.set_aspect("equal")
    ax.set_xticks([])
    ax.set_yticks([])
    (d0, a0), (d1, a1) = parsed
    ax.set_ylabel(f"{d0}" + (f" (cut along {''.join(a0)})" if a0 else " (whole)"))
    ax.set_xlabel(f"{d1}" + (f" (cut along {''.join(a1)})" if a1 else " (whole)"))
    ax.set_title(f"{name}[{dims}]", fontsize=10)
    return fig


def sharded_arrays(specs: Sequence[str] = ("I, J", "I_X, J", "I_X, J_Y", "I_XY, J"),
                   mesh: "Mapping[str, int] | None" = None, *, name: str = "A", fig=None):
    """Several shardings of the same array, two panels to a row (one `sharded_array` panel each)."""
    import matplotlib.pyplot as plt

    if not specs:
        raise Error("give at least one sharding, e.g. ('I_X, J',)")
    ncols = min(2, len(specs))
    nrows = math.ceil(len(specs) / ncols)
    if fig is None:
        fig = plt.figure(figsize=(3.3 * ncols, 3.2 * nrows + 0.5))
    grid = fig.subplots(nrows, ncols, squeeze=False)
    axes = list(grid.flat)
    for ax in axes[len(specs):]:
        ax.set_axis_off()
    for ax, spec in zip(axes, specs):
        sharded_array(spec, mesh, name=name, ax=ax)
    m = dict(mesh or {"X": 4, "Y": 2})
    fig.suptitle("Devices holding each block on a " + "x".join(f"{v}" for v in m.values()) + " mesh ("
                 + ", ".join(f"{k}={v}" for k, v in m.items()) + "; device = "
                 + " * ".join(f"{k}" for k in list(m)[:1]) + (f"*{list(m.values())[1]} + {list(m)[1]}" if len(m) == 2 else "")
                 + ")", fontsize=10, wrap=True)
    fig.tight_layout()
    return fig


def ring_states(n: int, bidirectional: bool = False) -> list[list[set[int]]]:
    """Shards held by each of `n` devices on a ring after each step of an AllGather.

    Step 0 is the start (device i holds shard i). One-way: at each step every device passes the
    shard it received last to its right neighbour (n - 1 steps). Both ways: every device passes
    one shard each way, so it finishes in ceil((n - 1) / 2) steps.
    """
    require_positive(n=n)
    held = [{i} for i in range(n)]
    states = [[set(h) for h in held]]
    steps = math.ceil((n - 1) / 2) if bidirectional else n - 1
    for s in range(1, steps + 1):
        new = [set(h) for h in held]
        for i in range(n):
            new[i].add((i - s) % n)  # came from the left, s hops away
            if bidirectional:
                new[i].add((i + s) % n)  # came from the right
        held = new
        states.append([set(h) for h in held])
    return states


def ring_allgather(n: int = 4, *, bidirectional: bool = False, fig=None):
    """An AllGather over a ring of `n` devices, one panel per step: who holds which shard.

    Rows are devices, columns are shards; a shard that arrived in this step has a thick edge.
    """
    import matplotlib.pyplot as plt
    from matplotlib.patches import Rectangle

    states = ring_states(n, bidirectional)
    if fig is None:
        fig = plt.figure(figsize=(2.3 * len(states), 2.6))
    axes = fig.subplots(1, len(states), squeeze=False)[0]
    for s, (ax, state) in enumerate(zip(axes, states)):
        prev = states[s - 1] if s else state
        for dev in range(n):
            for shard in range(n):
                if shard in state[dev]:
                    new = s > 0 and shard not in prev[dev]
                    ax.add_patch(Rectangle((shard, n - 1 - dev), 1, 1, facecolor=_COLORS[shard % len(_COLORS)],
                                           alpha=0.7, edgecolor="black", linewidth=2.5 if new else 0.6))
                else:
                    ax.add_patch(Rectangle((shard, n - 1 - dev), 1, 1, facecolor="white", edgecolor="#bbbbbb",
                                           linewidth=0.6))
        ax.set_xlim(0, n)
        ax.set_ylim(0, n)
        ax.set_aspect("equal")
        ax.set_xticks([i + 0.5 for i in range(n)], [str(i) for i in range(n)], fontsize=7)
        ax.set_yticks([n - 0.5 - i for i in range(n)], [f"dev {i}" for i in range(n)], fontsize=7)
        ax.set_xlabel("shard", fontsize=8)
        ax.set_title("start" if s == 0 else f"after step {s}", fontsize=9)
    fig.suptitle(f"AllGather on a ring of {n}, {'both directions' if bidirectional else 'one direction'}: "
                 f"{len(states) - 1} steps", fontsize=10)
    fig.tight_layout()
    return fig


def collective_times(topology, *, axes: "str | Sequence[str]" = "X",
                     kinds: Sequence[str] = ("all-gather", "all-reduce", "all-to-all"),
                     min_bytes: float = 1e3, max_bytes: float = 1e10, points: int = 61, ax=None):
    """Time of each collective against array size V over `axes` (log-log), from `collectives.cost`.

    The bend in each curve is where the latency term (hops x about 1 us) gives way to the
    bandwidth term (V / W, 2V / W, V / 4W); the dotted vertical line marks the AllGather's.
    """
    from .. import collectives

    require_positive(min_bytes=min_bytes, max_bytes=max_bytes, points=points)
    if max_bytes <= min_bytes:
        raise Error(f"max_bytes ({max_bytes:g}) must exceed min_bytes ({min_bytes:g})")
    sizes = [min_bytes * (max_bytes / min_bytes) ** (i / (points - 1)) for i in range(points)]
    fig, ax = _ax(ax, (6.4, 4.2))
    for k, kind in enumerate(kinds):
        t = [collectives.cost(kind, topology, axes=axes, bytes_=v).seconds for v in sizes]
        ax.loglog(sizes, t, color=_COLORS[k % len(_COLORS)], lw=2, label=collectives.label(kind))
    ag = collectives.cost("all-gather", topology, axes=axes, bytes_=1.0)
    if ag.bandwidth_seconds > 0 and ag.latency_seconds > 0:
        cross = ag.latency_seconds / ag.bandwidth_seconds  # bytes where V / W = hops x latency
        if min_bytes < cross < max_bytes:
            ax.axvline(cross, color="gray", ls=":", lw=1)
            ax.text(cross * 1.15, ax.get_ylim()[0] * 3, f"AllGather crossover\n{units.format_quantity(cross, 'B')}",
                    fontsize=8, color="gray")
    names = (axes,) if isinstance(axes, str) else tuple(axes)
    ax.set_xlabel("array size V (bytes)")
    ax.set_ylabel("time (s)")
    ax.set_title(f"Collectives over {'+'.join(names)} of a {topology.chip.display_name} {topology.shape}: "
                 "latency, then bandwidth", fontsize=10)
    ax.grid(True, which="both", alpha=0.25)
    ax.legend(fontsize=9)
    return fig


def multi_axis_allgather(topology, *, bytes_: float, groups: "Sequence[Sequence[str]] | None" = None, ax=None):
    """Bars: the time of one AllGather of `bytes_` over each group of axes (default: each axis, then all).

    More axes, more links out of every chip: the bandwidth term shrinks by the number of axes.
    """
    from .. import collectives

    require_positive(bytes_=bytes_)
    names = topology.names
    groups = [tuple(g) for g in (groups or [(n,) for n in names] + ([tuple(names)] if len(names) > 1 else []))]
    costs = [collectives.all_gather(topology, axes=g, bytes_=bytes_) for g in groups]
    fig, ax = _ax(ax, (5.6, 3.6))
    labels = ["+".join(g) + f"\n({c.group_size} chips)" for g, c in zip(groups, costs)]
    secs = [c.seconds for c in costs]
    bars = ax.bar(labels, [s * 1e3 for s in secs], color=[_COLORS[len(g) - 1] for g in groups])
    for b, s in zip(bars, secs):
        ax.text(b.get_x() + b.get_width() / 2, b.get_height(), units.format_quantity(s, "s"), ha="center",
                va="bottom", fontsize=9)
    ax.set_ylabel("AllGather time (ms)")
    ax.set_title(f"AllGather of {units.format_quantity(bytes_, 'B')} on a {topology.chip.display_name} {topology.shape}",
                 fontsize=10)
    ax.margins(y=0.15)
    return fig


def predicted_vs_compiled(rows: Sequence[Mapping], *, ax=None):
    """Paired horizontal bars: bytes per device each case moves, predicted by the rules vs found in compiled HLO.

    Each row is a mapping with keys 'case' (label), 'predicted' and 'compiled' (bytes per device,
    summed over the case's collectives), and optionally 'predicted_ops' and 'compiled_ops'
    (short text such as 'AllGather(X)') written beside the bars.
    """
    if not rows:
        raise Error("predicted_vs_compiled needs at least one row")
    fig, ax = _ax(ax, (6.8, 1.0 * len(rows) + 1.4))
    h = 0.38
    top = max(max(r["predicted"], r["compiled"]) for r in rows) or 1.0
    for i, r in enumerate(rows):
        for j, (key, color, lab) in enumerate((("predicted", _COLORS[0], "predicted (scalebook.sharding)"),
                                               ("compiled", _COLORS[1], "compiled (XLA HLO)"))):
            y = i + (j - 0.5) * h
            ax.barh(y, r[key] / 1e3, h, color=color, label=lab if i == 0 else None)
            ops = r.get(f"{key}_ops")
            if ops is not None:
                ax.text(r[key] / 1e3 + top / 1e3 * 0.02, y, ops or "none", ha="left", va="center", fontsize=9)
    ax.set_yticks(range(len(rows)), [r["case"] for r in rows], fontsize=9)
    ax.invert_yaxis()
    ax.set_xlabel("bytes sent per device (kB)")
    ax.set_xlim(0, top / 1e3 * 2.0)
    ax.set_title("Collectives of each sharded matmul: rule vs compiler", fontsize=10)
    ax.legend(fontsize=9, loc="lower right")
    fig.tight_layout()
    return fig
