"""The grader without a Jupyter kernel: reading, placing, refusing and scoring notebooks, pinned
by hand; written to kill the mutants `make mutate` found surviving in `scalebook.grading`.

`tests/test_grading.py` runs real kernels end to end. Here a stand-in (`FakeKernel`) takes the
place of nbclient's `NotebookClient`: it runs each code cell with `exec` in one namespace, numbers
the cells 1, 2, ... as a fresh kernel does, leaves an error output on a cell that raises, and has
the real `check()` (and a read of a key) append to $SCALEBOOK_RECORD with the running cell's
execution count and source, as inside a kernel. Everything the grader does with that run
(which verdict belongs to which problem, which cell raised before which check) is the real code.
Notebooks are built cell by cell; the answer keys come from the bank (`get(id).answer()`).
"""
import json
import os

import nbclient
import nbformat
import pytest
from jupyter_client import kernelspec
from jupyter_client.kernelspec import NoSuchKernel

from scalebook import Error
from scalebook import grading
from scalebook.exercises import check, get, pages, problems
import importlib

problem_module = importlib.import_module("scalebook.exercises.problem")  # the module, not the decorator
from scalebook.grading import (Grade, NotAProblemNotebook, PageProgress, Progress, clean, grade, grade_all,
                               notebooks_in, page_of, read_notebook, solution_cells, solutions_in)

P1, P2 = "01-rooflines", "02-accelerators"
PAGES = ", ".join(pages())  # every message that lists the pages lists them all, in order


# --- stand-ins for the kernel and the installed kernel specs -------------------------------------

class FakeKernel:
    """Stands in for `nbclient.NotebookClient` (see the module docstring)."""

    made: list = []

    def __init__(self, nb, **options):
        self.nb, self.options, self.env = nb, options, None
        FakeKernel.made.append(self)

    def execute(self, env, **streams):
        self.env, self.streams = dict(env), streams
        self.options["log"].debug("starting")  # nbclient logs through the logger it is given
        namespace, count, running = {"check": check, "get": get}, 0, problem_module._running_cell
        saved = os.environ.get("SCALEBOOK_RECORD")
        os.environ["SCALEBOOK_RECORD"] = env["SCALEBOOK_RECORD"]
        try:
            for i, cell in enumerate(self.nb.cells):
                if cell.cell_type != "code":
                    continue
                count += 1
                cell.execution_count = count
                self.options["on_cell_start"](cell=cell, cell_index=i)
                problem_module._running_cell = lambda _c=count, _s=cell.source: (_c, _s)
                try:
                    exec(cell.source, namespace)
                except Exception as e:  # a kernel records the error in the cell's outputs and goes on
                    cell.outputs = [nbformat.v4.new_output("error", ename=type(e).__name__, evalue=str(e),
                                                           traceback=[])]
        finally:
            problem_module._running_cell = running
            if saved is None:
                os.environ.pop("SCALEBOOK_RECORD", None)
            else:
                os.environ["SCALEBOOK_RECORD"] = saved


class Specs:
    """Stands in for jupyter_client's KernelSpecManager: the kernels 'installed' are `Specs.names`."""

    names = ("python3", "julia-1.10")

    def find_kernel_specs(self):
        return {n: f"/kernels/{n}" for n in self.names}


@pytest.fixture(autouse=True)
def no_real_kernel(monkeypatch):
    FakeKernel.made = []
    monkeypatch.setattr(nbclient, "NotebookClient", FakeKernel)
    monkeypatch.setattr(kernelspec, "KernelSpecManager", Specs)


def code(source, count=None, error=None):
    cell = nbformat.v4.new_code_cell(source)
    cell.execution_count = count
    if error:
        cell.outputs = [nbformat.v4.new_output("error", ename=error[0], evalue=error[1], traceback=[])]
    return cell


def notebook(*cells, page=P1, **metadata):
    nb = nbformat.v4.new_notebook(cells=[c if not isinstance(c, str) else code(c) for c in cells])
    if page is not None:
        nb.metadata["scalebook"] = {"page": page}
    nb.metadata.update(metadata)
    return nb


def write(nb, path):
    nbformat.write(nb, path)
    return path


def key(pid):
    return get(pid).answer()


# --- clean and _one_line: what reaches a terminal --------------------------------------------------

@pytest.mark.parametrize("raw, shown", [
    ("\x1b[1;31mred\x1b[0m", "red"),                          # colour (CSI) sequences
    ("\x1b]0;a title\x07ok", "ok"),                           # a window title (OSC, ended by BEL)
    ("see \x1b]8;;https://x.org\x1b\\link", "see link"),      # a hyperlink (OSC, ended by ESC \)
    ("\x1bMup", "up"),                                        # a two-character escape
    ("a\tb\nc\x00\x07\x0b\x1f\x7f\x85\x9fd", "a\tb\ncd"),     # tabs and newlines stay, other controls go
])
def test_terminal_escapes_and_control_characters_are_removed(raw, shown):
    assert clean(raw) == shown


def test_clean_shows_any_object_as_text():
    assert clean(12.5) == "12.5"


@pytest.mark.parametrize("text, limit, line", [
    ("\n   \n  first line  \nsecond", 200, "first line"),    # the first non-blank line, stripped
    ("", 200, ""),
    ("x" * 200, 200, "x" * 200),                              # at the limit: whole
    ("x" * 201, 200, "x" * 197 + "..."),                      # past it: cut to exactly the limit
    ("abcdef", 5, "ab..."),
])
def test_one_line_keeps_the_first_line_within_the_limit(text, limit, line):
    assert grading._one_line(text, limit) == line


def test_one_line_cuts_at_200_characters_by_default():
    assert grading._one_line("y" * 300) == "y" * 197 + "..."


# --- read_notebook: what is refused, with what message -------------------------------------------

def test_a_well_formed_notebook_is_read_as_version_4(tmp_path):
    nb = read_notebook(write(notebook("x = 1"), tmp_path / "01-rooflines.ipynb"))
    assert nb.nbformat == 4 and [c.source for c in nb.cells] == ["x = 1"]


def test_a_notebook_with_a_byte_order_mark_or_an_upper_case_suffix_is_read(tmp_path):
    text = nbformat.writes(notebook("x = 1"))
    (tmp_path / "a.IPYNB").write_bytes(b"\xef\xbb\xbf" + text.encode("utf-8"))
    assert read_notebook(tmp_path / "a.IPYNB").cells[0].source == "x = 1"


def test_an_old_version_3_notebook_is_read_as_version_4(tmp_path):
    v3 = {"nbformat": 3, "nbformat_minor": 0, "metadata": {}, "worksheets": [{"cells": [], "metadata": {}}]}
    (tmp_path / "old.ipynb").write_text(json.dumps(v3))
    nb = read_notebook(tmp_path / "old.ipynb")
    assert nb.nbformat == 4 and nb.cells == []


@pytest.mark.parametrize("name", ["01-rooflines.md", "01-rooflines.MD"])
def test_a_myst_source_is_refused_and_the_student_notebook_named(tmp_path, name):
    # refused by its name: the file need not exist
    with pytest.raises(Error) as e:
        read_notebook(tmp_path / name)
    assert str(e.value) == (f"{tmp_path / name} is a MyST source of the book, which holds the worked solutions: "
                            "grade your copy of the student notebook 01-rooflines.ipynb instead")


def test_a_folder_is_refused_with_the_all_option_named(tmp_path):
    with pytest.raises(Error) as e:
        read_notebook(tmp_path)
    assert str(e.value) == f"{tmp_path} is a folder: give one notebook (.ipynb), or grade a folder with --all DIR"


