"""book/_ext/scalebook_site.py: the bibliography's author-year labels and the PNG alt text it reads."""
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "book" / "_ext"))

import scalebook_site  # noqa: E402

pybtex = pytest.importorskip("pybtex")


def _labels(bib: str) -> list[str]:
    from pybtex.database import parse_string
    from pybtex.plugin import find_plugin

    scalebook_site._register_bib_style()
    style = find_plugin("pybtex.style.formatting", "authoryear")()
    return [e.label for e in style.format_bibliography(parse_string(bib, "bibtex"))]


def test_one_two_and_three_authors():
    bib = """@article{a, author={Williams, Samuel}, title={T}, journal={J}, year={2009}}
             @article{b, author={Williams, Samuel and Patterson, David}, title={U}, journal={J}, year={2009}}
             @article{c, author={Ainslie, J. and Lee, J. and Jong, M.}, title={V}, journal={J}, year={2023}}"""
    assert _labels(bib) == ["Ainslie et al., 2023", "Williams, 2009", "Williams and Patterson, 2009"]


def test_and_others_reads_et_al():
    assert _labels("@misc{x, author={Brown, Tom and others}, title={T}, year={2020}}") == ["Brown et al., 2020"]


def test_same_author_and_year_get_letters():
    bib = """@misc{x, author={{NVIDIA}}, title={A}, year={2023}}
             @misc{y, author={{NVIDIA}}, title={B}, year={2023}}"""
    assert _labels(bib) == ["NVIDIA, 2023a", "NVIDIA, 2023b"]


def test_a_png_without_a_description_has_none():
    import io

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    plt.close(fig)
    assert scalebook_site.png_description(buf.getvalue()) is None
    assert scalebook_site.png_description(b"not a png") is None


# ------------------------------------------------------------------ what the site ships
def test_only_the_mathjax_files_the_pages_load_are_staged(tmp_path, monkeypatch):
    dist = tmp_path / "mathjax"
    for rel in ("LICENSE", "package.json", "es5/tex-chtml.js", "es5/tex-svg-full.js", "es5/sre/big.js",
                "es5/output/chtml/fonts/woff-v2/MathJax_Main-Regular.woff", "es5/output/svg.js",
                "es5/input/tex/extensions/cancel.js", "es5/input/mml.js"):
        (dist / rel).parent.mkdir(parents=True, exist_ok=True)
        (dist / rel).write_text("x")
    monkeypatch.setattr(scalebook_site, "MATHJAX", dist)
    out = scalebook_site.stage_mathjax(tmp_path / "stage") / "mathjax"
    assert sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file()) == [
        "LICENSE", "es5/input/tex/extensions/cancel.js", "es5/output/chtml/fonts/woff-v2/MathJax_Main-Regular.woff",
        "es5/tex-chtml.js", "package.json"]


def test_the_page_entry_point_is_among_the_staged_files():
    from fnmatch import fnmatch

    assert any(fnmatch(scalebook_site.MATHJAX_ENTRY.removeprefix("mathjax/"), p) for p in scalebook_site.MATHJAX_FILES)


def test_the_icon_script_and_source_maps_are_left_out(tmp_path):
    scripts = tmp_path / "_static" / "scripts"
    scripts.mkdir(parents=True)
    for name in ("fontawesome.js", "fontawesome.js.map", "bootstrap.js", "bootstrap.js.map"):
        (scripts / name).write_text("x")
    (tmp_path / "chapters").mkdir()
    page = tmp_path / "chapters" / "01.html"
    page.write_text('<head>\n  <script defer src="../_static/scripts/fontawesome.js?digest=55c2"></script>\n'
                    '  <link rel="preload" as="script" href="../_static/scripts/bootstrap.js" />\n</head>')
    scalebook_site.drop_unused_static(tmp_path)
    assert sorted(p.name for p in scripts.iterdir()) == ["bootstrap.js"]
    assert page.read_text() == '<head>\n  <link rel="preload" as="script" href="../_static/scripts/bootstrap.js" />\n</head>'
