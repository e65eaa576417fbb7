#!/usr/bin/env python3
"""Build the site with Jupyter Book 1.x, executing every notebook, warnings as errors.

    python tools/build_book.py           # build _build/html and print the page to open
    python tools/build_book.py --check   # the same, then check what a reader relies on

Installs the site's own JavaScript first (MathJax, pinned in tools/site/package.json and
package-lock.json) with `npm ci`, so the site serves it itself and needs no CDN. Guards the
Jupyter Book major version: Jupyter Book 2 (mystmd) is a different tool that
may exit 0 on a v1 book without building it (TOOLCHAIN.md, note 1).
"""
from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import time
from importlib.metadata import version
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HTML = ROOT / "_build" / "html"


def toc_pages() -> list[str]:
    """Every `file:` entry of _toc.yml plus the root, as paths without suffix."""
    text = (ROOT / "_toc.yml").read_text()
    root = re.search(r"^root:\s*(\S+)", text, re.M).group(1)
    return [root] + re.findall(r"file:\s*(\S+)", text)


SITE_ASSETS = ROOT / "tools" / "site"


def install_site_assets() -> None:
    """`npm ci` the pinned MathJax into tools/site/node_modules unless that version is there."""
    want = json.loads((SITE_ASSETS / "package.json").read_text())["dependencies"]["mathjax"]
    have = SITE_ASSETS / "node_modules" / "mathjax" / "package.json"
    if have.exists() and json.loads(have.read_text())["version"] == want:
        return
    npm = shutil.which("npm")
    if npm is None:
        sys.exit("npm not found: the site serves its own MathJax, installed with npm "
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
    proc = subprocess.run(cmd, cwd=ROOT)
    if proc.returncode != 0:
        sys.exit(f"book build failed (exit {proc.returncode}); see the warnings above")
    return time.perf_counter() - t0


def check() -> None:
    """What a reader relies on: every page built, solutions collapsed, Colab links present."""
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
    if problems:
        sys.exit("site check failed:\n  " + "\n  ".join(problems))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="also verify the built pages")
    args = ap.parse_args(argv)
    install_site_assets()
    seconds = build()
    check()
    print(f"built in {seconds:.0f} s; open {HTML / 'index.html'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
