"""Figures for the book, drawn with matplotlib (imported on first use, never at package import).

One submodule per chapter topic; every function returns the matplotlib `Figure` it drew and
takes an optional `ax` to draw into.
"""
from __future__ import annotations

from .rooflines import *  # noqa: F401,F403  (chapter 1)
from .accelerators import *  # noqa: F401,F403  (chapter 2)
from .transformers import *  # noqa: F401,F403  (chapter 4)
from .attention_costs import *  # noqa: F401,F403  (chapter 4: attention and MoE rooflines)
from .collectives import *  # noqa: F401,F403  (chapter 3)
from .sharding import *  # noqa: F401,F403  (chapter 3: hops, idle axes)
from .training import *  # noqa: F401,F403  (chapter 5)
from .training_plan import *  # noqa: F401,F403  (chapter 6)
from .serving_plan import *  # noqa: F401,F403  (chapter 8)
from .inference import *  # noqa: F401,F403  (chapter 7)
from .profiling import *  # noqa: F401,F403  (chapter 9)
from .jax_parallel import *  # noqa: F401,F403  (chapter 10)
from .conclusion import *  # noqa: F401,F403  (chapter 11)
