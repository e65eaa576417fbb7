#!/usr/bin/env python3
"""Execute MyST notebooks (chapters/*.md, exercises/*.md) and report time and errors.

    python tools/run_notebook.py chapters/01-rooflines.md [more.md ...]

Runs each notebook top to bottom in a fresh kernel, as the book build does, and prints its
wall time. Exits 1 at the first cell that raises, showing the cell. Used by authors while
writing, by `make bench`, and by the tests.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import jupytext
import nbclient

ROOT = Path(__file__).resolve().parent.parent


def execute(path: Path, timeout: int = 600, env: dict | None = None) -> float:
    """Run the notebook at `path` in its own folder; return wall seconds. Raises on error."""
    nb = jupytext.read(path, fmt="md:myst") if path.suffix == ".md" else jupytext.read(path)
    old = dict(os.environ)
    os.environ.update(env or {})
    try:
        t0 = time.perf_counter()
        nbclient.NotebookClient(nb, timeout=timeout, kernel_name="python3",
                                resources={"metadata": {"path": str(path.parent)}}).execute()
        return time.perf_counter() - t0
    finally:
        os.environ.clear()
        os.environ.update(old)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("paths", nargs="+", type=Path)
    args = ap.parse_args(argv)
    for p in args.paths:
        try:
            seconds = execute(p.resolve())
        except nbclient.exceptions.CellExecutionError as e:
            print(f"FAILED {p}:\n{e}", file=sys.stderr)
            return 1
        print(f"{p}: ran in {seconds:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
