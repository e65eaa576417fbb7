"""Figures of chapter 2 (Accelerators): systolic arrays, tori, GPU nodes, bandwidth tiers.

Every function draws with matplotlib (imported inside the function), takes an optional `ax`
(or `fig` for multi-panel figures) and returns the `Figure`. Hardware numbers come from
`scalebook.hardware` and the package's spec data, never typed here.
"""
from __future__ import annotations

from ._axes import axes

import math
from typing import Sequence

from .. import hardware, units
from .._data import load
from ..errors import Error, require_positive

__all__ = [
    "systolic_steps",
    "mxu_padding",
    "torus_2d",
    "torus_compare",
    "torus_3d",
    "bandwidth_tiers",
    "tier_bandwidths",
    "gpu_node",
    "fat_tree",
    "gpu_cluster",
]


def _ax(ax, figsize=(6, 4)):
    return axes(ax, figsize)


# --------------------------------------------------------------------------- systolic array


def systolic_active(size: int, rows: int, t: int) -> dict[tuple[int, int], int]:
    """Which cells of a weight-stationary `size` x `size` array work at step `t`.

    Cell (i, j) holds weight w[i, j]. Input row b enters array row i at step b + i (the skew),
    moves one cell right per step, so it meets cell (i, j) at step b + i + j; the partial sum of
    output y[b, j] moves one cell down per step along column j at the same pace. Returns
    {(i, j): b} for the cells busy at step `t`.
    """
    out = {}
    for i in range(size):
        for j in range(size):
            b = t - i - j
            if 0 <= b < rows:
                out[(i, j)] = b
    return out


def systolic_steps(size: int = 4, rows: int = 3, steps: Sequence[int] | None = None,
                   ncols: int = 2, fig=None):
    """Panels of a `size` x `size` weight-stationary systolic array streaming `rows` input rows.

    Each panel is one clock step: every cell (i, j) holds the weight w[i,j] (labelled while idle);
    a busy cell shows the input x[b,i] it multiplies by its weight, coloured by the input row b it
    serves; inputs still waiting sit skewed to the left, finished outputs y[b, j] drop out below
    their column. The whole pass takes rows + 2*size - 2 steps.
    """
    import matplotlib.pyplot as plt
    from matplotlib.patches import Circle, Rectangle

    require_positive(size=size, rows=rows, ncols=ncols)
    total = rows + 2 * size - 2
    steps = list(range(total)) if steps is None else list(steps)
    for t in steps:
        if not 0 <= t < total:
            raise Error(f"step {t} is outside the pass: valid steps are 0..{total - 1}")
    nrows = math.ceil(len(steps) / ncols)
    if fig is None:
        fig = plt.figure(figsize=(3.4 * ncols, 3.3 * nrows + 0.6))
    axes = fig.subplots(nrows, ncols, squeeze=False)
    colors = plt.get_cmap("tab10").colors
    for k, ax in enumerate(axes.flat):
        ax.set_axis_off()
        if k >= len(steps):
            continue
        t = steps[k]
        busy = systolic_active(size, rows, t)
        for i in range(size):
            for j in range(size):
                x, y = j, size - 1 - i
                if (i, j) in busy:
                    b = busy[(i, j)]
                    ax.add_patch(Rectangle((x - 0.45, y - 0.45), 0.9, 0.9, color=colors[b % 10], alpha=0.85))
                    ax.text(x, y, f"$x_{{{b}{i}}}$", ha="center", va="center", fontsize=9, color="white")
                else:
                    ax.add_patch(Rectangle((x - 0.45, y - 0.45), 0.9, 0.9, facecolor="#eeeeee", edgecolor="#bbbbbb"))
                    ax.text(x, y, f"$w_{{{i}{j}}}$", ha="center", va="center", fontsize=9, color="#555555")
            # inputs still queued on the left of row i: x[b, i] enters at step b + i
            for b in range(rows):
                dist = b + i - t
                if dist > 0:
                    cx = -0.25 - 0.55 * dist
                    ax.add_patch(Circle((cx, size - 1 - i), 0.22, color=colors[b % 10], alpha=0.6))
                    ax.text(cx, size - 1 - i, f"{b}", ha="center", va="center", fontsize=9, color="black")
        # outputs that have left the bottom of column j: y[b, j] leaves after step b + size - 1 + j
        for j in range(size):
            done = [b for b in range(rows) if t > b + size - 1 + j]
            for n_out, b in enumerate(done):
                cy = -0.85 - 0.5 * n_out
                ax.add_patch(Rectangle((j - 0.3, cy - 0.2), 0.6, 0.4, color=colors[b % 10]))
                ax.text(j, cy, f"$y_{{{b}{j}}}$", ha="center", va="center", fontsize=9, color="white")
        ax.set_xlim(-0.3 - 0.55 * (rows + size - 1), size - 0.4)
        ax.set_ylim(-0.9 - 0.5 * rows, size - 0.3)
        ax.set_aspect("equal")
        ax.set_title(f"step {t}: {len(busy)} of {size * size} cells busy", fontsize=9)
    fig.suptitle(f"A {size}x{size} weight-stationary systolic array multiplying "
                 f"[{rows}x{size}] by [{size}x{size}]:\n"
                 "inputs enter from the left (skewed by row), partial sums flow down,\n"
                 "outputs drop out of the bottom", fontsize=10)
    fig.tight_layout()
    return fig


