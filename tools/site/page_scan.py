#!/usr/bin/env python3
"""Find output a reader should not see on the built pages: reprs and unformatted numbers.

    python tools/site/page_scan.py              # scans _build/html, lists offenders by page
    python tools/site/page_scan.py --html DIR
    python tools/site/page_scan.py --run chapters/05-training.md   # executes the page, scans its outputs
    python tools/site/page_scan.py --glued      # the glued prose values, from the committed notebooks

Neither of the last two needs a book build. `--run` executes each page as the build does and
scans what its cells show (cells tagged remove-cell, remove-output or program-text skipped).
`--glued` formats each `{glue:text}` role of the MyST pages as the book shows it, from the values
the generated notebooks record (`make notebooks`), and scans those with the two characters after
the role (so '0.00%' is seen).

`scan_html(html)` reads the text of a page's article (the prose and what the cells print; not the
code of the cells, inline code, code blocks, the API signatures or the math, nor the output of a
cell tagged `program-text`, whose output is a program listing such as a jaxpr) and returns a
`Finding` for each:

- `repr`: the repr of one of the package's classes, `Workload(` or `HloCollective(`: a class name
  of `scalebook` directly followed by an opening bracket (`class_names()` lists them), or any
  `Name(field=` form a dataclass repr prints;
- `long float`: a number with six or more digits after the point (`0.43508877432736315`), an
  unrounded float;
- `e-notation`: `4.194e+06`, `1.5e13`;
- `zero percent`: "0.0%" or "-0%" (a share rounded to nothing, or a negative zero).

Exit status 1 when anything is found; `tools/build_book.py --check` runs it on the built site.
"""
from __future__ import annotations

import argparse
import re
import sys
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "param",
        "source", "track", "wbr"}


@dataclass(frozen=True)
class Finding:
    """One offending piece of visible text: which rule (`kind`) and the text around it."""
    kind: str
    text: str


def class_names(package: Path = ROOT / "scalebook") -> frozenset[str]:
    """Names of the classes the package defines (read from its source; no import needed)."""
    names = set()
    for path in package.rglob("*.py"):
        names |= set(re.findall(r"^\s*class ([A-Z]\w*)", path.read_text(encoding="utf-8"), re.M))
    return frozenset(names)


def _classes(el_attrs) -> set[str]:
    return set((dict(el_attrs).get("class") or "").split())


class _Text(HTMLParser):
    """Collect the article's visible text as (text, in_code) runs, skipping what is not read."""

    SKIP_CLASSES = {"cell_input", "sig", "headerlink", "math", "toggle-button", "copybtn", "linenos",
                    "tag_program-text"}
    SKIP_TAGS = {"script", "style", "head", "mjx-container", "svg", "button", "template"}

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[tuple[str, bool, bool, bool]] = []  # tag, skip, code, output
        self.runs: list[tuple[str, bool]] = []
        self.in_article = 0

    def _state(self) -> tuple[bool, bool, bool]:
        return self.stack[-1][1:] if self.stack else (False, False, False)

    def handle_starttag(self, tag, attrs):
        if tag in VOID:
            return
        skip, code, output = self._state()
        cls = _classes(attrs)
        if tag == "article" or "bd-article" in cls:
            self.in_article += 1
        skip = skip or tag in self.SKIP_TAGS or bool(cls & self.SKIP_CLASSES)
        output = output or "cell_output" in cls
        # a <pre> inside an output is just how text output renders; <code> there is marked as code
        code = code or tag in ("code", "kbd", "samp") or (tag == "pre" and not output)
        self.stack.append((tag, skip, code, output))

    def handle_endtag(self, tag):
        # pop to the matching tag (tolerates unclosed <p>, <li>)
        for i in range(len(self.stack) - 1, -1, -1):
            if self.stack[i][0] == tag:
                if tag == "article":
                    self.in_article = max(0, self.in_article - 1)
                del self.stack[i:]
                return

    def handle_data(self, data):
        skip, code, _output = self._state()
        if self.in_article and not skip and data.strip():
            self.runs.append((data, code))


_NUM_EDGE = r"(?<![\w./:])"
RULES = (
    ("long float", re.compile(_NUM_EDGE + r"-?\d+\.\d{6,}(?![\d])")),
    ("e-notation", re.compile(_NUM_EDGE + r"-?\d+(?:\.\d+)?[eE][+-]?\d+(?!\w|\.\d)")),
    ("zero percent", re.compile(_NUM_EDGE + r"(?:-0(?:\.0+)?|0\.0+)\s?%")),
    ("repr", re.compile(r"\b[A-Z]\w*\((?:[a-z_]\w*=)")),
)


def _around(text: str, m: re.Match, width: int = 40) -> str:
    start, end = max(0, m.start() - width), min(len(text), m.end() + width)
    return " ".join(text[start:end].split())