def test_a_missing_file_is_refused_with_its_name_cleaned(tmp_path):
    with pytest.raises(Error) as e:
        read_notebook(tmp_path / "\x1b[31mgone.ipynb")
    assert str(e.value) == f"no notebook at {tmp_path}/gone.ipynb"


def test_a_file_that_is_not_a_notebook_by_its_suffix_is_refused(tmp_path):
    (tmp_path / "01-rooflines.txt").write_text("{}")
    with pytest.raises(Error) as e:
        read_notebook(tmp_path / "01-rooflines.txt")
    assert str(e.value) == "cannot grade 01-rooflines.txt: give a Jupyter notebook (.ipynb)"


def test_a_file_over_64_mib_is_refused_before_it_is_read(tmp_path):
    path = tmp_path / "huge.ipynb"
    with open(path, "wb") as f:
        f.truncate(64 * 2**20 + 1)  # sparse: one byte over 64 MiB
    with pytest.raises(Error) as e:
        read_notebook(path)
    assert str(e.value) == f"{path} is 64 MiB, too large to be a problem notebook"


def test_a_file_of_exactly_64_mib_is_read_and_judged_on_its_content(tmp_path):
    path = tmp_path / "big.ipynb"
    with open(path, "wb") as f:
        f.truncate(64 * 2**20)  # zero bytes: valid UTF-8, invalid JSON at its first character
    with pytest.raises(Error, match=r"is not valid JSON \(line 1, column 1: Expecting value\)"):
        read_notebook(path)


def test_a_file_that_cannot_be_read_says_why(tmp_path, monkeypatch):
    path = write(notebook("x = 1"), tmp_path / "01-rooflines.ipynb")

    def denied(*args):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(os, "open", denied)
    with pytest.raises(Error) as e:
        read_notebook(path)
    assert str(e.value) == f"cannot read {path}: Permission denied"


@pytest.mark.parametrize("content, message", [
    (b"", "{path} is empty: it is not a notebook"),
    (b" \n\t", "{path} is empty: it is not a notebook"),
    (bytes(range(128, 256)), "{path} is not a text file (not UTF-8): a notebook is JSON"),
    # '{' on line 1, then the 12 characters `  "cells": [` and the end: a value expected at column 13
    (b'{\n  "cells": [', '{path} is not valid JSON (line 2, column 13: Expecting value): is the file truncated?'),
    (b"[" * 100_000, "{path} is not valid JSON: is the file truncated?"),  # nested too deep to parse
    (b"[1, 2, 3]", "{path} is JSON but not a Jupyter notebook (no list of cells)"),
    (b'{"cells": {}}', "{path} is JSON but not a Jupyter notebook (no list of cells)"),
    (b'{"worksheets": "none"}', "{path} is JSON but not a Jupyter notebook (no list of cells)"),
    (b'{"cells": [], "metadata": {}, "nbformat": 4}',
     "{path} is not a valid Jupyter notebook: 'nbformat_minor' is a required property"),
])
def test_a_malformed_file_is_refused_with_one_line_saying_what_is_wrong(tmp_path, content, message):
    path = tmp_path / "01-rooflines.ipynb"
    path.write_bytes(content)
    with pytest.raises(Error) as e:
        read_notebook(path)
    assert str(e.value) == message.format(path=path)


@pytest.mark.parametrize("path, shown", [(42, "42"), (None, "None"), ("  ", "'  '"), ("", "''")])
def test_a_path_that_is_not_a_string_or_a_path_is_refused(path, shown):
    with pytest.raises(Error) as e:
        read_notebook(path)
    assert str(e.value) == f"the notebook must be a path (a string or a Path), got {shown}"


LONG = [1] * 50  # its repr is 148 characters: a message shows the first 57 and "..."
LONG_SHOWN = "[" + "1, " * 18 + "1,..."


def test_a_long_bad_value_is_shown_cut_to_60_characters(tmp_path):
    with pytest.raises(Error) as e:
        grade(LONG)
    assert str(e.value) == f"the notebook must be a path (a string or a Path), got {LONG_SHOWN}"
    with pytest.raises(Error) as e:
        notebooks_in(LONG)
    assert str(e.value) == f"the folder must be a path (a string or a Path), got {LONG_SHOWN}"
    with pytest.raises(Error) as e:
        grade(tmp_path / "01-rooflines.ipynb", timeout_s=LONG)
    assert str(e.value) == f"timeout_s must be a positive number of seconds, got {LONG_SHOWN}"
    with pytest.raises(Error) as e:
        grade(tmp_path / "01-rooflines.ipynb", kernel_name=LONG)
    assert str(e.value) == f"kernel_name must be the name of a Jupyter kernel (like 'python3'), got {LONG_SHOWN}"


def test_grading_without_nbformat_says_what_to_install(monkeypatch, tmp_path):
    import sys

    monkeypatch.setitem(sys.modules, "nbformat", None)  # makes `import nbformat` fail
    with pytest.raises(Error) as e:
        read_notebook(tmp_path / "01-rooflines.ipynb")
    assert str(e.value) == "grading needs nbclient, nbformat and ipykernel: pip install 'scalebook[grade]'"


# --- page_of: which problem page a notebook belongs to --------------------------------------------

def test_the_metadata_names_the_page_whatever_the_file_is_called():
    assert page_of(notebook(page="04-transformers"), "01-rooflines.ipynb") == "04-transformers"


def test_a_page_in_the_metadata_that_has_no_problems_is_an_error_listing_the_pages():
    with pytest.raises(Error) as e:
        page_of(notebook(page="99-nothing"), "dir/x.ipynb")
    assert not isinstance(e.value, NotAProblemNotebook)
    assert str(e.value) == f"x.ipynb: its metadata names the problem page '99-nothing', which has no problems; pages: {PAGES}"


def test_a_chapter_notebook_is_not_a_problem_notebook_and_the_problem_notebook_is_named():
    nb = notebook(page=None, scalebook={"page": "01-rooflines", "kind": "chapter"})
    with pytest.raises(NotAProblemNotebook) as e:
        page_of(nb, "book/01-rooflines.ipynb")
    assert str(e.value) == ("01-rooflines.ipynb is the notebook of the chapter '01-rooflines', which has no "
                            "problems: grade your copy of exercises/01-rooflines.ipynb")


@pytest.mark.parametrize("name, page", [
    ("Copy of 03-sharding (2).ipynb", "03-sharding"),       # a page named anywhere in the name
    ("01-rooflines-second-try.ipynb", "01-rooflines"),
    ("01-rooflines then 06-training-llama.ipynb", "06-training-llama"),  # two named: the longer name
    ("06-training-llama, not 07-inference.ipynb", "06-training-llama"),
    ("05_mine.ipynb", "05-training"),                        # a leading number, then - _ or a space
    ("05 mine.ipynb", "05-training"),
    ("02-mine.ipynb", "02-accelerators"),                    # 02 is not 02b
    ("02b-mine.ipynb", "02b-gpus"),
    ("05.ipynb", "05-training"),                             # the number alone
])
def test_without_metadata_the_file_name_names_the_page(name, page):
    assert page_of(notebook(page=None), name) == page


def test_metadata_that_is_not_a_table_is_passed_over_for_the_file_name():
    assert page_of(notebook(page=None, scalebook="04-transformers"), "05_mine.ipynb") == "05-training"


@pytest.mark.parametrize("name", ["scratch.ipynb", "05mine.ipynb", "99-mine.ipynb", "05x-mine.ipynb"])
def test_a_name_that_names_no_page_belongs_to_no_page(name):
    with pytest.raises(NotAProblemNotebook) as e:
        page_of(notebook(page=None), f"some/dir/{name}")
    assert str(e.value) == (f"cannot tell which problem page {name} belongs to: it has no metadata.scalebook.page "
                            f"and its name names no page ({PAGES})")


