"""The API reference: one page per public module, grouped by part, and every public name documented.

The pages are written by tools/site/api_pages.py (the build runs it); these tests pin what they
must say and fail while the committed pages lag behind the package.
"""
import importlib
import importlib.util
import inspect
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("api_pages", ROOT / "tools" / "site" / "api_pages.py")
api = importlib.util.module_from_spec(_spec)
sys.modules["api_pages"] = api
_spec.loader.exec_module(api)


def _public_names(modname: str) -> list[str]:
    """What autodoc's `:members:` documents: `__all__`, else the public functions and classes the
    module defines (not those it imports)."""
    mod = importlib.import_module(modname)
    names = getattr(mod, "__all__", None)
    if names is None:
        names = [n for n, obj in vars(mod).items() if not n.startswith("_")
                 and (inspect.isfunction(obj) or inspect.isclass(obj)) and getattr(obj, "__module__", None) == modname]
    return list(names)


def _undocumented() -> list[str]:
    out = []
    for modname in api.modules():
        mod = importlib.import_module(modname)
        if not (mod.__doc__ or "").strip():
            out.append(modname)
        for name in _public_names(modname):
            obj = getattr(mod, name, None)
            if (inspect.isfunction(obj) or inspect.isclass(obj)) and not (inspect.getdoc(obj) or "").strip():
                out.append(f"{modname}.{name}")
    return out


def test_every_public_module_function_and_class_has_a_docstring():
    """autodoc leaves out a member without a docstring: the page would silently drop it."""
    assert _undocumented() == []


def test_every_public_module_has_a_page_and_nothing_else_does():
    pages = api.render()
    assert {p.stem for p in pages if p.parent == api.API_DIR} == set(api.modules())
    assert "scalebook.units" in api.modules() and "scalebook.plots._style" not in api.modules()


def test_the_committed_pages_are_what_the_package_gives():
    assert [str(p.relative_to(ROOT)) for p in api.stale()] == []


def test_a_module_page_names_its_chapters_and_documents_the_module():
    text = api.page("scalebook.roofline", {"chapters/01-rooflines": "from scalebook import roofline, units",
                                           "chapters/03-sharding": "x = 1"})
    assert text.startswith("# `scalebook.roofline`\n")
    assert "Used in: {doc}`../../chapters/01-rooflines`." in text
    assert ".. automodule:: scalebook.roofline\n   :members:" in text


def test_a_module_no_chapter_calls_says_so():
    text = api.page("scalebook.errors", {"chapters/01-rooflines": "print(1)"})
    assert "No chapter calls it directly" in text


def test_a_figure_module_is_found_by_its_functions():
    chapters = {"chapters/05-training": "plots.critical_batch_vs_chips('h100')",
                "chapters/06-training-llama": "from scalebook import training"}
    assert api.chapters_using("scalebook.plots.training", chapters) == ["chapters/05-training"]
    assert api.chapters_using("scalebook.training", chapters) == ["chapters/06-training-llama"]


def test_the_index_groups_modules_by_part_in_reading_order():
    text = api.index(["scalebook.roofline", "scalebook.units", "scalebook.training", "scalebook.newthing"], {})
    one, training, more = text.index("## One chip"), text.index("## Training"), text.index("## More modules")
    assert one < text.index("scalebook.units`]") < text.index("scalebook.roofline`]") < training < more
    assert text.index("scalebook.newthing`]") > more


@pytest.mark.parametrize("name, part", [("scalebook.rules_of_thumb.training", "The original book's rules of thumb"),
                                        ("scalebook.efficiency", "Training"), ("scalebook", "One chip")])
def test_new_modules_find_their_part(name, part):
    assert api.PARTS[api.part_of(name)][0] == part


def test_the_summary_is_the_first_sentence_of_the_docstring():
    assert api.summary("scalebook.roofline").startswith("Rooflines: how long an operation takes")
    assert api.summary("scalebook.roofline").endswith(".") and "\n" not in api.summary("scalebook.roofline")


def test_a_package_leaves_re_exported_names_to_their_module_page_and_says_where():
    text = api.page("scalebook.exercises", {})
    assert "   :exclude-members: Problem, problem\n" in text
    assert "[`scalebook.exercises.problem`](scalebook.exercises.problem.md)" in text
    assert "scalebook.exercises.problem" in api.modules()
