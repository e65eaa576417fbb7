"""grading: a notebook scored against its page's problems; what is refused, and how bad files fail.

Notebooks here start from the generated student notebook of chapter 1 (`exercises/01-rooflines.ipynb`)
with answers filled in, as a student would.
"""
import json
import re
import subprocess
import sys

import jupytext
import nbformat
import pytest

from notebook_tools import EXERCISES, ROOT, with_solutions_in_place
from scalebook import Error
from scalebook.exercises import get, problems
from scalebook.grading import NotAProblemNotebook, page_of, solution_cells, solutions_in

CH1 = ROOT / "exercises" / "01-rooflines.ipynb"
_CHECK = re.compile(r'check\("([^"]+)"')


def run(*args):
    return subprocess.run([sys.executable, "-m", "scalebook.cli", *args], capture_output=True, text=True)


def student_notebook(answers: dict, drop_check_of=(), extra_cells=()):
    """The chapter 1 student notebook with `answer = ...` cells set to `answers[id]` (source text),
    the check cells of `drop_check_of` deleted and `extra_cells` appended."""
    nb = nbformat.read(CH1, as_version=4)
    cells = []
    for cell, nxt in zip(nb.cells, nb.cells[1:] + [None]):
        pid = _CHECK.search(cell.source) if cell.cell_type == "code" else None
        if pid and pid.group(1) in drop_check_of:
            continue
        if nxt is not None and cell.cell_type == "code" and cell.source.startswith("answer = None"):
            source = answers.get(_CHECK.search(nxt.source).group(1))
            if source is not None:
                cell.source = source
        cells.append(cell)
    nb.cells = cells + [nbformat.v4.new_code_cell(s) for s in extra_cells]
    return nb


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """One notebook with every kind of verdict: 1.1 right, 1.2 wrong (twice the key), 1.3 close (3% off),
    1.4 unreadable ('7,6'), 1.5 a cell that raises, 1.6 left blank, 1.7's check cell deleted, 1.8 right as a
    string with units, 1.9 wrong units; it also checks a chapter-2 problem, which must be ignored."""
    from scalebook.grading import grade

    key = {p.id: p.answer() for p in problems(page="01-rooflines")}
    nb = student_notebook({"1.1": f"answer = {key['1.1']!r}", "1.2": f"answer = {2 * key['1.2']!r}",
                           "1.3": f"answer = {1.03 * key['1.3']!r}", "1.4": "answer = '7,6'",
                           "1.5": "answer = 1 / 0", "1.8": f"answer = '{key['1.8'] / 1e3!r} ms'",
                           "1.9": "answer = '7.6 GB'"},
                          drop_check_of={"1.7"}, extra_cells=[f'check("2.1", {get("2.1").answer()!r})'])
    nb.metadata["scalebook"] = {"page": "01-rooflines"}
    path = tmp_path_factory.mktemp("student") / "my answers.ipynb"  # a name that names no page
    nbformat.write(nb, path)
    return grade(path)


@pytest.mark.slow
def test_each_problem_of_the_page_gets_its_verdict(graded):
    status = {r["id"]: r["status"] for r in graded.rows}
    assert status == {"1.1": "correct", "1.2": "wrong", "1.3": "close", "1.4": "wrong", "1.5": "error",
                      "1.6": "missing", "1.7": "missing", "1.8": "correct", "1.9": "wrong",
                      **{f"1.{n}": "missing" for n in range(10, 16)}}
    assert [r["id"] for r in graded.rows] == [p.id for p in problems(page="01-rooflines")]


@pytest.mark.slow
def test_the_total_counts_every_problem_of_the_page(graded):
    # two right (1 each) and one close (1/2), out of the page's fifteen problems, deleted checks included
    assert (graded.score, graded.out_of, graded.page) == (2.5, 15, "01-rooflines")


