"""Installing from the published site: the book build puts the package's wheel in the site, and
the notebooks' install cell installs that wheel from the site's address (issue 20).

The end-to-end test builds the wheel the way `tools/build_book.py` does, into a temporary "site",
serves that folder over HTTP on localhost, and installs from the URL into a fresh virtual
environment (like a Colab runtime, without scalebook), then imports the package there.
"""
from __future__ import annotations

import builtins
import functools
import http.server
import importlib.metadata
import json
import os
import subprocess
import sys
import threading
import types
import zipfile
from pathlib import Path

import pytest

import scalebook

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
import build_book  # noqa: E402
import make_notebooks  # noqa: E402

# The wheel of a pure-Python package, as PEP 427 names it: name-version-py3-none-any.whl.
WHEEL = f"scalebook-{scalebook.__version__}-py3-none-any.whl"


def _install_cell_pip_line(monkeypatch, source: str | None = None) -> str:
    """Run the install cell as in a Colab runtime without scalebook (SCALEBOOK_SOURCE=`source`,
    unset when None); return the one %pip line it runs."""
    calls = []
    monkeypatch.setitem(sys.modules, "google.colab", types.ModuleType("google.colab"))
    monkeypatch.setitem(sys.modules, "scalebook", None)  # import scalebook -> ImportError
    monkeypatch.setattr(importlib.metadata, "version", lambda name: "99.0")
    if source is None:
        monkeypatch.delenv("SCALEBOOK_SOURCE", raising=False)
    else:
        monkeypatch.setenv("SCALEBOOK_SOURCE", source)
    shell = types.SimpleNamespace(run_line_magic=lambda magic, line: calls.append((magic, line)))
    exec(make_notebooks.install_cell_source(), {"get_ipython": lambda: shell, "__builtins__": builtins})
    ((magic, line),) = calls
    assert magic == "pip"
    return line


def test_the_wheel_is_named_by_the_package_version():
    assert make_notebooks.wheel_filename() == WHEEL


def test_the_install_cell_installs_the_wheel_from_the_site_url(monkeypatch):
    url = make_notebooks.site_url() + "/_static/dist/" + WHEEL
    assert _install_cell_pip_line(monkeypatch) == f"install -q 'scalebook[jax,plot] @ {url}'"


def test_the_site_address_is_the_one_setting_for_the_install_url(tmp_path, monkeypatch):
    (tmp_path / "_config.yml").write_text("repository:\n  url: https://github.com/someone/fork\n"
                                          "html:\n  baseurl: https://books.example.org/scaling/\n")
    (tmp_path / "pyproject.toml").write_text((ROOT / "pyproject.toml").read_text())
    (tmp_path / "scalebook").mkdir()
    (tmp_path / "scalebook" / "__init__.py").write_text('__version__ = "7.8.9"\n')
    monkeypatch.setattr(make_notebooks, "ROOT", tmp_path)
    assert _install_cell_pip_line(monkeypatch) == (
        "install -q 'scalebook[jax,plot] @ https://books.example.org/scaling/_static/dist/"
        "scalebook-7.8.9-py3-none-any.whl'")


def test_scalebook_source_still_overrides_the_site(monkeypatch):
    line = _install_cell_pip_line(monkeypatch, source="file:///tmp/x.whl")
    assert line == "install -q 'scalebook[jax,plot] @ file:///tmp/x.whl'"


@pytest.fixture(scope="module")
def built_site(tmp_path_factory):
    """A site folder holding the wheel, built as the book build builds it."""
    site = tmp_path_factory.mktemp("site") / "html"
    return site, build_book.build_wheel(site)


@pytest.mark.slow
def test_the_wheel_ships_every_module_and_data_file_of_the_checkout_and_nothing_else(built_site):
    site, wheel = built_site
    assert wheel == site / "_static" / "dist" / WHEEL
    package = ROOT / "scalebook"
    want = {p.relative_to(ROOT).as_posix() for p in [*package.rglob("*.py"), *package.glob("data/*.json"), *package.glob("data/*.gz")]
            if "__pycache__" not in p.parts}
    with zipfile.ZipFile(wheel) as z:
        shipped = {n for n in z.namelist() if not n.startswith(f"scalebook-{scalebook.__version__}.dist-info/")}
    assert shipped == want


@pytest.fixture
def served_site(built_site):
    """The built site served over HTTP on a free localhost port."""
    site, wheel = built_site
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(site))
    handler.log_message = lambda *a: None
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield site, wheel, f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.slow
def test_a_fresh_venv_installs_the_package_from_the_served_site(served_site, tmp_path):
    site, wheel, base = served_site
    url = f"{base}/{make_notebooks.WHEEL_DIR}/{make_notebooks.wheel_filename()}"
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    py = venv / "bin" / "python"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["PIP_NO_INDEX"] = "1"  # the site is the only source
    proc = subprocess.run([str(py), "-m", "pip", "install", "-q", "--disable-pip-version-check", "--no-deps",
                           f"scalebook @ {url}"], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    # Imported from the venv, not from this checkout; pip recorded the site's URL as its origin.
    code = ("import json, scalebook; from importlib.metadata import distribution as d; "
            "print(json.dumps([scalebook.__version__, scalebook.__file__, d('scalebook').read_text('direct_url.json')]))")
    proc = subprocess.run([str(py), "-c", code], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    version, location, direct_url = json.loads(proc.stdout)
    assert version == scalebook.__version__
    assert Path(location).is_relative_to(venv)
    assert json.loads(direct_url)["url"] == url
