"""Interactive figures: each chapter's central question as a figure the reader can move.

One function per figure, named after what it shows; each returns an `InteractiveFigure`:

    from scalebook import interactive
    interactive.roofline()          # chapter 1: chip, dtype, batch
    interactive.chips()             # chapters 2 and 2b: quantity, dtype
    interactive.model_anatomy()     # chapter 4: preset, measure, sequence length
    interactive.collective()        # chapter 3: collective, topology, axes, array size
    interactive.training_step()     # chapter 5: weights over DP, TP, remat, microbatch, batch
    interactive.frontier()          # chapter 7: weight and cache dtypes, TP, batch
    interactive.serving_cost()      # chapter 8: latency target
    interactive.plan_front()        # chapter 6: model, chip, chip count
    interactive.cheat_sheet()       # chapter 11: chip, dtype
    interactive.timeline()          # chapter 9: step, category (a recorded trace; zoom and hover)
    interactive.ring()              # chapter 10: collective, devices, one or both ways, step

Displayed in the book build it is a Vega-Lite chart over values the package computed for every
setting of its controls (no server, no network: the site serves the Vega scripts itself); in
Jupyter or Colab it is live, its controls calling the package for any setting (ipywidgets).
Nothing here imports Altair, ipywidgets or matplotlib until a figure is drawn
(`pip install 'scalebook[interactive]'`). `_figure.py` explains the model, `_site.py` the page,
`_live.py` the notebook version.
"""
from __future__ import annotations

from ._figure import Control, InteractiveFigure, SITE_ENV

__all__ = ["Control", "InteractiveFigure", "SITE_ENV", "roofline", "chips", "collective", "model_anatomy", "training_step", "frontier", "serving_cost", "plan_front", "cheat_sheet", "ring", "timeline", "figures"]


def roofline() -> InteractiveFigure:
    """Chapter 1: the roofline of a chip in a dtype, and `[B, 8192] x [8192, 8192]` on it as the batch
    moves (`scalebook.interactive.rooflines`)."""
    from . import rooflines

    return rooflines.figure()


def chips() -> InteractiveFigure:
    """Chapters 2 and 2b: every chip side by side on peak FLOP/s, HBM bandwidth, the collective
    bandwidth W or a critical intensity, in a dtype (`scalebook.interactive.accelerators`)."""
    from . import accelerators

    return accelerators.figure()


def collective() -> InteractiveFigure:
    """Chapter 3: a collective's time against the array size V on a topology and mesh axes
    (`scalebook.interactive.collectives`)."""
    from . import collectives

    return collectives.figure()


def model_anatomy() -> InteractiveFigure:
    """Chapter 4: a preset's parameters, forward FLOPs per token or training memory, by part,
    against the sequence length (`scalebook.interactive.transformers`)."""
    from . import transformers

    return transformers.figure()


def training_step() -> InteractiveFigure:
    """Chapter 5: memory per chip and step time by part for LLaMA-3 70B on 256 H100s, against the
    strategy and the batch (`scalebook.interactive.training`)."""
    from . import training

    return training.figure()


def frontier() -> InteractiveFigure:
    """Chapter 7: the latency/throughput frontier of LLaMA-3 70B decode on H100s against the batch,
    the weight and KV-cache dtypes and TP (`scalebook.interactive.inference`)."""
    from . import inference

    return inference.figure()


def serving_cost() -> InteractiveFigure:
    """Chapter 8: USD per million output tokens of LLaMA-3 70B on each priced chip at the cheapest
    configuration within a per-token latency target (`scalebook.interactive.costs`)."""
    from . import costs

    return costs.figure()


def plan_front() -> InteractiveFigure:
    """Chapter 6: the planner's time-memory front (days to train against memory per chip) for a
    LLaMA-3 model on a chip and a chip count, the fastest plan marked
    (`scalebook.interactive.planning`)."""
    from . import planning

    return planning.figure()


def cheat_sheet() -> InteractiveFigure:
    """Chapter 11: the rules of thumb of the cheat sheet that depend on the chip, recomputed for a
    chip and a matmul dtype, as a table (`scalebook.interactive.cheatsheet`)."""
    from . import cheatsheet

    return cheatsheet.figure()


def ring() -> InteractiveFigure:
    """Chapter 10: a ring AllGather, ReduceScatter or AllReduce of ppermutes stepped through, what
    each device holds after each step (`scalebook.interactive.rings`)."""
    from . import rings

    return rings.figure()


def timeline() -> InteractiveFigure:
    """Chapter 9: a recorded profile of the training step on 8 simulated devices, op by op, to zoom
    and hover, with each device's time by category (`scalebook.interactive.timelines`)."""
    from . import timelines

    return timelines.figure()


def figures() -> dict[str, InteractiveFigure]:
    """Every interactive figure of the book, by name (what the browser check and the tests walk)."""
    return {f.name: f for f in (roofline(), chips(), collective(), model_anatomy(), training_step(), frontier(), serving_cost(),
                                plan_front(), cheat_sheet(), ring(), timeline())}
