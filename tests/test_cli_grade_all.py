"""`scalebook grade --all DIR`: every problem notebook of a folder graded, progress per chapter.

The notebooks are the generated Colab notebooks of `exercises/`, with answers filled in here:
each `answer = None` cell gets the key of the problem its `check()` cell names (or a wrong value).
"""
import json
import re
import subprocess
import sys

import nbformat
import pytest

from notebook_tools import ROOT
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


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    """Chapter 1 solved (plus a blank copy of it), chapter 2 with one wrong answer and one right,
    and a notebook that calls no check()."""
    d = tmp_path_factory.mktemp("mine")
    filled(CH1, d / "01-rooflines.ipynb", lambda pid: get(pid).answer())
    filled(CH1, d / "01-rooflines-second-try.ipynb", lambda pid: None)
    first, second = [p.id for p in problems("2")][:2]
    filled(CH2, d / "02-accelerators.ipynb",
           lambda pid: 2 * get(pid).answer() if pid == first else get(pid).answer() if pid == second else None)
    scratch = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 1")])
    nbformat.write(scratch, d / "scratch.ipynb")
    return d


@pytest.fixture(scope="module")
def progress(folder):
    from scalebook.grading import grade_all

    return grade_all(folder)


@pytest.mark.slow
def test_progress_per_chapter_counts_the_bank(progress):
    n1, n2 = len(problems("1")), len(problems("2"))
    ch = {c.chapter: c for c in progress.chapters}
    assert list(ch) == ["1", "2"]
    # chapter 1: the solved notebook wins over the blank copy, each problem counted once
    assert (ch["1"].correct, ch["1"].total, ch["1"].missing) == (n1, n1, 0)
    assert ch["1"].notebooks == ("01-rooflines-second-try.ipynb", "01-rooflines.ipynb")
    # chapter 2: one right, one wrong (a factor of 2), the rest unanswered
    assert (ch["2"].correct, ch["2"].wrong, ch["2"].missing, ch["2"].total) == (1, 1, n2 - 2, n2)
    assert (progress.correct, progress.total) == (n1 + 1, n1 + n2)
    assert len(progress.grades) == 4 and not progress.errors


@pytest.mark.slow
def test_text_summary_prints_correct_over_total_per_chapter(progress, folder, monkeypatch, capsys):
    import scalebook.commands.grade as cmd

    monkeypatch.setattr(cmd, "grade_all", lambda *a, **k: progress)
    assert main(["grade", "--all", str(folder)]) == 0
    out = capsys.readouterr().out
    n1, n2 = len(problems("1")), len(problems("2"))
    assert re.search(rf"^1\s+{n1} / {n1}\s", out, re.M)
    assert re.search(rf"^2\s+1 / {n2}\s+0\s+1\s+{n2 - 2}\s", out, re.M)
    assert f"correct: {n1 + 1} / {n1 + n2} problems in 2 chapters" in out
    assert "scratch.ipynb: no check() calls ran" in out


@pytest.mark.slow
def test_json_and_a_notebook_that_stops_early(tmp_path):
    nb = nbformat.read(CH2, as_version=4)
    first = problems("2")[0].id
    for cell, nxt in zip(nb.cells, nb.cells[1:]):
        if cell.source.startswith("answer = None") and f'"{first}"' in nxt.source:
            cell.source = f"answer = {get(first).answer()!r}"
    nb.cells.append(nbformat.v4.new_code_cell("raise RuntimeError('stopped here')"))
    nbformat.write(nb, tmp_path / "02-accelerators.ipynb")
    proc = run("grade", "--all", str(tmp_path), "--json")
    assert proc.returncode == 1, proc.stderr
    data = json.loads(proc.stdout)
    assert set(data) >= {"folder", "chapters", "notebooks", "correct", "total"}
    (chapter,) = data["chapters"]
    assert chapter["chapter"] == "2" and chapter["correct"] == 1 and chapter["total"] == len(problems("2"))
    assert chapter["missing"] == chapter["total"] - 1
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
