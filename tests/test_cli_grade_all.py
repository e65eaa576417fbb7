"""`scalebook grade --all DIR`: every problem notebook of a folder graded, progress per problem page.

The notebooks are the generated Colab notebooks of `exercises/`, with answers filled in here:
each `answer = None` cell gets the key of the problem its `check()` cell names (or a wrong value).
"""
import json
import re
import subprocess
import sys

import nbformat
import pytest

from notebook_tools import ROOT, with_solutions_in_place
from scalebook.cli import main
from scalebook.exercises import get, problems

CH1 = ROOT / "exercises" / "01-rooflines.ipynb"
CH2 = ROOT / "exercises" / "02-accelerators.ipynb"
_CHECK = re.compile(r'check\("([^"]+)"')


def filled(src, dest, answer_for):
    """Copy notebook `src` to `dest`, setting each `answer = None` cell to `answer_for(id)` (None: leave it)."""
    nb = nbformat.read(src, as_version=4)
    for cell, nxt in zip(nb.cells, nb.cells[1:]):
        if cell.cell_type == "code" and cell.source.lstrip().startswith("answer = None"):
            pid = _CHECK.search(nxt.source).group(1)
            value = answer_for(pid)
            if value is not None:
                cell.source = f"answer = {value!r}"
    nbformat.write(nb, dest)
    return dest


def run(*args):
    return subprocess.run([sys.executable, "-m", "scalebook.cli", *args], capture_output=True, text=True)


P1, P2 = "01-rooflines", "02-accelerators"


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    """Page 1 solved (plus a blank copy of it), page 2 with one wrong answer and one right, a
    notebook of no page, and one that holds the worked solutions (skipped, never run)."""
    d = tmp_path_factory.mktemp("mine")
    filled(CH1, d / "01-rooflines.ipynb", lambda pid: get(pid).answer())
    filled(CH1, d / "01-rooflines-second-try.ipynb", lambda pid: None)
    first, second = [p.id for p in problems(page=P2)][:2]
    filled(CH2, d / "02-accelerators.ipynb",
           lambda pid: 2 * get(pid).answer() if pid == first else get(pid).answer() if pid == second else None)
    scratch = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 1")])
    nbformat.write(scratch, d / "scratch.ipynb")
    nbformat.write(with_solutions_in_place(ROOT / "exercises" / "03-sharding.md"), d / "03-sharding.ipynb")
    return d


@pytest.fixture(scope="module")
def progress(folder):
    from scalebook.grading import grade_all

    return grade_all(folder)


@pytest.mark.slow
def test_progress_per_page_counts_the_bank(progress):
    n1, n2 = len(problems(page=P1)), len(problems(page=P2))
    pg = {c.page: c for c in progress.pages}
    assert list(pg) == [P1, P2]
    # page 1: the solved notebook wins over the blank copy, each problem counted once
    assert (pg[P1].correct, pg[P1].total, pg[P1].missing) == (n1, n1, 0)
    assert pg[P1].notebooks == ("01-rooflines-second-try.ipynb", "01-rooflines.ipynb")
    # page 2: one right, one wrong (a factor of 2), the rest unanswered
    assert (pg[P2].correct, pg[P2].wrong, pg[P2].missing, pg[P2].total) == (1, 1, n2 - 2, n2)
    assert (progress.correct, progress.total) == (n1 + 1, n1 + n2)
    assert len(progress.grades) == 3 and not progress.errors


@pytest.mark.slow
def test_notebooks_of_no_page_are_passed_over_and_solution_notebooks_skipped(progress):
    assert progress.unplaced == ("scratch.ipynb",)
    ((name, reason),) = progress.skipped
    assert name == "03-sharding.ipynb" and "holds worked solutions" in reason


@pytest.mark.slow
def test_text_summary_prints_correct_over_total_per_page(progress, folder, monkeypatch, capsys):
    import scalebook.commands.grade as cmd

    monkeypatch.setattr(cmd, "grade_all", lambda *a, **k: progress)
    assert main(["grade", "--all", str(folder)]) == 1  # a notebook was skipped
    out = capsys.readouterr().out
    n1, n2 = len(problems(page=P1)), len(problems(page=P2))
    assert re.search(rf"^{P1}\s+{n1} / {n1}\s", out, re.M)
    # correct, close, wrong, error, refused, missing
    assert re.search(rf"^{P2}\s+1 / {n2}\s+0\s+1\s+0\s+0\s+{n2 - 2}\s", out, re.M)
    assert f"correct: {n1 + 1} / {n1 + n2} problems on 2 pages" in out
    assert "scratch.ipynb: belongs to no problem page, not run" in out
    assert "03-sharding.ipynb: skipped: " in out


@pytest.mark.slow
def test_json_and_a_notebook_with_a_failing_cell(tmp_path):
    nb = nbformat.read(CH2, as_version=4)
    first = problems(page=P2)[0].id
    for cell, nxt in zip(nb.cells, nb.cells[1:]):
        if cell.source.startswith("answer = None") and f'"{first}"' in nxt.source:
            cell.source = f"answer = {get(first).answer()!r}"
    nb.cells.append(nbformat.v4.new_code_cell("raise RuntimeError('stopped here')"))
    nbformat.write(nb, tmp_path / "02-accelerators.ipynb")
    proc = run("grade", "--all", str(tmp_path), "--json")
    assert proc.returncode == 1, proc.stderr
    data = json.loads(proc.stdout)
    assert set(data) >= {"folder", "pages", "notebooks", "skipped", "correct", "total"}
    (page,) = data["pages"]
    assert page["page"] == P2 and page["correct"] == 1 and page["total"] == len(problems(page=P2))
    # the failing cell comes after every check: no problem is marked as an error
    assert page["missing"] == page["total"] - 1 and page["error"] == 0
    assert "stopped here" in data["notebooks"][0]["error"]


def test_the_book_s_own_exercises_folder_is_accepted():
    from scalebook.grading import notebooks_in

    names = [p.name for p in notebooks_in(ROOT / "exercises")]
    assert names and names == sorted(names) and all(n.endswith(".ipynb") for n in names)


@pytest.mark.parametrize("make, words", [
    (lambda tmp: tmp / "nowhere", "is not a folder"),
    (lambda tmp: tmp, "no notebooks"),
    (lambda tmp: CH1, "is not a folder"),
])
def test_bad_folder_exits_2_with_one_line(tmp_path, make, words):
    (tmp_path / "notes.md").write_text("not a notebook")
    proc = run("grade", "--all", str(make(tmp_path)))
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
    assert words in proc.stderr


@pytest.mark.parametrize("args", [[], [str(CH1), "--all", "exercises"]])
def test_grade_needs_exactly_one_of_notebook_or_all(args):
    proc = run("grade", *args)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1
    assert "--all DIR" in proc.stderr