def mxu_padding(sizes: Sequence[int] = (128, 256), max_dim: int = 1024, ax=None):
    """Fraction of a matrix unit's width that a dimension of size d fills: d / (n * ceil(d / n)).

    A matmul dimension that is not a multiple of the array size n is padded up to one; the
    padding is work the array does for nothing. Sawtooth curves for each array size in `sizes`.
    """
    require_positive(max_dim=max_dim)
    fig, ax = _ax(ax, (7, 3.5))
    d = list(range(1, int(max_dim) + 1))
    for n in sizes:
        require_positive(size=n)
        ax.plot(d, [x / (n * math.ceil(x / n)) for x in d], label=f"{n}-wide array", lw=1.4)
    ax.set_xlabel("matrix dimension d (rows or columns fed to the array)")
    ax.set_ylabel("useful fraction of the array")
    ax.set_ylim(0, 1.05)
    ax.set_xlim(0, max_dim)
    ax.legend(loc="lower right")
    ax.grid(alpha=0.3)
    ax.set_title("Padding waste: dimensions that are not multiples of the array size")
    return fig


# --------------------------------------------------------------------------- tori


def _hops(a: int, b: int, n: int, wrap: bool) -> int:
    d = abs(a - b)
    return min(d, n - d) if wrap else d


def torus_hops(shape: Sequence[int], wrap: Sequence[bool], src: Sequence[int], dst: Sequence[int]) -> int:
    """Fewest ICI hops from chip `src` to chip `dst` on a grid of `shape` (wrap per axis)."""
    return sum(_hops(a, b, n, w) for a, b, n, w in zip(src, dst, shape, wrap))


def _bezier(p0, p1, p2, p3, n=40):
    pts = []
    for k in range(n + 1):
        s = k / n
        pts.append(tuple((1 - s) ** 3 * a + 3 * (1 - s) ** 2 * s * b + 3 * (1 - s) * s ** 2 * c + s ** 3 * d
                         for a, b, c, d in zip(p0, p1, p2, p3)))
    return pts


