#!/usr/bin/env python3
"""Build the site with Jupyter Book 1.x, executing every notebook, warnings as errors.

    python tools/build_book.py           # build _build/html and print the page to open
    python tools/build_book.py --check   # the same, then check what a reader relies on

Every figure a page shows is checked as the page shows it (`scalebook.plots._style.text_problems`:
texts overlapping or crossing an axes' frame): the kernels log each figure's
problems to `_build/figure-check.jsonl`, and the build lists them, page by page (`--check` fails
on any). So is every output a reader sees (`tools/site/page_scan.py`: reprs of the package's
classes, long unrounded floats, e-notation outside code, '0.0%' and '-0%'): listed after a build,
a failure under `--check`.

After Sphinx, the package's wheel goes into the site (`build_wheel`: `_static/dist/`, under the
name `make_notebooks.wheel_filename()` gives it), and the notebooks' install cell installs it from
the site's address, so a reader needs nothing but the site.

Installs the site's own JavaScript first (MathJax, pinned in tools/site/package.json and
package-lock.json) with `npm ci`, so the site serves it itself and needs no CDN. Guards the
Jupyter Book major version: Jupyter Book 2 (mystmd) is a different tool that
may exit 0 on a v1 book without building it (TOOLCHAIN.md, note 1).
"""
from __future__ import annotations

import argparse
import html as html_lib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from importlib.metadata import version
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HTML = ROOT / "_build" / "html"
FIGURE_LOG = ROOT / "_build" / "figure-check.jsonl"


def toc_pages() -> list[str]:
    """Every `file:` entry of _toc.yml, the pages each `glob:` entry matches, and the root, as
    paths without suffix."""
    text = (ROOT / "_toc.yml").read_text()
    root = re.search(r"^root:\s*(\S+)", text, re.M).group(1)
    pages = [root]
    for kind, value in re.findall(r"\b(file|glob):\s*(\S+)", text):
        if kind == "file":
            pages.append(value)
        else:  # a glob entry (the API reference's module pages): the sources it matches
            pages += sorted(str(p.relative_to(ROOT).with_suffix("")) for p in ROOT.glob(value + ".md"))
    return pages


SITE_ASSETS = ROOT / "tools" / "site"


def install_site_assets() -> None:
    """`npm ci` the pinned MathJax and Vega packages into tools/site/node_modules unless those
    versions are there."""
    pins = json.loads((SITE_ASSETS / "package.json").read_text())["dependencies"]

    def installed(package: str) -> str | None:
        have = SITE_ASSETS / "node_modules" / package / "package.json"
        return json.loads(have.read_text())["version"] if have.exists() else None

    if all(installed(package) == want for package, want in pins.items()):
        return
    npm = shutil.which("npm")
    if npm is None:
        sys.exit("npm not found: the site serves its own MathJax and Vega, installed with npm "
                 "(Debian: apt-get install npm)")
    proc = subprocess.run([npm, "ci", "--no-audit", "--no-fund", "--prefix", str(SITE_ASSETS)], cwd=SITE_ASSETS)
    if proc.returncode != 0:
        sys.exit(f"npm ci in {SITE_ASSETS} failed (exit {proc.returncode})")


def build() -> float:
    jb = version("jupyter-book")
    if not jb.startswith("1."):
        sys.exit(f"jupyter-book {jb} installed, but this book needs 1.x (pip install 'jupyter-book>=1.0.4.post1,<2')")
    t0 = time.perf_counter()
    cmd = [str(Path(sys.executable).parent / "jupyter-book"), "build", str(ROOT), "--all", "-W", "-n", "--keep-going"]
    FIGURE_LOG.parent.mkdir(parents=True, exist_ok=True)
    FIGURE_LOG.unlink(missing_ok=True)
    # The kernels import this checkout's package (a git worktree beside an editable install of
    # another checkout would otherwise execute the other one).
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
    env = {**os.environ, "SCALEBOOK_FIGURE_LOG": str(FIGURE_LOG), "PYTHONPATH": path}
    proc = subprocess.run(cmd, cwd=ROOT, env=env)
    if proc.returncode != 0:
        sys.exit(f"book build failed (exit {proc.returncode}); see the warnings above")
    return time.perf_counter() - t0


