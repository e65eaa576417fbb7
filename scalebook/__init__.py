"""scalebook: the arithmetic of scaling language models across accelerators.

The companion package of the scalebook textbook. Every number the book states is computed here:
hardware specs (`hardware`), rooflines (`roofline`), chip topologies (`topology`), collectives
(`collectives`), sharded matmuls (`sharding`), Transformer configs and counts (`models`,
`transformer`), the bridge to real JAX/XLA (`xla`), measurements on your device (`measure`),
figures (`plots`) and self-checked problems (`exercises`).

`import scalebook` loads only the light core; other submodules load on first attribute access
(`scalebook.collectives`), and jax and matplotlib only when a function needs them. When one of
those optional packages is missing, the ImportError names the extra that installs it
(`pip install 'scalebook[jax]'`). `dir(scalebook)` lists the public names only.
"""
from __future__ import annotations

import importlib
import importlib.abc
import sys

from . import hardware, roofline, units
from .errors import Error
from .hardware import Chip, chip, chip_names, chips
from .units import format_quantity, parse_quantity

__version__ = "0.1.0"  # the one version source (pyproject.toml reads it)

_LAZY = ("topology", "collectives", "sharding", "models", "transformer", "strategy", "step", "training",
         "planner", "inference", "serving", "xla", "measure", "plots",
         "exercises", "grading", "notebook", "jax_layer", "jax_training", "jax_decode", "cli", "runs", "serving_results", "profile")
_LAZY += ("jax_collectives",)  # chapter 10
_LAZY += ("memory_levels", "gpu_network")  # chapter 2b
_LAZY += ("published", "efficiency")  # chapter 6: validation against published runs; shape-aware matmul efficiency
_LAZY += ("rules_of_thumb",)  # the original book's approximations, beside the exact forms
_LAZY += ("interactive",)  # the site's interactive figures, live in Jupyter and Colab

__all__ = [
    "Error", "Chip", "chip", "chip_names", "chips", "format_quantity", "parse_quantity",
    "hardware", "roofline", "units", "__version__", *_LAZY,
]


# Optional dependencies and the extra (pyproject.toml) that installs each.
_EXTRAS = {"jax": "jax", "jaxlib": "jax", "matplotlib": "plot", "nbclient": "grade", "nbformat": "grade",
           "jupytext": "grade", "ipykernel": "grade", "altair": "interactive", "ipywidgets": "interactive"}


class _ExtraHint(importlib.abc.MetaPathFinder):
    """Last on `sys.meta_path`: reached only when no installed package matched. For an optional
    dependency imported by scalebook's own code, raise ModuleNotFoundError naming the extra."""

    def find_spec(self, name, path=None, target=None):
        top = name.partition(".")[0]
        if top not in _EXTRAS:
            return None
        frame = sys._getframe(1)
        while frame is not None and frame.f_code.co_filename.startswith("<frozen importlib"):
            frame = frame.f_back
        if frame is None or not str(frame.f_globals.get("__name__", "")).startswith("scalebook"):
            return None
        raise ModuleNotFoundError(f"No module named {top!r}: this part of scalebook needs it; "
                                  f"install it with pip install 'scalebook[{_EXTRAS[top]}]'", name=top)


if not any(isinstance(f, _ExtraHint) for f in sys.meta_path):
    sys.meta_path.append(_ExtraHint())


def __dir__() -> list[str]:
    return sorted(__all__)


def __getattr__(name: str):
    if name in _LAZY:
        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module 'scalebook' has no attribute {name!r}")