def torus_2d(shape: Sequence[int] = (4, 4), wrap: "bool | Sequence[bool]" = True,
             source: Sequence[int] = (0, 0), ax=None):
    """A 2D grid of chips with nearest-neighbour links, and wraparound links drawn as loops.

    Chips are coloured by their hop distance from `source`, so the figure shows how the
    wraparounds shorten the longest path. `wrap` is one flag or one per axis (rows, columns).
    """
    import matplotlib.pyplot as plt
    from matplotlib import colors as mcolors

    rows, cols = (int(s) for s in shape)
    require_positive(rows=rows, cols=cols)
    wraps = (wrap, wrap) if isinstance(wrap, bool) else tuple(bool(w) for w in wrap)
    fig, ax = _ax(ax, (4.2, 4.2))
    link = dict(color="#555555", lw=1.6, zorder=1)
    for r in range(rows):
        for c in range(cols):
            if c + 1 < cols:
                ax.plot([c, c + 1], [r, r], **link)
            if r + 1 < rows:
                ax.plot([c, c], [r, r + 1], **link)
    wrap_style = dict(color="#d62728", lw=1.3, ls="--", zorder=0.5)
    if wraps[1] and cols > 2:
        for r in range(rows):
            pts = _bezier((0, r), (-0.9, r + 0.45), (cols - 1 + 0.9, r + 0.45), (cols - 1, r))
            ax.plot(*zip(*pts), **wrap_style)
    if wraps[0] and rows > 2:
        for c in range(cols):
            pts = _bezier((c, 0), (c + 0.45, -0.9), (c + 0.45, rows - 1 + 0.9), (c, rows - 1))
            ax.plot(*zip(*pts), **wrap_style)
    hops = [[torus_hops((rows, cols), wraps, source, (r, c)) for c in range(cols)] for r in range(rows)]
    worst = max(max(h) for h in hops)
    cmap = plt.get_cmap("viridis_r")
    norm = mcolors.Normalize(0, max(rows + cols - 2, 1))
    for r in range(rows):
        for c in range(cols):
            h = hops[r][c]
            ax.scatter([c], [r], s=420, color=cmap(norm(h)), edgecolor="black", zorder=3)
            ax.text(c, r, str(h), ha="center", va="center", fontsize=8, zorder=4,
                    color="white" if norm(h) > 0.45 else "black")
    ax.set_xlim(-1.0, cols - 0.2 + 0.2)
    ax.set_ylim(-1.0, rows - 0.2 + 0.2)
    ax.set_aspect("equal")
    ax.set_axis_off()
    kind = {(True, True): "with wraparound on both axes", (False, False): "without wraparound",
            (True, False): "wraparound on rows only", (False, True): "wraparound on columns only"}[wraps]
    ax.set_title(f"{rows}x{cols} {kind}\nhops from chip {tuple(source)}; farthest: {worst}", fontsize=9)
    return fig


def torus_compare(shape: Sequence[int] = (4, 4), fig=None):
    """Two panels: the same grid of chips without and with wraparound links."""
    import matplotlib.pyplot as plt

    if fig is None:
        fig = plt.figure(figsize=(8.4, 4.4))
    a1, a2 = fig.subplots(1, 2)
    torus_2d(shape, wrap=False, ax=a1)
    torus_2d(shape, wrap=True, ax=a2)
    fig.tight_layout()
    return fig


