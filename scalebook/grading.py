"""Grade a filled problem notebook: run it, collect its `check()` verdicts, score its page.

**Grading executes the notebook's code** in a fresh Jupyter kernel, exactly as running it in
Jupyter would: grade only notebooks you trust.

A notebook belongs to one problem page (`metadata.scalebook.page` of the generated notebooks,
else the page named in its file name, as in `01-rooflines (1).ipynb`), and is scored against
every problem of that page: each one `correct`, `close`, `wrong` or `missing` as its last
`check()` said, `error` when its check did not finish or ran after the cell setting its `answer`
raised (a stale answer), or `refused` (see below). Cells that raise do not stop the run; checks
of other pages' problems are ignored. Each `check()` appends its verdict, the answer as read and
the running cell to the JSON-lines file named by $SCALEBOOK_RECORD; the grader judges each
recorded answer again with the key it computes in its own process, and a problem's score
follows from its status alone (1 correct, 1/2 close), so the total never exceeds the page's count.

What the grader stops (the easy and accidental routes):
- a record line written by hand (`"score": 100`, or `"status": "correct"` beside a wrong answer);
- reading the key (`get(id).answer()`, `getattr(p, "answer")()`, `p.solve(**p.inputs)`, the
  bank module's attribute, `_BANK[id]`): the problem is `refused`, naming the cell;
- a worked solution pasted in (a cell that computes `answer` and checks it): that problem is
  `refused`; the book's MyST sources refuse the whole notebook;
- a loop that tries answers until one passes: more than `MAX_CHECKS` checks of one problem;
- `check()` never states the key: a wrong answer learns its direction and order of magnitude.

What it cannot prevent: code in the kernel runs with the grader's rights, so a determined student
can call the private solver, patch `check`, forge the record with the right answer once they know
it, or read the package's source, which computes every key. Grading is feedback for self-study,
not an exam; proctor exams elsewhere.

Refused before anything runs (`Error`, one line): MyST sources (`.md`, which hold the worked
solutions), notebooks with the book's solution blocks (see `solutions_in`), files that are not
notebooks (including devices, FIFOs and files over 64 MiB) and notebooks without one `check()` of
their page. A kernel that dies, a cell that runs past the per-cell timeout, or a missing kernel
also raise `Error`. Needs nbclient, nbformat and ipykernel (`pip install 'scalebook[grade]'`).
"""
from __future__ import annotations

import ast
import json
import logging
import math
import os
import re
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path

from .errors import Error

__all__ = ["Grade", "PageProgress", "Progress", "NotAProblemNotebook", "grade", "grade_all", "notebooks_in",
           "read_notebook", "page_of", "solutions_in", "solution_cells", "DEFAULT_TIMEOUT_S", "MAX_CHECKS"]

#: Seconds a single cell may run before grading gives up (the CLI's --timeout default). The
#: book's slowest problem cell (JAX compiling on simulated devices) takes a few seconds.
DEFAULT_TIMEOUT_S = 120
_MAX_BYTES = 64 * 2**20  # a notebook larger than this is not a problem page
_STATUSES = ("correct", "close", "wrong", "missing", "error", "refused")
#: What each status scores: the grader computes a problem's score from its status, never reads it.
_SCORE = {"correct": 1.0, "close": 0.5}
_ANSI = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)|[@-Z\\-_])")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


class NotAProblemNotebook(Error):
    """A notebook that belongs to no problem page (`grade --all` passes over it)."""


def clean(text: object) -> str:
    """`text` with terminal escape sequences and other control characters removed."""
    return _CONTROL.sub("", _ANSI.sub("", str(text)))


def _one_line(text: object, limit: int = 200) -> str:
    lines = [ln.strip() for ln in clean(text).splitlines() if ln.strip()]
    line = lines[0] if lines else ""
    return line if len(line) <= limit else line[: limit - 3] + "..."


def _needs():
    try:
        import nbclient
        import nbformat
    except ImportError:
        raise Error("grading needs nbclient, nbformat and ipykernel: pip install 'scalebook[grade]'") from None
    return nbclient, nbformat


