"""`scalebook grade NOTEBOOK`: run a filled problem notebook and score every problem of its page.

`scalebook grade --all DIR`: grade every problem notebook (`*.ipynb`) in a folder and print the
progress per problem page (problems correct / total). Grading executes the notebooks' code.
"""
from __future__ import annotations

import shutil
import sys
import textwrap
from pathlib import Path

from ..cli import add_json_flag, emit, positive_number, table
from ..errors import Error
from ..grading import DEFAULT_TIMEOUT_S, MAX_CHECKS, clean, grade, grade_all, notebooks_in

_LIMITS = ("A problem is refused when a cell computes its answer and checks it in one go (a worked solution), "
           f"reads its key (.answer() or .solve() of a problem), or checks it more than {MAX_CHECKS} times; each recorded "
           "answer is judged again by the grader. What grading cannot prevent: code in the notebook runs with "
           "your rights, so a determined student can patch check() or forge its record. It is feedback for "
           "self-study, not an exam.")
_TRUST = ("Grading EXECUTES THE NOTEBOOK'S CODE in a fresh Jupyter kernel, as running it in Jupyter would: "
          "grade only notebooks you trust.")


def register(sub) -> None:
    p = sub.add_parser(
        "grade", help="run a filled problem notebook and score its page's problems (executes its code)",
        description="Run a filled problem notebook (.ipynb) and score every problem of the page it belongs to: "
                    "correct, close, wrong, missing, or error when a cell of that problem raised. With --all DIR, "
                    "grade every notebook in a folder and print the progress per page. " + _TRUST +
                    " MyST sources (.md) and notebooks holding worked solutions are refused. Exit status: 0 when "
                    "every cell ran, 1 when a cell raised or a problem was refused (or, with --all, a notebook was skipped), 2 "
                    "when a notebook cannot be graded (not a notebook, the book's solutions, no check of its page, "
                    "kernel died or missing, a cell timed out). " + _LIMITS)
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
                 noted_table([{"id": r["id"], "status": r["status"], "score": f"{r['score']:g}", "note": r["message"]}
                              for r in g.rows])]
        lines.append(f"score: {g.score:g} / {g.out_of}")
        if g.ignored:
            lines.append(f"ignored checks of other pages' problems: {', '.join(g.ignored)}")
        lines += [f"a cell raised: {f}" for f in g.failed_cells]
        return "\n".join(lines)

    emit(args, g.to_dict(), text)
    return 0 if not (g.failed_cells or g.count("refused")) else 1


def noted_table(rows: list[dict], width: int | None = None) -> str:
    """`cli.table` of `rows`, whose last column (a free-text note) wraps to the terminal's width
    (`width`, else $COLUMNS or the terminal's, else 100), continued under itself; never narrower
    than 30 characters. Rows are not padded past their text."""
    if not rows:
        return table(rows)
    width = width or shutil.get_terminal_size((100, 24)).columns
    cols = list(rows[0])
    *fixed, note = cols
    widths = {c: max(len(c), *(len(str(r[c])) for r in rows)) for c in fixed}
    indent = sum(widths.values()) + 2 * len(fixed)
    room = max(30, width - indent)
    out = ["  ".join(c.ljust(widths[c]) for c in fixed) + "  " + note,
           "  ".join("-" * widths[c] for c in fixed) + "  " + "-" * min(room, max(len(note), *(len(str(r[note])) for r in rows)))]
    for r in rows:
        wrapped = textwrap.wrap(str(r[note]), room, break_long_words=True, break_on_hyphens=False) or [""]
        out.append(("  ".join(str(r[c]).ljust(widths[c]) for c in fixed) + "  " + wrapped[0]).rstrip())
        out += [" " * indent + more for more in wrapped[1:]]
    return "\n".join(out)


def _run_all(args) -> int:
    notebooks_in(args.folder)  # bad input fails here, before any kernel starts

    def progress_line(i: int, n: int, path: Path) -> None:
        print(f"grading {clean(path.name)} ({i}/{n})", file=sys.stderr, flush=True)

    pr = grade_all(args.folder, timeout_s=args.timeout, kernel_name=args.kernel,
                   on_notebook=None if args.json else progress_line)

    def text() -> str:
        rows = [{"page": c.page, "correct": f"{c.correct} / {c.total}", "close": c.close, "wrong": c.wrong,
                 "error": c.error, "refused": c.refused, "missing": c.missing, "score": f"{c.score:g}", "notebooks": ", ".join(c.notebooks)}
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
