"""Loads the package's vetted data files once (hardware figures, published model shapes)."""
from __future__ import annotations

import functools
import json
from importlib import resources


@functools.lru_cache(maxsize=None)
def load(name: str) -> dict:
    """Parsed contents of `scalebook/data/<name>.json`."""
    return json.loads(resources.files("scalebook").joinpath("data", f"{name}.json").read_text())