def _path(path: object, what: str) -> Path:
    if not isinstance(path, (str, os.PathLike)) or not str(path).strip():
        raise Error(f"the {what} must be a path (a string or a Path), got {_one_line(repr(path), 60)}")
    return Path(path)


def _notebook_node(nb: object) -> object:
    """`nb` if it is a notebook node (from `read_notebook` or nbformat); else `Error` naming `nb`."""
    if not (hasattr(nb, "metadata") and isinstance(getattr(nb, "cells", None), list)):
        raise Error(f"nb must be a notebook read by grading.read_notebook, got {type(nb).__name__}")
    return nb


def read_notebook(path: "str | Path"):
    """The notebook at `path` as an nbformat v4 node; `Error` (one line) for anything else.

    Refuses MyST sources (`.md`: they hold the worked solutions), folders, missing, empty,
    binary or truncated files, anything that is not a regular file (a device such as a link to
    /dev/zero, a FIFO, a socket: never opened, so nothing hangs), files over 64 MiB (at most that
    much is ever read), names the system cannot open, JSON that is not a notebook (no list of
    cells, no `nbformat` version), and notebooks that fail nbformat's schema.
    """
    _, nbformat = _needs()
    p = _path(path, "notebook")
    name = clean(p)
    if p.suffix.lower() == ".md":
        raise Error(f"{name} is a MyST source of the book, which holds the worked solutions: grade your copy of "
                    f"the student notebook {p.with_suffix('.ipynb').name} instead")
    try:
        if p.is_dir():
            raise Error(f"{name} is a folder: give one notebook (.ipynb), or grade a folder with --all DIR")
        if not p.exists():
            raise Error(f"no notebook at {name}")
        if p.suffix.lower() != ".ipynb":
            raise Error(f"cannot grade {clean(p.name)}: give a Jupyter notebook (.ipynb)")
        info = p.stat()
        if not stat.S_ISREG(info.st_mode):
            raise Error(f"{name} is not a regular file (a device, FIFO or socket): give a notebook file (.ipynb)")
        if info.st_size > _MAX_BYTES:
            raise Error(f"{name} is {info.st_size / 2**20:.0f} MiB, too large to be a problem notebook")
        fd = os.open(p, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        with os.fdopen(fd, "rb") as f:
            data = f.read(_MAX_BYTES + 1)
        if len(data) > _MAX_BYTES:
            raise Error(f"{name} is over {_MAX_BYTES / 2**20:.0f} MiB, too large to be a problem notebook")
    except OSError as e:
        raise Error(f"cannot read {name}: {_one_line(e.strerror or e)}") from None
    if not data.strip():
        raise Error(f"{name} is empty: it is not a notebook")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise Error(f"{name} is not a text file (not UTF-8): a notebook is JSON") from None
    try:
        raw = json.loads(text)
    except (json.JSONDecodeError, RecursionError) as e:
        where = f" (line {e.lineno}, column {e.colno}: {e.msg})" if isinstance(e, json.JSONDecodeError) else ""
        raise Error(f"{name} is not valid JSON{where}: is the file truncated?") from None
    if not isinstance(raw, dict) or not isinstance(raw.get("cells", raw.get("worksheets")), list):
        raise Error(f"{name} is JSON but not a Jupyter notebook (no list of cells)")
    if "nbformat" not in raw:
        raise Error(f"{name} is JSON but not a Jupyter notebook (no nbformat version)")
    try:
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            nb = nbformat.reads(text, as_version=4)
            nbformat.validate(nb)
    except Exception as e:  # nbformat raises many kinds for a malformed notebook
        raise Error(f"{name} is not a valid Jupyter notebook: {_one_line(e)}") from None
    return nb


def page_of(nb, path: "str | Path") -> str:
    """The problem page the notebook belongs to: `metadata.scalebook.page`, else a page whose name
    appears in the file name ('Copy of 01-rooflines (2).ipynb'), else the one page whose number
    leads the file name ('02-mine.ipynb'). Raises `NotAProblemNotebook` when none fits, and for a
    chapter's notebook (`metadata.scalebook.kind` 'chapter')."""
    from .exercises import pages

    _notebook_node(nb), _path(path, "path")
    known = pages()
    meta = nb.metadata.get("scalebook")
    page = meta.get("page") if isinstance(meta, dict) else None
    name = clean(Path(path).name)
    if isinstance(meta, dict) and meta.get("kind") == "chapter":
        raise NotAProblemNotebook(f"{name} is the notebook of the chapter {clean(page)!r}, which has no problems: "
                                  f"grade your copy of exercises/{clean(page)}.ipynb")
    if page is not None:
        if page in known:
            return page
        raise Error(f"{name}: its metadata names the problem page {clean(page)!r}, which has no problems; "
                    f"pages: {', '.join(known)}")
    stem = Path(path).stem
    inside = sorted((p for p in known if p in stem), key=len)
    if inside:
        return inside[-1]
    lead = re.match(r"^(\d+[a-z]?)(?![\w])|^(\d+[a-z]?)[-_ ]", stem)
    if lead:
        number = lead.group(1) or lead.group(2)
        same = [p for p in known if p.split("-")[0] == number]
        if len(same) == 1:
            return same[0]
    raise NotAProblemNotebook(f"cannot tell which problem page {name} belongs to: it has no "
                              f"metadata.scalebook.page and its name names no page ({', '.join(known)})")


def _code_of(source: str) -> ast.Module | None:
    """The cell's code as a syntax tree, IPython magics and shell lines blanked; None if it does not parse."""
    lines = ["" if ln.lstrip().startswith(("%", "!")) else ln for ln in source.splitlines()]
    try:
        return ast.parse("\n".join(lines))
    except (SyntaxError, ValueError, RecursionError):
        return None


def _computed(value: ast.AST | None) -> bool:
    """Whether an expression computes something (uses a name or calls a function), rather than
    being a literal answer such as `7.6`, `13e9 * 2 / 3.35e12`, `"7.6 ms"` or `None`."""
    return value is not None and any(isinstance(n, (ast.Name, ast.Call, ast.Attribute, ast.Subscript))
                                     for n in ast.walk(value))


def _checked_ids(tree: ast.AST) -> list[tuple[tuple[int, int], str]]:
    """((line, column), problem id) of every `check("id", ...)` call in a cell."""
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant) \
                and isinstance(node.args[0].value, str):
            f = node.func
            if (isinstance(f, ast.Name) and f.id == "check") or (isinstance(f, ast.Attribute) and f.attr == "check"):
                out.append(((node.lineno, node.col_offset), node.args[0].value))
    return out


