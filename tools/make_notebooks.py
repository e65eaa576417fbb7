#!/usr/bin/env python3
"""Generate the Colab notebooks (`.ipynb`) from the book's MyST sources (`.md`).

    python tools/make_notebooks.py            # write chapters/*.ipynb and exercises/*.ipynb
    python tools/make_notebooks.py --check    # exit 1 if any committed notebook is stale

A generated notebook is what a reader opens in Colab: plain Markdown instead of MyST
directives and roles, no solutions, no outputs, the install cell kept. The `.md` is the
source that people edit; the `.ipynb` beside it is never edited by hand (TOOLCHAIN.md, notes 2-4).
"""
from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import jupytext
import nbformat

ROOT = Path(__file__).resolve().parent.parent
SOURCES = ("chapters", "exercises")
REPO = "scalebook/scalebook"

_FENCE = re.compile(r"^(?P<ticks>`{3,}|:{3,})\{(?P<name>[\w:-]+)\}\s*(?P<arg>.*)$")
_ROLE = re.compile(r"\{(?P<role>[\w:-]+)\}`(?P<body>[^`]*)`")


def _role(m: re.Match) -> str:
    role, body = m.group("role"), m.group("body")
    if role.startswith("glue"):
        return f"`{body.split(':')[0]}`"
    if role.startswith("cite"):
        return "[" + body + "]"
    if role == "math":
        return f"${body}$"
    if role == "eq":
        return f"({body})"
    label = re.match(r"^(.*?)\s*<([^>]*)>$", body)
    return label.group(1) if label else body


def _markdown(text: str, state: dict) -> str | None:
    """Rewrite one Markdown cell; returns None when nothing remains. `state` tracks solutions."""
    out: list[str] = []
    stack: list[tuple[str, str]] = []  # (closing fence, kind)
    for line in text.splitlines():
        stripped = line.strip()
        m = _FENCE.match(stripped)
        if state.get("in_solution"):
            if m and m.group("name") == "solution-end":
                state["in_solution"] = False
                state["skip_close"] = m.group("ticks")
            continue
        if state.get("skip_close"):
            if stripped == state["skip_close"]:
                state["skip_close"] = None
                continue
            state["skip_close"] = None
        if m:
            name, arg, ticks = m.group("name"), m.group("arg").strip(), m.group("ticks")
            if name == "solution-start":
                state["in_solution"] = True
                continue
            if name in ("solution-end", "exercise-end"):
                state["skip_close"] = ticks
                continue
            if name == "exercise-start":
                state["problem"] = state.get("problem", 0) + 1
                # Titles that start with the problem's id ("1.3 · Critical batch") keep it.
                title = (f"**Problem {arg}**" if re.match(r"^\d+\.\d+\b", arg)
                         else f"**Problem {state['problem']}" + (f": {arg}" if arg else "") + "**")
                out.append(title)
                state["skip_close"] = ticks
                state["skip_options"] = True
                continue
            if name in ("solution", "glue:figure", "figure", "code-cell"):
                stack.append((ticks, "drop"))
                continue
            if name == "math":
                out.append("$$")
                stack.append((ticks, "math"))
                continue
            head = arg if name == "admonition" else (name.capitalize() + (f": {arg}" if arg else ""))
            out.append(f"> **{_ROLE.sub(_role, head)}**")
            out.append(">")
            stack.append((ticks, "quote"))
            continue
        if state.get("skip_options"):
            if stripped.startswith(":") and not stripped.startswith(":::"):
                continue
            state["skip_options"] = False
        if stack and stripped == stack[-1][0]:
            kind = stack.pop()[1]
            if kind == "math":
                out.append("$$")
            continue
        if stack and stripped.startswith(":") and re.match(r"^:[\w-]+:", stripped):
            continue  # directive options
        if re.match(r"^\([\w.-]+\)=\s*$", stripped):
            continue  # MyST target labels
        if stack and any(k == "drop" for _, k in stack):
            continue
        line = _ROLE.sub(_role, line)
        depth = sum(1 for _, k in stack if k == "quote")
        out.append(("> " * depth + line) if depth else line)
    while out and not out[-1].strip():
        out.pop()
    while out and not out[0].strip():
        out.pop(0)
    return "\n".join(out) if out else None


def convert(md_path: Path) -> nbformat.NotebookNode:
    """The Colab notebook for one MyST source."""
    src = jupytext.read(md_path, fmt="md:myst")
    rel = md_path.relative_to(ROOT).as_posix()
    cells = [nbformat.v4.new_markdown_cell(
        f"*Generated from [`{rel}`](https://github.com/{REPO}/blob/main/{rel}) of the scalebook "
        "textbook: run it top to bottom. The book's site shows the same page with its figures, "
        "glued numbers and worked solutions.*")]
    state: dict = {}
    for cell in src.cells:
        if cell.cell_type == "markdown":
            text = _markdown(cell.source, state)
            if text:
                cells.append(nbformat.v4.new_markdown_cell(text))
        elif cell.cell_type == "code":
            if state.get("in_solution"):
                continue
            tags = [t for t in cell.metadata.get("tags", []) if t in ("remove-cell", "hide-input", "hide-output", "remove-input")]
            new = nbformat.v4.new_code_cell(cell.source)
            if tags:
                new.metadata["tags"] = tags
            cells.append(new)
    nb = nbformat.v4.new_notebook(cells=cells)
    nb.metadata = {
        "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
        "language_info": {"name": "python"},
        "colab": {"provenance": []},
    }
    for i, cell in enumerate(nb.cells):
        cell["id"] = f"c{i:03d}"
    return nb


def sources() -> list[Path]:
    return sorted(p for d in SOURCES for p in (ROOT / d).glob("*.md"))


def render(md_path: Path) -> str:
    return nbformat.writes(convert(md_path), version=4) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="fail if a committed notebook is stale")
    args = ap.parse_args(argv)
    stale = []
    for md in sources():
        nb_path = md.with_suffix(".ipynb")
        text = render(md)
        if args.check:
            if not nb_path.exists() or nb_path.read_text(encoding="utf-8") != text:
                stale.append(nb_path.relative_to(ROOT).as_posix())
        else:
            nb_path.write_text(text, encoding="utf-8")
            print(f"wrote {nb_path.relative_to(ROOT)}")
    if stale:
        print("stale notebooks (run `make notebooks`): " + ", ".join(stale), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