def torus_3d(shape: Sequence[int] = (4, 4, 4), chip_at: Sequence[int] = (0, 1, 2), ax=None):
    """A 3D torus (a TPU cube): every chip, its links, and one chip's six neighbours.

    The chosen chip sits on a face of the cube; the neighbour it reaches only through a
    wraparound link is marked, with that link drawn as a dashed loop around the outside.
    """
    import matplotlib.pyplot as plt

    dims = tuple(int(s) for s in shape)
    if len(dims) != 3:
        raise Error(f"torus_3d needs three dimensions like (4, 4, 4), got {shape!r}")
    require_positive(x=dims[0], y=dims[1], z=dims[2])
    if ax is None:
        fig = plt.figure(figsize=(5.2, 5.2))
        ax = fig.add_subplot(projection="3d")
    fig = ax.figure
    X, Y, Z = dims
    for x in range(X):
        for y in range(Y):
            for z in range(Z):
                for dx, dy, dz in ((1, 0, 0), (0, 1, 0), (0, 0, 1)):
                    nx, ny, nz = x + dx, y + dy, z + dz
                    if nx < X and ny < Y and nz < Z:
                        ax.plot([x, nx], [y, ny], [z, nz], color="#bbbbbb", lw=0.7)
    pts = [(x, y, z) for x in range(X) for y in range(Y) for z in range(Z)]
    ax.scatter(*zip(*pts), s=18, color="#7f7f7f", depthshade=True)
    c = tuple(int(v) for v in chip_at)
    neigh, via_wrap = [], []
    for axis in range(3):
        for step in (-1, 1):
            n = list(c)
            n[axis] += step
            if 0 <= n[axis] < dims[axis]:
                neigh.append(tuple(n))
            else:
                n[axis] %= dims[axis]
                via_wrap.append((axis, tuple(n)))
    ax.scatter(*c, s=120, color="#d62728", edgecolor="black", depthshade=False, label="a chip")
    for n in neigh:
        ax.plot(*zip(c, n), color="#1f77b4", lw=2.5)
    if neigh:
        ax.scatter(*zip(*neigh), s=70, color="#1f77b4", depthshade=False, label="direct neighbours")
    for axis, n in via_wrap:
        # loop out of the cube and back in from the far side
        out = list(c)
        out[axis] = -0.8 if c[axis] == 0 else dims[axis] - 1 + 0.8
        back = list(n)
        back[axis] = dims[axis] - 1 + 0.8 if c[axis] == 0 else -0.8
        other = [k for k in range(3) if k != axis][0]
        lift = [0, 0, 0]
        lift[other] = 1.0
        p1 = tuple(o + l for o, l in zip(out, lift))
        p2 = tuple(b + l for b, l in zip(back, lift))
        path = _bezier(c, p1, p2, n)
        ax.plot(*zip(*path), color="#2ca02c", lw=1.8, ls="--")
        ax.scatter(*n, s=70, color="#2ca02c", depthshade=False)
    if via_wrap:
        ax.plot([], [], color="#2ca02c", ls="--", marker="o", label="neighbour through a wraparound")
    ax.set_title(f"{X}x{Y}x{Z} torus: every chip has 6 neighbours", fontsize=10)
    ax.legend(loc="upper left", fontsize=7)
    ax.set_xticks(range(X))
    ax.set_yticks(range(Y))
    ax.set_zticks(range(Z))
    ax.set_xlabel("x")
    ax.set_ylabel("y")
    ax.set_zlabel("z")
    return fig


# --------------------------------------------------------------------------- bandwidth tiers

TIERS = ("HBM", "chip-to-chip", "host PCIe", "scale-out (DCN / InfiniBand)")


def _tier_step_range(cs) -> tuple[float, float]:
    """Smallest and largest ratio between a tier and the next one down, over the chips shown."""
    steps = []
    for c in cs:
        known = [v for v in tier_bandwidths(c).values() if v]
        steps += [a / b for a, b in zip(known, known[1:])]
    return min(steps), max(steps)


def tier_bandwidths(name: "str | hardware.Chip") -> dict[str, float | None]:
    """Bytes/s of each tier for one chip, counted the same way for TPUs and GPUs.

    HBM: memory to compute. chip-to-chip: everything a chip can send at once, one direction
    (TPU: one-way ICI per link x 2 links per torus axis; GPU: NVLink egress). host PCIe: one
    direction per chip (None where the spec table has no figure). scale-out: the chip's share
    of the data-center network (TPU DCN; GPU InfiniBand node egress / GPUs per node).
    """
    c = hardware.chip(name)
    if c.is_tpu:
        egress = c.ici_one_way_bytes_per_s * 2 * c.torus_dims
    else:
        egress = c.ici_one_way_bytes_per_s
    return {
        "HBM": c.hbm_bytes_per_s,
        "chip-to-chip": egress,
        "host PCIe": c.pcie_bytes_per_s,
        "scale-out (DCN / InfiniBand)": c.dcn_bytes_per_s,
    }


