#!/usr/bin/env python3
"""Generate the Colab notebooks (`.ipynb`) from the book's MyST sources (`.md`).

    python tools/make_notebooks.py            # execute each page once, write chapters/*.ipynb and exercises/*.ipynb
    python tools/make_notebooks.py --check    # exit 1 if any committed notebook is stale
    python tools/make_notebooks.py --solutions build/nbval   # problem pages with their worked solutions, for nbval

A generated notebook is what a reader opens in Colab, and it reads like the book's page:

- each `` {glue:text}`name` `` shows the value the page computes (the generator executes the page
  once, with its solutions, and records every glued value; the values used are kept in the
  notebook's metadata, `scalebook.glued`, so `--check` needs no execution);
- citations read "(Williams et al., 2009)" and link to the site's references page; `{doc}` links
  go to the site's page; admonitions become block quotes, `{math}` becomes `$...$`;
- problem statements stay as Markdown with their `answer = None` and `check` cells; solutions are
  dropped; outputs are dropped;
- a chapter's in-text quiz answers (`{solution}`, or an admonition with `:class: dropdown`) stay
  folded under their question, as on the site, in a `<details>` block;
- hidden (`remove-cell`) code cells start with `%%capture`, so they print nothing; the install
  cell is the exception (it must be able to tell the reader to restart the runtime); their code
  is folded (`cellView: form` for Colab, `jupyter.source_hidden` for Jupyter), so a reader sees
  the book's code and not its glue;
- the install cell is written here (`install_cell_source`): it installs the wheel the book build
  puts in the site (`wheel_url()`: `site_url()` from `_config.yml`, then `_static/dist/` and the
  wheel's versioned name), and the oldest supported JAX comes from `pyproject.toml`;
  `make notebooks` also writes it into the `.md` sources, so both stay the same (TOOLCHAIN.md, notes 2-4).

`--solutions DIR` writes, for each problem page, a notebook with every `answer = None` cell
replaced by its worked solution's code (each ending in `check("id", answer)`) and a first cell
that turns on strict mode, so that running it raises at the first solution that misses its key;
`make test` runs those and the chapter notebooks under pytest's nbval plugin (`--nbval-lax`).
Nothing is executed to write them, and they are never committed.

The notebook's metadata says which page it is: `{"scalebook": {"page": "01-rooflines",
"kind": "chapter" | "problems"}}`. The `.md` is the source that people edit; the `.ipynb`
beside it is never edited by hand.
"""
from __future__ import annotations

import argparse
import ast
import hashlib
import json
import os
import re
import sys
import tempfile
from concurrent.futures import ProcessPoolExecutor
from functools import lru_cache
from pathlib import Path

import jupytext
import nbformat

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "book" / "_ext"))
from scalebook_site import author_year_labels  # noqa: E402  (the site's labels, letter for letter)
SOURCES = ("chapters", "exercises")
KINDS = {"chapters": "chapter", "exercises": "problems"}
CACHE = "build/glue"  # glued values per page, keyed by a hash of the page and the package

_FENCE = re.compile(r"^(?P<ticks>`{3,}|:{3,})\{(?P<name>[\w:-]+)\}\s*(?P<arg>.*)$")
_ROLE = re.compile(r"\{(?P<role>[\w:-]+)\}`(?P<body>[^`]*)`")
_OPTION = re.compile(r"^:[\w-]+:")
_CAPTURE = "%%capture\n"


# ---------------------------------------------------------------- one place for URLs and versions

def _config() -> dict:
    import yaml

    return yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))


def repository_url() -> str:
    """The repository URL (`_config.yml`, `repository.url`): launch buttons and the install cell."""
    return _config()["repository"]["url"].rstrip("/")


def site_url() -> str:
    """The published site: `html.baseurl` in `_config.yml`, else GitHub Pages of the repository."""
    base = (_config().get("html") or {}).get("baseurl")
    if base:
        return base.rstrip("/")
    m = re.match(r"^https://github\.com/([^/]+)/([^/]+)$", repository_url())
    if not m:
        raise SystemExit("_config.yml: set html.baseurl (the repository is not on GitHub)")
    return f"https://{m.group(1)}.github.io/{m.group(2)}"


