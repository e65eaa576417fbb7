"""Colab-like install test: the generated notebooks run where a reader opens them.

A fresh virtual environment gets only what a Colab runtime ships (Jupyter's kernel, nbclient,
numpy, matplotlib, jax), never scalebook. Each generated notebook (every chapter and problem
page) then runs from a directory outside the repository, with a stand-in `google.colab` imported
at kernel start, so its install cell takes the Colab branch and installs scalebook from the
wheel built here (SCALEBOOK_SOURCE; PIP_NO_INDEX keeps pip off the network). It runs twice:
with the versions of constraints.txt, and with the oldest JAX (and numpy, matplotlib) that
pyproject.toml declares (issue 14: the declared minimum is the version this run uses).

Set SCALEBOOK_INSTALL_PAGES to a comma-separated list of page stems to run fewer pages.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
RUNNER = Path(__file__).with_name("colab_runner.py")
# What a Colab runtime already has, beside the package itself.
RUNTIME = ["ipykernel", "nbclient", "nbformat", "numpy", "matplotlib", "jax"]

pytestmark = pytest.mark.slow


def _notebooks() -> list[Path]:
    pages = [p for d in ("chapters", "exercises") for p in sorted((ROOT / d).glob("*.ipynb"))]
    only = os.environ.get("SCALEBOOK_INSTALL_PAGES")
    if only:
        pages = [p for p in pages if p.stem in only.split(",")]
    return pages


def _lower_bounds() -> dict[str, str]:
    """The oldest supported version of each runtime package, from pyproject.toml's `>=` bounds."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    specs = project["dependencies"] + project["optional-dependencies"]["jax"] + project["optional-dependencies"]["plot"]
    out = {}
    for s in specs:
        m = re.match(r"^([\w-]+)>=([\w.]+)", s)
        if m:
            out[m.group(1)] = m.group(2)
    return out


def oldest_runtime() -> list[str]:
    """The oldest tested runtime: constraints-oldest.txt pins each lower bound to the exact release run."""
    pins = {}
    for line in (ROOT / "constraints-oldest.txt").read_text().splitlines():
        line = line.split("#")[0].strip()
        if line:
            name, _, version = line.partition("==")
            pins[name.strip().lower()] = version.strip()
    return [f"{p}=={pins[p]}" if p in pins else p for p in RUNTIME] + (
        [f"jaxlib=={pins['jaxlib']}"] if "jaxlib" in pins else [])


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    dist = tmp_path_factory.mktemp("dist")
    proc = subprocess.run([sys.executable, "-m", "build", "--wheel", "--no-isolation", "--skip-dependency-check",
                           "--outdir", str(dist), str(ROOT)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return next(dist.glob("scalebook-*.whl"))


def _colab_run(tmp: Path, wheel: Path, packages: list[str], constraints: Path | None) -> dict[str, dict]:
    """A fresh venv with `packages`, then every notebook through tests/colab_runner.py."""
    venv = tmp / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    py = venv / "bin" / "python"
    extra = ["-c", str(constraints)] if constraints else []
    proc = subprocess.run([str(py), "-m", "pip", "install", "-q", "--disable-pip-version-check", *packages, *extra],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    stub = tmp / "colab-stub"
    (stub / "google" / "colab").mkdir(parents=True)  # `google` stays a namespace package
    (stub / "google" / "colab" / "__init__.py").write_text('"""Stand-in for the module Colab preloads."""\n')
    # jax imports google.colab.output when it sees google.colab loaded (its debugger's Colab UI).
    (stub / "google" / "colab" / "output.py").write_text('"""Stand-in for google.colab.output."""\n')
    startup = tmp / "ipython" / "profile_default" / "startup"
    startup.mkdir(parents=True)
    (startup / "00-colab.py").write_text("import google.colab  # Colab's runtime has it imported\n")
    reader = tmp / "reader"
    reader.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "PIP_", "VIRTUAL_ENV", "JUPYTER", "IPYTHON"))}
    env.update(PYTHONPATH=str(stub), IPYTHONDIR=str(tmp / "ipython"), SCALEBOOK_SOURCE=wheel.as_uri(),
               PIP_NO_INDEX="1", PIP_DISABLE_PIP_VERSION_CHECK="1", MPLBACKEND="Agg",
               PATH=f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}")
    before = subprocess.run([str(py), "-c", "import scalebook"], capture_output=True, env=env, cwd=reader)
    assert before.returncode != 0, "the runtime must not have scalebook before the install cell runs"
    proc = subprocess.run([str(py), str(RUNNER), str(reader), *map(str, _notebooks())],
                          capture_output=True, text=True, env=env, cwd=reader)
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = {}
    for line in proc.stdout.splitlines():
        r = json.loads(line)
        results[f"{r['dir']}/{r['notebook']}"] = r
    where = subprocess.run([str(py), "-c", "import scalebook, jax; print(scalebook.__file__, jax.__version__)"],
                           capture_output=True, text=True, env=env, cwd=reader)
    results["_installed"] = where.stdout.split()
    return results


@pytest.fixture(scope="module")
def current(wheel, tmp_path_factory):
    return _colab_run(tmp_path_factory.mktemp("colab-current"), wheel, RUNTIME, ROOT / "constraints.txt")


@pytest.fixture(scope="module")
def oldest(wheel, tmp_path_factory):
    return _colab_run(tmp_path_factory.mktemp("colab-oldest"), wheel, oldest_runtime(), None)


def _check(results: dict, name: str) -> None:
    r = results[name]
    assert r["error"] is None, f"{name} failed in a Colab-like runtime: {r['error']}"
    noisy = [h for h in r["hidden"] if h["output"].strip() and not h["install"]]
    assert not noisy, f"{name}: hidden cells printed {noisy[:2]}"
    install = [h for h in r["hidden"] if h["install"]]
    # pip's own "you may need to restart" note may follow a first install; the upgrade message may not.
    assert len(install) == 1 and "JAX upgraded" not in install[0]["output"], f"{name}: {install}"
    nb = json.loads((ROOT / name).read_text())
    missing = set(nb["metadata"]["scalebook"]["glued"]) - set(r["glued"])
    assert not missing, f"{name}: the prose shows values the notebook no longer glues: {sorted(missing)[:5]}"


@pytest.mark.parametrize("name", [f"{p.parent.name}/{p.name}" for p in _notebooks()])
def test_notebook_runs_in_a_colab_like_runtime(current, name):
    _check(current, name)


@pytest.mark.parametrize("name", [f"{p.parent.name}/{p.name}" for p in _notebooks()])
def test_notebook_runs_under_the_oldest_supported_jax(oldest, name):
    _check(oldest, name)


def test_the_install_cell_installed_the_wheel_outside_the_repository(current):
    scalebook_file, _ = current["_installed"]
    assert "site-packages" in scalebook_file and str(ROOT) not in scalebook_file


def test_the_oldest_run_uses_the_declared_minimum_jax(oldest):
    _, jax_version = oldest["_installed"]
    assert jax_version == _lower_bounds()["jax"]
