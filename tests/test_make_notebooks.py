"""tools/make_notebooks.py: MyST in, a Colab notebook that reads like the book's page out."""
import builtins
import importlib.metadata
import sys
import textwrap
import types

import pytest

import scalebook

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

    The answer is {glue:text}`c9_x:.1f`, costs {glue:text}`c9_cost`, see {cite}`williams2009roofline`
    and {doc}`chapter one <../chapters/01-rooflines>`.

    ```{code-cell} ipython3
    :tags: [remove-cell]
    x = 1
    x
    ```

    ```{admonition} Key takeaways
    :class: tip
    - remember {math}`a+b`
    ```

    ```{exercise-start} Weights
    :label: ex-w
    :nonumber:
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

GLUED = {"c9_x": "2.345", "c9_cost": "$1.5M", "unused": "7"}


def _convert(tmp_path, glued=GLUED):
    (tmp_path / "exercises").mkdir(exist_ok=True)
    md = tmp_path / "exercises" / "99-sample.md"
    md.write_text(SOURCE)
    old = make_notebooks.ROOT
    make_notebooks.ROOT = tmp_path
    for name in ("_config.yml", "pyproject.toml"):
        (tmp_path / name).write_text((ROOT / name).read_text())
    (tmp_path / "book").mkdir(exist_ok=True)
    (tmp_path / "book" / "references.bib").write_text((ROOT / "book" / "references.bib").read_text())
    make_notebooks.bibliography.cache_clear()
    try:
        return make_notebooks.convert(md, glued)
    finally:
        make_notebooks.ROOT = old
        make_notebooks.bibliography.cache_clear()


def _markdown(nb):
    return "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")


def test_glued_values_replace_the_roles_formatted_as_the_book_does(tmp_path):
    text = _markdown(_convert(tmp_path))
    assert "The answer is 2.3, costs $1.5M" in text
    assert "c9_x" not in text and "{glue" not in text


def test_the_notebook_records_the_glued_values_its_prose_uses(tmp_path):
    meta = _convert(tmp_path).metadata["scalebook"]
    assert meta == {"page": "99-sample", "kind": "problems", "glued": {"c9_cost": "$1.5M", "c9_x": "2.345"}}


def test_a_glue_name_the_page_never_glued_stops_the_generator(tmp_path):
    with pytest.raises(SystemExit, match="c9_cost"):
        _convert(tmp_path, {"c9_x": "1"})


def test_citations_read_author_year_and_link_to_the_references_page(tmp_path):
    text = _markdown(_convert(tmp_path))
    assert "([Williams et al., 2009](https://scalebook.github.io/scalebook/book/references.html))" in text
    assert "williams2009roofline" not in text


def test_doc_roles_link_to_the_page_on_the_site(tmp_path):
    assert "[chapter one](https://scalebook.github.io/scalebook/chapters/01-rooflines.html)" in _markdown(_convert(tmp_path))


def test_admonitions_become_block_quotes(tmp_path):
    text = _markdown(_convert(tmp_path))
    assert "> **Key takeaways**" in text and "> - remember $a+b$" in text
    assert ":class:" not in text and "(sec-a)=" not in text


def test_problem_statements_are_markdown_not_code_fences(tmp_path):
    """Regression: the `:label:` option line used to reset the skip-the-closing-fence flag."""
    text = _markdown(_convert(tmp_path))
    assert "**Problem 1: Weights**\n\nHow long?" in text
    assert "```" not in text and ":label:" not in text and ":nonumber:" not in text


def test_solutions_are_dropped_and_the_problem_kept(tmp_path):
    nb = _convert(tmp_path)
    text = "\n".join(c.source for c in nb.cells)
    assert "answer = None" in text and "After." in text
    assert "Secret" not in text and "answer = 42" not in text


def test_hidden_cells_capture_their_output_and_the_install_cell_is_written_here(tmp_path):
    nb = _convert(tmp_path)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert code[0].metadata["tags"] == ["remove-cell"]
    assert code[0].source == "%%capture\nx = 1\nx"
    assert [c["id"] for c in nb.cells] == [f"c{i:03d}" for i in range(len(nb.cells))]
    assert all(not c.get("outputs") for c in code)


def test_book_only_cells_are_folded_in_colab_and_jupyter_and_the_others_are_not(tmp_path):
    code = [c for c in _convert(tmp_path).cells if c.cell_type == "code"]
    hidden = [c for c in code if "remove-cell" in c.metadata.get("tags", [])]
    shown = [c for c in code if "remove-cell" not in c.metadata.get("tags", [])]
    assert hidden and all(c.metadata["cellView"] == "form" and c.metadata["jupyter"] == {"source_hidden": True}
                          for c in hidden)
    assert shown and not any("cellView" in c.metadata or "jupyter" in c.metadata for c in shown)


@pytest.mark.parametrize("spec, text, shown", [
    ("", "2.345", "2.345"), (".1f", "2.345", "2.3"), (".0f", "1234.5", "1234"), (",.0f", "1234567.0", "1,234,567"),
    (".1%", "0.256", "25.6%"), ("", "8.12 ms", "8.12 ms"), ("d", "12", "12"), ("", "'quoted'", "quoted"),
])
def test_format_glued_matches_what_myst_nb_shows(spec, text, shown):
    assert make_notebooks.format_glued(text, spec) == shown


