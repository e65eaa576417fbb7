"""tools/site/weight.py: a page weighs its HTML plus the local files it names, each once."""
import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("site_weight", ROOT / "tools" / "site" / "weight.py")
weight = importlib.util.module_from_spec(_spec)
sys.modules["site_weight"] = weight
_spec.loader.exec_module(weight)


def _site(tmp_path):
    (tmp_path / "_static").mkdir()
    (tmp_path / "_images").mkdir()
    (tmp_path / "chapters").mkdir()
    (tmp_path / "_static" / "a.js").write_bytes(b"x" * 100)
    (tmp_path / "_static" / "b.css").write_bytes(b"x" * 10)
    (tmp_path / "_static" / "unused.js").write_bytes(b"x" * 1000)
    (tmp_path / "_images" / "f.png").write_bytes(b"x" * 50)
    html = ('<script src="../_static/a.js?v=1"></script><link rel="stylesheet" href="../_static/b.css" />'
            '<img src="../_images/f.png" alt="f"/><img src="../_images/f.png" alt="again"/>'
            '<script src="https://cdn.example/x.js"></script><a href="../_static/unused.js">x</a>')
    page = tmp_path / "chapters" / "01.html"
    page.write_text(html)
    (tmp_path / "index.html").write_text("<p>home</p>")
    return page, len(html)


def test_a_page_weighs_its_html_and_the_files_it_loads_once(tmp_path):
    page, html = _site(tmp_path)
    assert weight.page_bytes(page, tmp_path) == html + 100 + 10 + 50


def test_links_and_outside_addresses_are_not_loads(tmp_path):
    page, _ = _site(tmp_path)
    names = {p.name for p in weight.page_files(page, tmp_path)}
    assert names == {"01.html", "a.js", "b.css", "f.png"}


def test_the_site_size_counts_every_file(tmp_path):
    page, html = _site(tmp_path)
    assert weight.site_bytes(tmp_path) == html + 100 + 10 + 1000 + 50 + len("<p>home</p>")


def test_the_report_lists_pages_heaviest_first(tmp_path):
    _site(tmp_path)
    text = weight.report(tmp_path)
    assert text.index("chapters/01.html") < text.index("index.html")
    assert text.startswith("site: 0.0 MB")
