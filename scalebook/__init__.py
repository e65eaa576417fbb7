"""scalebook: the arithmetic of scaling language models across accelerators.

The companion package of the scalebook textbook. Every number the book states is computed here:
hardware specs (`hardware`), rooflines (`roofline`), measurements on your own device
(`measure`), figures (`plots`) and self-checked problems (`exercises`).

`import scalebook` loads numpy-free core modules only; jax and matplotlib load on first use.
"""
from __future__ import annotations

from .errors import Error
from .hardware import Chip, chip, chip_names, chips
from .units import format_quantity, parse_quantity

__version__ = "0.1.0"

__all__ = [
    "Error", "Chip", "chip", "chip_names", "chips", "format_quantity", "parse_quantity",
    "__version__",
]
