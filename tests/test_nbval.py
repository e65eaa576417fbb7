"""nbval: the problem pages with their worked solutions, and the chapter notebooks, run under
pytest's nbval plugin in `make test` (issue 21). Here: what the generator writes, and that nbval
fails a notebook whose worked solution misses its key."""
import re
import subprocess
import sys

import nbformat
import pytest

from notebook_tools import EXERCISES, ROOT

sys.path.insert(0, str(ROOT / "tools"))
import make_notebooks  # noqa: E402

_CHECK = re.compile(r"""\bcheck\(\s*["']([^"']+)["']""")


@pytest.mark.parametrize("md", EXERCISES, ids=lambda p: p.name)
def test_each_problem_s_blank_answer_is_replaced_by_its_worked_solution_which_checks_it(md):
    from scalebook.exercises import problems

    nb = make_notebooks.solutions_notebook(md)
    code = [c.source for c in nb.cells if c.cell_type == "code"]
    assert code[0] == make_notebooks.STRICT_CELL  # strict mode before anything runs
    assert not any(src.lstrip().startswith("answer = None") for src in code)
    # every problem of the page is checked in a cell that sets `answer` first: its worked solution
    solved = {pid for src in code if re.search(r"(?m)^\s*answer\s*=", src) for pid in _CHECK.findall(src)}
    assert solved >= {p.id for p in problems(page=md.stem)}
    assert nb.metadata["scalebook"] == {"page": md.stem, "kind": "solutions"}
    nbformat.validate(nb)


def test_the_solution_notebooks_are_written_into_the_folder_asked_for(tmp_path):
    written = make_notebooks.write_solutions(tmp_path / "nbval", EXERCISES[:2])
    assert [p.name for p in written] == [EXERCISES[0].stem + ".ipynb", EXERCISES[1].stem + ".ipynb"]
    assert nbformat.read(written[0], as_version=4).cells[0].source == make_notebooks.STRICT_CELL


def test_a_page_without_a_blank_answer_before_its_solution_stops_the_generator(tmp_path):
    md = tmp_path / "01-x.md"
    md.write_text("# x\n\n```{solution-start} ex\n```\n```{code-cell} ipython3\nanswer = 1\n```\n"
                  "```{solution-end}\n```\n", encoding="utf-8")
    with pytest.raises(SystemExit, match="without an `answer = None` cell"):
        make_notebooks.solutions_notebook(md)


def test_make_test_runs_the_solutions_and_the_chapters_under_nbval():
    target = (ROOT / "Makefile").read_text(encoding="utf-8").split("\ntest:", 1)[1].split("\n\n", 1)[0]
    assert "tools/make_notebooks.py --solutions $(NBVAL)" in target
    assert re.search(r"pytest .*--nbval-lax \$\(NBVAL\) chapters/\*\.ipynb", target)
    assert "--dist loadscope" in target  # nbval's cells of one notebook share a kernel


def _nbval(tmp_path, answer_source):
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(make_notebooks.STRICT_CELL),
                                         nbformat.v4.new_code_cell("from scalebook.exercises import check"),
                                         nbformat.v4.new_code_cell(f'answer = {answer_source}\ncheck("1.1", answer)')])
    nb.metadata["kernelspec"] = {"display_name": "Python 3", "language": "python", "name": "python3"}
    path = tmp_path / "solution.ipynb"
    nbformat.write(nb, path)
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--nbval-lax", str(path)],
                          capture_output=True, text=True, cwd=tmp_path, timeout=300)


@pytest.mark.slow
def test_nbval_fails_a_worked_solution_that_misses_its_key_and_passes_one_that_reaches_it(tmp_path):
    from scalebook.exercises import get

    wrong = _nbval(tmp_path, f"{2 * get('1.1').answer()!r}")
    assert wrong.returncode == 1 and "AnswerError" in wrong.stdout, wrong.stdout[-2000:]
    right = _nbval(tmp_path, f"{get('1.1').answer()!r}")
    assert right.returncode == 0, right.stdout[-2000:]


# --- the Colab notebooks: a chapter's quiz answers stay folded under their question (issue 19) ---

QUIZ = """\
---
jupytext:
  formats: md:myst
  text_representation:
    extension: .md
    format_name: myst
kernelspec:
  display_name: Python 3
  language: python
  name: python3
---

# Sample

```{exercise} Quiz: axpy
:label: c9-quiz
:nonumber:

How intense is it?
```

```{solution} c9-quiz
:class: dropdown

One sixth of a FLOP per byte.
```

```{admonition} Quiz 2
Which axis?
```

````{admonition} Answer
:class: dropdown
The X axis.
````

```{admonition} Key takeaways
- remember
```
"""


def _convert_page(tmp_path, folder):
    (tmp_path / folder).mkdir(exist_ok=True)
    md = tmp_path / folder / "99-sample.md"
    md.write_text(QUIZ)
    old = make_notebooks.ROOT
    make_notebooks.ROOT = tmp_path
    for name in ("_config.yml", "pyproject.toml"):
        (tmp_path / name).write_text((ROOT / name).read_text())
    (tmp_path / "book").mkdir(exist_ok=True)
    (tmp_path / "book" / "references.bib").write_text((ROOT / "book" / "references.bib").read_text())
    make_notebooks.bibliography.cache_clear()
    try:
        nb = make_notebooks.convert(md, {})
    finally:
        make_notebooks.ROOT = old
        make_notebooks.bibliography.cache_clear()
    return "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")


def test_a_chapter_s_quiz_answers_are_folded_under_their_questions(tmp_path):
    text = _convert_page(tmp_path, "chapters")
    assert "How intense is it?" in text
    assert "<details><summary><b>Answer</b></summary>\n\n\nOne sixth of a FLOP per byte.\n\n</details>" in text
    assert "> **Quiz 2**\n>\n> Which axis?" in text
    assert "<details><summary><b>Answer</b></summary>\n\nThe X axis.\n\n</details>" in text
    assert "> **Key takeaways**\n>\n> - remember" in text  # an admonition that is not a dropdown stays a quote
    assert ":class:" not in text and "```" not in text


def test_a_problem_page_s_solutions_stay_dropped(tmp_path):
    text = _convert_page(tmp_path, "exercises")
    assert "One sixth" not in text and "<details>" not in text