WHEEL_DIR = "_static/dist"  # where the book build puts the package's wheel, under the site's root


def package_version() -> str:
    """The package's version: `__version__` in scalebook/__init__.py (the one version source)."""
    text = (ROOT / "scalebook" / "__init__.py").read_text(encoding="utf-8")
    return re.search(r'^__version__ = "([^"]+)"', text, re.M).group(1)


def wheel_filename() -> str:
    """The wheel's file name, as the build names it: `scalebook-{version}-py3-none-any.whl` (a pure
    Python package). pip needs this real name in a URL: it reads the name and version from it."""
    return f"scalebook-{package_version()}-py3-none-any.whl"


def wheel_url() -> str:
    """Where the published site serves the package: `site_url()` + `/_static/dist/` + the wheel's name
    (`tools/build_book.py` puts it there), so a reader needs nothing but the site."""
    return f"{site_url()}/{WHEEL_DIR}/{wheel_filename()}"


def min_jax() -> tuple[int, ...]:
    """The oldest JAX the package supports: the `jax>=X.Y.Z` of the `[jax]` extra in pyproject.toml."""
    import tomllib

    extra = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]["jax"]
    (spec,) = [s for s in extra if s.startswith("jax>=")]
    return tuple(int(n) for n in spec.removeprefix("jax>=").split("."))


def install_cell_source() -> str:
    """The first code cell of every page (hidden in the book, run in Colab)."""
    v = min_jax()
    dotted = ".".join(map(str, v))
    return f'''\
# Colab only: install scalebook, and upgrade JAX when the runtime's is older than {dotted}.
# Anywhere else (the book build, your own Jupyter) this cell does nothing.
import sys
if "google.colab" in sys.modules:
    import os, re
    from importlib.metadata import PackageNotFoundError, version
    try:
        jax_version = tuple(int(n) for n in re.findall(r"\\d+", version("jax"))[:3])
    except PackageNotFoundError:
        jax_version = None
    try:
        import scalebook
        ready = jax_version is not None and jax_version >= {v!r}
    except ImportError:
        ready = False
    if not ready:
        source = os.environ.get("SCALEBOOK_SOURCE", "{wheel_url()}")
        get_ipython().run_line_magic("pip", f"install -q 'scalebook[jax,plot] @ {{source}}'")
        if jax_version is not None and jax_version < {v!r}:
            print("JAX upgraded to {dotted} or newer: restart the runtime (Runtime > Restart session), then run all cells.")'''


def is_install_cell(cell) -> bool:
    return cell.cell_type == "code" and "google.colab" in cell.source


# ---------------------------------------------------------------- citations

@lru_cache(maxsize=1)
def bibliography() -> dict[str, str]:
    """Author-year labels from book/references.bib, exactly as the site prints them:
    key -> "Williams et al., 2009" ("NVIDIA, 2024b" where several works share author and year)."""
    return author_year_labels(ROOT / "book" / "references.bib")


def _cite(keys: str) -> str:
    bib = bibliography()
    parts = []
    for key in (k.strip() for k in keys.split(",")):
        if key not in bib:
            raise SystemExit(f"{{cite}}`{key}`: no such key in book/references.bib")
        parts.append(f"[{bib[key]}]({site_url()}/book/references.html)")
    return "(" + "; ".join(parts) + ")"


# ---------------------------------------------------------------- glue values

def format_glued(text: str, spec: str) -> str:
    """What myst-nb's `{glue:text}` shows for a value whose text/plain is `text` (myst_nb.core.variables)."""
    try:
        value = ast.literal_eval(text)
    except (SyntaxError, ValueError):
        value = text
    if spec == "":
        return str(value)
    kind = spec[-1]
    if kind == "s":
        value = str(value)
    elif kind in "bcdoxX":
        value = int(value)
    elif kind in "eEfFgGn%":
        value = float(value)
    return format(value, spec)