# --- solutions_in: what counts as holding the worked solutions ------------------------------------

@pytest.mark.parametrize("marker", ["{solution-start}", "{solution}", "{solution-end}"])
@pytest.mark.parametrize("kind", ["markdown", "raw"])
def test_a_myst_solution_marker_outside_code_is_a_solution(marker, kind):
    cell = (nbformat.v4.new_markdown_cell if kind == "markdown" else nbformat.v4.new_raw_cell)(f"````{marker} p1\n")
    assert solutions_in(notebook("x = 1", cell)) == "cell 2 has the book's worked solutions (a MyST solution block)"


def test_cells_after_text_or_code_that_does_not_parse_are_still_read():
    text = nbformat.v4.new_markdown_cell("my notes")
    assert solution_cells(notebook(text, "answer = f(2)\ncheck('1.1', answer)")) == {"1.1": 1}
    assert solution_cells(notebook("answer = (", "answer = f(2)\ncheck('1.1', answer)")) == {"1.1": 1}


def test_a_solution_marker_inside_code_is_not_a_myst_block():
    assert solutions_in(notebook('note = "{solution-start}"')) is None


SOLVED = (" computes `answer` and checks it in one cell, as the worked solutions do: "
          "put your answer in its own `answer = ...` cell, the check in the next")


@pytest.mark.parametrize("source", [
    'answer = 13e9 * 2 / bw\ncheck("1.1", answer)',           # uses a name
    'answer = f(2)\ncheck("1.1", answer)',                      # calls a function
    'answer = chip.hbm\ncheck("1.1", answer)',                  # reads an attribute
    'answer = table[0]\ncheck("1.1", answer)',                  # indexes
    'answer: float = f(2)\ncheck("1.1", answer)',               # annotated
    'answer = 1\nanswer *= 2\ncheck("1.1", answer)',            # updated in place, even by a literal
    'answer = f(2)\nscalebook.exercises.check("1.1", answer)',  # check reached as an attribute
    '%time answer = 1\nanswer = f(2)\n!ls\ncheck("1.1", answer)',  # magics and shell lines do not hide it
    'for i in r:\n    %time g()\n    answer = f(i)\ncheck("1.1", answer)',  # nor an indented magic
    'answer = f(2); check("1.1", answer)',                   # on one line
    'answer = f(2)\ncheck("1.1", answer)\ncheck("1.2", answer)',  # the first problem checked is named
])
def test_computing_answer_and_checking_it_in_one_cell_is_a_solution(source):
    nb = notebook("x = 1", "y = 2", source)
    assert solution_cells(nb)["1.1"] == 2 and set(solution_cells(nb)) <= {"1.1", "1.2"}
    assert solutions_in(nb) is None  # the problem is refused, not the notebook


@pytest.mark.parametrize("source", [
    "answer = 7.6\ncheck('1.1', answer)",                       # a literal answer
    "answer = 13e9 * 2 / 3.35e12\ncheck('1.1', answer)",        # arithmetic on literals
    "answer = '7.6 ms'\ncheck('1.1', answer)",
    "answer = None\ncheck('1.1', answer)",
    "check('1.1', answer)\nanswer = f(2)",                      # the check comes before the computation
    "check('1.1', answer); answer = f(2)",
    "answer = f(2)\ncheck(pid, answer)",                        # the problem is not named in the cell
    "answer = f(2)\nprint(answer)",                             # no check
    "other = f(2)\ncheck('1.1', other)",                        # not `answer`
    "answer = (",                                               # does not parse: passed over
])
def test_a_cell_that_does_not_compute_and_check_is_not_a_solution(source):
    assert solution_cells(notebook(source)) == {} and solutions_in(notebook(source)) is None


@pytest.mark.parametrize("source", ['answer = get("1.1").answer()', "answer = M(7.6).solve()"])
def test_a_method_called_answer_or_solve_is_not_judged_by_its_text(source):
    # reading the key is caught when it happens (see the grade tests below); a student's own
    # `M(7.6).solve()` reads no key and is graded like any answer
    assert solutions_in(notebook("x = 1", source)) is None and solution_cells(notebook(source)) == {}


def test_a_method_called_answer_on_a_name_is_not_the_key():
    assert solutions_in(notebook("r = result.answer()")) is None


# --- _label, _failures, _verdicts -------------------------------------------------------------------

def test_a_cell_is_named_by_its_number_and_first_line():
    nb = notebook("\n\n  answer = 1 / 0  \nprint(answer)", "", "x = '" + "a" * 40 + "'", "y = '\x1b[31mred'")
    assert [grading._label(nb, i) for i in range(4)] == [
        "cell 1 (answer = 1 / 0)", "cell 2", "cell 3 (x = '" + "a" * 35 + "...)", "cell 4 (y = 'red')"]


def test_a_first_line_of_exactly_40_characters_is_not_cut_and_one_of_41_is():
    nb = notebook("z = '" + "b" * 34 + "'", "z = '" + "b" * 35 + "'")
    assert grading._label(nb, 0) == "cell 1 (z = '" + "b" * 34 + "')"
    assert grading._label(nb, 1) == "cell 2 (z = '" + "b" * 35 + "...)"


def test_each_cell_that_raised_is_named_with_its_error_and_first_line_of_the_message():
    cells = [code("x = 1", 1), nbformat.v4.new_markdown_cell("text"),
             code("answer = 1 / 0", 2, error=("ZeroDivisionError", "division by zero\nmore")),
             code("f()", 3)]
    cells[3].outputs = [nbformat.v4.new_output("stream", name="stdout", text="hello\n"),
                        nbformat.v4.new_output("error", ename="KeyError", evalue="'k'", traceback=[]),
                        nbformat.v4.new_output("error", ename="ValueError", evalue="second", traceback=[])]
    assert grading._failures(notebook(*cells)) == {2: "cell 3 (answer = 1 / 0) raised ZeroDivisionError: division by zero",
                                                   3: "cell 4 (f()) raised KeyError: 'k'"}


def test_an_error_output_without_a_name_or_message_still_names_the_cell():
    nb = notebook(code("f()", 1))
    nb.cells[0].outputs = [{"output_type": "error"}]
    assert grading._failures(nb) == {0: "cell 1 (f()) raised an error: "}


def test_the_record_keeps_well_formed_verdicts_in_the_order_written(tmp_path):
    record = tmp_path / "v.jsonl"
    rows = [{"id": "1.2", "status": "close"}, {"id": "1.1", "status": "correct"}, {"id": "1.3", "status": "wrong"},
            {"id": "1.4", "status": "missing"}, {"id": "1.5", "status": "error"}]
    bad = ["not json", json.dumps({"id": "1.6", "status": "splendid"}), json.dumps({"id": 7, "status": "correct"}),
           json.dumps({"status": "correct"}), "[1, 2]", ""]
    lines = [json.dumps(rows[0]), bad[0], json.dumps(rows[1]), *bad[1:], *map(json.dumps, rows[2:])]
    record.write_bytes("\n".join(lines).encode() + b"\n\xff\xfe\n")  # bytes that are not UTF-8 as well
    assert grading._verdicts(record) == rows


def test_no_record_file_means_no_verdicts(tmp_path):
    assert grading._verdicts(tmp_path / "none.jsonl") == []


# --- _score_page: verdicts matched to problems and cells ---------------------------------------------

def verdict(pid, status, cell, message=None, given=None):
    return {"id": pid, "status": status, "given": given, "message": message or f"{status} message",
            "execution_count": cell.execution_count, "source": cell.source}


def trust(pid, v):
    """A judge that takes the recorded status as it is: the tests of which cell a verdict belongs to."""
    return v["status"], v.get("message", "")


