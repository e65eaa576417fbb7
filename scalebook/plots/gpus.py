"""Figures of chapter 2b (GPUs in earnest): memory levels, generations, collectives, rooflines."""
from __future__ import annotations

from typing import Sequence

from .. import gpu_network, hardware, memory_levels
from ._axes import axes

__all__ = ["memory_levels_chart", "gpu_generations", "all_reduce_scaling", "hierarchical_stages",
           "parallelism_batches"]


def memory_levels_chart(names: Sequence[str] = ("tpu-v5e", "a100", "h100"), ax=None):
    """Capacity (x) against bandwidth (y) of each memory level of each chip, log-log.

    Levels: on-chip (VMEM, or SMEM of all SMs), L2 (GPU), HBM and the host link. Chapter 2b.
    """
    fig, ax = axes(ax, figsize=(6.6, 4.4))
    markers = ["o", "s", "^", "D"]
    for i, name in enumerate(names):
        c = hardware.chip(name)
        pts = []
        try:
            pts.append(("VMEM" if c.is_tpu else "SMEM", memory_levels.level_capacity_bytes(c, "local"),
                        memory_levels.level_bytes_per_s(c, "local")))
        except Exception:  # noqa: BLE001 -- an unpublished level is left out of the chart
            pass
        pts.append(("HBM", c.hbm_bytes, c.hbm_bytes_per_s))
        xs = [p[1] for p in pts]
        ys = [p[2] for p in pts]
        line, = ax.plot(xs, ys, marker=markers[i % len(markers)], label=c.display_name)
        for label, x, y in pts:
            ax.annotate(label, (x, y), textcoords="offset points", xytext=(6, 4), fontsize=8)
        if c.pcie_bytes_per_s:
            ax.axhline(c.pcie_bytes_per_s, color=line.get_color(), linestyle=":", linewidth=1)
    ax.set_xscale("log")
    ax.set_yscale("log")
    # room right of and above the last points for their labels (they would cross the frame)
    x_lo, x_hi = ax.get_xlim()
    y_lo, y_hi = ax.get_ylim()
    ax.set_xlim(x_lo, x_hi * 6)
    ax.set_ylim(y_lo, y_hi * 2)
    ax.set_xlabel("capacity (bytes)")
    ax.set_ylabel("bandwidth, whole chip (bytes/s)")
    ax.set_title("On-chip memory is small and fast; the host link (dotted) is slow")
    ax.legend(fontsize=8)
    return fig


def gpu_generations(names: Sequence[str] = ("a100", "h100", "b200", "gb200"), ax=None):
    """Dense bf16 peak, HBM bandwidth, NVLink egress and InfiniBand per GPU, relative to the first.

    Grouped bars on a log scale: compute has grown faster than every bandwidth. Chapter 2b.
    """
    import numpy as np

    fig, ax = axes(ax, figsize=(6.8, 4.0))
    chips_ = [hardware.chip(n) for n in names]
    figures = {
        "bf16 peak": [c.peak_flops_per_s("bf16") for c in chips_],
        "HBM bandwidth": [c.hbm_bytes_per_s for c in chips_],
        "NVLink egress": [c.ici_one_way_bytes_per_s for c in chips_],
        "InfiniBand per GPU": [gpu_network.ib_bytes_per_s(c) for c in chips_],
    }
    x = np.arange(len(chips_))
    width = 0.8 / len(figures)
    for i, (label, vals) in enumerate(figures.items()):
        ax.bar(x + (i - (len(figures) - 1) / 2) * width, [v / vals[0] for v in vals], width, label=label)
    ax.set_xticks(x, [c.display_name for c in chips_])
    ax.set_yscale("log")
    # ratios read as "1x", "2x", "4x" (not matplotlib's "2x10^0" minor labels on a log axis)
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter, NullLocator

    ax.yaxis.set_major_locator(LogLocator(base=2))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _pos: f"{v:g}x"))
    ax.yaxis.set_minor_locator(NullLocator())
    ax.yaxis.set_minor_formatter(NullFormatter())
    ax.set_ylabel(f"relative to {chips_[0].display_name}")
    ax.set_title("Per-GPU figures across generations")
    ax.legend(fontsize=8)
    return fig