@pytest.mark.slow
def test_messages_say_why(graded):
    msg = {r["id"]: r["message"] for r in graded.rows}
    assert "decimal comma" in msg["1.4"]
    assert "ZeroDivisionError" in msg["1.5"] and "answer = 1 / 0" in msg["1.5"]
    assert "was its cell deleted" in msg["1.7"]
    assert "units don't match" in msg["1.9"] and "asks for a compute rate in FLOP/s" in msg["1.9"]
    assert "factor of 2" in msg["1.2"]


@pytest.mark.slow
def test_checks_of_other_pages_are_ignored_and_the_failing_cell_is_reported(graded):
    assert graded.ignored == ("2.1",)
    assert len(graded.failed_cells) == 1 and "ZeroDivisionError: division by zero" in graded.error


def test_the_page_comes_from_metadata_then_from_the_file_name():
    nb = nbformat.v4.new_notebook()
    assert page_of(nb, "Copy of 03-sharding (2).ipynb") == "03-sharding"
    assert page_of(nb, "01-rooflines-second-try.ipynb") == "01-rooflines"
    assert page_of(nb, "05_mine.ipynb") == "05-training"
    nb.metadata["scalebook"] = {"page": "04-transformers"}
    assert page_of(nb, "01-rooflines.ipynb") == "04-transformers"
    nb.metadata["scalebook"] = {"page": "99-nothing"}
    with pytest.raises(Error, match="has no problems"):
        page_of(nb, "x.ipynb")
    with pytest.raises(NotAProblemNotebook, match="belongs to"):
        page_of(nbformat.v4.new_notebook(), "scratch.ipynb")
    nb.metadata["scalebook"] = {"page": "01-rooflines", "kind": "chapter"}  # a chapter's notebook
    with pytest.raises(NotAProblemNotebook, match="grade your copy of exercises/01-rooflines.ipynb"):
        page_of(nb, "01-rooflines.ipynb")


@pytest.mark.parametrize("md", EXERCISES, ids=lambda p: p.name)
def test_the_generated_student_notebooks_hold_no_solutions(md):
    assert solutions_in(nbformat.read(md.with_suffix(".ipynb"), as_version=4)) is None


@pytest.mark.parametrize("md", EXERCISES, ids=lambda p: p.name)
def test_notebooks_with_the_worked_solutions_are_recognised(md):
    assert "MyST solution block" in solutions_in(jupytext.read(md, fmt="md:myst"))
    # pasted into the student notebook, a worked solution that computes its answer refuses its own problem
    # (one that types a literal expression, as 9.9's does, is indistinguishable from a student's answer)
    found = set(solution_cells(with_solutions_in_place(md)))
    assert found and found <= {p.id for p in problems(page=md.stem)}


def test_a_literal_answer_next_to_its_check_is_not_a_solution():
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell('answer = 13e9 * 2 / 3.35e12 * 1e3\ncheck("1.1", answer)'),
                                         nbformat.v4.new_code_cell("answer = '7.6 ms'; check('1.1', answer)")])
    assert solutions_in(nb) is None and solution_cells(nb) == {}


def assert_one_line_exit_2(proc, *words):
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    assert proc.stdout == "" and proc.stderr.count("\n") == 1, proc.stderr
    assert proc.stderr.startswith("scalebook: error: ") and "Traceback" not in proc.stderr
    assert "\x1b" not in proc.stderr
    for w in words:
        assert w in proc.stderr, proc.stderr


def test_a_myst_source_is_refused():
    assert_one_line_exit_2(run("grade", str(ROOT / "exercises" / "01-rooflines.md")), "holds the worked solutions")


def test_a_notebook_with_solutions_is_refused(tmp_path):
    path = tmp_path / "01-rooflines.ipynb"
    nbformat.write(with_solutions_in_place(EXERCISES[0]), path)
    assert_one_line_exit_2(run("grade", str(path)), "holds worked solutions", "cell")
    jupytext.write(jupytext.read(EXERCISES[0], fmt="md:myst"), path)
    assert_one_line_exit_2(run("grade", str(path)), "holds worked solutions", "MyST solution block")