def score(nb, page_ids, verdicts, reads=()):
    return {r["id"]: r for r in grading._score_page(nb, page_ids, verdicts, grading._failures(nb), reads, judge=trust)}


def test_each_problem_gets_its_last_verdict_score_and_message_in_page_order():
    c1, c2 = code('check("1.1", answer)', 1), code('check("1.2", answer)', 2)
    nb = notebook(c1, c2)
    rows = grading._score_page(nb, ["1.2", "1.1"], [verdict("1.1", "wrong", c1), verdict("1.2", "close", c2),
                                                    verdict("1.1", "correct", c1, message="\x1b[32mright\x1b[0m")], {},
                               judge=trust)
    assert rows == ({"id": "1.2", "status": "close", "score": 0.5, "message": "close message"},
                    {"id": "1.1", "status": "correct", "score": 1.0, "message": "right"})


def test_a_verdict_without_a_score_or_message_scores_zero_with_no_message():
    c = code('check("1.1", answer)', 1)
    row = grading._score_page(notebook(c), ["1.1"], [{"id": "1.1", "status": "wrong", "source": c.source,
                                                      "execution_count": 1}], {})[0]
    assert row == {"id": "1.1", "status": "wrong", "score": 0.0, "message": ""}


def test_a_problem_with_no_check_cell_is_missing_and_its_cell_presumed_deleted():
    row = score(notebook("x = 1"), ["1.4"], [])["1.4"]
    assert row == {"id": "1.4", "status": "missing", "score": 0.0,
                   "message": 'no check("1.4", answer) in the notebook: was its cell deleted?'}


def test_a_check_cell_that_never_ran_is_missing_and_named():
    nb = notebook("x = 1", 'if False:\n    check("1.1", answer)', 'check("1.1", answer)')
    assert score(nb, ["1.1"], [])["1.1"] == {"id": "1.1", "status": "missing", "score": 0.0,
                                             "message": "its check() in cell 2 (if False:) never ran"}


def test_a_check_in_a_comment_is_not_a_check_cell():
    nb = notebook("x = 1", '# check("1.1", answer) once I have it')
    assert score(nb, ["1.1"], [])["1.1"]["message"] == 'no check("1.1", answer) in the notebook: was its cell deleted?'


def test_a_check_cell_that_does_not_parse_is_still_found_by_its_text():
    nb = notebook("x = 1", 'check("1.1", answer')
    assert score(nb, ["1.1"], [])["1.1"]["message"] == 'its check() in cell 2 (check("1.1", answer) never ran'


ZERO = ("ZeroDivisionError", "division by zero")


def test_a_cell_that_raised_before_a_check_that_ran_makes_it_an_error():
    a, c = code("answer = 1 / 0", 1, error=ZERO), code('check("1.1", answer)', 2)
    row = score(notebook("x = 1", a, c), ["1.1"], [verdict("1.1", "correct", c)])["1.1"]
    assert row == {"id": "1.1", "status": "error", "score": 0.0,
                   "message": "cell 2 (answer = 1 / 0) raised ZeroDivisionError: division by zero "
                              "(its check ran with whatever `answer` held before)"}


def test_a_check_cell_that_raised_itself_is_an_error_whose_check_did_not_finish():
    c = code('check("1.1", answer)', 1, error=("NameError", "name 'answer' is not defined"))
    row = score(notebook(c), ["1.1"], [])["1.1"]
    assert row == {"id": "1.1", "status": "error", "score": 0.0,
                   "message": "cell 1 (check(\"1.1\", answer)) raised NameError: name 'answer' is not defined "
                              "(its check did not finish)"}


def test_a_cell_that_raised_belongs_to_the_next_check_only():
    # cells: 0 answer (raises), 1 check 1.1, 2 answer, 3 check 1.2, 4 scratch (raises), after every check
    cells = [code("answer = 1 / 0", 1, error=ZERO), code('check("1.1", answer)', 2), code("answer = 7.6", 3),
             code('check("1.2", answer)', 4), code("oops()", 5, error=("NameError", "oops"))]
    rows = score(notebook(*cells), ["1.1", "1.2"], [verdict("1.1", "correct", cells[1]),
                                                     verdict("1.2", "close", cells[3])])
    assert (rows["1.1"]["status"], rows["1.2"]["status"]) == ("error", "close")


def test_a_check_cell_that_raised_does_not_spoil_the_next_problem():
    cells = [code('check("1.1", answer)', 1, error=("NameError", "answer")), code("answer = 7.6", 2),
             code('check("1.2", answer)', 3)]
    rows = score(notebook(*cells), ["1.1", "1.2"], [verdict("1.2", "correct", cells[2])])
    assert (rows["1.1"]["status"], rows["1.2"]["status"]) == ("error", "correct")


def test_a_cell_that_checks_through_a_variable_still_bounds_the_next_problem():
    # the check of 1.1 names no id in its text; its recorded verdict says which cell ran it
    cells = [code("answer = 1 / 0", 1, error=ZERO), code('pid = "1.1"\ncheck(pid, answer)', 2),
             code("answer = 7.6", 3), code('check("1.2", answer)', 4)]
    rows = score(notebook(*cells), ["1.1", "1.2"], [verdict("1.1", "wrong", cells[1]),
                                                     verdict("1.2", "correct", cells[3])])
    assert (rows["1.1"]["status"], rows["1.2"]["status"]) == ("error", "correct")


def copied_check_notebook():
    """The check of 1.1 twice (a student copied it below a cell that raised): cells 0 and 3, same source."""
    cells = [code('check("1.1", answer)', 1), code("x = 1", 2), code("answer = 1 / 0", 3, error=ZERO),
             code('check("1.1", answer)', 4)]
    return notebook(*cells), cells


def test_a_verdict_goes_to_the_copy_of_its_cell_with_the_nearest_execution_count():
    nb, cells = copied_check_notebook()
    later = dict(verdict("1.1", "correct", cells[3]), execution_count=5)  # nearer 4 than 1
    earlier = dict(verdict("1.1", "correct", cells[0]), execution_count=2)  # nearer 1 than 4
    assert score(nb, ["1.1"], [later])["1.1"]["status"] == "error"
    assert score(nb, ["1.1"], [earlier])["1.1"]["status"] == "correct"


def test_a_copy_that_never_ran_is_farthest_from_any_execution_count():
    nb, cells = copied_check_notebook()
    cells[3].execution_count = None
    v = dict(verdict("1.1", "correct", cells[0]), execution_count=900)
    assert score(nb, ["1.1"], [v])["1.1"]["status"] == "correct"
    cells[0].execution_count = 500  # the only copy that ran, whatever its count, recorded the verdict
    v = dict(verdict("1.1", "correct", cells[0]), execution_count=10)
    assert score(nb, ["1.1"], [v])["1.1"]["status"] == "correct"


def test_a_verdict_without_an_execution_count_is_placed_only_when_one_cell_has_its_source():
    nb, cells = copied_check_notebook()
    unplaced = dict(verdict("1.1", "correct", cells[3]), execution_count=None)  # two cells: falls back to the first
    assert score(nb, ["1.1"], [unplaced])["1.1"]["status"] == "correct"
    a, c = code("answer = 1 / 0", 1, error=ZERO), code('check("1.1", answer)', 2)
    single = dict(verdict("1.1", "correct", c), execution_count=None)
    assert score(notebook(a, c), ["1.1"], [single])["1.1"]["status"] == "error"


def test_a_verdict_without_an_execution_count_goes_to_the_one_cell_with_its_source():
    # cell 0 checks 1.1 but never ran; the verdict came from cell 2 (its own source), after cell 1 raised
    cells = [code('check("1.1", answer)'), code("answer = 1 / 0", 1, error=ZERO),
             code('check("1.1", answer)  # mine', 2)]
    v = dict(verdict("1.1", "correct", cells[2]), execution_count=None)
    assert score(notebook(*cells), ["1.1"], [v])["1.1"]["status"] == "error"