_CHECK_TEXT = re.compile(r"""\bcheck\(\s*["']([^"']+)["']""")
_SOLUTION_MARKER = re.compile(r"\{solution(?:-start|-end)?\}")


def _check_ids_of(source: str) -> list[str]:
    tree = _code_of(source)
    return [pid for _, pid in sorted(_checked_ids(tree))] if tree is not None else _CHECK_TEXT.findall(source)


def solutions_in(nb) -> str | None:
    """Why the notebook is the book's worked solutions, or None.

    A Markdown or raw cell that carries the MyST solution markers of the book's sources
    (`{solution-start}`, `{solution}`) makes the whole notebook the book's source, refused before
    it runs. A code cell that computes `answer` and checks it, as every worked solution does, is
    refused problem by problem instead (see `solution_cells`).
    """
    _notebook_node(nb)
    for i, cell in enumerate(nb.cells, 1):
        if cell.cell_type != "code" and _SOLUTION_MARKER.search(cell.get("source", "")):
            return f"cell {i} has the book's worked solutions (a MyST solution block)"
    return None


def _assigns_answer(tree: ast.AST) -> list[ast.AST]:
    """The nodes of a cell that bind the name `answer` (assignments of any form, loops, `with ... as`)."""
    def binds(target: ast.AST) -> bool:
        return any(isinstance(t, ast.Name) and t.id == "answer" for t in ast.walk(target))

    out = []
    for node in ast.walk(tree):
        targets = (node.targets if isinstance(node, ast.Assign) else
                   [node.target] if isinstance(node, (ast.AnnAssign, ast.AugAssign, ast.NamedExpr, ast.For,
                                                      ast.AsyncFor, ast.comprehension)) else
                   [item.optional_vars for item in node.items if item.optional_vars is not None]
                   if isinstance(node, (ast.With, ast.AsyncWith)) else [])
        if any(binds(t) for t in targets):
            out.append(node)
    return out


