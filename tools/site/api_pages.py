#!/usr/bin/env python3
"""Write the API reference: one page per public module of `scalebook`, and an index by part.

    python tools/site/api_pages.py           # (re)write book/api.md and book/api/*.md
    python tools/site/api_pages.py --check   # exit 1 if they are not what the package gives

`book/_ext/scalebook_api.py` runs `write()` at the start of every build, so a new module gets its
page without anyone typing it; tests/test_api_pages.py fails while the committed pages lag.

Each module page has the module's name, which chapters use it (found in the chapters' code:
`from scalebook import x`, `scalebook.x`, `sb.x`, and for figure modules `plots.f(` of one of
their functions), and then autodoc's rendering of the module: its docstring (what it answers)
and every public member. The index groups the modules by the book's parts (`PARTS`); a module no
part names lands under "More modules", so it is never left out.
"""
from __future__ import annotations

import argparse
import ast
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "scalebook"
API_INDEX = ROOT / "book" / "api.md"
API_DIR = ROOT / "book" / "api"

#: The book's parts: (title, what they cover, module name prefixes in reading order).
PARTS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("One chip", "Units, the spec table of every chip, and rooflines.",
     ("units", "errors", "hardware", "roofline", "memory_levels")),
    ("Many chips", "How chips are wired, what collectives cost on those wires, and sharded matmuls.",
     ("topology", "collectives", "gpu_network", "sharding")),
    ("Transformers", "Model configurations and their parameter, FLOP and byte counts.",
     ("models", "transformer")),
    ("Training", "Parallelism strategies, the step model, estimates, the planner and published runs.",
     ("strategy", "step", "training", "efficiency", "planner", "runs", "published")),
    ("Inference and serving", "Prefill, decode and the KV cache on a deployment; serving plans; published "
     "serving results.", ("inference", "serving", "serving_results")),
    ("JAX and XLA", "The bridge to compiled programs: simulated devices, measurements, profiles, and the "
     "small JAX programs the chapters check the arithmetic against.",
     ("xla", "measure", "profile", "jax_layer", "jax_training", "jax_decode", "jax_collectives")),
    ("The original book's rules of thumb", "Its rounded and large-N approximations, each beside the exact "
     "function it approximates.", ("rules_of_thumb",)),
    ("The book's machinery", "Glue for the notebooks, self-graded problems and their grading, figures, and "
     "the command line.", ("notebook", "exercises", "grading", "plots", "interactive", "cli", "commands")),
)


#: Modules left out of the API reference, and why.
INTERNAL = {
    "scalebook.commands": "the command line's subcommands: `register` and `run` plumbing that `scalebook.cli` "
                          "calls; what each command does is the CLI reference's (book/cli.md)",
}

#: Re-exported names a package's page leaves to the page of the module that defines them, with a
#: note saying where they are (`scalebook.exercises.problem` the function would otherwise clash
#: with `scalebook.exercises.problem` the module).
ELSEWHERE = {"scalebook.exercises": ("scalebook.exercises.problem", ("Problem", "problem"))}


def modules() -> list[str]:
    """Dotted names of the package's public modules (no part of the name starts with `_`, not
    `INTERNAL`), sorted."""
    out = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE.parent).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        if any(p.startswith("_") for p in parts[1:]) or "bank" in parts or "data" in parts:
            continue
        if any(".".join(parts) == m or ".".join(parts).startswith(m + ".") for m in INTERNAL):
            continue
        out.append(".".join(parts))
    return sorted(set(out))


def _source(name: str) -> Path:
    rel = Path(*name.split("."))
    pkg = PACKAGE.parent / rel / "__init__.py"
    return pkg if pkg.exists() else PACKAGE.parent / rel.with_suffix(".py")


def summary(name: str) -> str:
    """First sentence of the module's docstring, as one line (empty if it has none)."""
    src = _source(name)
    doc = (ast.get_docstring(ast.parse(src.read_text(encoding="utf-8"))) or "") if src.exists() else ""
    para = " ".join(doc.strip().split("\n\n")[0].split())
    m = re.match(r"(.+?\.)(\s|$)", para)
    text = m.group(1) if m else para
    return text if not text or text.endswith(".") else text.rstrip(":") + "."


def public_functions(name: str) -> list[str]:
    """Names of the public top-level functions a module defines."""
    tree = ast.parse(_source(name).read_text(encoding="utf-8"))
    return [n.name for n in tree.body if isinstance(n, ast.FunctionDef) and not n.name.startswith("_")]


def chapters_using(name: str, chapters: dict[str, str]) -> list[str]:
    """The chapters (docnames) whose code uses module `name` (see the module docstring)."""
    parts = name.split(".")
    leaf, dotted = parts[-1], ".".join(parts[1:])
    pats = [rf"\bscalebook\.{re.escape(dotted)}\b", rf"\bsb\.{re.escape(dotted)}\b"]
    if parts[:2] == ["scalebook", "plots"] and len(parts) == 3:  # figures: plots.f( of its functions
        fns = public_functions(name)
        if fns:
            pats.append(r"\bplots\.(" + "|".join(map(re.escape, fns)) + r")\(")
    else:
        parent = ".".join(parts[:-1])
        pats.append(rf"from {re.escape(parent)} import [^\n]*\b{re.escape(leaf)}\b")
    rx = re.compile("|".join(pats))
    return [doc for doc, text in chapters.items() if rx.search(text)]