def scan_html(html: str, classes: frozenset[str] | None = None) -> list[Finding]:
    """The findings of the page `html` (see the module docstring for the rules)."""
    classes = class_names() if classes is None else classes
    parser = _Text()
    parser.feed(html)
    parser.close()
    found: list[Finding] = []
    # Join the runs so a repr split across spans (highlighted output) is still seen whole.
    text = " ".join(t for t, code in parser.runs if not code)
    rules = list(RULES)
    if classes:
        names = "|".join(sorted(map(re.escape, classes), key=len, reverse=True))
        rules.append(("repr", re.compile(r"\b(?:" + names + r")\((?=\S)")))
    seen = set()
    for kind, rx in rules:
        for m in rx.finditer(text):
            f = Finding(kind, _around(text, m))
            if (kind, m.group(0), f.text) not in seen:
                seen.add((kind, m.group(0), f.text))
                found.append(f)
    return found


def scan_site(html_dir: Path) -> dict[str, list[Finding]]:
    """page (path relative to `html_dir`, without .html) -> its findings, for pages that have any."""
    classes = class_names()
    out = {}
    for path in sorted(html_dir.rglob("*.html")):
        rel = path.relative_to(html_dir)
        if rel.parts[0] in ("_static", "_sources", "_images") or rel.name in ("search.html", "genindex.html"):
            continue
        found = scan_html(path.read_text(encoding="utf-8", errors="replace"), classes)
        if found:
            out[str(rel.with_suffix(""))] = found
    return out


def outputs_html(nb) -> str:
    """An executed notebook's visible outputs as an article the scan reads: HTML as it is, text in
    an output box; images (their text is the figure's repr) and hidden cells left out."""
    import html as html_lib

    parts = []
    for cell in nb.cells:
        tags = cell.metadata.get("tags", [])
        if cell.cell_type != "code" or {"remove-cell", "remove-output", "program-text"} & set(tags):
            continue
        for out in cell.get("outputs", []):
            data = out.get("data", {})
            if out.get("output_type") == "stream":
                text = html_lib.escape(out["text"])
            elif "text/html" in data:
                parts.append(f'<div class="cell_output">{data["text/html"]}</div>')
                continue
            elif "text/plain" in data and not any(k.startswith("image/") for k in data):
                text = html_lib.escape(data["text/plain"])
            else:
                continue
            parts.append(f'<div class="cell_output"><pre>{text}</pre></div>')
    return '<article class="bd-article">' + "".join(parts) + "</article>"


def run_page(path: Path, timeout: int = 900) -> list[Finding]:
    """Execute the MyST page at `path` (as the book build does) and scan its outputs."""
    import jupytext
    import nbclient

    nb = jupytext.read(path, fmt="md:myst")
    nbclient.NotebookClient(nb, timeout=timeout, kernel_name="python3",
                            resources={"metadata": {"path": str(path.parent)}}).execute()
    return scan_html(outputs_html(nb))


_GLUE_ROLE = re.compile(r"\{glue(?::text)?\}`([^`:]+)(?::([^`]*))?`")


def glued_findings(md: Path, glued: dict[str, str], classes: frozenset[str] | None = None) -> list[Finding]:
    """The findings in the glued prose of the MyST page `md`, given its glued values ({name: text/plain})."""
    import html as html_lib

    sys.path.insert(0, str(ROOT / "tools"))
    from make_notebooks import format_glued

    source = md.read_text(encoding="utf-8")
    texts = []
    for m in _GLUE_ROLE.finditer(source):
        if m.group(1) in glued:
            texts.append(format_glued(glued[m.group(1)], m.group(2) or "") + source[m.end():m.end() + 2])
    body = "".join(f"<p>{html_lib.escape(t)}</p>" for t in texts)
    return scan_html(f'<article class="bd-article">{body}</article>', frozenset() if classes is None else classes)


def scan_glued(root: Path = ROOT) -> dict[str, list[Finding]]:
    """page -> findings in its glued prose, for every page with a generated notebook beside it."""
    import json

    out = {}
    for md in sorted([*root.glob("chapters/*.md"), *root.glob("exercises/*.md"), *root.glob("book/*.md")]):
        nb = md.with_suffix(".ipynb")
        if nb.exists():
            glued = json.loads(nb.read_text(encoding="utf-8")).get("metadata", {}).get("scalebook", {}).get("glued", {})
            found = glued_findings(md, glued)
            if found:
                out[str(md.relative_to(root))] = found
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--html", type=Path, default=ROOT / "_build" / "html")
    ap.add_argument("--run", type=Path, nargs="+", metavar="PAGE", help="execute these .md pages and scan their outputs")
    ap.add_argument("--glued", action="store_true", help="scan the glued prose values the generated notebooks record")
    args = ap.parse_args(argv)
    if args.glued:
        report = scan_glued()
    elif args.run:
        report = {str(p): found for p in args.run if (found := run_page(p.resolve()))}
    elif not args.html.is_dir():
        sys.exit(f"no built site in {args.html}: run `python tools/build_book.py` first")
    else:
        report = scan_site(args.html)
    for page, found in report.items():
        print(f"{page}:")
        for f in found:
            print(f"  {f.kind}: {f.text}")
    n = sum(map(len, report.values()))
    print(f"{n} findings on {len(report)} pages" if n else "no reprs or unformatted numbers found")
    return 1 if n else 0


if __name__ == "__main__":
    sys.exit(main())