def test_a_verdict_from_no_cell_of_the_notebook_falls_back_to_the_first_check_cell():
    a, c = code("answer = 1 / 0", 1, error=ZERO), code('check("1.1", answer)', 2)
    v = dict(verdict("1.1", "correct", c), source="check('1.1', answer)  # typed elsewhere")
    assert score(notebook(a, c), ["1.1"], [v])["1.1"]["status"] == "error"


def test_a_never_run_check_names_the_first_cell_that_checks_the_problem():
    nb = notebook("x = 1", 'check("1.1", answer)', 'check("1.1", answer)  # again')
    assert score(nb, ["1.1"], [])["1.1"]["message"] == 'its check() in cell 2 (check("1.1", answer)) never ran'


# --- Grade, PageProgress, Progress: totals and what the JSON says ---------------------------------

def row(pid, status):
    return {"id": pid, "status": status, "score": {"correct": 1.0, "close": 0.5}.get(status, 0.0), "message": ""}


GRADE = Grade(notebook="dir/\x1b[1mmine.ipynb", page=P1,
              rows=(row("1.1", "correct"), row("1.2", "close"), row("1.3", "close"), row("1.4", "wrong"),
                    row("1.5", "missing")),
              failed_cells=("cell 3 raised A: a", "cell 9 raised B: b"), ignored=("2.1",))


def test_a_grade_counts_correct_as_one_and_close_as_a_half_out_of_every_problem():
    assert (GRADE.score, GRADE.out_of) == (2.0, 5)
    assert [GRADE.count(s) for s in ("correct", "close", "wrong", "missing", "error")] == [1, 2, 1, 1, 0]


def test_a_grade_s_error_is_its_first_failed_cell_or_none():
    assert GRADE.error == "cell 3 raised A: a"
    assert Grade(notebook="n", page=P1, rows=()).error is None


def test_a_grade_as_json_has_every_field():
    assert GRADE.to_dict() == {"notebook": "dir/mine.ipynb", "page": P1, "rows": list(GRADE.rows), "score": 2.0,
                               "out_of": 5, "failed_cells": ["cell 3 raised A: a", "cell 9 raised B: b"],
                               "ignored": ["2.1"], "error": "cell 3 raised A: a"}


def test_a_grade_reads_as_score_over_problems():
    assert repr(Grade(notebook="mine.ipynb", page=P1, rows=GRADE.rows)) == "Grade(mine.ipynb [01-rooflines]: 2/5)"
    assert repr(Grade(notebook="m.ipynb", page=P1, rows=GRADE.rows[1:])) == "Grade(m.ipynb [01-rooflines]: 1/4)"


PAGE = PageProgress(page=P2, notebooks=("a.ipynb", "b.ipynb"), correct=3, close=2, wrong=4, error=1, total=16)


def test_page_progress_counts_the_rest_as_missing_and_close_as_a_half():
    assert (PAGE.missing, PAGE.score) == (6, 4.0)
    assert PAGE.to_dict() == {"page": P2, "notebooks": ["a.ipynb", "b.ipynb"], "correct": 3, "close": 2, "wrong": 4,
                              "error": 1, "refused": 0, "missing": 6, "total": 16, "score": 4.0}
    refused = PageProgress(page=P2, notebooks=(), correct=3, close=2, wrong=4, error=1, total=16, refused=2)
    assert (refused.missing, refused.score) == (4, 4.0)


def test_progress_sums_the_pages_lists_the_failing_notebooks_and_reads_as_correct_over_total():
    other = PageProgress(page=P1, notebooks=("c.ipynb",), correct=5, close=0, wrong=0, error=0, total=15)
    clean_grade = Grade(notebook="c.ipynb", page=P1, rows=GRADE.rows)
    progress = Progress(folder="mine", grades=(GRADE, clean_grade), pages=(other, PAGE),
                        skipped=(("x.ipynb", "why"),), unplaced=("scratch.ipynb",))
    assert (progress.correct, progress.total, progress.errors) == (8, 31, (GRADE,))
    assert repr(progress) == "Progress(mine: 8/31 correct on 2 pages)"
    assert progress.to_dict() == {"folder": "mine", "pages": [other.to_dict(), PAGE.to_dict()],
                                  "notebooks": [GRADE.to_dict(), clean_grade.to_dict()],
                                  "skipped": [{"notebook": "x.ipynb", "reason": "why"}],
                                  "not_problem_notebooks": ["scratch.ipynb"], "correct": 8, "total": 31}


# --- the kernel: which one, and how its failures read ----------------------------------------------

def test_the_kernel_asked_for_is_used_when_installed():
    assert grading._kernel(notebook(), "julia-1.10") == "julia-1.10"


def test_the_notebook_s_own_kernel_is_used_when_installed_else_python3():
    own = {"kernelspec": {"name": "julia-1.10", "display_name": "Julia"}}
    assert grading._kernel(notebook(**own), None) == "julia-1.10"
    assert grading._kernel(notebook(kernelspec={"name": "ir", "display_name": "R"}), None) == "python3"
    assert grading._kernel(notebook(kernelspec="julia-1.10"), None) == "python3"
    assert grading._kernel(notebook(), None) == "python3"


def test_a_kernel_that_is_not_installed_is_refused_with_those_that_are(monkeypatch):
    with pytest.raises(Error) as e:
        grading._kernel(notebook(), "no-such")
    assert str(e.value) == ("no Jupyter kernel named 'no-such' is installed (installed: julia-1.10, python3): "
                            "pip install ipykernel, or pip install 'scalebook[grade]'")
    monkeypatch.setattr(Specs, "names", ())
    with pytest.raises(Error) as e:
        grading._kernel(notebook(), None)
    assert str(e.value) == ("no Jupyter kernel named 'python3' is installed: pip install ipykernel, "
                            "or pip install 'scalebook[grade]'")


class Failing(FakeKernel):
    """A kernel run that starts cell `at` (None: no cell) and then fails with `error`."""

    at, error = None, None

    def execute(self, env, **streams):
        if self.at is not None:
            self.options["on_cell_start"](cell=self.nb.cells[self.at], cell_index=self.at)
        raise self.error


SLOW = notebook("x = 1", "import time; time.sleep(60)", 'check("1.1", answer)')


@pytest.mark.parametrize("at, error, timeout_s, message", [
    (1, nbclient.exceptions.CellTimeoutError("timed out"), 2.5,
     "cell 2 (import time; time.sleep(60)) ran longer than the 2.5 s limit per cell: if it is slow rather than "
     "stuck, give more time with --timeout SECONDS"),
    (1, nbclient.exceptions.DeadKernelError("dead"), 120,
     "the Python kernel died while running cell 2 (import time; time.sleep(60)): the cell exited the process, "
     "crashed or ran out of memory"),
    (None, nbclient.exceptions.DeadKernelError("dead"), 120,
     "the Python kernel died while running the notebook: the cell exited the process, crashed or ran out of memory"),
    (None, NoSuchKernel("julia-1.10"), 120, "no Jupyter kernel named 'julia-1.10': pip install 'scalebook[grade]'"),
    (None, RuntimeError("Kernel didn't respond\nin 60 seconds"), 120,
     "the Jupyter kernel could not run 01-rooflines.ipynb: Kernel didn't respond"),
    (None, OSError(), 120, "the Jupyter kernel could not run 01-rooflines.ipynb: OSError"),
    (0, TimeoutError("no reply"), 120, "the Jupyter kernel could not run 01-rooflines.ipynb: no reply"),
])
def test_a_run_that_fails_is_one_error_naming_the_cell(tmp_path, monkeypatch, at, error, timeout_s, message):
    monkeypatch.setattr(nbclient, "NotebookClient", Failing)
    monkeypatch.setattr(Failing, "at", at)
    monkeypatch.setattr(Failing, "error", error)
    path = write(SLOW, tmp_path / "01-rooflines.ipynb")
    with pytest.raises(Error) as e:
        grade(path, timeout_s=timeout_s, kernel_name="julia-1.10")
    assert str(e.value) == message


