"""tools/site/page_scan.py: what counts as a repr or an unformatted number on a built page, and
what the scan leaves alone (the code of cells, inline code, API signatures, math, DOIs)."""
import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("page_scan", ROOT / "tools" / "site" / "page_scan.py")
scan = importlib.util.module_from_spec(_spec)
sys.modules["page_scan"] = scan  # dataclasses look their module up there
_spec.loader.exec_module(scan)

CLASSES = frozenset({"Workload", "HloCollective"})


def page(body: str) -> str:
    """A page shaped like the site's: navigation outside the article, the text inside it."""
    return (f"<html><head><title>Workload(x=1)</title><script>var a = 1.5e13;</script></head><body>"
            f"<nav>0.0% 1.2345678</nav><main><article class=\"bd-article\">{body}</article></main></body></html>")


def kinds(body: str) -> list[str]:
    return [f.kind for f in scan.scan_html(page(body), CLASSES)]


def output(text: str) -> str:
    return f'<div class="cell_output docutils container"><div class="output text_plain"><pre>{text}</pre></div></div>'


def test_a_clean_page_has_no_findings():
    assert kinds("<p>The step takes 3.2 ms, 45 % of it compute, at 1.2 × 10<sup>13</sup> tokens.</p>") == []


def test_text_outside_the_article_is_not_read():
    assert scan.scan_html(page(""), CLASSES) == []


@pytest.mark.parametrize("text", ["(250, 240.2439024390244)", "0.43508877432736315", "memory 441.107692"])
def test_an_unrounded_float_is_a_long_float(text):
    assert kinds(output(text)) == ["long float"]


@pytest.mark.parametrize("text", ["81.96428", "3.14159", "2,550.5"])
def test_five_decimals_or_fewer_is_not_a_long_float(text):
    assert kinds(f"<p>{text}</p>") == []


@pytest.mark.parametrize("text", ["4.194e+06 tokens", "1.5e+13", "6.35e+24 FLOP", "3.937e25 FLOP", "2.6e-05 s"])
def test_e_notation_in_prose_or_an_output_is_found(text):
    assert kinds(output(text)) == ["e-notation"]
    assert kinds(f"<p>{text}</p>") == ["e-notation"]


def test_e_notation_at_the_end_of_a_sentence_is_found():
    assert kinds("<p>dense 9.89e14. Next</p>") == ["e-notation"]


def test_e_notation_inside_inline_code_or_a_code_block_is_allowed():
    assert kinds("<p>pass <code class=\"docutils literal\"><span class=\"pre\">--bytes 1e9</span></code></p>") == []
    assert kinds('<div class="highlight"><pre>x = 1e12</pre></div>') == []


def test_words_and_identifiers_with_an_e_are_not_e_notation():
    assert kinds("<p>the 2e team, v5e chips, tpu-v5e, 8e</p>") == []


@pytest.mark.parametrize("text", ["0.0%", "0.00 %", "-0%", "-0.0%", "+0.0%"])
def test_a_share_rounded_to_zero_or_a_negative_zero_is_found(text):
    assert kinds(output(text)) == ["zero percent"]


@pytest.mark.parametrize("text", ["10.0%", "0.1%", "20%", "-10%", "100%"])
def test_other_shares_are_fine(text):
    assert kinds(f"<p>{text}</p>") == []


def test_a_package_class_followed_by_a_bracket_is_a_repr():
    assert kinds(output("HloCollective(all-reduce over X (N=4): f32[256,128])")) == ["repr"]
    assert kinds(output("(Workload(llama3-70b, batch 133: 110 ms/token))")) == ["repr"]


def test_a_dataclass_repr_of_any_class_is_a_repr():
    assert kinds(output("ShardLayout(array='W[D_XZ, F]')")) == ["repr"]


def test_a_class_named_in_prose_without_a_bracket_is_not_a_repr():
    assert kinds("<p>A Workload holds the batch; the HloCollective records one op.</p>") == []


def test_the_code_of_a_cell_is_not_read():
    src = ('<div class="cell_input docutils container"><div class="highlight"><pre>'
           "w = Workload(batch=0.43508877432736315, tokens=1.5e13)  # 0.0%</pre></div></div>")
    assert kinds(src) == []