_INSTALL = re.compile(r"(```\{code-cell\}[^\n]*\n:tags: \[remove-cell\]\n)((?:(?!\n```).)*?google\.colab(?:(?!\n```).)*)(\n```)", re.S)


def _fingerprint(md_path: Path) -> str:
    """Changes when the page (apart from its install cell) or the package changes."""
    h = hashlib.sha256(_INSTALL.sub("", md_path.read_text(encoding="utf-8"), count=1).encode())
    for p in sorted((ROOT / "scalebook").rglob("*")):
        if p.suffix in (".py", ".json"):
            h.update(p.relative_to(ROOT).as_posix().encode() + p.read_bytes())
    return h.hexdigest()


def execute_for_glue(md_path: Path) -> dict[str, str]:
    """Run the page (with its solutions) once and return every glued value as text/plain."""
    sys.path.insert(0, str(ROOT / "tools"))
    import run_notebook

    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "glue.jsonl"
        run_notebook.execute(md_path, env={"SCALEBOOK_GLUE_LOG": str(log), "PYTHONPATH": str(ROOT)})
        return read_glue_log(log)


def read_glue_log(log: Path) -> dict[str, str]:
    """The {name: text} a run wrote through `scalebook.notebook.glue` (the last value wins)."""
    values = {}
    if log.exists():
        for line in log.read_text(encoding="utf-8").splitlines():
            rec = json.loads(line)
            values[rec["name"]] = rec["text"]
    return values


def glued_values(md_path: Path) -> dict[str, str]:
    """The page's glued values, from the cache when the page and the package are unchanged."""
    cache = ROOT / CACHE / (md_path.parent.name + "-" + md_path.stem + ".json")
    key = _fingerprint(md_path)
    if cache.exists():
        data = json.loads(cache.read_text())
        if data.get("fingerprint") == key:
            return data["values"]
    values = execute_for_glue(md_path)
    cache.parent.mkdir(parents=True, exist_ok=True)
    cache.write_text(json.dumps({"fingerprint": key, "values": values}, indent=1, sort_keys=True))
    return values


# ---------------------------------------------------------------- Markdown

class _Page:
    """What a role needs to know: the page's location and its glued values."""

    def __init__(self, md_path: Path, glued: dict[str, str]):
        self.md_path, self.glued, self.used = md_path, glued, {}
        self.kind = KINDS.get(md_path.parent.name, "chapter")

    def role(self, m: re.Match) -> str:
        role, body = m.group("role"), m.group("body")
        if role.startswith("glue"):
            name, _, spec = body.partition(":")
            if name not in self.glued:
                raise SystemExit(f"{self.md_path.name}: {{glue:text}}`{name}` was not glued when the page ran")
            self.used[name] = self.glued[name]
            return format_glued(self.glued[name], spec)
        if role.startswith("cite"):
            return _cite(body)
        if role == "math":
            return f"${body}$"
        if role == "eq":
            return f"({body})"
        label = re.match(r"^(.*?)\s*<([^>]*)>$", body)
        text, target = (label.group(1), label.group(2)) if label else (body, body)
        if role == "doc":
            page = (self.md_path.parent / target).resolve()
            try:
                rel = page.relative_to(ROOT.resolve()).as_posix()
            except ValueError:
                return text
            if not label:
                text = _title(page.with_suffix(".md")) or text
            return f"[{text}]({site_url()}/{rel}.html)"
        return text


def _title(md: Path) -> str | None:
    if not md.exists():
        return None
    prose = re.sub(r"(?ms)^```.*?^```", "", md.read_text(encoding="utf-8"))  # not a comment in a code cell
    m = re.search(r"(?m)^# (.+)$", prose)
    return m.group(1).strip() if m else None