BIB = """
@article{w, author = {Williams, Samuel and Waterman, Andrew and Patterson, David}, title = {Roofline}, year = {2009}}
@misc{lb, author = {Ada Lovelace and Babbage, Charles}, title = {Notes}, year = {1843}}
@misc{gz, author = {{Google Cloud}}, title = {Zeta}, year = {2025}}
@misc{ga, author = {{Google Cloud}}, title = {Alpha}, year = {2025}}
"""


def test_author_year_labels_name_one_two_or_many_authors_and_letter_shared_ones(tmp_path):
    bib = tmp_path / "refs.bib"
    bib.write_text(BIB)
    labels = make_notebooks.author_year_labels(bib)
    assert labels["w"] == "Williams et al., 2009"
    assert labels["lb"] == "Lovelace and Babbage, 1843"
    # two works with one author and year: lettered in title order, as the references page sorts them
    assert (labels["ga"], labels["gz"]) == ("Google Cloud, 2025a", "Google Cloud, 2025b")


def test_notebook_citations_carry_the_letter_the_references_page_shows():
    """Regression: the site's list said 'NVIDIA, 2024b' while the text said 'NVIDIA, 2024'."""
    labels = make_notebooks.bibliography()
    nvidia_2024 = sorted(v for v in labels.values() if v.startswith("NVIDIA, 2024"))
    assert len(nvidia_2024) > 1 and "NVIDIA, 2024" not in nvidia_2024
    assert len(set(labels.values())) == len(labels)


# ------------------------------------------------------------------ the install cell's logic

MIN = make_notebooks.min_jax()


def _run_install_cell(monkeypatch, *, colab=True, jax=None, scalebook_imports=True):
    """Execute the install cell with pip and importlib.metadata stubbed; return (pip calls, printed)."""
    calls, printed = [], []
    if colab:
        monkeypatch.setitem(sys.modules, "google.colab", types.ModuleType("google.colab"))
    else:
        monkeypatch.delitem(sys.modules, "google.colab", raising=False)
    if not scalebook_imports:
        monkeypatch.setitem(sys.modules, "scalebook", None)  # import scalebook -> ImportError

    def version(name):
        if name == "jax" and jax is not None:
            return jax
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(importlib.metadata, "version", version)
    monkeypatch.delenv("SCALEBOOK_SOURCE", raising=False)
    shell = types.SimpleNamespace(run_line_magic=lambda magic, line: calls.append((magic, line)))
    env = {"get_ipython": lambda: shell, "print": lambda *a: printed.append(" ".join(map(str, a))),
           "__builtins__": builtins}
    exec(make_notebooks.install_cell_source(), env)
    return calls, printed


def _dotted(v):
    return ".".join(map(str, v))


def test_install_cell_does_nothing_where_scalebook_imports_and_jax_is_new_enough(monkeypatch):
    assert _run_install_cell(monkeypatch, jax=_dotted(MIN)) == ([], [])
    assert _run_install_cell(monkeypatch, jax="99.0.1") == ([], [])


def test_install_cell_does_nothing_outside_colab_even_with_an_old_jax(monkeypatch):
    assert _run_install_cell(monkeypatch, colab=False, jax="0.4.1", scalebook_imports=False) == ([], [])


def test_install_cell_upgrades_an_old_jax_and_asks_for_one_restart(monkeypatch):
    older = MIN[:-1] + (MIN[-1] - 1,) if MIN[-1] else (MIN[0], MIN[1] - 1, 99)
    calls, printed = _run_install_cell(monkeypatch, jax=_dotted(older) + ".dev20250101")
    wheel = f"scalebook-{scalebook.__version__}-py3-none-any.whl"
    assert calls == [("pip", f"install -q 'scalebook[jax,plot] @ https://scalebook.github.io/scalebook/_static/dist/{wheel}'")]
    assert len(printed) == 1 and "restart the runtime" in printed[0] and _dotted(MIN) in printed[0]


def test_install_cell_installs_a_missing_scalebook_without_asking_for_a_restart(monkeypatch):
    calls, printed = _run_install_cell(monkeypatch, jax="99.0", scalebook_imports=False)
    assert len(calls) == 1 and printed == []
    calls, printed = _run_install_cell(monkeypatch, jax=None, scalebook_imports=False)
    assert len(calls) == 1 and printed == []


def test_install_cell_takes_the_site_url_from_config(tmp_path, monkeypatch):
    (tmp_path / "_config.yml").write_text("repository:\n  url: https://github.com/someone/fork\n")
    (tmp_path / "pyproject.toml").write_text((ROOT / "pyproject.toml").read_text())
    (tmp_path / "scalebook").mkdir()
    (tmp_path / "scalebook" / "__init__.py").write_text('__version__ = "2.0.1"\n')
    monkeypatch.setattr(make_notebooks, "ROOT", tmp_path)
    assert ("https://someone.github.io/fork/_static/dist/scalebook-2.0.1-py3-none-any.whl"
            in make_notebooks.install_cell_source())
    assert make_notebooks.site_url() == "https://someone.github.io/fork"
