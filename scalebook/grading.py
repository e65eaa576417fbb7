"""Grade a filled exercise notebook: run it, collect every `check()` verdict, score it.

Each `check()` appends its verdict to the JSON-lines file named by $SCALEBOOK_RECORD; grading
runs the notebook in a fresh kernel with that variable set, so the student's code runs exactly
as it would in Jupyter and nothing in the notebook is parsed or evaluated by the grader.
Needs nbclient and nbformat (the `book` or `test` extras).
"""
from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

from .errors import Error


@dataclass(frozen=True)
class Grade:
    """Verdicts of one notebook: rows of (id, status, score, message), and the total."""

    notebook: str
    rows: tuple[dict, ...]
    error: str | None = None

    @property
    def score(self) -> float:
        return sum(r["score"] for r in self.rows)

    @property
    def out_of(self) -> int:
        return len(self.rows)

    def __repr__(self) -> str:
        return f"Grade({self.notebook}: {self.score:g}/{self.out_of})"


def grade(path: "str | Path", timeout_s: int = 600) -> Grade:
    """Execute the notebook at `path` (.ipynb, or a MyST .md) and collect its check() verdicts.

    The last verdict for each problem id counts. A cell that raises stops the run; the
    verdicts collected before it still count and `error` names the failure.
    """
    try:
        import nbclient
        import nbformat
    except ImportError:
        raise Error("grading needs nbclient and nbformat: pip install 'scalebook[book]'") from None
    p = Path(path)
    if not p.exists():
        raise Error(f"no notebook at {str(p)!r}")
    if p.suffix == ".ipynb":
        nb = nbformat.read(p, as_version=4)
    elif p.suffix == ".md":
        import jupytext

        nb = jupytext.read(p, fmt="md:myst")
    else:
        raise Error(f"cannot grade {p.name!r}: give a .ipynb (or a MyST .md) notebook")
    with tempfile.TemporaryDirectory() as tmp:
        record = Path(tmp) / "verdicts.jsonl"
        old = os.environ.get("SCALEBOOK_RECORD"), os.environ.get("SCALEBOOK_STRICT")
        os.environ["SCALEBOOK_RECORD"] = str(record)
        os.environ.pop("SCALEBOOK_STRICT", None)
        error = None
        try:
            nbclient.NotebookClient(nb, timeout=timeout_s, kernel_name="python3",
                                    resources={"metadata": {"path": str(p.resolve().parent)}}).execute()
        except nbclient.exceptions.CellExecutionError as e:
            error = str(e).strip().splitlines()[-1] if str(e).strip() else "a cell raised"
        finally:
            for key, value in zip(("SCALEBOOK_RECORD", "SCALEBOOK_STRICT"), old):
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value
        verdicts: dict[str, dict] = {}
        if record.exists():
            for line in record.read_text(encoding="utf-8").splitlines():
                row = json.loads(line)
                verdicts[row["id"]] = row
    from .exercises import problems

    order = {pr.id: i for i, pr in enumerate(problems())}
    rows = tuple(sorted(verdicts.values(), key=lambda r: order.get(r["id"], len(order))))
    return Grade(notebook=str(p), rows=rows, error=error)
