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
from .gpus import *  # noqa: F401,F403  (chapter 2, GPUs in earnest)

# Keep this last: every public function above (and of any module imported above it) draws under
# the book's style and finishes its figure (fonts readable at the rendered width, colour-blind-safe
# colours, a description for alt text); see `_style`. Functions returning data pass unchanged.
import inspect as _inspect  # noqa: E402

from . import _style  # noqa: E402
from ._style import describe, description  # noqa: E402,F401
from ._axes import panels  # noqa: E402,F401  (stacked panels for multi-panel figures)

for _name, _obj in list(globals().items()):
    if (not _name.startswith("_") and _inspect.isfunction(_obj) and getattr(_obj, "__module__", "").startswith(__name__ + ".")
            and _name not in ("describe", "description", "panels")):
        globals()[_name] = _style.figure_function(_obj)
del _name, _obj
