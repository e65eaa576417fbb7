"""Figures of chapter 11 (conclusion): the book's thresholds side by side.

Every function draws with matplotlib (imported inside the function), takes an optional `ax` and
returns the `Figure`. Every number comes from `scalebook.roofline` and `scalebook.training`.
"""
from __future__ import annotations

from typing import Sequence

from .. import hardware, roofline, training
from ..errors import Error
from ._axes import axes

__all__ = ["threshold_ladder"]

#: (label, colour) of the three rungs, from the fastest link to the slowest.
_RUNGS = (
    ("one matmul vs HBM (critical batch)", "#4c72b0"),
    ("DP/FSDP per chip vs ICI or NVLink", "#dd8452"),
    ("DP per slice or node vs DCN or InfiniBand", "#c44e52"),
)


def _links(chip: hardware.Chip) -> tuple[str, str]:
    """The fast and the slow network of a chip's family."""
    return ("ici", "dcn") if chip.vendor.lower() == "google" else ("nvlink", "infiniband")


def threshold_ladder(chips: Sequence[str] = ("tpu-v5e", "tpu-v5p", "h100", "b200"), ax=None):
    """Tokens that keep each chip compute-bound against each tier of bandwidth, on a log scale.

    Three bars per chip: chapter 1's critical batch (peak / HBM bandwidth), chapter 5's DP/FSDP
    threshold per chip over the fast link (peak / W), and the tokens per slice (TPU) or node (GPU)
    that data parallelism across the slow network needs. All in bf16, rules of thumb (no (N-1)/N).
    """
    cs = [hardware.chip(c) for c in chips]
    if not cs:
        raise Error("threshold_ladder needs at least one chip")
    fig, ax = axes(ax, (8, 5.0))
    width = 0.26
    top = 0.0
    for i, c in enumerate(cs):
        fast, slow = _links(c)
        values = (roofline.critical_batch(c), training.rule_of_thumb_batch_per_chip(c, link=fast),
                  training.rule_of_thumb_batch_per_chip(c, link=slow))
        for j, ((label, color), v) in enumerate(zip(_RUNGS, values)):
            x = i + (j - 1) * width
            ax.bar(x, v, width=width * 0.92, color=color, label=label if i == 0 else None)
            ax.text(x, v * 1.12, f"{v:,.0f}", ha="center", va="bottom", fontsize=9)
            top = max(top, v)
    ax.set_yscale("log")
    ax.set_ylim(50, top * 3)
    ax.set_xticks(range(len(cs)), [c.display_name for c in cs], fontsize=10)
    ax.set_ylabel("tokens (bf16)", fontsize=10)
    ax.tick_params(axis="y", labelsize=9)
    ax.set_title("Tokens needed to keep the matrix units busy, by bandwidth tier", fontsize=11)
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.09), ncol=2, fontsize=9, frameon=False)
    fig.tight_layout()
    return fig
