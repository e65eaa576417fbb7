"""tools/make_notebooks.py: MyST in, plain Colab notebook out."""
import sys
import textwrap

from notebook_tools import ROOT

sys.path.insert(0, str(ROOT / "tools"))
import make_notebooks  # noqa: E402

SOURCE = textwrap.dedent("""\
    ---
    jupytext:
      text_representation:
        extension: .md
        format_name: myst
    kernelspec:
      display_name: Python 3
      language: python
      name: python3
    ---
    (sec-a)=
    # Title

    The answer is {glue:text}`c9_x:.1f`, see {cite}`austin2025scaling` and {doc}`chapter one <../chapters/01-rooflines>`.

    ```{code-cell} ipython3
    :tags: [remove-cell]
    x = 1
    ```

    ```{admonition} Key takeaways
    :class: tip
    - remember {math}`a+b`
    ```

    ```{exercise-start} Weights
    :label: ex-w
    ```
    How long?
    ```{code-cell} ipython3
    answer = None
    ```
    ```{exercise-end}
    ```

    ```{solution-start} ex-w
    :class: dropdown
    ```
    Secret reasoning.
    ```{code-cell} ipython3
    answer = 42
    ```
    ```{solution-end}
    ```

    After.
    """)


def _convert(tmp_path):
    md = tmp_path / "sample.md"
    md.write_text(SOURCE)
    make_notebooks.ROOT = tmp_path
    try:
        return make_notebooks.convert(md)
    finally:
        make_notebooks.ROOT = ROOT


def test_roles_become_plain_markdown(tmp_path):
    text = "\n".join(c.source for c in _convert(tmp_path).cells if c.cell_type == "markdown")
    assert "`c9_x`" in text and "[austin2025scaling]" in text and "chapter one" in text
    assert "{" not in text.replace("{{", "")
    assert "(sec-a)=" not in text


def test_admonitions_become_block_quotes(tmp_path):
    text = "\n".join(c.source for c in _convert(tmp_path).cells)
    assert "> **Key takeaways**" in text and "> - remember $a+b$" in text


def test_solutions_are_dropped_and_the_problem_kept(tmp_path):
    nb = _convert(tmp_path)
    text = "\n".join(c.source for c in nb.cells)
    assert "**Problem 1: Weights**" in text and "How long?" in text and "answer = None" in text
    assert "Secret" not in text and "answer = 42" not in text
    assert "After." in text


def test_install_cell_keeps_its_tag_and_cells_have_stable_ids(tmp_path):
    nb = _convert(tmp_path)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert code[0].metadata["tags"] == ["remove-cell"]
    assert [c["id"] for c in nb.cells] == [f"c{i:03d}" for i in range(len(nb.cells))]
    assert all(not c.get("outputs") for c in code)
