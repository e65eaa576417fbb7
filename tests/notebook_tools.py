"""Helpers for the notebook tests: find the book's sources and put solutions in place."""
from __future__ import annotations

import re
from pathlib import Path

import jupytext
import nbformat

ROOT = Path(__file__).resolve().parent.parent
CHAPTERS = sorted((ROOT / "chapters").glob("*.md"))
EXERCISES = sorted((ROOT / "exercises").glob("*.md"))

_START = re.compile(r"^[`:]{3,}\{solution-start\}")
_END = re.compile(r"^[`:]{3,}\{solution-end\}")


def with_solutions_in_place(md_path: Path) -> nbformat.NotebookNode:
    """The exercise notebook with each `answer = None` cell replaced by its solution's code.

    This is what a student who solved every problem would run; in strict mode every check()
    then has to say 'correct'.
    """
    nb = jupytext.read(md_path, fmt="md:myst")
    out, pending, solution_code, in_solution = [], None, [], False
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            for line in cell.source.splitlines():
                if _START.match(line.strip()):
                    in_solution, solution_code = True, []
                elif _END.match(line.strip()):
                    in_solution = False
                    if pending is None:
                        raise AssertionError(f"{md_path.name}: a solution without an `answer = None` cell before it")
                    out[pending:pending + 1] = solution_code
                    pending = None
            out.append(cell)
        elif in_solution:
            solution_code.append(cell)
        elif cell.source.lstrip().startswith("answer = None"):
            pending = len(out)
            out.append(cell)
        else:
            out.append(cell)
    nb.cells = out
    return nb