def test_signatures_and_math_are_not_read():
    sig = '<dl class="py function"><dt class="sig sig-object py">f(eps=1e-09, x=0.1234567)</dt><dd><p>ok</p></dd></dl>'
    math = '<span class="math notranslate nohighlight">\\(1.5e13\\)</span><mjx-container>0.0%</mjx-container>'
    assert kinds(sig + math) == []


def test_a_doi_is_not_a_long_float():
    assert kinds("<p>doi:10.1145/3581784.3607102 .</p>") == []


def test_each_finding_quotes_the_text_around_it():
    (f,) = scan.scan_html(page(output("the fits give (0.8031678241137306, 0.6) for TPUs")), CLASSES)
    assert f == scan.Finding("long float", "the fits give (0.8031678241137306, 0.6) for TPUs")


def test_class_names_are_read_from_the_package_source(tmp_path):
    (tmp_path / "a.py").write_text("class Roofline:\n    pass\nclass _Hidden:\n    class Inner(Base):\n        pass\n")
    assert scan.class_names(tmp_path) == {"Roofline", "Inner"}


def test_the_site_scan_names_pages_and_skips_static_files(tmp_path):
    (tmp_path / "chapters").mkdir()
    (tmp_path / "_static").mkdir()
    (tmp_path / "chapters" / "01.html").write_text(page(output("1.5e+13")))
    (tmp_path / "chapters" / "02.html").write_text(page("<p>fine</p>"))
    (tmp_path / "_static" / "x.html").write_text(page(output("1.5e+13")))
    report = scan.scan_site(tmp_path)
    assert list(report) == ["chapters/01"]
    assert [f.kind for f in report["chapters/01"]] == ["e-notation"]


def test_a_run_pages_outputs_are_scanned_but_not_hidden_cells_images_or_program_text():
    import nbformat

    def cell(text, tags=(), image=False):
        c = nbformat.v4.new_code_cell("x", metadata={"tags": list(tags)})
        data = {"text/plain": text, **({"image/png": "iVBOR"} if image else {})}
        c.outputs = [nbformat.v4.new_output("execute_result", data=data, execution_count=1)]
        return c

    nb = nbformat.v4.new_notebook(cells=[
        cell("Workload(llama3-70b, batch 8)"), cell("0.43508877432736315", tags=["remove-cell"]),
        cell("<Figure size 640x480 with 1 Axes>", image=True), cell("add 9.999999974752427e-07", tags=["program-text"]),
        nbformat.v4.new_code_cell("print(1)", outputs=[nbformat.v4.new_output("stream", name="stdout", text="1.5e+13 tokens\n")]),
    ])
    assert [f.kind for f in scan.scan_html(scan.outputs_html(nb), CLASSES)] == ["e-notation", "repr"]


def test_the_output_of_a_cell_tagged_program_text_is_not_read():
    listing = ('<div class="cell tag_program-text docutils container">'
               + output("h = add g 9.999999974752427e-07:f32[]") + "</div>")
    assert kinds(listing) == [] and kinds(output("add g 9.999999974752427e-07")) == ["long float", "e-notation"]


def test_code_marked_inside_an_output_is_code_but_the_outputs_pre_is_not():
    assert kinds('<div class="cell_output"><div>answer: <code>5e11</code> FLOP/s</div></div>') == []
    assert kinds(output("5e11 FLOP/s")) == ["e-notation"]


def test_glued_prose_is_formatted_as_the_book_shows_it_then_scanned(tmp_path):
    md = tmp_path / "page.md"
    md.write_text("Off by {glue:text}`gap:.2f`%, about {glue:text}`big:,.0f` tokens, ratio {glue:text}`r`.\n")
    found = scan.glued_findings(md, {"gap": "0.001", "big": "1234567.0", "r": "0.8031678241137306"}, CLASSES)
    assert [f.kind for f in found] == ["long float", "zero percent"]
    assert scan.glued_findings(md, {"gap": "1.5", "big": "1234567.0", "r": "0.8"}, CLASSES) == []
