"""What the built site needs so that it stands alone and reads well (loaded from `_config.yml`).

- **MathJax from the site itself.** The pinned MathJax 3 of `tools/site/package.json` (installed
  by `tools/build_book.py` with npm into `tools/site/node_modules`) is served from
  `_static/mathjax`, and Sphinx's `mathjax_path` points there: no page asks a CDN for it, so
  formulas render offline. Only the files the pages load are shipped (`MATHJAX_FILES`: the
  `tex-chtml` bundle, its web fonts and the TeX extensions it may autoload; about 2 MB of the
  24 MB distribution). A build without it stops with the command that installs it.
- **Interactive figures.** The pinned Vega, Vega-Lite and vega-embed scripts are served from
  `_static/vega` (`stage_vega`), and the kernels run with `SCALEBOOK_SITE_BUILD` set, so
  `scalebook.interactive` figures emit their site version (scalebook/interactive/_site.py).
- **Weight.** The theme's 1.5 MB icon script (`scripts/fontawesome.js`, which redraws the icons
  the theme's CSS already draws with its web fonts) and the source maps are left out of the site.
- **Search.** Result snippets are read from the page without its code cells, and math shows as
  its TeX without the `\\(` `\\)` delimiters (`_static/scalebook-search.js`). On the search
  page the sidebar's search field is hidden (the page has its own box; `scalebook.css`).
- **Author-year bibliography.** A pybtex style `authoryear` labels each entry "Williams et al.,
  2009" (with a letter where two entries would share it: "NVIDIA, 2024b") and sorts by author,
  year, title; `_config.yml` makes it the default style. The in-text citations print that same
  label in round brackets (reference style `authoryear_label`).
- **Alt text for every figure.** Figures from `scalebook.plots` carry a description in their PNG
  (`Description` text chunk, written by `scalebook.plots._style`); each image a cell outputs gets
  it as its `alt`. An output image without one is logged; tools/browser_check.py fails on it.
- **Nothing from elsewhere.** sphinx-thebe's scripts (which name a CDN; the book has no Thebe
  button) are left out of the pages, and the theme's colour mode is set so its script logs no error.
- **Colab buttons only to notebooks.** A page without a generated `.ipynb` beside its source
  (the hardware and CLI reference pages) gets no Colab button.
- **API pages.** `tools/site/api_pages.py` (re)writes `book/api.md` and one page per module
  under `book/api/` before the sources are read, so a new module gets its page.
- **Book CSS.** `book/_static/scalebook.css` (wide outputs scroll inside their cell, tables).
"""
from __future__ import annotations

import json
import re
import struct
import zlib
from pathlib import Path

from docutils import nodes

ROOT = Path(__file__).resolve().parents[2]
ASSETS = ROOT / "tools" / "site"
MATHJAX = ASSETS / "node_modules" / "mathjax"
MATHJAX_ENTRY = "mathjax/es5/tex-chtml.js"
#: What the pages load from the MathJax distribution (glob patterns under node_modules/mathjax).
MATHJAX_FILES = ("LICENSE", "package.json", "es5/tex-chtml.js", "es5/output/chtml/fonts/woff-v2/*",
                 "es5/input/tex/extensions/**/*")
#: Files of the theme no page needs (see the module docstring), relative to the site's _static.
UNUSED_STATIC = ("scripts/fontawesome.js", "scripts/fontawesome.js.LICENSE.txt")


def pinned_mathjax_version() -> str:
    """The MathJax version `tools/site/package.json` pins."""
    return json.loads((ASSETS / "package.json").read_text())["dependencies"]["mathjax"]