def _folded(lines: list[str], index: int) -> bool:
    """Whether the directive opened at `lines[index]` has the option `:class: dropdown`."""
    for line in lines[index + 1:]:
        stripped = line.strip()
        if not _OPTION.match(stripped) or stripped.startswith(":::"):
            return False
        if re.match(r"^:class:.*\bdropdown\b", stripped):
            return True
    return False


def _markdown(text: str, state: dict, page: _Page) -> str | None:
    """Rewrite one Markdown cell; returns None when nothing remains. `state` carries across cells."""
    out: list[str] = []
    stack: list[tuple[str, str]] = []  # (closing fence, kind)
    lines = text.splitlines()
    for index, line in enumerate(lines):
        stripped = line.strip()
        m = _FENCE.match(stripped)
        if state.get("in_solution"):
            if m and m.group("name") == "solution-end":
                state["in_solution"] = False
                state["skip_close"] = m.group("ticks")
            continue
        if state.get("skip_close"):
            # A directive whose body is dropped: skip its options, then its closing fence.
            if _OPTION.match(stripped) and not stripped.startswith(":::"):
                continue
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
                arg = _ROLE.sub(page.role, arg)
                title = (f"**Problem {arg}**" if re.match(r"^\d+\.\d+\b", arg)
                         else f"**Problem {state['problem']}" + (f": {arg}" if arg else "") + "**")
                out.extend([title, ""])
                state["skip_close"] = ticks
                continue
            depth = sum(1 for _, k in stack if k == "quote")
            if page.kind == "chapter" and (name == "solution" or _folded(lines, index)):
                # A chapter's quiz answer (a `{solution}` or a dropdown admonition) stays folded
                # under its question, as on the site: a <details> block that Jupyter and Colab render.
                head = "Answer" if name == "solution" else (arg if name == "admonition" else name.capitalize())
                out += [("> " * depth + f"<details><summary><b>{_ROLE.sub(page.role, head)}</b></summary>").rstrip(),
                        ("> " * depth).rstrip()]
                stack.append((ticks, "fold"))
                continue
            if name in ("solution", "glue:figure", "figure", "code-cell"):
                stack.append((ticks, "drop"))
                continue
            if name == "math":
                out.append("$$")
                stack.append((ticks, "math"))
                continue
            head = arg if name == "admonition" else (name.capitalize() + (f": {arg}" if arg else ""))
            out.append(f"> **{_ROLE.sub(page.role, head)}**")
            out.append(">")
            stack.append((ticks, "quote"))
            continue
        if stack and stripped == stack[-1][0]:
            kind = stack.pop()[1]
            if kind == "math":
                out.append("$$")
            if kind == "fold":
                depth = sum(1 for _, k in stack if k == "quote")
                out += [("> " * depth).rstrip(), "> " * depth + "</details>"]
            continue
        if stack and _OPTION.match(stripped):
            continue  # directive options
        if re.match(r"^\([\w.-]+\)=\s*$", stripped):
            continue  # MyST target labels
        if stack and any(k == "drop" for _, k in stack):
            continue
        line = _ROLE.sub(page.role, line)
        depth = sum(1 for _, k in stack if k == "quote")
        out.append(("> " * depth + line).rstrip() if depth else line)
    while out and not out[-1].strip():
        out.pop()
    while out and not out[0].strip():
        out.pop(0)
    return "\n".join(out) if out else None


# ---------------------------------------------------------------- notebooks

def page_name(md_path: Path) -> str:
    return md_path.stem


