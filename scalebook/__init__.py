"""scalebook: the arithmetic of scaling language models across accelerators.

The companion package of the scalebook textbook. Every number the book states is computed here:
hardware specs (`hardware`), rooflines (`roofline`), chip topologies (`topology`), collectives
(`collectives`), sharded matmuls (`sharding`), Transformer configs and counts (`models`,
`transformer`), the bridge to real JAX/XLA (`xla`), measurements on your device (`measure`),
figures (`plots`) and self-checked problems (`exercises`).

`import scalebook` loads only the light core; other submodules load on first attribute access
(`scalebook.collectives`), and jax and matplotlib only when a function needs them.
"""
from __future__ import annotations

import importlib

from . import hardware, roofline, units
from .errors import Error
from .hardware import Chip, chip, chip_names, chips
from .units import format_quantity, parse_quantity

__version__ = "0.1.0"

_LAZY = ("topology", "collectives", "sharding", "models", "transformer", "strategy", "step", "training",
         "planner", "inference", "serving", "xla", "measure", "plots",
         "exercises", "grading", "notebook", "jax_layer", "jax_training", "jax_decode", "cli", "runs", "serving_results", "profile")
_LAZY += ("jax_collectives",)  # chapter 10
_LAZY += ("memory_levels", "gpu_network")  # chapter 2b

__all__ = [
    "Error", "Chip", "chip", "chip_names", "chips", "format_quantity", "parse_quantity",
    "hardware", "roofline", "units", "__version__", *_LAZY,
]


def __getattr__(name: str):
    if name in _LAZY:
        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module 'scalebook' has no attribute {name!r}")