# ---------------------------------------------------------------- MathJax served by the site
def _serve_mathjax(app, config) -> None:
    from sphinx.errors import ConfigError

    installed = MATHJAX / "package.json"
    want = pinned_mathjax_version()
    have = json.loads(installed.read_text())["version"] if installed.exists() else None
    if have != want:
        raise ConfigError(
            f"MathJax {want} is not installed in {MATHJAX.parent} (found {have}); run "
            f"`npm ci --prefix tools/site` (tools/build_book.py does this before building)")
    config.mathjax_path = MATHJAX_ENTRY
    # html_static_path entries are copied into _static; this one holds the folder `mathjax`
    # with only the files the pages load.
    subset = stage_vega(stage_mathjax(Path(app.outdir).parent / ".site-static"))
    static = [str(p) for p in config.html_static_path]
    for path in (str(subset), str(Path(__file__).resolve().parents[1] / "_static")):
        if path not in static:
            static.append(path)
    config.html_static_path = static
    css = list(config.html_css_files or [])
    if "scalebook.css" not in css:
        css.append("scalebook.css")
    config.html_css_files = css
    js = list(config.html_js_files or [])
    if "scalebook-search.js" not in js:
        js.append("scalebook-search.js")
    config.html_js_files = js
    # pydata-sphinx-theme logs a console error for an empty mode; say which one we want.
    context = dict(config.html_context or {})
    context.setdefault("default_mode", "light")
    config.html_context = context


def stage_mathjax(target: Path) -> Path:
    """Copy the MathJax files the pages load (`MATHJAX_FILES`) into `target`/mathjax; return `target`."""
    import shutil

    dest = target / "mathjax"
    if dest.exists():
        shutil.rmtree(dest)
    for pattern in MATHJAX_FILES:
        for src in MATHJAX.glob(pattern):
            if src.is_file():
                out = dest / src.relative_to(MATHJAX)
                out.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(src, out)
    return target


#: The interactive figures' scripts (scalebook/interactive/_site.py), served from _static/vega/.
VEGA_FILES = {"vega": "build/vega.min.js", "vega-lite": "build/vega-lite.min.js",
              "vega-embed": "build/vega-embed.min.js"}


def stage_vega(target: Path) -> Path:
    """Copy the pinned Vega, Vega-Lite and vega-embed scripts (and their licences) into
    `target`/vega, where the interactive figures load them; return `target`."""
    import shutil
    from sphinx.errors import ConfigError

    pins = json.loads((ASSETS / "package.json").read_text())["dependencies"]
    dest = target / "vega"
    dest.mkdir(parents=True, exist_ok=True)
    for package, script in VEGA_FILES.items():
        installed = ASSETS / "node_modules" / package
        have = json.loads((installed / "package.json").read_text())["version"] if (installed / "package.json").exists() else None
        if have != pins[package]:
            raise ConfigError(f"{package} {pins[package]} is not installed in {installed.parent} (found {have}); "
                              f"run `npm ci --prefix tools/site`")
        shutil.copy2(installed / script, dest / Path(script).name)
        shutil.copy2(installed / "LICENSE", dest / f"{package}.LICENSE")
    return target


_FONTAWESOME_TAG = re.compile(r'[ \t]*<script defer src="[^"]*_static/scripts/fontawesome\.js[^"]*"></script>\n?')


def drop_unused_static(outdir: Path) -> None:
    """Leave out of the built site what no page needs: the icon script (and its tag in every page)
    and the source maps of the theme's scripts."""
    static = outdir / "_static"
    for rel in UNUSED_STATIC:
        (static / rel).unlink(missing_ok=True)
    for path in static.rglob("*.map"):
        path.unlink()
    for page in outdir.rglob("*.html"):
        text = page.read_text(encoding="utf-8")
        new = _FONTAWESOME_TAG.sub("", text)
        if new != text:
            page.write_text(new, encoding="utf-8")


def _build_finished(app, exception) -> None:
    if exception is None and app.builder.format == "html":
        drop_unused_static(Path(app.outdir))