_ASSIGN_TEXT = re.compile(r"\banswer\s*(?:[-+*/%@&|^]|//|\*\*|>>|<<)?=(?!=)")


def _sets_answer(source: str) -> bool:
    """Whether a cell may set `answer` (read from its text when it does not parse)."""
    tree = _code_of(source)
    return bool(_assigns_answer(tree)) if tree is not None else bool(_ASSIGN_TEXT.search(source))


def solution_cells(nb) -> dict[str, int]:
    """Problem id -> index of the first code cell that computes `answer` from names or calls and
    then checks that problem in the same cell, as the worked solutions do. The grader refuses
    those problems (not the notebook); a cell that assigns a literal next to its check
    (`answer = 7.6; check("1.1", answer)`) is not one, nor is a student's own computation in a
    cell of its own (`answer = M(7.6).solve()`), whose check follows in the next cell.
    """
    _notebook_node(nb)
    out: dict[str, int] = {}
    for i, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        tree = _code_of(cell.get("source", ""))
        if tree is None:
            continue
        assigned = [(node.lineno, node.col_offset) for node in _assigns_answer(tree)
                    if isinstance(node, ast.AugAssign) or not isinstance(node, (ast.Assign, ast.AnnAssign))
                    or _computed(node.value)]
        for at, pid in _checked_ids(tree):
            if assigned and at > min(assigned):
                out.setdefault(pid, i)
    return out


@dataclass(frozen=True)
class Grade:
    """One notebook graded against its page: a row (id, status, score, message) per problem."""

    notebook: str
    page: str
    rows: tuple[dict, ...]
    #: One line per cell that raised ("cell 12 (answer = 1/0): ZeroDivisionError: ...").
    failed_cells: tuple[str, ...] = ()
    #: Ids checked in the notebook that belong to other pages (not scored).
    ignored: tuple[str, ...] = ()

    @property
    def score(self) -> float:
        """Correct answers count 1, close ones 1/2, as `CheckResult.score`: computed from each row's
        status (never from a recorded score), capped at the number of problems."""
        return min(sum(_SCORE.get(r["status"], 0.0) for r in self.rows), float(self.out_of))

    @property
    def out_of(self) -> int:
        """The number of problems on the page."""
        return len(self.rows)

    @property
    def error(self) -> str | None:
        """The first cell that raised, or None when every cell ran."""
        return self.failed_cells[0] if self.failed_cells else None

    def count(self, status: str) -> int:
        return sum(r["status"] == status for r in self.rows)

    def to_dict(self) -> dict:
        return {"notebook": clean(self.notebook), "page": self.page, "rows": [dict(r) for r in self.rows],
                "score": self.score, "out_of": self.out_of, "failed_cells": list(self.failed_cells),
                "ignored": list(self.ignored), "error": self.error}

    def __repr__(self) -> str:
        return f"Grade({self.notebook} [{self.page}]: {self.score:g}/{self.out_of})"


def _kernel(nb, kernel_name: str | None) -> str:
    """The kernel to run: `kernel_name`, else the notebook's own if installed, else python3."""
    from jupyter_client.kernelspec import KernelSpecManager

    installed = KernelSpecManager().find_kernel_specs()
    if kernel_name is None:
        own = (nb.metadata.get("kernelspec") or {}).get("name") if isinstance(nb.metadata.get("kernelspec"), dict) else None
        kernel_name = own if isinstance(own, str) and own in installed else "python3"
    if kernel_name not in installed:
        raise Error(f"no Jupyter kernel named {clean(kernel_name)!r} is installed"
                    + (f" (installed: {', '.join(sorted(installed))})" if installed else "")
                    + ": pip install ipykernel, or pip install 'scalebook[grade]'")
    return kernel_name


def _quiet_log() -> logging.Logger:
    log = logging.getLogger("scalebook.grading.nbclient")
    log.addHandler(logging.NullHandler())
    log.propagate = False
    return log