# --- grade: a notebook run (by the stand-in) and scored against its page --------------------------

def graded_notebook(tmp_path):
    """Page 1: 1.1 right, 1.2 twice the key, 1.3 3% off, 1.4's answer cell raises (its check runs with
    1.3's answer), the rest of the page absent; a check of 2.1 (another page) at the end."""
    nb = notebook(nbformat.v4.new_markdown_cell("# my answers"),
                  f"answer = {key('1.1')!r}", 'check("1.1", answer)',
                  f"answer = {2 * key('1.2')!r}", 'check("1.2", answer)',
                  f"answer = {1.03 * key('1.3')!r}", 'check("1.3", answer)',
                  "answer = 1 / 0", 'check("1.4", answer)',
                  f'check("2.1", {key("2.1")!r})')
    return write(nb, tmp_path / "my answers.ipynb")


def test_a_graded_notebook_scores_each_problem_of_its_page(tmp_path):
    path = graded_notebook(tmp_path)
    g = grade(path)
    ids = [p.id for p in problems(page=P1)]
    assert (g.notebook, g.page, [r["id"] for r in g.rows]) == (str(path), P1, ids)
    assert [r["status"] for r in g.rows[:4]] == ["correct", "wrong", "close", "error"]
    assert all(r["status"] == "missing" for r in g.rows[4:])
    assert (g.score, g.out_of) == (1.5, len(ids))
    assert g.rows[3]["message"] == ("cell 8 (answer = 1 / 0) raised ZeroDivisionError: division by zero "
                                    "(its check ran with whatever `answer` held before)")
    assert g.rows[4]["message"] == 'no check("1.5", answer) in the notebook: was its cell deleted?'


def test_checks_of_other_pages_are_listed_not_scored_and_the_failed_cells_are_listed(tmp_path):
    g = grade(graded_notebook(tmp_path))
    assert g.ignored == ("2.1",)
    assert g.failed_cells == ("cell 8 (answer = 1 / 0) raised ZeroDivisionError: division by zero",)


def test_the_kernel_runs_in_the_notebook_s_folder_with_the_record_and_without_strict_mode(tmp_path, monkeypatch):
    monkeypatch.setenv("SCALEBOOK_STRICT", "1")  # strict mode would make every wrong check raise
    monkeypatch.setenv("A_READER_S_SETTING", "kept")
    grade(graded_notebook(tmp_path), timeout_s=7, kernel_name="julia-1.10")
    (run,) = FakeKernel.made
    opts = run.options
    assert (opts["timeout"], opts["kernel_name"], opts["allow_errors"]) == (7, "julia-1.10", True)
    assert opts["resources"] == {"metadata": {"path": str(tmp_path.resolve())}}
    assert "SCALEBOOK_STRICT" not in run.env and run.env["A_READER_S_SETTING"] == "kept"
    assert run.env["SCALEBOOK_RECORD"].endswith("verdicts.jsonl")
    assert not os.path.exists(run.env["SCALEBOOK_RECORD"])  # a temporary file, gone after grading


def test_the_kernel_process_output_is_discarded(tmp_path):
    import subprocess

    grade(graded_notebook(tmp_path))
    assert FakeKernel.made[0].streams == {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}


def test_the_kernel_client_s_log_reaches_neither_the_terminal_nor_the_root_logger(tmp_path, capsys):
    import logging

    class Noisy(FakeKernel):
        def execute(self, env, **streams):
            self.options["log"].warning("Kernel didn't respond in 60 seconds")
            return super().execute(env, **streams)

    class Seen(logging.Handler):
        records = []

        def emit(self, record):
            self.records.append(record)

    nbclient.NotebookClient = Noisy  # restored by the autouse fixture's monkeypatch
    seen = Seen()
    logging.getLogger().addHandler(seen)
    try:
        grade(graded_notebook(tmp_path))
    finally:
        logging.getLogger().removeHandler(seen)
    assert Seen.records == [] and capsys.readouterr().err == ""


def test_the_notebook_s_own_installed_kernel_runs_it(tmp_path):
    nb = notebook('check("1.1", 7.6)', kernelspec={"name": "julia-1.10", "display_name": "Julia"})
    grade(write(nb, tmp_path / "01-rooflines.ipynb"))
    assert FakeKernel.made[0].options["kernel_name"] == "julia-1.10"


def test_a_notebook_with_the_book_s_solution_blocks_is_refused_before_anything_runs(tmp_path):
    nb = notebook(nbformat.v4.new_markdown_cell("```{solution-start} ex-c1-weights\n```"), "x = 1")
    with pytest.raises(Error) as e:
        grade(write(nb, tmp_path / "01-rooflines.ipynb"))
    assert str(e.value) == ("01-rooflines.ipynb holds worked solutions, so it cannot be graded: "
                            "cell 1 has the book's worked solutions (a MyST solution block)")
    assert FakeKernel.made == []


def test_a_worked_solution_in_one_cell_refuses_that_problem_and_names_the_cell(tmp_path):
    nb = notebook(f"answer = {key('1.1')!r}", 'check("1.1", answer)',
                  f"answer = float({key('1.2')!r})\ncheck('1.2', answer)")
    rows = {r["id"]: r for r in grade(write(nb, tmp_path / "01-rooflines.ipynb")).rows}
    assert rows["1.1"]["status"] == "correct"
    assert rows["1.2"] == {"id": "1.2", "status": "refused", "score": 0.0,
                           "message": grading._label(nb, 2) + SOLVED}
    assert grading._label(nb, 2).startswith("cell 3 (answer = float(")


@pytest.mark.parametrize("timeout_s, shown", [(0, "0"), (-1, "-1"), (float("inf"), "inf"), (float("nan"), "nan"),
                                              (True, "True"), ("60", "'60'"), (None, "None")])
def test_the_timeout_must_be_a_positive_finite_number_of_seconds(tmp_path, timeout_s, shown):
    with pytest.raises(Error) as e:
        grade(graded_notebook(tmp_path), timeout_s=timeout_s)
    assert str(e.value) == f"timeout_s must be a positive number of seconds, got {shown}"


def test_a_fractional_timeout_is_accepted(tmp_path):
    assert grade(graded_notebook(tmp_path), timeout_s=0.5).page == P1


@pytest.mark.parametrize("kernel_name, shown", [("", "''"), ("  ", "'  '"), (3, "3")])
def test_the_kernel_name_must_be_a_non_blank_string(tmp_path, kernel_name, shown):
    with pytest.raises(Error) as e:
        grade(graded_notebook(tmp_path), kernel_name=kernel_name)
    assert str(e.value) == f"kernel_name must be the name of a Jupyter kernel (like 'python3'), got {shown}"


# --- notebooks_in and grade_all: a folder of notebooks ------------------------------------------------

def test_the_notebooks_of_a_folder_are_its_ipynb_files_by_name(tmp_path):
    for name in ("b.ipynb", "a.ipynb", "notes.md"):
        (tmp_path / name).write_text("{}")
    (tmp_path / "dir.ipynb").mkdir()                  # a folder, not a notebook
    (tmp_path / ".ipynb_checkpoints").mkdir()         # Jupyter's copies, one level down
    (tmp_path / ".ipynb_checkpoints" / "a-checkpoint.ipynb").write_text("{}")
    assert [p.name for p in notebooks_in(tmp_path)] == ["a.ipynb", "b.ipynb"]