def bandwidth_tiers(names: Sequence[str] = ("tpu-v5e", "tpu-v5p", "tpu-v6e", "tpu-7x", "h100", "b200", "gb200"),
                    ax=None):
    """Grouped bars (log scale): HBM, chip-to-chip, host PCIe and scale-out bandwidth per chip.

    Each step down the tiers costs roughly an order of magnitude; see `tier_bandwidths` for how
    each bar is counted. A missing figure is marked 'n/a' rather than drawn as zero.
    """
    fig, ax = _ax(ax, (6.8, 5.0))
    cs = [hardware.chip(n) for n in names]
    width = 0.8 / len(TIERS)
    colors = ("#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd")
    ymin = 1e9
    for k, tier in enumerate(TIERS):
        for i, c in enumerate(cs):
            v = tier_bandwidths(c)[tier]
            x = i + (k - (len(TIERS) - 1) / 2) * width
            if v is None:
                ax.text(x, ymin * 1.3, "n/a", rotation=90, ha="center", va="bottom", fontsize=9, color="#777777")
                continue
            ax.bar(x, v, width, color=colors[k], label=tier if i == 0 or tier not in ax.get_legend_handles_labels()[1] else None)
            ax.text(x, v * 1.15, units.format_quantity(v, "B/s"),
                    rotation=90, ha="center", va="bottom", fontsize=9)
    ax.set_yscale("log")
    ax.set_ylim(ymin, 1e14)
    ax.set_xticks(range(len(cs)))
    ax.set_xticklabels([c.display_name.replace(" (", "\n(") for c in cs], fontsize=8)
    ax.set_ylabel("bytes/s per chip (one direction)")
    handles, labels = ax.get_legend_handles_labels()
    seen = {}
    for h, l in zip(handles, labels):
        seen.setdefault(l, h)
    ax.legend(seen.values(), seen.keys(), fontsize=9, ncol=2, loc="upper center", bbox_to_anchor=(0.5, -0.2),
              frameon=False)
    lo, hi = _tier_step_range(cs)
    ax.set_title(f"Bandwidth tiers per chip: each step away from HBM divides bandwidth by {lo:.1f} to {hi:.0f}",
                 fontsize=10)
    ax.grid(axis="y", alpha=0.3, which="major")
    fig.tight_layout()
    return fig


# --------------------------------------------------------------------------- GPUs


def gpu_node(gpu: str = "h100", ax=None):
    """One 8-GPU node: every GPU wired to every NVSwitch, one InfiniBand NIC per GPU above.

    Numbers (switches per node, GPU egress, NIC rate) come from the spec data for `gpu`.
    """
    from matplotlib.patches import FancyBboxPatch

    c = hardware.chip(gpu)
    if c.is_tpu:
        raise Error(f"gpu_node draws an NVLink node; {c.name} is a TPU. Valid: a100, h100, h200, b200")
    data = load("hardware_specs")["gpu"]
    key = {"a100": "A100", "h100": "H100", "h200": "H100", "b200": "B200"}.get(c.name)
    if key is None:
        raise Error(f"gpu_node draws an 8-GPU node; for {c.name} use gpu_cluster or valid: a100, h100, h200, b200")
    switches = int(data[key]["nvswitches_per_node"])
    gpus = c.nvlink_domain
    fig, ax = _ax(ax, (7, 4.2))

    def box(x, y, w, h, text, color):
        ax.add_patch(FancyBboxPatch((x - w / 2, y - h / 2), w, h, boxstyle="round,pad=0.02",
                                    facecolor=color, edgecolor="black", lw=0.8, zorder=3))
        ax.text(x, y, text, ha="center", va="center", fontsize=7, zorder=4)

    gx = [i * 1.0 for i in range(gpus)]
    sx = [(gpus - 1) * (k + 0.5) / switches for k in range(switches)]
    for x in gx:
        for s in sx:
            ax.plot([x, s], [0.25, 1.55], color="#76b900", lw=0.8, alpha=0.7, zorder=1)
        ax.plot([x, x], [-0.25, -1.0], color="#1f77b4", lw=1.0, zorder=1)
    for i, x in enumerate(gx):
        box(x, 0, 0.8, 0.5, f"GPU {i}\n{units.format_quantity(c.hbm_bytes, 'B')}", "#dff0c0")
        box(x, -1.2, 0.7, 0.35, "NIC", "#cfe2f3")
    for k, s in enumerate(sx):
        box(s, 1.8, 1.1, 0.45, f"NVSwitch {k}", "#b7d77a")
    ax.plot([gx[0] - 0.3, gx[-1] + 0.3], [-1.75, -1.75], color="#1f77b4", lw=2)
    for x in gx:
        ax.plot([x, x], [-1.38, -1.75], color="#1f77b4", lw=1.0)
    ax.text((gpus - 1) / 2, -1.95, f"to the InfiniBand leaf switches: "
            f"{units.format_quantity(c.node_egress_bytes_per_s, 'B/s')} out of the node "
            f"({units.format_quantity(c.dcn_bytes_per_s, 'B/s')} per GPU)", ha="center", va="top", fontsize=8)
    ax.text((gpus - 1) / 2, 2.3, f"NVLink: {units.format_quantity(c.ici_one_way_bytes_per_s, 'B/s')} out of each "
            f"GPU (one direction), spread over {switches} switches;\nany GPU reaches any other through one switch",
            ha="center", va="bottom", fontsize=8)
    ax.set_xlim(-0.7, gpus - 0.3)
    ax.set_ylim(-2.3, 2.7)
    ax.set_axis_off()
    ax.set_title(f"An {gpus}-GPU {c.display_name} node", fontsize=10)
    return fig