def all_reduce_scaling(chip: str = "h100", bytes_: float = 1e9, max_nodes: int = 128, ax=None):
    """AllReduce time of `bytes_` against the number of GPUs: in a node, then across nodes.

    Four ways: a single flat ring through every GPU (one NIC per node), NCCL's flat rings (one per
    NIC), hierarchical (NVLink, InfiniBand, NVLink), and hierarchical with NVLink SHARP in the
    node; bandwidth terms at the links' full rate. Chapter 2b.
    """
    fig, ax = axes(ax, figsize=(6.6, 4.2))
    c = hardware.chip(chip)
    g = c.nvlink_domain
    in_node = list(range(2, g + 1))
    nodes = [n for n in (2, 4, 8, 16, 32, 64, 128, 256, 512) if n <= max_nodes]
    xs = in_node + [n * g for n in nodes]
    flat = [gpu_network.all_reduce_seconds(c, bytes_, gpus=n) for n in in_node] + \
        [gpu_network.flat_ring_all_reduce_seconds(c, bytes_, nodes=n, rings=1) for n in nodes]
    nccl = [gpu_network.all_reduce_seconds(c, bytes_, gpus=n) for n in in_node] + \
        [gpu_network.flat_ring_all_reduce_seconds(c, bytes_, nodes=n) for n in nodes]
    hier = [gpu_network.all_reduce_seconds(c, bytes_, gpus=n) for n in in_node] + \
        [gpu_network.hierarchical_all_reduce(c, bytes_, nodes=n).seconds for n in nodes]
    sharp = [gpu_network.all_reduce_seconds(c, bytes_, gpus=n, sharp=True) for n in in_node] + \
        [gpu_network.hierarchical_all_reduce(c, bytes_, nodes=n, sharp=True).seconds for n in nodes]
    ax.plot(xs, [1e3 * t for t in flat], marker=".", label="one flat ring (one NIC per node)")
    ax.plot(xs, [1e3 * t for t in nccl], marker=".", linestyle=":", label="NCCL's flat rings (one per NIC)")
    ax.plot(xs, [1e3 * t for t in hier], marker=".", label="hierarchical")
    ax.plot(xs, [1e3 * t for t in sharp], marker=".", label="hierarchical + NVLink SHARP")
    ax.axvline(g, color="grey", linestyle="--", linewidth=1)
    ax.text(g, ax.get_ylim()[1] * 0.9, " one NVLink domain", fontsize=8, va="top")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("GPUs in the AllReduce")
    ax.set_ylabel("time (ms)")
    ax.set_title(f"AllReduce of {bytes_ / 1e9:g} GB on {c.display_name} nodes")
    ax.legend(fontsize=8)
    return fig


def hierarchical_stages(names: Sequence[str] = ("h100", "b200", "gb200"), bytes_: float = 1e9, gpus: int = 576,
                        ax=None):
    """Stacked stage times of a hierarchical AllReduce of `bytes_` over `gpus` GPUs per node type.

    Shows which network dominates: InfiniBand on 8-GPU nodes, much less on NVL72. Chapter 2b.
    """
    fig, ax = axes(ax, figsize=(6.4, 4.0))
    labels = []
    for i, name in enumerate(names):
        c = hardware.chip(name)
        h = gpu_network.hierarchical_all_reduce(c, bytes_, nodes=max(1, gpus // c.nvlink_domain))
        bottom = 0.0
        for j, s in enumerate(h.stages):
            ax.bar(i, 1e3 * s.seconds, bottom=bottom, color=f"C{j}", label=s.name if i == 0 else None)
            bottom += 1e3 * s.seconds
        labels.append(f"{c.display_name}\n{h.nodes} x {h.gpus_per_node}")
    ax.set_xticks(range(len(labels)), labels)
    ax.set_ylabel("time (ms)")
    ax.set_title(f"Hierarchical AllReduce of {bytes_ / 1e9:g} GB over {gpus} GPUs")
    ax.legend(fontsize=8)
    return fig


def parallelism_batches(names: Sequence[str] = ("a100", "h100", "b200", "gb200"), ax=None):
    """Critical batch per GPU (tokens) for data parallelism: in a node, across nodes, and across
    nodes with tensor parallelism filling each node. Chapter 2b."""
    import numpy as np

    fig, ax = axes(ax, figsize=(6.6, 4.0))
    lims = [gpu_network.parallelism_limits(n, d_model=8192) for n in names]
    rows = {
        "DP in one node": [x.dp_batch_in_node for x in lims],
        "DP across nodes (whole nodes)": [x.dp_batch_across_nodes for x in lims],
        "DP across nodes, TP in node": [x.dp_batch_across_nodes_tp_in_node for x in lims],
    }
    x = np.arange(len(names))
    width = 0.8 / len(rows)
    for i, (label, vals) in enumerate(rows.items()):
        ax.bar(x + (i - 1) * width, vals, width, label=label)
    ax.set_xticks(x, [hardware.chip(n).display_name for n in names])
    ax.set_ylabel("tokens per GPU per step")
    ax.set_title("Batch per GPU above which data-parallel traffic hides")
    ax.legend(fontsize=8)
    return fig