def test_a_folder_without_notebooks_or_a_path_that_is_not_a_folder_is_refused(tmp_path):
    with pytest.raises(Error) as e:
        notebooks_in(tmp_path)
    assert str(e.value) == f"no notebooks (*.ipynb) in '{tmp_path}': give the folder that holds your problem notebooks"
    with pytest.raises(Error) as e:
        notebooks_in(tmp_path / "nowhere")
    assert str(e.value) == (f"'{tmp_path}/nowhere' is not a folder: give the folder that holds your problem "
                            "notebooks (e.g. exercises/)")
    with pytest.raises(Error) as e:
        notebooks_in(None)
    assert str(e.value) == "the folder must be a path (a string or a Path), got None"


def answered(page_ids, answers):
    """A notebook of answer and check cells, answers[id] the answer's source (ids not in it left None)."""
    cells = []
    for pid in page_ids:
        cells += [f"answer = {answers.get(pid, 'None')}", f'check("{pid}", answer)']
    return notebook(*cells, page=None)


@pytest.fixture
def folder(tmp_path):
    """Page 1 twice: the first copy has 1.1 wrong, 1.2 right, 1.3 raising, 1.4 close, 1.5 wrong, 1.6
    raising; the second has 1.1 right, 1.2 wrong, 1.3 wrong, 1.4 raising, 1.5 raising and no 1.6.
    Page 2: 2.1 close. A notebook of no page, and one that holds solutions."""
    ids = [p.id for p in problems(page=P1)]
    first = {"1.1": 2 * key("1.1"), "1.2": key("1.2"), "1.3": "1 / 0", "1.4": 1.03 * key("1.4"), "1.5": 2 * key("1.5"),
             "1.6": "1 / 0"}
    second = {"1.1": key("1.1"), "1.2": 2 * key("1.2"), "1.3": 2 * key("1.3"), "1.4": "1 / 0", "1.5": "1 / 0"}
    write(answered(ids[:6], {k: str(v) for k, v in first.items()}), tmp_path / "01-rooflines.ipynb")
    write(answered(ids[:5], {k: str(v) for k, v in second.items()}), tmp_path / "01-rooflines-again.ipynb")
    write(answered(["2.1"], {"2.1": str(1.03 * key("2.1"))}), tmp_path / "02-accelerators.ipynb")
    write(notebook("x = 1", page=None), tmp_path / "scratch.ipynb")
    write(notebook(nbformat.v4.new_markdown_cell("```{solution-start} ex\n```"), page=None),
          tmp_path / "03-sharding.ipynb")
    return tmp_path


def test_progress_keeps_each_problem_s_best_verdict_across_a_page_s_notebooks(folder):
    progress = grade_all(folder)
    assert [p.page for p in progress.pages] == [P1, P2]
    one, two = progress.pages
    # best of: 1.1 correct, 1.2 correct, 1.3 wrong over error, 1.4 close over error, 1.5 wrong over error,
    # 1.6 error over missing (its check cell is absent from the second copy)
    assert (one.correct, one.close, one.wrong, one.error, one.total) == (2, 1, 2, 1, len(problems(page=P1)))
    assert one.missing == len(problems(page=P1)) - 6
    assert one.notebooks == ("01-rooflines-again.ipynb", "01-rooflines.ipynb")
    assert (two.correct, two.close, two.wrong, two.error, two.total) == (0, 1, 0, 0, len(problems(page=P2)))
    assert (progress.correct, progress.total) == (2, len(problems(page=P1)) + len(problems(page=P2)))
    assert progress.folder == str(folder)


def test_a_folder_lists_notebooks_of_no_page_and_skips_those_that_cannot_be_graded(folder):
    progress = grade_all(folder)
    assert progress.unplaced == ("scratch.ipynb",)
    assert progress.skipped == (("03-sharding.ipynb", "03-sharding.ipynb holds worked solutions, so it cannot be "
                                 "graded: cell 1 has the book's worked solutions (a MyST solution block)"),)
    assert len(progress.grades) == 3 and [len(g.failed_cells) for g in progress.grades] == [2, 2, 0]


def test_progress_is_reported_before_each_notebook_runs(folder):
    seen = []
    grade_all(folder, on_notebook=lambda i, n, path: seen.append((i, n, path.name, len(FakeKernel.made))))
    assert seen == [(1, 5, "01-rooflines-again.ipynb", 0), (2, 5, "01-rooflines.ipynb", 1),
                    (3, 5, "02-accelerators.ipynb", 2), (4, 5, "03-sharding.ipynb", 3), (5, 5, "scratch.ipynb", 3)]


def test_a_folder_s_notebooks_run_with_the_kernel_and_timeout_asked_for(folder):
    grade_all(folder, timeout_s=9, kernel_name="julia-1.10")
    assert {(k.options["timeout"], k.options["kernel_name"]) for k in FakeKernel.made} == {(9, "julia-1.10")}


def test_a_reason_for_skipping_is_one_line_of_at_most_400_characters(tmp_path):
    deep = tmp_path / ("d" * 200) / ("e" * 200)  # the message names the notebook by its whole path
    deep.mkdir(parents=True)
    (deep / "01-rooflines.ipynb").write_text("[1]")
    ((name, reason),) = grade_all(deep).skipped
    assert name == "01-rooflines.ipynb"
    assert reason == f"{deep}/01-rooflines.ipynb is JSON but not a Jupyter notebook (no list of cells)"[:397] + "..."


# --- what a student cannot talk the grader into (issue 21) ----------------------------------------

def statuses(tmp_path, *cells):
    g = grade(write(notebook(*cells), tmp_path / "01-rooflines.ipynb"))
    return {r["id"]: r for r in g.rows}, g


def test_a_record_line_written_by_hand_scores_nothing(tmp_path):
    # a line claiming 100 points and a correct status for a wrong answer: the grader judges the
    # recorded answer itself and computes the score from that status
    forged = ("import json, os\nwith open(os.environ['SCALEBOOK_RECORD'], 'a') as f:\n"
              "    f.write(json.dumps({'id': '1.1', 'status': 'correct', 'score': 100, 'given': 1.0}) + '\\n')\n"
              "    f.write(json.dumps({'id': '1.2', 'status': 'correct', 'score': 100}) + '\\n')")
    rows, g = statuses(tmp_path, forged, 'check("1.3", None)')
    assert rows["1.1"]["status"] == "wrong" and rows["1.1"]["score"] == 0.0
    assert rows["1.2"]["status"] == "wrong"  # no answer recorded: at best wrong
    assert g.score == 0


def test_the_score_follows_the_status_and_never_exceeds_the_number_of_problems():
    rows = tuple({"id": f"1.{i}", "status": "correct", "score": 100.0, "message": ""} for i in (1, 2))
    assert Grade(notebook="n", page=P1, rows=rows).score == 2.0  # not 200
    rows = ({"id": "1.1", "status": "close", "score": 100.0, "message": ""},)
    assert Grade(notebook="n", page=P1, rows=rows).score == 0.5


def test_a_recorded_answer_is_judged_again_with_the_grader_s_own_key():
    c = code('check("1.1", answer)', 1)
    judged = grading._score_page(notebook(c), ["1.1"], [verdict("1.1", "wrong", c, given=key("1.1"))], {})[0]
    assert (judged["status"], judged["score"]) == ("correct", 1.0)
    judged = grading._score_page(notebook(c), ["1.1"], [verdict("1.1", "correct", c, given=2 * key("1.1"))], {})[0]
    assert judged["status"] == "wrong" and "factor of 2" in judged["message"]
    for given in (None, float("nan"), True, "7.6"):  # no readable answer: `missing` stays, anything else is wrong
        assert grading._score_page(notebook(c), ["1.1"], [verdict("1.1", "correct", c, given=given)], {})[0][
            "status"] == "wrong"
    assert grading._score_page(notebook(c), ["1.1"], [verdict("1.1", "missing", c)], {})[0]["status"] == "missing"