def convert(md_path: Path, glued: dict[str, str]) -> nbformat.NotebookNode:
    """The Colab notebook for one MyST source, with `glued` values ({name: text/plain}) in its prose."""
    src = jupytext.read(md_path, fmt="md:myst")
    rel = md_path.relative_to(ROOT).as_posix()
    site_page = f"{site_url()}/{md_path.relative_to(ROOT).with_suffix('.html').as_posix()}"
    cells = [nbformat.v4.new_markdown_cell(
        f"*Generated from [`{rel}`]({repository_url()}/blob/main/{rel}) of the scalebook textbook: "
        f"run it top to bottom. The [book's page]({site_page}) shows the same text with its outputs "
        "and worked solutions.*")]
    page = _Page(md_path, glued)
    state: dict = {}
    for cell in src.cells:
        if cell.cell_type == "markdown":
            text = _markdown(cell.source, state, page)
            if text:
                cells.append(nbformat.v4.new_markdown_cell(text))
        elif cell.cell_type == "code":
            if state.get("in_solution"):
                continue
            tags = [t for t in cell.metadata.get("tags", []) if t in ("remove-cell", "hide-input", "hide-output", "remove-input")]
            source = cell.source
            if is_install_cell(cell):
                source = install_cell_source()
            elif "remove-cell" in tags and not source.startswith("%%capture"):
                source = _CAPTURE + source
            new = nbformat.v4.new_code_cell(source)
            if tags:
                new.metadata["tags"] = tags
            if "remove-cell" in tags:  # book plumbing: folded away in Colab and in Jupyter
                new.metadata["cellView"] = "form"
                new.metadata["jupyter"] = {"source_hidden": True}
            cells.append(new)
    nb = nbformat.v4.new_notebook(cells=cells)
    nb.metadata = {
        "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
        "language_info": {"name": "python"},
        "colab": {"provenance": []},
        "scalebook": {"page": page_name(md_path), "kind": KINDS.get(md_path.parent.name, "chapter"),
                      "glued": dict(sorted(page.used.items()))},
    }
    for i, cell in enumerate(nb.cells):
        cell["id"] = f"c{i:03d}"
    return nb


def sources() -> list[Path]:
    return sorted(p for d in SOURCES for p in (ROOT / d).glob("*.md"))


def book_pages_with_install_cell() -> list[Path]:
    """The book's own pages (book/*.md) that run code and so carry an install cell; they get no
    notebook, but a reader who opens one in Colab installs the same wheel as from a chapter."""
    return sorted(p for p in (ROOT / "book").glob("*.md") if "google.colab" in p.read_text(encoding="utf-8"))


def committed_glued(md_path: Path) -> dict[str, str]:
    """The glued values recorded in the committed notebook (empty when there is none)."""
    nb_path = md_path.with_suffix(".ipynb")
    if not nb_path.exists():
        return {}
    meta = json.loads(nb_path.read_text(encoding="utf-8")).get("metadata", {})
    return meta.get("scalebook", {}).get("glued", {})


def render(md_path: Path, glued: dict[str, str] | None = None) -> str:
    """The notebook's text; without `glued`, with the values recorded in the committed notebook."""
    return nbformat.writes(convert(md_path, committed_glued(md_path) if glued is None else glued),
                           version=4) + "\n"


def write_install_cell(md_path: Path) -> bool:
    """Put the canonical install cell into the MyST source; True when it changed."""
    text = md_path.read_text(encoding="utf-8")
    m = _INSTALL.search(text)
    if not m:
        raise SystemExit(f"{md_path}: no install cell (a remove-cell code cell that checks google.colab)")
    new = text[:m.start(2)] + install_cell_source() + text[m.end(2):]
    if new != text:
        md_path.write_text(new, encoding="utf-8")
    return new != text


# ---------------------------------------------------------------- worked solutions for nbval

_SOLUTION_START = re.compile(r"^[`:]{3,}\{solution-start\}")
_SOLUTION_END = re.compile(r"^[`:]{3,}\{solution-end\}")
STRICT_CELL = ('import os\n'
               'os.environ["SCALEBOOK_STRICT"] = "1"  # every check() below raises unless its answer is right')