_TEXT = CH1.read_text(encoding="utf-8")


@pytest.mark.parametrize("name, content, words", [
    ("empty", b"", "is empty"),
    ("blank", b"  \n", "is empty"),
    ("truncated", _TEXT[: len(_TEXT) // 2].encode(), "not valid JSON"),
    ("not-json", b"print('hello')\n", "not valid JSON"),
    ("a-list", b"[1, 2, 3]", "not a Jupyter notebook"),
    ("no-cells", b'{"metadata": {}, "nbformat": 4, "nbformat_minor": 5}', "not a Jupyter notebook"),
    ("bad-cells", b'{"cells": [{"cell_type": "code"}], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}',
     "not a valid Jupyter notebook"),
    ("bad-version", b'{"cells": [], "metadata": {}, "nbformat": 99, "nbformat_minor": 0}',
     "not a valid Jupyter notebook"),
    ("binary", bytes(range(256)) * 8, "not a text file"),
    ("no-version", b'{"cells": [], "metadata": {}}', "no nbformat version"),
])
def test_a_malformed_file_exits_2_with_one_line(tmp_path, name, content, words):
    path = tmp_path / "01-rooflines.ipynb"
    path.write_bytes(content)
    assert_one_line_exit_2(run("grade", str(path)), words)


@pytest.mark.parametrize("make, words", [
    (lambda tmp: tmp, "is a folder"),
    (lambda tmp: tmp / "nowhere.ipynb", "no notebook at"),
    (lambda tmp: (tmp / "01-rooflines.txt").write_text("{}") and tmp / "01-rooflines.txt", "give a Jupyter notebook"),
])
def test_a_path_that_is_not_a_notebook_exits_2_with_one_line(tmp_path, make, words):
    assert_one_line_exit_2(run("grade", str(make(tmp_path))), words)


def test_a_device_a_fifo_and_a_name_too_long_exit_2_with_one_line_without_hanging(tmp_path):
    import os

    (tmp_path / "01-rooflines.ipynb").symlink_to("/dev/zero")
    os.mkfifo(tmp_path / "02-accelerators.ipynb")
    for name in ("01-rooflines.ipynb", "02-accelerators.ipynb"):
        proc = subprocess.run([sys.executable, "-m", "scalebook.cli", "grade", str(tmp_path / name)],
                              capture_output=True, text=True, timeout=60)
        assert_one_line_exit_2(proc, "is not a regular file")
    assert_one_line_exit_2(run("grade", str(tmp_path / ("a" * 400 + ".ipynb"))), "File name too long")


def test_an_empty_notebook_of_a_page_exits_2_with_one_line(tmp_path):
    nbformat.write(nbformat.v4.new_notebook(), tmp_path / "01-rooflines.ipynb")
    assert_one_line_exit_2(run("grade", str(tmp_path / "01-rooflines.ipynb")), "has no check() of a problem of page")


def test_a_notebook_of_no_page_exits_2_with_one_line(tmp_path):
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 1")]), tmp_path / "scratch.ipynb")
    assert_one_line_exit_2(run("grade", str(tmp_path / "scratch.ipynb")), "belongs to")


@pytest.mark.slow
@pytest.mark.parametrize("cell, args, words", [
    ("import os; os._exit(3)", [], "kernel died while running cell"),
    ("import time; time.sleep(60)", ["--timeout", "2.5"], "longer than the 2.5 s limit"),  # a fraction is read
    ("x = 1", ["--kernel", "no-such-kernel"], "no Jupyter kernel named 'no-such-kernel'"),
])
def test_kernel_deaths_timeouts_and_missing_kernels_exit_2_with_one_line(tmp_path, cell, args, words):
    path = tmp_path / "01-rooflines.ipynb"
    nbformat.write(student_notebook({}, extra_cells=[cell]), path)
    assert_one_line_exit_2(run("grade", str(path), *args), words)


@pytest.mark.slow
def test_output_has_no_terminal_escape_codes(tmp_path):
    path = tmp_path / "01-rooflines.ipynb"
    nbformat.write(student_notebook({"1.1": "answer = '\\x1b[31m7.6\\x1b[0m ms'"},
                                    extra_cells=["raise ValueError('\\x1b[31mred\\x1b[0m')"]), path)
    text = run("grade", str(path))
    assert text.returncode == 1 and "\x1b" not in text.stdout + text.stderr
    assert "a cell raised: cell" in text.stdout and "ValueError: red" in text.stdout
    as_json = run("grade", str(path), "--json")
    assert as_json.returncode == 1 and "\x1b" not in as_json.stdout and "\\u001b" not in as_json.stdout
    data = json.loads(as_json.stdout)
    assert data["score"] == 0 and data["out_of"] == len(problems(page="01-rooflines"))
    assert data["rows"][0]["status"] == "wrong"


def test_help_says_grading_runs_the_notebook_s_code():
    proc = run("grade", "--help")
    assert proc.returncode == 0
    assert "EXECUTES THE NOTEBOOK'S CODE" in proc.stdout and "trust" in proc.stdout
    assert "--timeout" in proc.stdout


def _cell(source, count, error=None):
    cell = nbformat.v4.new_code_cell(source)
    cell.execution_count = count
    if error:
        cell.outputs = [nbformat.v4.new_output("error", ename=error[0], evalue=error[1], traceback=[])]
    return cell


def _verdict(pid, status, source, count):
    return {"id": pid, "status": status, "score": {"correct": 1.0, "close": 0.5}.get(status, 0.0),
            "message": status, "execution_count": count, "source": source}


def test_scoring_uses_the_last_verdict_and_marks_problems_whose_cells_raised():
    from scalebook.grading import _failures, _score_page

    cells = [_cell('check("1.1", answer)', 1),
             _cell("answer = 7.6", 2), _cell('check("1.2", answer)', 3),
             _cell("answer = 1 / 0", 4, error=("ZeroDivisionError", "division by zero")),
             _cell('check("1.3", answer)', 5),
             _cell('print("scratch")', 6)]
    nb = nbformat.v4.new_notebook(cells=cells)
    verdicts = [_verdict("1.1", "wrong", cells[0].source, 2), _verdict("1.2", "close", cells[2].source, 4),
                _verdict("1.1", "correct", cells[0].source, 2),  # a second run of the same cell: the last counts
                _verdict("1.3", "correct", cells[4].source, 6)]  # ran with a stale answer
    trust = lambda pid, v: (v["status"], v["message"])  # noqa: E731  (judging again is tested elsewhere)
    rows = {r["id"]: r for r in _score_page(nb, ["1.1", "1.2", "1.3", "1.4"], verdicts, _failures(nb), judge=trust)}
    assert {k: r["status"] for k, r in rows.items()} == {"1.1": "correct", "1.2": "close", "1.3": "error",
                                                         "1.4": "missing"}
    assert [r["score"] for r in rows.values()] == [1.0, 0.5, 0.0, 0.0]
    assert rows["1.3"]["message"].startswith("cell 4 (answer = 1 / 0) raised ZeroDivisionError: division by zero")
    assert "was its cell deleted" in rows["1.4"]["message"]


def test_a_check_cell_that_never_ran_is_missing_and_one_that_raised_is_an_error():
    from scalebook.grading import _failures, _score_page

    cells = [_cell('if False:\n    check("1.1", answer)', 1),
             _cell('check("1.2", answer)', 2, error=("NameError", "name 'answer' is not defined"))]
    nb = nbformat.v4.new_notebook(cells=cells)
    rows = {r["id"]: r for r in _score_page(nb, ["1.1", "1.2"], [], _failures(nb))}
    assert rows["1.1"]["status"] == "missing" and "never ran" in rows["1.1"]["message"]
    assert rows["1.2"]["status"] == "error" and "its check did not finish" in rows["1.2"]["message"]


def test_malformed_record_lines_are_skipped(tmp_path):
    from scalebook.grading import _verdicts

    record = tmp_path / "v.jsonl"
    record.write_text('{"id": "1.1", "status": "correct", "score": 1.0, "message": "ok"}\nnot json\n'
                      '{"id": "1.2", "status": "splendid"}\n[1, 2]\n')
    assert [v["id"] for v in _verdicts(record)] == ["1.1"]


def test_the_note_column_wraps_to_the_terminal_width_under_itself():
    from scalebook.commands.grade import noted_table

    long = "the sign is wrong, and too large by a factor between 2 and 10; hint: " + "count both copies " * 6
    text = noted_table([{"id": "1.1", "status": "wrong", "score": "0", "note": long},
                        {"id": "1.10", "status": "correct", "score": "1", "note": "7.6 ms is right"}], width=60)
    lines = text.splitlines()
    assert all(len(line) <= 60 for line in lines), lines
    indent = len("1.10  correct  1      ")
    assert lines[0] == "id    status   score  note" and lines[2].startswith("1.1   wrong    0      the sign is wrong")
    continued = [ln for ln in lines[3:] if ln.startswith(" ")]
    assert continued and all(ln[:indent].isspace() and not ln[indent].isspace() for ln in continued)
    assert " ".join(ln.strip() for ln in [lines[2][indent:]] + continued) == long.strip()
    assert lines[-1] == "1.10  correct  1      7.6 ms is right"  # no padding after the text


def test_a_narrow_terminal_still_leaves_30_characters_for_the_note():
    from scalebook.commands.grade import noted_table

    lines = noted_table([{"id": "1.1", "status": "wrong", "score": "0", "note": "x " * 40}], width=10).splitlines()
    assert max(len(ln) for ln in lines[2:]) <= len("1.1  wrong   0      ") + 30


@pytest.mark.slow
def test_in_a_real_kernel_the_easy_shortcuts_score_nothing_and_scratch_errors_spoil_nothing(tmp_path):
    """One run of the chapter 1 notebook: 1.1 reads its key, 1.2 is right after a scratch cell that
    raised, 1.3 is checked in a loop, 1.4 is right, and a forged record line claims 100 for 1.5."""
    from scalebook.grading import MAX_CHECKS, grade

    key = {p.id: p.answer() for p in problems(page="01-rooflines")}
    forged = ("import json, os\nwith open(os.environ['SCALEBOOK_RECORD'], 'a') as f:\n"
              "    f.write(json.dumps({'id': '1.5', 'status': 'correct', 'score': 100, 'given': 1.0}) + '\\n')")
    nb = student_notebook({"1.1": 'from scalebook.exercises import get\nanswer = get("1.1").answer()',
                           "1.2": f"answer = {key['1.2']!r}",
                           "1.3": f"for answer in range({MAX_CHECKS + 1}):\n    check('1.3', answer)",
                           "1.4": f"answer = {key['1.4']!r}", "1.5": forged})
    for i, cell in enumerate(nb.cells):  # a scratch cell that raises, right after 1.1's check
        if cell.cell_type == "code" and 'check("1.1"' in cell.source:
            nb.cells.insert(i + 1, nbformat.v4.new_code_cell("scratch_that_raises()"))
            break
    path = tmp_path / "01-rooflines.ipynb"
    nbformat.write(nb, path)
    g = grade(path)
    status = {r["id"]: r["status"] for r in g.rows}
    assert (status["1.1"], status["1.2"], status["1.3"], status["1.4"]) == ("refused", "correct", "refused", "correct")
    # the forged line is judged again (1.0 is wrong); 1.5's own check then ran with 1.4's answer
    assert status["1.5"] == "wrong"
    assert re.match(r"cell \d+ \(from scalebook.exercises import get\) read this problem's key", g.rows[0]["message"])
    assert g.score == 2 and len(g.failed_cells) == 1 and "scratch_that_raises" in g.failed_cells[0]