def _chapter_texts() -> dict[str, str]:
    return {f"chapters/{p.stem}": p.read_text(encoding="utf-8") for p in sorted((ROOT / "chapters").glob("*.md"))}


def part_of(name: str) -> int:
    """Index into PARTS of the part a module belongs to (len(PARTS) for "More modules"); the
    package itself opens the first part."""
    if name == PACKAGE.name:
        return 0
    short = name.split(".", 1)[1] if "." in name else ""
    for i, (_t, _d, prefixes) in enumerate(PARTS):
        if any(short == p or short.startswith(p + ".") for p in prefixes):
            return i
    return len(PARTS)


def _order(name: str) -> tuple:
    i = part_of(name)
    short = name.split(".", 1)[1] if "." in name else ""
    prefixes = PARTS[i][2] if i < len(PARTS) else ()
    head = short.split(".")[0]
    return (i, -1 if name == PACKAGE.name else prefixes.index(head) if head in prefixes else 99, name)


def _chapter_links(docs: list[str], prefix: str) -> str:
    """Links to chapters by their own titles (Sphinx fills them in)."""
    return ", ".join(f"{{doc}}`{prefix}{d}`" for d in docs)


def page(name: str, chapters: dict[str, str]) -> str:
    """The Markdown (MyST) of module `name`'s page."""
    used = chapters_using(name, chapters)
    where = (f"Used in: {_chapter_links(used, '../../')}." if used else
             "No chapter calls it directly; the modules that use it are on the pages beside it.")
    options, note = "   :members:\n", ""
    if name in ELSEWHERE:
        home, names = ELSEWHERE[name]
        options += f"   :exclude-members: {', '.join(names)}\n"
        note = (f" It also exports {', '.join(f'`{n}`' for n in names)}, documented with the module that "
                f"defines them, [`{home}`]({home}.md).")
    return (f"# `{name}`\n\n<!-- written by tools/site/api_pages.py; edit the module's docstring -->\n\n"
            f"{where}{note}\n\n```{{eval-rst}}\n.. automodule:: {name}\n{options}```\n")


def index(names: list[str], chapters: dict[str, str]) -> str:
    """The Markdown of book/api.md: what the package is, then each part's modules with a line each."""
    lines = [
        "# API reference", "",
        "<!-- written by tools/site/api_pages.py from the package; edit that script or the docstrings -->", "",
        "Every public module of the `scalebook` package has its own page below, generated from its",
        "docstrings: what the module answers, which chapters use it, and each public function and class.",
        "The package is imported as `import scalebook as sb`; `import scalebook` loads only the light",
        "core (`units`, `errors`, `hardware`, `roofline`), and every other module loads the first time",
        "you touch it (`sb.training`, `sb.planner`, ...). The command line has its own page, {doc}`cli`,",
        "and every chip's figures, with their sources, are in {doc}`hardware`.", "",
        "Bad input raises `scalebook.Error`, a `ValueError` whose message says what was wrong and what",
        "is valid.", "",
    ]
    groups: dict[int, list[str]] = {}
    for n in sorted(names, key=_order):
        groups.setdefault(part_of(n), []).append(n)
    for i in sorted(groups):
        title, what = (PARTS[i][0], PARTS[i][1]) if i < len(PARTS) else ("More modules", "Modules no part names yet.")
        lines += [f"## {title}", "", what, ""]
        for n in groups[i]:
            used = chapters_using(n, chapters)
            chap = f" ({_chapter_links(used[:3], '../')})" if used else ""
            lines.append(f"- [`{n}`](api/{n}.md): {summary(n) or 'no summary yet.'}{chap}")
        lines.append("")
    return "\n".join(lines)


def render() -> dict[Path, str]:
    """path -> text of every API page (book/api.md and book/api/<module>.md)."""
    names = modules()
    chapters = _chapter_texts()
    out = {API_INDEX: index(names, chapters)}
    for n in names:
        out[API_DIR / f"{n}.md"] = page(n, chapters)
    return out


def stale(pages: dict[Path, str] | None = None) -> list[Path]:
    """Pages whose file differs from what the package gives, and module pages of no module."""
    pages = render() if pages is None else pages
    bad = [p for p, text in pages.items() if not p.exists() or p.read_text(encoding="utf-8") != text]
    extra = [p for p in API_DIR.glob("*.md") if p not in pages] if API_DIR.exists() else []
    return bad + extra


def write() -> list[Path]:
    """(Re)write the pages that changed and remove pages of modules that are gone; return them."""
    pages = render()
    changed = stale(pages)
    API_DIR.mkdir(parents=True, exist_ok=True)
    for p in changed:
        if p in pages:
            p.write_text(pages[p], encoding="utf-8")
        else:
            p.unlink()
    return changed


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="exit 1 if the committed pages are stale")
    args = ap.parse_args(argv)
    if args.check:
        bad = stale()
        for p in bad:
            print(f"stale: {p.relative_to(ROOT)}")
        return 1 if bad else 0
    for p in write():
        print(f"wrote {p.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