def solutions_notebook(md_path: Path) -> nbformat.NotebookNode:
    """The problem page `md_path` as a notebook whose `answer = None` cells are replaced by their
    worked solutions' code, after a first cell that turns on strict mode (`check()` then raises
    for anything but a correct answer). Markdown is kept as it is. Raises `SystemExit` when a
    solution has no `answer = None` cell before it, or a page has no solution."""
    nb = jupytext.read(md_path, fmt="md:myst")
    out, pending, code, inside, solved = [], None, [], False, 0
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            for line in cell.source.splitlines():
                if _SOLUTION_START.match(line.strip()):
                    inside, code = True, []
                elif _SOLUTION_END.match(line.strip()):
                    inside = False
                    if pending is None:
                        raise SystemExit(f"{md_path.name}: a solution without an `answer = None` cell before it")
                    out[pending:pending + 1] = code
                    pending, solved = None, solved + 1
            out.append(cell)
        elif inside:
            code.append(nbformat.v4.new_code_cell(cell.source))
        elif cell.source.lstrip().startswith("answer = None"):
            pending = len(out)
            out.append(cell)
        else:
            out.append(cell)
    if not solved:
        raise SystemExit(f"{md_path.name}: no worked solution to check")
    cells = [nbformat.v4.new_code_cell(STRICT_CELL)] + [
        nbformat.v4.new_code_cell(c.source) if c.cell_type == "code" else nbformat.v4.new_markdown_cell(c.source)
        for c in out]
    new = nbformat.v4.new_notebook(cells=cells)
    new.metadata = {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
                    "language_info": {"name": "python"},
                    "scalebook": {"page": page_name(md_path), "kind": "solutions"}}
    for i, cell in enumerate(new.cells):
        cell["id"] = f"s{i:03d}"
    return new


def write_solutions(folder: Path, pages: list[Path] | None = None) -> list[Path]:
    """Write `solutions_notebook` of every problem page (or of `pages`) into `folder`; the paths written."""
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for md in pages or sorted((ROOT / "exercises").glob("*.md")):
        path = folder / f"{md.stem}.ipynb"
        path.write_text(nbformat.writes(solutions_notebook(md)) + "\n", encoding="utf-8")
        written.append(path)
    return written


def _build_one(md: str) -> str:
    md_path = Path(md)
    write_install_cell(md_path)
    md_path.with_suffix(".ipynb").write_text(render(md_path, glued_values(md_path)), encoding="utf-8")
    return md_path.relative_to(ROOT).as_posix()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="fail if a committed notebook is stale (executes nothing)")
    ap.add_argument("--jobs", type=int, default=int(os.environ.get("JOBS", "2")), help="pages executed at once")
    ap.add_argument("--solutions", metavar="DIR", type=Path,
                    help="write the problem pages with their worked solutions in place into DIR (executes nothing)")
    ap.add_argument("pages", nargs="*", type=Path, help="only these .md sources (default: all)")
    args = ap.parse_args(argv)
    if args.solutions is not None:
        chosen = [p.resolve() for p in args.pages if p.resolve().parent.name == "exercises"] or None
        written = write_solutions(args.solutions, chosen)
        print(f"wrote {len(written)} notebooks with worked solutions into {args.solutions}", flush=True)
        return 0
    pages = [p.resolve() for p in args.pages] or sources()
    if args.check:
        stale = [md.relative_to(ROOT).as_posix() for md in pages
                 if not md.with_suffix(".ipynb").exists()
                 or md.with_suffix(".ipynb").read_text(encoding="utf-8") != render(md)]
        if stale:
            print("stale notebooks (run `make notebooks`): " + ", ".join(stale), file=sys.stderr)
            return 1
        return 0
    if not args.pages:
        for md in book_pages_with_install_cell():
            if write_install_cell(md):
                print(f"wrote the install cell of {md.relative_to(ROOT).as_posix()}", flush=True)
    failed = []
    with ProcessPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        futures = {pool.submit(_build_one, str(md)): md for md in pages}
        for future, md in futures.items():
            try:
                print(f"wrote {Path(future.result()).with_suffix('.ipynb')}", flush=True)
            except Exception as e:  # one page failing to run should not stop the others
                failed.append(md.relative_to(ROOT).as_posix())
                print(f"FAILED {failed[-1]}: {str(e)[-1500:]}", file=sys.stderr, flush=True)
    if failed:
        print("pages that did not run (their notebooks were not written): " + ", ".join(failed), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