def fat_tree(ax=None):
    """The scale-out network of a 1024-GPU H100 cluster: nodes, leaf and spine switches.

    Counts come from the spec data's DGX H100 SuperPod entry; a few of each are drawn, with the
    real counts written beside each level.
    """
    from matplotlib.patches import FancyBboxPatch

    pod = load("hardware_specs")["gpu_networking"]["dgx_h100_superpod_1024"]
    fig, ax = _ax(ax, (7, 4.2))
    levels = {"spine": (3.0, 4, pod["spine_switches"]), "leaf": (1.6, 4, pod["leaf_switches"]),
              "node": (0.0, 8, pod["nodes"])}
    xs = {}
    for name, (y, shown, _) in levels.items():
        xs[name] = [(k + 0.5) * 8 / shown for k in range(shown)]
    for a in xs["leaf"]:
        for b in xs["spine"]:
            ax.plot([a, b], [1.6, 3.0], color="#9467bd", lw=0.6, alpha=0.6)
    su = len(xs["node"]) // 2
    for k, a in enumerate(xs["node"]):
        leaves = xs["leaf"][:2] if k < su else xs["leaf"][2:]
        for b in leaves:
            ax.plot([a, b], [0.0, 1.6], color="#1f77b4", lw=0.5, alpha=0.6)
    colors = {"spine": "#c5b0d5", "leaf": "#aec7e8", "node": "#dff0c0"}
    for name, (y, shown, count) in levels.items():
        w = 0.8 if name != "node" else 0.7
        for x in xs[name]:
            ax.add_patch(FancyBboxPatch((x - w / 2, y - 0.18), w, 0.36, boxstyle="round,pad=0.02",
                                        facecolor=colors[name], edgecolor="black", lw=0.6, zorder=3))
            ax.text(x, y, {"spine": "spine", "leaf": "leaf", "node": "node"}[name], ha="center", va="center",
                    fontsize=6, zorder=4)
        label = {"spine": f"{count} spine switches", "leaf": f"{count} leaf switches\n"
                 f"({pod['leaf_switches_per_su']} per unit of {pod['nodes_per_su']} nodes)",
                 "node": f"{count} nodes of 8 GPUs\n= {pod['gpus']} GPUs"}[name]
        ax.text(8.3, y, label, va="center", fontsize=8)
    ax.text(4, -0.4, f"each unit of {pod['nodes_per_su']} nodes has its own leaf switches; every leaf\n"
            "reaches every spine, so any two nodes get the full bandwidth of their NICs", ha="center",
            va="top", fontsize=8)
    ax.set_xlim(-0.2, 11.5)
    ax.set_ylim(-1.0, 3.5)
    ax.set_axis_off()
    ax.set_title("Scale-out: a fat tree of InfiniBand switches (a few of each drawn)", fontsize=10)
    return fig


def gpu_cluster(gpu: str = "h100", fig=None):
    """Two panels: an 8-GPU NVLink node (left) and the InfiniBand fat tree above it (right)."""
    import matplotlib.pyplot as plt

    if fig is None:
        fig = plt.figure(figsize=(8, 8.4))
    a1, a2 = fig.subplots(2, 1)
    gpu_node(gpu, ax=a1)
    fat_tree(ax=a2)
    fig.tight_layout()
    return fig