def _label(nb, index: int) -> str:
    first = next((ln.strip() for ln in nb.cells[index].get("source", "").splitlines() if ln.strip()), "")
    first = clean(first)
    return f"cell {index + 1}" + (f" ({first[:40]}{'...' if len(first) > 40 else ''})" if first else "")


def _execute(nb, path: Path, record: Path, timeout_s: float, kernel_name: str) -> None:
    """Run every cell (errors recorded in the outputs, not raised); `Error` when the run itself fails."""
    import os
    import subprocess

    nbclient, _ = _needs()
    from jupyter_client.kernelspec import NoSuchKernel

    running = {"index": None}

    def on_cell_start(cell, cell_index, **_):
        running["index"] = cell_index

    env = {k: v for k, v in os.environ.items() if k != "SCALEBOOK_STRICT"}
    env["SCALEBOOK_RECORD"] = str(record)
    # nbclient takes whole seconds: a fractional limit is rounded up, so it is never shorter than asked
    client = nbclient.NotebookClient(nb, timeout=math.ceil(timeout_s), kernel_name=kernel_name, allow_errors=True,
                                     resources={"metadata": {"path": str(path.resolve().parent)}},
                                     log=_quiet_log(), on_cell_start=on_cell_start)
    where = lambda: _label(nb, running["index"]) if running["index"] is not None else "the notebook"  # noqa: E731
    try:
        client.execute(env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    except nbclient.exceptions.CellTimeoutError:
        raise Error(f"{where()} ran longer than the {timeout_s:g} s limit per cell: if it is slow rather than "
                    "stuck, give more time with --timeout SECONDS") from None
    except nbclient.exceptions.DeadKernelError:
        raise Error(f"the Python kernel died while running {where()}: the cell exited the process, crashed "
                    "or ran out of memory") from None
    except NoSuchKernel:
        raise Error(f"no Jupyter kernel named {kernel_name!r}: pip install 'scalebook[grade]'") from None
    except (RuntimeError, TimeoutError, OSError) as e:
        raise Error(f"the Jupyter kernel could not run {path.name}: {_one_line(e) or type(e).__name__}") from None


def _failures(nb) -> dict[int, str]:
    """Cell index -> one line naming the cell and what it raised, for every cell that raised."""
    out = {}
    for i, cell in enumerate(nb.cells):
        for o in cell.get("outputs", []) if cell.cell_type == "code" else []:
            if o.get("output_type") == "error":
                out[i] = f"{_label(nb, i)} raised {clean(o.get('ename', 'an error'))}: " + _one_line(o.get("evalue", ""))
                break
    return out


def _records(record: Path) -> tuple[list[dict], list[dict]]:
    """(verdicts, key reads): the well-formed lines of the record file, in the order they were written.

    A verdict line comes from `check()`; a key-read line (`"event": "key"`) from `Problem.answer()`
    or `Problem.solve(...)` called in the kernel. Anything else is skipped. At most `_MAX_BYTES`
    are read (the kernel could write without end).
    """
    verdicts, reads = [], []
    if record.exists():
        with open(record, "rb") as f:
            data = f.read(_MAX_BYTES)
        for line in data.decode("utf-8", errors="replace").splitlines():
            try:
                row = json.loads(line)
            except (json.JSONDecodeError, RecursionError):
                continue
            if not isinstance(row, dict) or not isinstance(row.get("id"), str):
                continue
            if row.get("event") == "key":
                reads.append(row)
            elif row.get("status") in _STATUSES:
                verdicts.append(row)
    return verdicts, reads


def _verdicts(record: Path) -> list[dict]:
    """The well-formed verdict lines of the record file, in the order check() wrote them."""
    return _records(record)[0]


#: More checks of one problem than this in one run of the notebook (each cell runs once) means
#: a loop trying answers: the problem is refused.
MAX_CHECKS = 5


def _judge(pid: str, verdict: dict) -> tuple[str, str]:
    """(status, message) of a recorded verdict, judged again here with the key computed in the
    grader's own process: a record line forged or edited in the kernel cannot claim a status its
    answer does not earn. A line without a readable answer can only be `missing` or `wrong`."""
    from .exercises import _verdict, get
    from .exercises.problem import _solve_quietly

    given = verdict.get("given")
    message = _one_line(verdict.get("message", ""), 400)
    if isinstance(given, (int, float)) and not isinstance(given, bool) and math.isfinite(given):
        p = get(pid)
        r = _verdict(p, float(given), _solve_quietly(p))
        return r.status, r.message
    return ("missing" if verdict["status"] == "missing" else "wrong"), message


def _score_page(nb, page_ids: list[str], verdicts: list[dict], failures: dict[int, str],
                reads: list[dict] = (), judge=_judge) -> tuple[dict, ...]:
    """One row per problem of the page, from the verdicts, the key reads, the check cells and the
    cells that raised.

    A problem is `refused` when a cell computes its `answer` and checks it in one go (a worked
    solution), when its key was read in the kernel, or when it was checked more than `MAX_CHECKS`
    times. It is `error` when its check did not finish, or when the last cell before its check
    that sets `answer` raised (the check then ran with a stale answer); a cell that raises but sets
    no `answer` (scratch work) does not touch it. Otherwise its last verdict counts, judged again
    by `judge`; the score follows from the status alone.
    """
    code = [(i, cell) for i, cell in enumerate(nb.cells) if cell.cell_type == "code"]

    def cell_of(v: dict) -> int | None:
        """The cell that recorded line `v`: same source, execution count nearest the recorded one."""
        count = v.get("execution_count")
        same = [(i, c.get("execution_count")) for i, c in code if c.get("source", "") == v.get("source")]
        if not same or not isinstance(count, int):
            return same[0][0] if len(same) == 1 else None
        return min(same, key=lambda ic: abs((ic[1] if ic[1] is not None else -10**9) - count))[0]

    static = {}  # problem id -> first cell that checks it
    check_cells = set()
    for i, cell in enumerate(nb.cells):
        if cell.cell_type == "code":
            ids = _check_ids_of(cell.get("source", ""))
            if ids:
                check_cells.add(i)
            for pid in ids:
                static.setdefault(pid, i)
    last: dict[str, tuple[dict, int | None]] = {}
    times: dict[str, int] = {}
    for v in verdicts:
        cell = cell_of(v)
        last[v["id"]] = (v, cell)
        times[v["id"]] = times.get(v["id"], 0) + 1
        if cell is not None:
            check_cells.add(cell)
    read_in: dict[str, int | None] = {}
    for r in reads:
        read_in.setdefault(r["id"], cell_of(r))
    solved_in = solution_cells(nb)
    rows = []

    def row(pid: str, status: str, message: str) -> None:
        rows.append({"id": pid, "status": status, "score": _SCORE.get(status, 0.0), "message": message})

    for pid in page_ids:
        verdict, cell = last.get(pid, (None, None))
        cell = cell if cell is not None else static.get(pid)
        if pid in solved_in:
            row(pid, "refused", f"{_label(nb, solved_in[pid])} computes `answer` and checks it in one cell, as the "
                                "worked solutions do: put your answer in its own `answer = ...` cell, the check in the next")
            continue
        if pid in read_in:
            where = _label(nb, read_in[pid]) if read_in[pid] is not None else "a cell"
            row(pid, "refused", f"{where} read this problem's key (`.answer()` or `.solve(...)` of the problem): "
                                "compute your answer with the package's modules, not with the answer key")
            continue
        if times.get(pid, 0) > MAX_CHECKS:
            row(pid, "refused", f"checked {times[pid]} times in one run (at most {MAX_CHECKS}): "
                                "a loop of checks is not an answer")
            continue
        failed = None
        if cell is not None:
            start = max((c for c in check_cells if c < cell), default=-1)
            if verdict is None:
                failed = next((failures[c] for c in sorted(failures) if start < c <= cell), None)
            else:
                setters = [c for c, cl in code if start < c < cell and _sets_answer(cl.get("source", ""))]
                failed = failures.get(setters[-1]) if setters else None
        if failed is not None:
            after = ("its check ran with whatever `answer` held before" if verdict is not None
                     else "its check did not finish")
            row(pid, "error", f"{failed} ({after})")
        elif verdict is not None:
            status, message = judge(pid, verdict)
            row(pid, status, clean(message))
        elif cell is not None:
            row(pid, "missing", f"its check() in {_label(nb, cell)} never ran")
        else:
            row(pid, "missing", f"no check(\"{pid}\", answer) in the notebook: was its cell deleted?")
    return tuple(rows)


def grade(path: "str | Path", timeout_s: float = DEFAULT_TIMEOUT_S, kernel_name: str | None = None) -> Grade:
    """Run the notebook at `path` in a fresh kernel and score it against its page's problems.

    **Executes the notebook's code**: grade only notebooks you trust. Every cell runs even when
    one raises; see the module docstring for `error` and `refused`. Raises `Error` (one line) for a
    file that is not a notebook, a MyST source, a notebook with the book's solution blocks, one
    that belongs to no page (`NotAProblemNotebook`), a kernel that dies or is missing, and a cell
    that runs longer than `timeout_s`.
    """
    if not (isinstance(timeout_s, (int, float)) and not isinstance(timeout_s, bool) and 0 < timeout_s < float("inf")):
        raise Error(f"timeout_s must be a positive number of seconds, got {_one_line(repr(timeout_s), 60)}")
    if kernel_name is not None and not (isinstance(kernel_name, str) and kernel_name.strip()):
        raise Error(f"kernel_name must be the name of a Jupyter kernel (like 'python3'), got {_one_line(repr(kernel_name), 60)}")
    p = _path(path, "notebook")
    nb = read_notebook(p)
    page = page_of(nb, p)
    why = solutions_in(nb)
    if why is not None:
        raise Error(f"{clean(p.name)} holds worked solutions, so it cannot be graded: {why}")
    from .exercises import problems

    page_ids = [pr.id for pr in problems(page=page)]
    checked = {pid for cell in nb.cells if cell.cell_type == "code" for pid in _check_ids_of(cell.get("source", ""))}
    if not checked & set(page_ids):
        raise Error(f"{clean(p.name)} has no check() of a problem of page {page}: it is not a "
                    f"copy of the problem notebook exercises/{page}.ipynb (its {len(page_ids)} problems each "
                    "have a check(\"id\", answer) cell)")
    kernel = _kernel(nb, kernel_name)

    with tempfile.TemporaryDirectory() as tmp:
        record = Path(tmp) / "verdicts.jsonl"
        _execute(nb, p, record, timeout_s, kernel)
        verdicts, reads = _records(record)
    failures = _failures(nb)
    rows = _score_page(nb, page_ids, verdicts, failures, reads)
    ignored = tuple(sorted({v["id"] for v in verdicts} - set(page_ids)))
    return Grade(notebook=str(p), page=page, rows=rows, failed_cells=tuple(failures[i] for i in sorted(failures)),
                 ignored=ignored)


@dataclass(frozen=True)
class PageProgress:
    """One problem page across the graded notebooks of a folder.

    `total` is the number of problems the bank has for the page; a problem counts once, with its
    best verdict across the page's notebooks (correct > close > wrong > error > refused > missing).
    """

    page: str
    notebooks: tuple[str, ...]
    correct: int
    close: int
    wrong: int
    error: int
    total: int
    #: Problems refused (a worked solution in one cell, the key read, a loop of checks).
    refused: int = 0

    @property
    def missing(self) -> int:
        """Problems with no answer (or whose check() never ran)."""
        return self.total - self.correct - self.close - self.wrong - self.error - self.refused

    @property
    def score(self) -> float:
        """Correct answers count 1, close ones 1/2, as in `CheckResult.score`."""
        return self.correct + 0.5 * self.close

    def to_dict(self) -> dict:
        return {"page": self.page, "notebooks": list(self.notebooks), "correct": self.correct, "close": self.close,
                "wrong": self.wrong, "error": self.error, "refused": self.refused, "missing": self.missing,
                "total": self.total,
                "score": self.score}


@dataclass(frozen=True)
class Progress:
    """Every notebook of a folder graded, and the per-page summary."""

    folder: str
    grades: tuple[Grade, ...]
    pages: tuple[PageProgress, ...]
    #: (notebook name, one line) for notebooks that could not be graded (malformed, solutions, kernel death).
    skipped: tuple[tuple[str, str], ...] = ()
    #: Names of notebooks that belong to no problem page (not run).
    unplaced: tuple[str, ...] = ()

    @property
    def correct(self) -> int:
        return sum(c.correct for c in self.pages)

    @property
    def total(self) -> int:
        return sum(c.total for c in self.pages)

    @property
    def errors(self) -> tuple[Grade, ...]:
        """The graded notebooks in which a cell raised."""
        return tuple(g for g in self.grades if g.failed_cells)

    def to_dict(self) -> dict:
        return {
            "folder": self.folder,
            "pages": [c.to_dict() for c in self.pages],
            "notebooks": [g.to_dict() for g in self.grades],
            "skipped": [{"notebook": n, "reason": r} for n, r in self.skipped],
            "not_problem_notebooks": list(self.unplaced),
            "correct": self.correct,
            "total": self.total,
        }

    def __repr__(self) -> str:
        return f"Progress({self.folder}: {self.correct}/{self.total} correct on {len(self.pages)} pages)"


_RANK = {"correct": 5, "close": 4, "wrong": 3, "error": 2, "refused": 1, "missing": 0}


def notebooks_in(folder: "str | Path") -> list[Path]:
    """The problem notebooks (`*.ipynb`, not checkpoints) directly inside `folder`, by name.

    Raises `Error` when `folder` is not a folder or holds no notebook.
    """
    d = _path(folder, "folder")
    if not d.is_dir():
        raise Error(f"{clean(d)!r} is not a folder: give the folder that holds your problem notebooks "
                    "(e.g. exercises/)")
    found = sorted(p for p in d.glob("*.ipynb") if p.is_file())
    if not found:
        raise Error(f"no notebooks (*.ipynb) in {clean(d)!r}: give the folder that holds your problem notebooks")
    return found


def grade_all(folder: "str | Path", timeout_s: float = DEFAULT_TIMEOUT_S, on_notebook=None,
              kernel_name: str | None = None) -> Progress:
    """Grade every problem notebook (`*.ipynb`) in `folder` and sum up progress per problem page.

    **Executes every notebook's code.** Each notebook runs as in `grade`; a page's total is the
    number of problems in the bank for it, so unanswered problems count as missing. Notebooks of
    no page are passed over (`unplaced`), ones that cannot be graded are listed with the reason
    (`skipped`). `on_notebook(i, n, path)` is called before each notebook runs (the CLI prints
    progress with it). Raises `Error` when `folder` is not a folder or holds no notebook.
    """
    from .exercises import problems

    paths = notebooks_in(folder)
    grades, skipped, unplaced = [], [], []
    for i, path in enumerate(paths, 1):
        if on_notebook is not None:
            on_notebook(i, len(paths), path)
        try:
            grades.append(grade(path, timeout_s=timeout_s, kernel_name=kernel_name))
        except NotAProblemNotebook:
            unplaced.append(clean(path.name))
        except Error as e:
            skipped.append((clean(path.name), _one_line(e, 400)))
    by_page: dict[str, list[Grade]] = {}
    for g in grades:
        by_page.setdefault(g.page, []).append(g)
    summary = []
    for page in sorted(by_page):
        best: dict[str, str] = {}
        for g in by_page[page]:
            for r in g.rows:
                if _RANK[r["status"]] >= _RANK.get(best.get(r["id"], "missing"), 0):
                    best[r["id"]] = r["status"]
        statuses = list(best.values())
        summary.append(PageProgress(
            page=page, notebooks=tuple(clean(Path(g.notebook).name) for g in by_page[page]),
            correct=statuses.count("correct"), close=statuses.count("close"), wrong=statuses.count("wrong"),
            error=statuses.count("error"), total=len(problems(page=page)), refused=statuses.count("refused")))
    return Progress(folder=str(folder), grades=tuple(grades), pages=tuple(summary), skipped=tuple(skipped),
                    unplaced=tuple(unplaced))