READS = [
    'answer = get("1.1").answer()',                                   # the key by the public route
    'answer = getattr(get("1.1"), "answer")()',                      # by getattr
    'p = get("1.1")\nanswer = p.solve(**p.inputs)',                  # the solver itself
    "from scalebook.exercises.bank import ch01_rooflines as m\nanswer = m.weights_stream_ms.answer()",  # the module
    "from scalebook.exercises.problem import _BANK\nanswer = _BANK['1.1'].answer()",                      # _BANK
]


@pytest.mark.parametrize("source", READS)
def test_reading_the_key_refuses_the_problem_and_names_the_cell(tmp_path, source):
    rows, g = statuses(tmp_path, "x = 1", source, 'check("1.1", answer)', f"answer = {key('1.2')!r}",
                       'check("1.2", answer)')
    first = source.splitlines()[0]
    assert rows["1.1"] == {"id": "1.1", "status": "refused", "score": 0.0,
                           "message": f"cell 2 ({first[:40]}{'...' if len(first) > 40 else ''}) read this problem's "
                                      "key (`.answer()` or `.solve(...)` of the problem): compute your answer with "
                                      "the package's modules, not with the answer key"}
    assert rows["1.2"]["status"] == "correct" and g.score == 1


def test_a_student_s_own_solve_method_is_graded_like_any_answer(tmp_path):
    mine = f"class M:\n    def __init__(self, x):\n        self.x = x\n    def solve(self):\n        return self.x\n"
    rows, _ = statuses(tmp_path, mine, f"answer = M({key('1.1')!r}).solve()", 'check("1.1", answer)')
    assert rows["1.1"]["status"] == "correct"


def test_a_loop_of_checks_refuses_the_problem(tmp_path):
    loop = f'for x in range({grading.MAX_CHECKS + 1}):\n    check("1.1", x)'
    rows, _ = statuses(tmp_path, loop)
    assert rows["1.1"] == {"id": "1.1", "status": "refused", "score": 0.0,
                           "message": f"checked {grading.MAX_CHECKS + 1} times in one run (at most "
                                      f"{grading.MAX_CHECKS}): a loop of checks is not an answer"}
    rows, _ = statuses(tmp_path, f'for x in range({grading.MAX_CHECKS}):\n    check("1.1", x)')
    assert rows["1.1"]["status"] == "wrong"  # as many checks as a student re-running cells may make


def test_a_scratch_cell_that_raises_after_a_check_does_not_touch_the_next_problem(tmp_path):
    rows, g = statuses(tmp_path, f"answer = {key('1.1')!r}", 'check("1.1", answer)', "oops()",
                       f"answer = {key('1.2')!r}", 'check("1.2", answer)')
    assert (rows["1.1"]["status"], rows["1.2"]["status"]) == ("correct", "correct")
    assert g.failed_cells == ("cell 3 (oops()) raised NameError: name 'oops' is not defined",)


def test_a_scratch_cell_that_raises_between_the_answer_and_its_check_does_not_touch_it(tmp_path):
    rows, _ = statuses(tmp_path, f"answer = {key('1.1')!r}", "oops()", 'check("1.1", answer)')
    assert rows["1.1"]["status"] == "correct"


def test_an_answer_cell_that_raises_after_a_good_one_makes_the_check_an_error(tmp_path):
    rows, _ = statuses(tmp_path, f"answer = {key('1.1')!r}", "answer = 1 / 0", 'check("1.1", answer)')
    assert rows["1.1"]["status"] == "error" and rows["1.1"]["message"].startswith("cell 2 (answer = 1 / 0) raised")
    rows, _ = statuses(tmp_path, "answer = 7.6 ms", 'check("1.1", answer)')  # a syntax error sets no answer
    assert rows["1.1"]["status"] == "error" and "SyntaxError" in rows["1.1"]["message"]


def test_check_results_and_messages_never_state_the_key():
    k = key("1.1")
    for given in (k, 1.03 * k, 2 * k, 7.647e9 * k, k / 7.647e9, -k, 3 * k):
        r = check("1.1", given)
        assert not hasattr(r, "expected")
        assert grading_number(k) not in r.message.replace(grading_number(given), ""), r.message


def grading_number(x):
    from scalebook.exercises import answers

    return answers.number(x)


# --- files that are not notebooks, and notebooks of nothing (issue 21) ----------------------------

def test_a_link_to_a_device_is_refused_without_reading_it(tmp_path):
    (tmp_path / "01-rooflines.ipynb").symlink_to("/dev/zero")
    with pytest.raises(Error) as e:
        read_notebook(tmp_path / "01-rooflines.ipynb")
    assert str(e.value) == (f"{tmp_path}/01-rooflines.ipynb is not a regular file (a device, FIFO or socket): "
                            "give a notebook file (.ipynb)")


def test_a_fifo_is_refused_without_opening_it(tmp_path):
    os.mkfifo(tmp_path / "01-rooflines.ipynb")  # opening it would wait for a writer for ever
    with pytest.raises(Error, match="is not a regular file"):
        read_notebook(tmp_path / "01-rooflines.ipynb")


def test_a_name_too_long_for_the_system_is_one_error(tmp_path):
    path = tmp_path / ("a" * 400 + ".ipynb")
    with pytest.raises(Error) as e:
        read_notebook(path)
    assert str(e.value) == f"cannot read {path}: File name too long"


def test_a_file_that_grows_past_the_limit_while_read_is_cut_at_64_mib(tmp_path, monkeypatch):
    path = write(notebook("x = 1"), tmp_path / "01-rooflines.ipynb")
    real = path.stat()
    said = os.stat_result((real.st_mode, 0, 0, 1, 0, 0, 10, 0, 0, 0))  # a regular file of 10 bytes, it says
    monkeypatch.setattr(type(path), "stat", lambda self, **kw: said)
    monkeypatch.setattr(grading, "_MAX_BYTES", 10)  # the size said it fits; the read finds more
    with pytest.raises(Error) as e:
        read_notebook(path)
    assert str(e.value) == f"{path} is over 0 MiB, too large to be a problem notebook"


def test_json_without_an_nbformat_version_is_not_a_notebook(tmp_path):
    (tmp_path / "01-rooflines.ipynb").write_text('{"cells": [], "metadata": {}}')
    with pytest.raises(Error) as e:
        read_notebook(tmp_path / "01-rooflines.ipynb")
    assert str(e.value) == f"{tmp_path}/01-rooflines.ipynb is JSON but not a Jupyter notebook (no nbformat version)"


def test_a_notebook_with_no_check_of_its_page_is_refused_before_it_runs(tmp_path):
    with pytest.raises(Error) as e:
        grade(write(notebook("x = 1", 'check("2.1", 1)'), tmp_path / "01-rooflines.ipynb"))
    assert str(e.value) == ("01-rooflines.ipynb has no check() of a problem of page 01-rooflines: it is not a copy of "
                            f"the problem notebook exercises/01-rooflines.ipynb (its {len(problems(page=P1))} "
                            'problems each have a check("id", answer) cell)')
    assert FakeKernel.made == []


def test_a_fractional_timeout_is_rounded_up_to_whole_seconds_for_the_kernel(tmp_path):
    grade(graded_notebook(tmp_path), timeout_s=2.5)
    assert FakeKernel.made[0].options["timeout"] == 3
