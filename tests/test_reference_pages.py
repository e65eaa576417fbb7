"""The reference pages cover the whole package: every public module in the API reference
(book/api/*.md, one page per module), every command in the CLI reference (book/cli.md), every name on the notation page
real, and the package's docstrings readable by autodoc without warnings.

`scalebook.cli` is documented as a module (main, build_parser, the helpers commands share); its
internals, the `scalebook.commands.*` modules that each register one subcommand, are documented
by the CLI reference instead, from their parsers, rather than by autodoc.
"""
import importlib
import inspect
import pkgutil
import re
import shlex
import sys

import pytest

import scalebook
from notebook_tools import ROOT
from scalebook.cli import COMMAND_MODULES, build_parser

BOOK = ROOT / "book"
sys.path.insert(0, str(BOOK / "_ext"))
import scalebook_docstrings  # noqa: E402


def public_modules() -> list[str]:
    """The eager modules (`import scalebook` loads them) and the lazy ones (`scalebook._LAZY`)."""
    eager = [name for name in scalebook.__all__ if inspect.ismodule(getattr(scalebook, name, None))]
    return sorted(set(eager) | set(scalebook._LAZY) | {"errors"})


def plot_modules() -> list[str]:
    import scalebook.plots

    return [f"plots.{m.name}" for m in pkgutil.iter_modules(scalebook.plots.__path__) if not m.name.startswith("_")]


def automodules() -> list[str]:
    """Modules documented by an automodule directive on the API pages (book/api/*.md, one page each)."""
    text = "\n".join(p.read_text(encoding="utf-8") for p in sorted((BOOK / "api").glob("*.md")))
    return re.findall(r"^\.\. automodule:: scalebook\.(\S+)", text, re.M)


def subcommands(parser=None) -> dict:
    import argparse

    parser = parser or build_parser()
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def test_public_modules_are_found():
    mods = public_modules()
    assert {"hardware", "roofline", "units", "training", "cli", "jax_collectives"} <= set(mods)


@pytest.mark.parametrize("name", public_modules() + plot_modules())
def test_every_public_module_is_in_the_api_reference(name):
    assert name in automodules(), f"add scalebook.{name} to book/api.md"


@pytest.mark.parametrize("name", automodules())
def test_every_documented_module_imports(name):
    importlib.import_module(f"scalebook.{name}")


def test_no_module_is_documented_twice():
    mods = automodules()
    assert len(mods) == len(set(mods))


def test_every_command_has_a_section_in_the_cli_reference():
    text = (BOOK / "cli.md").read_text(encoding="utf-8")
    commands = subcommands()
    assert len(commands) == len(COMMAND_MODULES)
    headings = [line for line in text.splitlines() if line.startswith("## ")]
    for name in commands:
        assert any(f"`scalebook {name}`" in h for h in headings), f"book/cli.md has no section for {name}"
        assert f'show("{name}")' in text, f"book/cli.md does not print the help of {name}"


def _example_commands(page):
    text = (BOOK / page).read_text(encoding="utf-8")
    for block in re.findall(r"^```bash\n(.*?)^```", text, re.M | re.S):
        for line in block.splitlines():
            line = line.split("  #")[0].strip()
            if line.startswith("scalebook "):
                yield line


@pytest.mark.parametrize("line", list(_example_commands("cli.md")) + list(_example_commands("how-to-use.md")))
def test_example_commands_on_the_pages_parse(line):
    args = build_parser().parse_args(shlex.split(line)[1:])
    assert args.command


def test_every_command_has_an_example():
    names = {shlex.split(line)[1] for line in _example_commands("cli.md")}
    assert set(subcommands()) <= names


_CLASSES = {
    "Roofline": ("roofline", "Roofline"), "Chip": ("hardware", "Chip"), "Axis": ("topology", "Axis"),
    "CollectiveCost": ("collectives", "CollectiveCost"), "Transformer": ("models", "Transformer"),
    "Strategy": ("strategy", "Strategy"), "Deployment": ("inference", "Deployment"),
    "TrainingEstimate": ("training", "TrainingEstimate"), "ServingEstimate": ("inference", "ServingEstimate"),
}


def _notation_names():
    text = (BOOK / "notation.md").read_text(encoding="utf-8")
    for row in text.splitlines():
        if row.startswith("|") and not row.startswith("| ---"):
            cells = row.strip().strip("|").split("|")
            for name in re.findall(r"`([^`]+)`", cells[-1]):
                name = re.split(r"[(=]", name)[0]
                if name and "." in name or name in _CLASSES:
                    yield name


@pytest.mark.parametrize("name", sorted(set(_notation_names())))
def test_names_on_the_notation_page_exist(name):
    head, *rest = name.split(".")
    if head in _CLASSES:
        module, cls = _CLASSES[head]
        obj = getattr(importlib.import_module(f"scalebook.{module}"), cls)
    else:
        obj = importlib.import_module(f"scalebook.{head}")
    for attr in rest:
        fields = getattr(obj, "__dataclass_fields__", {})
        assert hasattr(obj, attr) or attr in fields, f"{name}: no {attr}"
        obj = getattr(obj, attr, None)


def _docstrings():
    """(where, docstring) for every public module and everything it defines."""
    for name in public_modules() + plot_modules():
        mod = importlib.import_module(f"scalebook.{name}")
        yield name, mod.__doc__ or ""
        for attr, obj in vars(mod).items():
            if attr.startswith("_") or getattr(obj, "__module__", None) != mod.__name__:
                continue
            yield f"{name}.{attr}", inspect.getdoc(obj) or ""
            if inspect.isclass(obj):
                for member, value in vars(obj).items():
                    if not member.startswith("_") and inspect.getdoc(value) and value.__doc__ is not None:
                        yield f"{name}.{attr}.{member}", inspect.getdoc(value)


def test_docstrings_read_as_rst_without_warnings():
    """What book/_ext/scalebook_docstrings.py makes of each docstring parses cleanly with docutils.

    The book build (-W) is the real check; this finds the docstring to blame in a second.
    """
    import docutils.core
    import docutils.nodes
    import docutils.utils

    problems = []
    for where, doc in _docstrings():
        rst = "\n".join(scalebook_docstrings.markdownish_to_rst(doc.splitlines()))
        tree = docutils.core.publish_doctree(rst, settings_overrides={"report_level": 5, "halt_level": 5})
        for msg in tree.findall(docutils.nodes.system_message):
            if msg["level"] >= 2:
                problems.append(f"{where}: {msg.astext().splitlines()[0]}")
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("markdownish, rst", [
    (["Uses `bytes_` and |Y| of `xla.HloCollective`s."], ["Uses ``bytes_`` and \\|Y\\| of ``xla.HloCollective``\\ s."]),
    (["Formulas:", "", "    T = V / W", "      + latency"], ["Formulas:", "", "::", "", "    T = V / W", "      + latency"]),
    (["Example::", "", "    f(x)"], ["Example::", "", "    f(x)"]),
    (["@problem(1)", "def f():", "    return 1"], ["::", "", "    @problem(1)", "    def f():", "        return 1"]),
    (["- a list item", "  continued"], ["- a list item", "  continued"]),
])
def test_markdownish_docstrings_become_rst(markdownish, rst):
    assert scalebook_docstrings.markdownish_to_rst(markdownish) == rst
