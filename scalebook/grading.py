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


@dataclass(frozen=True)
class ChapterProgress:
    """One chapter's problems across the graded notebooks of a folder.

    `total` is the number of problems the bank has for the chapter (not only those a notebook
    checked); a problem counts once, with its best verdict across the chapter's notebooks.
    """

    chapter: str
    notebooks: tuple[str, ...]
    correct: int
    close: int
    wrong: int
    total: int

    @property
    def missing(self) -> int:
        """Problems with no answer (or whose check() never ran)."""
        return self.total - self.correct - self.close - self.wrong

    @property
    def score(self) -> float:
        """Correct answers count 1, close ones 1/2, as in `CheckResult.score`."""
        return self.correct + 0.5 * self.close

    def to_dict(self) -> dict:
        return {"chapter": self.chapter, "notebooks": list(self.notebooks), "correct": self.correct,
                "close": self.close, "wrong": self.wrong, "missing": self.missing, "total": self.total,
                "score": self.score}


@dataclass(frozen=True)
class Progress:
    """Every notebook of a folder graded, and the per-chapter summary."""

    folder: str
    grades: tuple[Grade, ...]
    chapters: tuple[ChapterProgress, ...]

    @property
    def correct(self) -> int:
        return sum(c.correct for c in self.chapters)

    @property
    def total(self) -> int:
        return sum(c.total for c in self.chapters)

    @property
    def errors(self) -> tuple[Grade, ...]:
        """The notebooks that stopped early (a cell raised)."""
        return tuple(g for g in self.grades if g.error is not None)

    def to_dict(self) -> dict:
        return {
            "folder": self.folder,
            "chapters": [c.to_dict() for c in self.chapters],
            "notebooks": [{"notebook": g.notebook, "chapter": _chapter_of(g), "rows": list(g.rows),
                           "score": g.score, "out_of": g.out_of, "error": g.error} for g in self.grades],
            "correct": self.correct,
            "total": self.total,
        }

    def __repr__(self) -> str:
        return f"Progress({self.folder}: {self.correct}/{self.total} correct in {len(self.chapters)} chapters)"


_RANK = {"correct": 3, "close": 2, "wrong": 1, "missing": 0}


def _chapter_of(g: Grade) -> str | None:
    """The chapter a graded notebook belongs to: the chapter of most of its checked problem ids,
    else the leading number of its file name ('01-rooflines.ipynb' -> '1'), else None."""
    ids = [r["id"].split(".")[0] for r in g.rows if "." in r["id"]]
    if ids:
        return max(sorted(set(ids)), key=ids.count)
    lead = Path(g.notebook).name.split("-")[0]
    if lead.isdigit():
        return lead.lstrip("0") or "0"
    return None


def _chapter_key(chapter: str) -> tuple:
    return (0, int(chapter), "") if chapter.isdigit() else (1, 0, chapter)


def notebooks_in(folder: "str | Path") -> list[Path]:
    """The problem notebooks (`*.ipynb`, not checkpoints) directly inside `folder`, by name.

    Raises `Error` when `folder` is not a folder or holds no notebook.
    """
    d = Path(folder)
    if not d.is_dir():
        raise Error(f"{str(d)!r} is not a folder: give the folder that holds your problem notebooks "
                    "(e.g. exercises/)")
    found = sorted(p for p in d.glob("*.ipynb") if p.is_file())
    if not found:
        raise Error(f"no notebooks (*.ipynb) in {str(d)!r}: give the folder that holds your problem notebooks")
    return found


def grade_all(folder: "str | Path", timeout_s: int = 600, on_notebook=None) -> Progress:
    """Grade every problem notebook (`*.ipynb`) in `folder` and sum up progress per chapter.

    Each notebook runs as in `grade`. Its chapter is the one most of its `check()` ids belong
    to (or its file name's leading number); a chapter's total is the number of problems in the
    bank for it, so unanswered problems count as missing. `on_notebook(i, n, path)` is called
    before each notebook runs (the CLI prints progress with it).
    Raises `Error` when `folder` is not a folder or holds no notebook.
    """
    from .exercises import problems

    paths = notebooks_in(folder)
    grades = []
    for i, path in enumerate(paths, 1):
        if on_notebook is not None:
            on_notebook(i, len(paths), path)
        grades.append(grade(path, timeout_s=timeout_s))
    by_chapter: dict[str, list[Grade]] = {}
    for g in grades:
        chapter = _chapter_of(g)
        if chapter is not None:
            by_chapter.setdefault(chapter, []).append(g)
    chapters = []
    for chapter in sorted(by_chapter, key=_chapter_key):
        best: dict[str, str] = {}
        for g in by_chapter[chapter]:
            for r in g.rows:
                if r["id"].split(".")[0] == chapter and _RANK.get(r["status"], 0) >= _RANK.get(best.get(r["id"]), -1):
                    best[r["id"]] = r["status"]
        bank = {p.id for p in problems(chapter)}
        total = len(bank | set(best))
        statuses = list(best.values())
        chapters.append(ChapterProgress(
            chapter=chapter, notebooks=tuple(Path(g.notebook).name for g in by_chapter[chapter]),
            correct=statuses.count("correct"), close=statuses.count("close"), wrong=statuses.count("wrong"),
            total=total))
    return Progress(folder=str(folder), grades=tuple(grades), chapters=tuple(chapters))
