"""The book's notebooks: Colab copies up to date, install cell first, reference solutions right."""
import os
import re
import subprocess
import sys

import nbclient
import nbformat
import pytest

from notebook_tools import CHAPTERS, EXERCISES, ROOT, with_solutions_in_place

sys.path.insert(0, str(ROOT / "tools"))
import make_notebooks  # noqa: E402


@pytest.mark.parametrize("md", CHAPTERS + EXERCISES, ids=lambda p: p.name)
def test_generated_notebook_is_up_to_date(md):
    nb = md.with_suffix(".ipynb")
    assert nb.exists(), f"run `make notebooks` to generate {nb.name}"
    assert nb.read_text(encoding="utf-8") == make_notebooks.render(md), f"{nb.name} is stale: run `make notebooks`"


@pytest.mark.parametrize("md", CHAPTERS + EXERCISES + make_notebooks.book_pages_with_install_cell(), ids=lambda p: p.name)
def test_first_code_cell_is_the_generated_install_cell(md):
    import jupytext

    code = [c for c in jupytext.read(md, fmt="md:myst").cells if c.cell_type == "code"]
    first = code[0]
    assert "remove-cell" in first.metadata.get("tags", [])
    assert first.source == make_notebooks.install_cell_source(), f"{md.name}: run `make notebooks` to update its install cell"


def _solution_lines(md):
    """The prose lines of the page's worked solutions (long enough to be distinctive)."""
    lines, inside = [], False
    for line in md.read_text(encoding="utf-8").splitlines():
        s = line.strip()
        if re.match(r"^[`:]{3,}\{solution-start\}", s):
            inside = True
        elif re.match(r"^[`:]{3,}\{solution-end\}", s):
            inside = False
        elif inside and len(s) > 40 and not s.startswith(("```", ":", "#", "{", "glue(", "check(")) and "{" not in s:
            lines.append(s)
    return lines


@pytest.mark.parametrize("md", CHAPTERS + EXERCISES, ids=lambda p: p.name)
def test_colab_notebook_reads_like_the_book(md):
    """No glue name, citation key, MyST directive or role in the prose; no problem statement in a
    code fence; no hidden cell that prints; no solution."""
    nb = nbformat.read(md.with_suffix(".ipynb"), as_version=4)
    prose = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    glue_names = set(re.findall(r"\{glue:text\}`([^`:]+)", md.read_text(encoding="utf-8")))
    cite_keys = {k.strip() for keys in re.findall(r"\{cite[:\w]*\}`([^`]+)`", md.read_text(encoding="utf-8"))
                 for k in keys.split(",")}
    assert not {n for n in glue_names if re.search(rf"\b{re.escape(n)}\b", prose)}, "glue names in the prose"
    assert not {k for k in cite_keys if k in prose}, "raw citation keys in the prose"
    assert not re.search(r"\{[a-z][\w:-]*\}`", prose), "a MyST role in the prose"
    assert "# Colab only" not in prose, "a link titled with a code comment instead of the page's heading"
    assert not re.search(r"(?m)^\s*(>\s*)*[`:]{3,}\{", prose), "a MyST directive in the prose"
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            fences = [line.strip() for line in cell.source.splitlines() if line.strip().startswith("```")]
            openers = fences[::2]  # fences alternate: open, close
            assert all(len(f) > 3 for f in openers), f"a fence without a language (a problem statement as code?): {cell.source[:120]!r}"
            assert not (cell.source.startswith("**Problem") and fences), f"a problem statement in a code fence: {cell.source[:120]!r}"
    for cell in nb.cells:
        if cell.cell_type == "code" and "remove-cell" in cell.metadata.get("tags", []) and "google.colab" not in cell.source:
            assert cell.source.startswith("%%capture\n"), f"a hidden cell that may print: {cell.source[:80]!r}"
        if cell.cell_type == "code":
            assert not re.search(r"(?m)^answer\s*=(?!\s*None\b)", cell.source), f"a solution's code: {cell.source[:80]!r}"
    text = "\n".join(c.source for c in nb.cells)
    leaked = [line for line in _solution_lines(md) if line in text]
    assert not leaked, f"solution prose in the student notebook: {leaked[:2]}"
    assert nb.metadata["scalebook"]["page"] == md.stem
    assert nb.metadata["scalebook"]["kind"] == ("problems" if md.parent.name == "exercises" else "chapter")


@pytest.mark.slow
@pytest.mark.parametrize("md", EXERCISES, ids=lambda p: p.name)
def test_reference_solutions_pass_in_strict_mode(md, monkeypatch):
    nb = with_solutions_in_place(md)
    monkeypatch.setenv("SCALEBOOK_STRICT", "1")
    nbclient.NotebookClient(nb, timeout=600, kernel_name="python3",
                            resources={"metadata": {"path": str(md.parent)}}).execute()


@pytest.mark.slow
@pytest.mark.parametrize("md", EXERCISES[:1], ids=lambda p: p.name)
def test_grade_scores_a_filled_notebook_fully_and_a_blank_one_zero(md, tmp_path):
    import re

    import nbformat

    from scalebook import Error
    from scalebook.exercises import get, problems
    from scalebook.grading import grade

    nb = nbformat.read(md.with_suffix(".ipynb"), as_version=4)
    for cell, nxt in zip(nb.cells, nb.cells[1:]):  # the keys typed in, as a student who solved everything would
        if cell.cell_type == "code" and cell.source.startswith("answer = None"):
            pid = re.search(r'check[(]"([^"]+)"', nxt.source).group(1)
            cell.source = f"answer = {get(pid).answer()!r}"
    filled = tmp_path / md.with_suffix(".ipynb").name
    nbformat.write(nb, filled)
    n = len(problems(page=md.stem))
    assert n >= 8
    g = grade(filled)
    assert (g.score, g.out_of, g.error) == (n, n, None)
    blank = grade(md.with_suffix(".ipynb"))
    assert blank.score == 0 and {r["status"] for r in blank.rows} == {"missing"}
    nbformat.write(with_solutions_in_place(md), filled)  # the worked solutions are refused, not scored
    with pytest.raises(Error, match="holds worked solutions"):
        grade(filled)


def test_grade_command_prints_a_table(tmp_path):
    md = EXERCISES[0]
    proc = subprocess.run([sys.executable, "-m", "scalebook.cli", "grade", str(md.with_suffix(".ipynb"))],
                          capture_output=True, text=True, env={**os.environ, "SCALEBOOK_STRICT": "0"})
    assert proc.returncode == 0, proc.stderr
    assert "status" in proc.stdout and "score: 0 /" in proc.stdout


def test_glue_is_silent_outside_the_book_build_and_logs_when_asked(tmp_path, monkeypatch, capsys):
    import builtins

    from scalebook.notebook import glue

    real_import = builtins.__import__

    def no_myst_nb(name, *args, **kwargs):
        if name.startswith("myst_nb"):
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    log = tmp_path / "glue.jsonl"
    monkeypatch.setenv("SCALEBOOK_GLUE_LOG", str(log))
    monkeypatch.setattr(builtins, "__import__", no_myst_nb)
    glue("t_time", 8.12e-3, unit="s")
    glue("t_ratio", 2.5)
    assert capsys.readouterr().out == ""
    assert log.read_text().splitlines() == ['{"name": "t_time", "text": "8.12 ms"}', '{"name": "t_ratio", "text": "2.5"}']


def test_glue_turns_numpy_scalars_into_python_numbers():
    import numpy as np

    from scalebook.notebook import glue

    value = glue("test_numpy_scalar", np.float64(2.5))
    assert type(value) is float and repr(value) == "2.5"
