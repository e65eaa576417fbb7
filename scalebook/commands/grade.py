"""`scalebook grade NOTEBOOK`: run a filled exercise notebook and print id, status, score.

`scalebook grade --all DIR`: grade every problem notebook (`*.ipynb`) in a folder and print
the progress per chapter (problems correct / total).
"""
from __future__ import annotations

import sys
from pathlib import Path

from ..cli import add_json_flag, emit, table
from ..errors import Error
from ..grading import grade, grade_all, notebooks_in


def register(sub) -> None:
    p = sub.add_parser("grade", help="run a filled exercise notebook and score its answers",
                       description="Run a filled exercise notebook and score its answers; with --all DIR, "
                                   "grade every notebook in a folder and print the progress per chapter.")
    p.add_argument("notebook", nargs="?", help="path to the .ipynb (e.g. exercises/01-rooflines.ipynb)")
    p.add_argument("--all", metavar="DIR", dest="folder",
                   help="grade every problem notebook (*.ipynb) in DIR and summarise per chapter")
    add_json_flag(p)
    p.set_defaults(run=run)


def run(args) -> int:
    if args.folder is not None and args.notebook is not None:
        raise Error("grade: give either a NOTEBOOK or --all DIR, not both")
    if args.folder is not None:
        return _run_all(args)
    if args.notebook is None:
        raise Error("grade: give a NOTEBOOK to grade (e.g. exercises/01-rooflines.ipynb) or --all DIR")
    g = grade(args.notebook)

    def text() -> str:
        lines = [table([{"id": r["id"], "status": r["status"], "score": f"{r['score']:g}", "note": r["message"]}
                        for r in g.rows]) if g.rows else "no check() calls ran"]
        lines.append(f"score: {g.score:g} / {g.out_of}")
        if g.error:
            lines.append(f"the notebook stopped early: {g.error}")
        return "\n".join(lines)

    emit(args, {"notebook": g.notebook, "rows": list(g.rows), "score": g.score, "out_of": g.out_of,
                "error": g.error}, text)
    return 0 if g.error is None else 1


def _run_all(args) -> int:
    notebooks_in(args.folder)  # bad input fails here, before any kernel starts

    def progress_line(i: int, n: int, path: Path) -> None:
        print(f"grading {path.name} ({i}/{n})", file=sys.stderr, flush=True)

    pr = grade_all(args.folder, on_notebook=None if args.json else progress_line)

    def text() -> str:
        rows = [{"chapter": c.chapter, "correct": f"{c.correct} / {c.total}", "close": c.close, "wrong": c.wrong,
                 "missing": c.missing, "score": f"{c.score:g}", "notebooks": ", ".join(c.notebooks)}
                for c in pr.chapters]
        lines = [table(rows) if rows else "no check() calls ran in any notebook"]
        lines.append(f"correct: {pr.correct} / {pr.total} problems in {len(pr.chapters)} chapter"
                     f"{'' if len(pr.chapters) == 1 else 's'}")
        placed = {n for c in pr.chapters for n in c.notebooks}
        for g in pr.grades:
            name = Path(g.notebook).name
            if name not in placed:
                lines.append(f"{name}: no check() calls ran, so it counts for no chapter")
            if g.error:
                lines.append(f"{name} stopped early: {g.error}")
        return "\n".join(lines)

    emit(args, pr.to_dict(), text)
    return 0 if not pr.errors else 1
