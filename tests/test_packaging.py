"""Packaging: one version source, the public namespace, extras that name themselves, a licence."""
import re
import subprocess
import sys
import textwrap
import tomllib

import scalebook
from notebook_tools import ROOT

PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())


def test_the_version_has_one_source():
    assert "version" not in PYPROJECT["project"] and "version" in PYPROJECT["project"]["dynamic"]
    assert PYPROJECT["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "scalebook.__version__"}
    assert re.fullmatch(r"\d+\.\d+\.\d+", scalebook.__version__)


def test_dir_shows_public_names_only():
    names = dir(scalebook)
    assert [n for n in names if n.startswith("_") and n != "__version__"] == []
    assert {"roofline", "collectives", "xla", "plots", "notebook", "Error", "chip"} <= set(names)
    assert not {"importlib", "sys", "errors", "annotations"} & set(names)


def test_grade_extra_holds_what_grading_needs():
    names = {re.match(r"[\w-]+", s).group(0) for s in PYPROJECT["project"]["optional-dependencies"]["grade"]}
    assert names == {"nbclient", "nbformat", "ipykernel", "jupytext"}


def test_requirements_have_lower_bounds_only():
    project = PYPROJECT["project"]
    specs = project["dependencies"] + [s for extra in project["optional-dependencies"].values() for s in extra]
    assert not [s for s in specs if "<" in s and not s.startswith("jupyter-book")], "only jupyter-book has an upper bound (TOOLCHAIN.md, note 1)"


def test_licence_file_states_both_licences():
    text = (ROOT / "LICENSE").read_text()
    assert "Apache License" in text and "Version 2.0" in text and "CC BY 4.0" in text


def _without(modules: tuple[str, ...], code: str) -> subprocess.CompletedProcess:
    """Run `code` in a fresh interpreter in which `modules` cannot be found."""
    prelude = textwrap.dedent(f"""
        import importlib.machinery, sys
        class Hide(importlib.machinery.PathFinder):
            @classmethod
            def find_spec(cls, name, path=None, target=None):
                if name.partition(".")[0] in {modules!r}:
                    return None
                return importlib.machinery.PathFinder.find_spec(name, path, target)
        sys.meta_path[sys.meta_path.index(importlib.machinery.PathFinder)] = Hide
    """)
    return subprocess.run([sys.executable, "-c", prelude + textwrap.dedent(code)], capture_output=True, text=True,
                          cwd=ROOT, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})


def test_a_missing_jax_names_the_extra_that_installs_it():
    proc = _without(("jax", "jaxlib"), "import scalebook\nscalebook.xla.use_cpu_devices(8)")
    assert proc.returncode == 1
    assert proc.stderr.strip().splitlines()[-1] == (
        "ModuleNotFoundError: No module named 'jax': this part of scalebook needs it; "
        "install it with pip install 'scalebook[jax]'")


def test_a_missing_matplotlib_names_the_plot_extra():
    proc = _without(("matplotlib",), "import scalebook.plots._axes as a\na.axes()")
    assert "pip install 'scalebook[plot]'" in proc.stderr.strip().splitlines()[-1]


def test_grading_without_nbclient_names_the_grade_extra():
    proc = _without(("nbclient",), "from scalebook import grading\ngrading._needs()")
    assert proc.stderr.strip().splitlines()[-1].endswith("pip install 'scalebook[grade]'")


def test_imports_outside_scalebook_keep_their_usual_error():
    proc = _without(("jax",), "import scalebook\nimport importlib.util\nprint(importlib.util.find_spec('jax'))\nimport jax")
    assert proc.stdout.strip() == "None"
    assert proc.stderr.strip().splitlines()[-1] == "ModuleNotFoundError: No module named 'jax'"


def test_the_oldest_pins_are_the_declared_lower_bounds():
    """constraints-oldest.txt (what the install test runs under) pins exactly pyproject's minimums."""
    project = PYPROJECT["project"]
    bounds = dict(re.match(r"([\w-]+)>=([\w.]+)", s).groups()
                  for s in project["dependencies"] + project["optional-dependencies"]["jax"]
                  + project["optional-dependencies"]["plot"])
    pins = dict(line.split("==") for line in (ROOT / "constraints-oldest.txt").read_text().splitlines()
                if line and not line.startswith("#"))
    assert bounds == {"numpy": pins["numpy"], "jax": pins["jax"], "matplotlib": pins["matplotlib"]}
    assert pins["jaxlib"] == pins["jax"]


def test_make_install_uses_the_constraints_file():
    makefile = (ROOT / "Makefile").read_text()
    assert '-e ".[book,test]" -c constraints.txt' in makefile
    pins = [line for line in (ROOT / "constraints.txt").read_text().splitlines() if line and not line.startswith("#")]
    assert all(re.fullmatch(r"[\w.-]+==[\w.+!-]+", p) for p in pins), "exact pins only"
    assert any(p.startswith("jax==") for p in pins)
