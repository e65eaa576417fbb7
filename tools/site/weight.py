#!/usr/bin/env python3
"""How heavy the built site is: its size on disk, and what each page loads.

    python tools/site/weight.py [--html _build/html]

A page's weight is its HTML plus every file it names in a `<script src>`, `<link href>`
(stylesheets, preloads) or `<img src>`, each counted once, read from the built site; web fonts a
stylesheet pulls in, and what MathJax loads at run time, are not counted (the browser check sees
those); the Vega scripts a page with an interactive figure loads at run time are. Prints the
site's total, the heaviest folders, the pages from heaviest to lightest, and each interactive
page with the bytes each of its figures embeds.
"""
from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path
from urllib.parse import unquote, urlparse

ROOT = Path(__file__).resolve().parents[2]
_REF = re.compile(r'<(?:script[^>]*\ssrc|link[^>]*\shref|img[^>]*\ssrc)="([^"]+)"')


def site_bytes(html_dir: Path) -> int:
    """Bytes of every file under `html_dir`."""
    return sum(p.stat().st_size for p in html_dir.rglob("*") if p.is_file())


def page_files(page: Path, html_dir: Path) -> set[Path]:
    """The page and the local files it names (see the module docstring)."""
    files = {page}
    for ref in _REF.findall(page.read_text(encoding="utf-8", errors="replace")):
        url = urlparse(ref)
        if url.scheme or url.netloc or ref.startswith(("#", "data:")):
            continue
        path = (page.parent / unquote(url.path)).resolve()
        if path.is_file() and html_dir.resolve() in path.parents:
            files.add(path)
    return files


def page_bytes(page: Path, html_dir: Path) -> int:
    """Weight of one page: the bytes of `page_files`, and the Vega scripts its interactive
    figures load (`interactive_files`)."""
    return sum(p.stat().st_size for p in page_files(page, html_dir) | interactive_files(page, html_dir))


_FIGURE = re.compile(r'<figure class="sb-interactive" data-scalebook-figure="([^"]+)".*?</figure>', re.S)


def interactive_figures(page: Path) -> dict[str, int]:
    """The interactive figures of a page (scalebook.interactive), name -> bytes embedded in it
    (chart spec with its data, the static fallback picture, the loader)."""
    text = page.read_text(encoding="utf-8", errors="replace")
    return {m.group(1): len(m.group(0).encode("utf-8")) for m in _FIGURE.finditer(text)}


def interactive_files(page: Path, html_dir: Path) -> set[Path]:
    """The scripts a page with an interactive figure loads at run time (_static/vega/*.js)."""
    if not interactive_figures(page):
        return set()
    return {p.resolve() for p in (html_dir / "_static" / "vega").glob("*.js")}


def interactive_report(html_dir: Path) -> list[str]:
    """One line per page with interactive figures: its weight, and what each figure embeds."""
    mb, kb = 1e6, 1e3
    scripts = sum(p.stat().st_size for p in (html_dir / "_static" / "vega").glob("*.js"))
    lines = [f"interactive pages (each also loads the Vega scripts, {scripts / mb:.2f} MB, once for the site):"]
    for page in sorted(html_dir.rglob("*.html")):
        figures = interactive_figures(page)
        if figures:
            embedded = ", ".join(f"{name} {n / kb:.0f} kB" for name, n in figures.items())
            lines.append(f"  {page_bytes(page, html_dir) / mb:5.2f} MB  {page.relative_to(html_dir)}: {embedded}")
    return lines if len(lines) > 1 else ["interactive pages: none"]


def report(html_dir: Path) -> str:
    """The text `main` prints."""
    mb = 1e6
    lines = [f"site: {site_bytes(html_dir) / mb:.1f} MB in {html_dir}"]
    folders = {}
    for d in sorted(p for p in html_dir.iterdir() if p.is_dir()):
        folders[d.name] = site_bytes(d)
    for static in sorted((html_dir / "_static").iterdir()) if (html_dir / "_static").is_dir() else []:
        if static.is_dir():
            folders[f"_static/{static.name}"] = site_bytes(static)
    for name, n in sorted(folders.items(), key=lambda kv: -kv[1])[:6]:
        lines.append(f"  {name}: {n / mb:.1f} MB")
    pages = [p for p in html_dir.rglob("*.html") if not p.relative_to(html_dir).parts[0].startswith("_")]
    weights = sorted(((page_bytes(p, html_dir), p.relative_to(html_dir)) for p in pages), reverse=True)
    lines.append(f"per page (HTML, scripts, stylesheets, images): {len(weights)} pages")
    for n, rel in weights:
        lines.append(f"  {n / mb:5.2f} MB  {rel}")
    lines += interactive_report(html_dir)
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--html", type=Path, default=ROOT / "_build" / "html")
    args = ap.parse_args(argv)
    if not (args.html / "index.html").exists():
        print(f"no built site in {args.html}: run `make book` first", file=sys.stderr)
        return 1
    print(report(args.html))
    return 0


if __name__ == "__main__":
    sys.exit(main())