def build_wheel(html_dir: Path = HTML) -> Path:
    """Build the package's wheel into `html_dir/_static/dist/` (stale wheels removed) and return it.

    The file must be named `make_notebooks.wheel_filename()`: that is the URL the install cell uses."""
    if str(ROOT / "tools") not in sys.path:
        sys.path.insert(0, str(ROOT / "tools"))
    import make_notebooks

    dist = html_dir / make_notebooks.WHEEL_DIR
    dist.mkdir(parents=True, exist_ok=True)
    for old in dist.glob("scalebook-*.whl"):
        old.unlink()
    # Built from a copy of what the package is made of: setuptools reuses a checkout's build/lib,
    # where a module deleted since the last build would still sit and ship. An isolated build: pip
    # gets the backend pyproject.toml asks for (setuptools>=77 reads the SPDX `license` string); a
    # virtual environment's own setuptools may be older.
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "src"
        shutil.copytree(ROOT / "scalebook", src / "scalebook", ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        for name in ("pyproject.toml", "README.md", "LICENSE"):
            shutil.copy2(ROOT / name, src / name)
        proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "--disable-pip-version-check",
                               "-w", str(dist), str(src)], capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"building the wheel failed (exit {proc.returncode}):\n{proc.stderr[-3000:]}")
    wheel = dist / make_notebooks.wheel_filename()
    built = sorted(p.name for p in dist.glob("*.whl"))
    if built != [wheel.name]:
        sys.exit(f"the wheel build wrote {built}, but the install cell expects {wheel.name}")
    return wheel


def figure_problems(log: Path = FIGURE_LOG, html_dir: Path = HTML) -> dict[str, list[str]]:
    """page -> the text problems of the figures it shows, from the kernels' log (see the docstring).

    A figure is matched to its page by its description, which is the image's alt text there."""
    if not log.exists():
        return {}
    pages = {p: html_lib.unescape((html_dir / f"{p}.html").read_text(encoding="utf-8")) for p in toc_pages()
             if (html_dir / f"{p}.html").exists()}
    out: dict[str, list[str]] = {}
    for line in log.read_text(encoding="utf-8").splitlines():
        rec = json.loads(line)
        if not rec["problems"]:
            continue
        start = rec["figure"][:80]
        page = next((p for p, text in pages.items() if start in text), "a page")
        out.setdefault(page, []).extend(f"figure '{rec['figure'][:60]}...': {p}" for p in rec["problems"])
    return out


def output_problems(html_dir: Path | None = None) -> dict[str, list[str]]:
    """page -> what `tools/site/page_scan.py` finds on it ('repr: ...', 'e-notation: ...'), pages with findings only."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("page_scan", ROOT / "tools" / "site" / "page_scan.py")
    scan = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("page_scan", scan)  # its dataclass looks its module up there
    spec.loader.exec_module(scan)
    report = scan.scan_site(HTML if html_dir is None else html_dir)
    return {page: [f"{f.kind}: {f.text}" for f in found] for page, found in report.items()}


def check(figures: bool = True) -> None:
    """What a reader relies on: every page built, solutions collapsed, Colab links present; and
    (with `figures`) no figure with texts on top of each other or across a frame, and no output
    a reader should not see (`output_problems`)."""
    problems = []
    for page in toc_pages():
        html = HTML / f"{page}.html"
        if not html.exists():
            problems.append(f"missing page {html.relative_to(ROOT)}")
            continue
        text = html.read_text(encoding="utf-8")
        if page.startswith(("chapters/", "exercises/")):
            if "colab.research.google.com" not in text:
                problems.append(f"{page}: no Colab launch button")
            if not (ROOT / f"{page}.ipynb").exists():
                problems.append(f"{page}: no generated .ipynb beside the .md")
        if page.startswith("exercises/") and "solution" in text and "dropdown" not in text:
            problems.append(f"{page}: solutions are not collapsed")
    for page, found in figure_problems().items():
        if figures:
            problems.extend(f"{page}: {p}" for p in dict.fromkeys(found))
        else:
            print(f"{page}: figure problems (python tools/build_book.py --check fails on them):\n  "
                  + "\n  ".join(dict.fromkeys(found)), file=sys.stderr)
    for page, found in output_problems().items():
        if figures:
            problems.extend(f"{page}: {p}" for p in found)
        else:
            print(f"{page}: outputs a reader should not see (python tools/build_book.py --check fails on them):\n  "
                  + "\n  ".join(found), file=sys.stderr)
    if problems:
        sys.exit("site check failed:\n  " + "\n  ".join(problems))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="also verify the built pages")
    args = ap.parse_args(argv)
    install_site_assets()
    seconds = build()
    wheel = build_wheel()
    print(f"package wheel: {wheel.relative_to(ROOT)}")
    check(figures=args.check)
    print(f"built in {seconds:.0f} s; open {HTML / 'index.html'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
