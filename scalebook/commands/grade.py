"""`scalebook grade NOTEBOOK`: run a filled problem notebook and score every problem of its page.

`scalebook grade --all DIR`: grade every problem notebook (`*.ipynb`) in a folder and print the
progress per problem page (problems correct / total). Grading executes the notebooks' code.
"""
from __future__ import annotations

import sys
from pathlib import Path

from ..cli import add_json_flag, emit, positive_number, table
from ..errors import Error
from ..grading import DEFAULT_TIMEOUT_S, clean, grade, grade_all, notebooks_in

_TRUST = ("Grading EXECUTES THE NOTEBOOK'S CODE in a fresh Jupyter kernel, as running it in Jupyter would: "
          "grade only notebooks you trust.")


def register(sub) -> None:
    p = sub.add_parser(
        "grade", help="run a filled problem notebook and score its page's problems (executes its code)",
        description="Run a filled problem notebook (.ipynb) and score every problem of the page it belongs to: "
                    "correct, close, wrong, missing, or error when a cell of that problem raised. With --all DIR, "
                    "grade every notebook in a folder and print the progress per page. " + _TRUST +
                    " MyST sources (.md) and notebooks holding worked solutions are refused. Exit status: 0 when "
                    "every cell ran, 1 when a cell raised (or, with --all, a notebook was skipped), 2 when a "
                    "notebook cannot be graded (not a notebook, solutions, kernel died or missing, a cell timed out).")
    p.add_argument("notebook", nargs="?", help="path to the .ipynb (e.g. exercises/01-rooflines.ipynb)")
    p.add_argument("--all", metavar="DIR", dest="folder",
                   help="grade every problem notebook (*.ipynb) in DIR and summarise per page")
    p.add_argument("--timeout", metavar="SECONDS", type=positive_number, default=DEFAULT_TIMEOUT_S,
                   help=f"longest a single cell may run (default {DEFAULT_TIMEOUT_S} s); past it grading stops")
    p.add_argument("--kernel", metavar="NAME", default=None,
                   help="Jupyter kernel to run in (default: the notebook's own if installed, else python3)")
    add_json_flag(p)
    p.set_defaults(run=run)


def run(args) -> int:
    if args.folder is not None and args.notebook is not None:
        raise Error("grade: give either a NOTEBOOK or --all DIR, not both")
    if args.folder is not None:
        return _run_all(args)
    if args.notebook is None:
        raise Error("grade: give a NOTEBOOK to grade (e.g. exercises/01-rooflines.ipynb) or --all DIR")
    g = grade(args.notebook, timeout_s=args.timeout, kernel_name=args.kernel)

    def text() -> str:
        lines = [f"{clean(Path(g.notebook).name)}: problems of page {g.page}",
                 table([{"id": r["id"], "status": r["status"], "score": f"{r['score']:g}", "note": r["message"]}
                        for r in g.rows])]
        lines.append(f"score: {g.score:g} / {g.out_of}")
        if g.ignored:
            lines.append(f"ignored checks of other pages' problems: {', '.join(g.ignored)}")
        lines += [f"a cell raised: {f}" for f in g.failed_cells]
        return "\n".join(lines)

    emit(args, g.to_dict(), text)
    return 0 if not g.failed_cells else 1


def _run_all(args) -> int:
    notebooks_in(args.folder)  # bad input fails here, before any kernel starts

    def progress_line(i: int, n: int, path: Path) -> None:
        print(f"grading {clean(path.name)} ({i}/{n})", file=sys.stderr, flush=True)

    pr = grade_all(args.folder, timeout_s=args.timeout, kernel_name=args.kernel,
                   on_notebook=None if args.json else progress_line)

    def text() -> str:
        rows = [{"page": c.page, "correct": f"{c.correct} / {c.total}", "close": c.close, "wrong": c.wrong,
                 "error": c.error, "missing": c.missing, "score": f"{c.score:g}", "notebooks": ", ".join(c.notebooks)}
                for c in pr.pages]
        lines = [table(rows) if rows else "no problem notebook could be graded"]
        lines.append(f"correct: {pr.correct} / {pr.total} problems on {len(pr.pages)} page"
                     f"{'' if len(pr.pages) == 1 else 's'}")
        for name in pr.unplaced:
            lines.append(f"{clean(name)}: belongs to no problem page, not run")
        for name, reason in pr.skipped:
            lines.append(f"{clean(name)}: skipped: {reason}")
        for g in pr.errors:
            lines.append(f"{clean(Path(g.notebook).name)}: a cell raised: {g.error}")
        return "\n".join(lines)

    emit(args, pr.to_dict(), text)
    return 0 if not (pr.errors or pr.skipped) else 1