def _drop_colab_without_notebook(app, pagename, templatename, context, doctree) -> None:
    """A page that runs code but has no generated notebook (.ipynb beside its source) gets no
    Colab button: Colab cannot open the MyST source the theme would otherwise link."""
    for group in context.get("header_buttons", []) or []:
        if group.get("label") != "launch-buttons":
            continue
        group["buttons"] = [b for b in group.get("buttons", [])
                            if "colab" not in str(b.get("url", "")) or str(b.get("url")).endswith(".ipynb")]
    context["header_buttons"] = [g for g in context.get("header_buttons", []) or []
                                 if g.get("label") != "launch-buttons" or g.get("buttons")]


def _drop_thebe(app, pagename, templatename, context, doctree) -> None:
    """Leave out sphinx-thebe's scripts: the book has no Thebe button, and its inline config
    (declared twice by Jupyter Book) is a script error that names a CDN."""
    files = context.get("script_files")
    if not files:
        return
    context["script_files"] = [
        f for f in files
        if "THEBE_JS_URL" not in str(getattr(f, "attributes", {}).get("body", ""))
        and "sphinx-thebe" not in str(getattr(f, "filename", f) or "")
    ]


# ---------------------------------------------------------------- author-year bibliography
def _author_year_label(entry) -> str:
    persons = entry.persons.get("author") or entry.persons.get("editor") or []
    names = ["".join(p.last_names).replace("{", "").replace("}", "") for p in persons]
    if not names:
        names = [re.sub(r"[{}]", "", entry.fields.get("organization", entry.fields.get("title", "?")))]
    if "others" in names[1:]:  # BibTeX's "and others": an author list cut short
        who = f"{names[0]} et al."
    elif len(names) == 1:
        who = names[0]
    elif len(names) == 2:
        who = f"{names[0]} and {names[1]}"
    else:
        who = f"{names[0]} et al."
    return f"{who}, {entry.fields.get('year', 'n.d.')}"


def _with_letters(labels: list[str]) -> list[str]:
    """Append a, b, ... to labels that several entries share ('NVIDIA, 2024a'), in the given order."""
    counts = {lab: labels.count(lab) for lab in labels}
    seen: dict[str, int] = {}
    out = []
    for lab in labels:
        if counts[lab] > 1:
            seen[lab] = seen.get(lab, 0) + 1
            lab += "abcdefghijklmnopqrstuvwxyz"[seen[lab] - 1]
        out.append(lab)
    return out


def author_year_labels(bib_path) -> dict[str, str]:
    """key -> the label the site prints for it ('Williams et al., 2009', 'NVIDIA, 2024b').

    The letters follow the bibliography's sort (author, year, title) over every entry of the file;
    the references page lists every entry (`:all:`), so the notebooks' citations
    (tools/make_notebooks.py) match the site's letter for letter.
    """
    from pybtex.database import parse_file
    from pybtex.plugin import find_plugin

    _register_bib_style()
    entries = list(parse_file(str(bib_path)).entries.values())
    ordered = find_plugin("pybtex.style.sorting", "author_year_title")().sort(entries)
    labels = _with_letters([_author_year_label(e) for e in ordered])
    return {e.key: lab for e, lab in zip(ordered, labels)}


