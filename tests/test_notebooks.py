"""The book's notebooks: Colab copies up to date, install cell first, reference solutions right."""
import os
import subprocess
import sys

import nbclient
import pytest

from notebook_tools import CHAPTERS, EXERCISES, ROOT, with_solutions_in_place

sys.path.insert(0, str(ROOT / "tools"))
import make_notebooks  # noqa: E402


@pytest.mark.parametrize("md", CHAPTERS + EXERCISES, ids=lambda p: p.name)
def test_generated_notebook_is_up_to_date(md):
    nb = md.with_suffix(".ipynb")
    assert nb.exists(), f"run `make notebooks` to generate {nb.name}"
    assert nb.read_text(encoding="utf-8") == make_notebooks.render(md), f"{nb.name} is stale: run `make notebooks`"


@pytest.mark.parametrize("md", CHAPTERS + EXERCISES, ids=lambda p: p.name)
def test_first_code_cell_installs_scalebook_in_colab_only(md):
    import jupytext

    code = [c for c in jupytext.read(md, fmt="md:myst").cells if c.cell_type == "code"]
    first = code[0]
    assert "google.colab" in first.source and "remove-cell" in first.metadata.get("tags", [])
    assert "jax" not in first.source.replace("scalebook", "")


@pytest.mark.parametrize("md", CHAPTERS + EXERCISES, ids=lambda p: p.name)
def test_colab_notebook_has_no_myst_directives_or_solutions(md):
    text = md.with_suffix(".ipynb").read_text(encoding="utf-8")
    for token in ("{exercise-start}", "{solution-start}", "{glue:text}", "{code-cell}", "{admonition}"):
        assert token not in text


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


def test_glue_turns_numpy_scalars_into_python_numbers():
    import numpy as np

    from scalebook.notebook import glue

    value = glue("test_numpy_scalar", np.float64(2.5))
    assert type(value) is float and repr(value) == "2.5"