def _register_bib_style() -> None:
    from dataclasses import dataclass, field

    from pybtex.plugin import register_plugin
    from pybtex.style.formatting.unsrt import Style as Unsrt
    from pybtex.style.labels import BaseLabelStyle

    class AuthorYearLabels(BaseLabelStyle):
        """'Williams et al., 2009'; a letter is appended where two entries would share a label."""

        def format_labels(self, sorted_entries):
            yield from _with_letters([_author_year_label(e) for e in sorted_entries])

    class AuthorYearStyle(Unsrt):
        default_label_style = AuthorYearLabels
        default_sorting_style = "author_year_title"

    register_plugin("pybtex.style.labels", "authoryear", AuthorYearLabels, force=True)
    register_plugin("pybtex.style.formatting", "authoryear", AuthorYearStyle, force=True)

    try:
        from sphinxcontrib.bibtex.plugin import register_plugin as register_reference_style
        from sphinxcontrib.bibtex.style.referencing import BracketStyle
        from sphinxcontrib.bibtex.style.referencing.label import LabelReferenceStyle
    except ImportError:  # tools/make_notebooks.py needs only the labels
        return

    def round_brackets() -> BracketStyle:
        return BracketStyle(left="(", right=")", sep="; ", sep2="; ", last_sep="; ")

    @dataclass
    class AuthorYearLabelReferences(LabelReferenceStyle):
        """In-text citations print the bibliography's own label, '(NVIDIA, 2024b)', so that two
        works by the same authors in the same year are told apart in the text as in the list
        (sphinxcontrib-bibtex's author_year style prints the year without the letter)."""

        bracket_parenthetical: BracketStyle = field(default_factory=round_brackets)
        bracket_textual: BracketStyle = field(default_factory=round_brackets)
        bracket_label: BracketStyle = field(default_factory=round_brackets)

    register_reference_style("sphinxcontrib.bibtex.style.referencing", "authoryear_label",
                             AuthorYearLabelReferences, force=True)


# ---------------------------------------------------------------- alt text from the PNG
def png_description(data: bytes) -> str | None:
    """The `Description` text chunk of a PNG (tEXt, zTXt or iTXt), or None."""
    if not data.startswith(b"\x89PNG\r\n\x1a\n"):
        return None
    pos = 8
    while pos + 8 <= len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        pos += 12 + length
        if kind == b"tEXt":
            key, _, value = body.partition(b"\0")
            if key == b"Description":
                return value.decode("latin-1")
        elif kind == b"zTXt":
            key, _, rest = body.partition(b"\0")
            if key == b"Description":
                return zlib.decompress(rest[1:]).decode("latin-1")
        elif kind == b"iTXt":
            key, _, rest = body.partition(b"\0")
            if key == b"Description":
                compressed, rest = rest[0], rest[2:]
                _lang, _, rest = rest.partition(b"\0")
                _tkey, _, text = rest.partition(b"\0")
                return (zlib.decompress(text) if compressed else text).decode("utf-8")
        elif kind == b"IEND":
            break
    return None


def _alt_text(app, doctree) -> None:
    from sphinx.util import logging

    log = logging.getLogger(__name__)
    docname = app.env.docname
    for img in doctree.findall(nodes.image):
        uri = img.get("uri", "")
        if img.get("alt") or not uri.endswith(".png"):
            continue
        path = Path(app.srcdir) / uri.lstrip("/")
        if not path.exists():
            path = Path(app.env.doc2path(docname)).parent / uri
        if not path.exists():
            continue
        text = png_description(path.read_bytes())
        if text:
            img["alt"] = text
        elif "jupyter_execute" in str(path) or "/_build/" in str(path):
            # tools/browser_check.py fails on it; the build goes on so the whole site can be checked
            log.info(f"{docname}: a figure a cell outputs has no description (alt text); draw it "
                     "with scalebook.plots, or after a scalebook.plots figure in the same notebook",
                     location=img)


def _write_api_pages(app, config) -> None:
    import importlib.util
    import sys

    spec = importlib.util.spec_from_file_location("scalebook_api_pages", ROOT / "tools" / "site" / "api_pages.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    mod.write()


def setup(app):
    import os

    # The kernels that execute the pages inherit this: interactive figures emit their site version.
    os.environ["SCALEBOOK_SITE_BUILD"] = "1"
    _register_bib_style()
    app.connect("config-inited", _serve_mathjax)
    app.connect("config-inited", _write_api_pages)
    app.connect("doctree-read", _alt_text)
    app.connect("html-page-context", _drop_thebe, priority=900)
    app.connect("html-page-context", _drop_colab_without_notebook, priority=900)
    app.connect("build-finished", _build_finished)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
