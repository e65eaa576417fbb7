"""tools/build_book.py: the figure problems the kernels log are listed under the page showing them;
the outputs a reader should not see (tools/site/page_scan.py) fail `--check`."""
import importlib.util
import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("build_book", ROOT / "tools" / "build_book.py")
build_book = importlib.util.module_from_spec(_spec)
sys.modules["build_book"] = build_book
_spec.loader.exec_module(build_book)


def test_each_problem_is_listed_under_the_page_whose_image_has_that_description(tmp_path, monkeypatch):
    monkeypatch.setattr(build_book, "toc_pages", lambda: ["chapters/05-training", "chapters/06-training-llama"])
    (tmp_path / "chapters").mkdir()
    (tmp_path / "chapters" / "05-training.html").write_text('<img alt="Tokens per chip. Panel 1: the plan&#x27;s best" src="a.png">')
    (tmp_path / "chapters" / "06-training-llama.html").write_text('<img alt="Something else." src="b.png">')
    log = tmp_path / "figures.jsonl"
    log.write_text("\n".join(json.dumps(r) for r in [
        {"figure": "Tokens per chip. Panel 1: the plan's best", "problems": ["'a' overlaps 'b'"], "smallest_pt": 9.0},
        {"figure": "Something else.", "problems": [], "smallest_pt": 9.0},
        {"figure": "Not on any page.", "problems": ["'c' crosses the frame of its axes"], "smallest_pt": 9.0},
    ]) + "\n")
    found = build_book.figure_problems(log, tmp_path)
    assert found == {"chapters/05-training": ["figure 'Tokens per chip. Panel 1: the plan's best...': 'a' overlaps 'b'"],
                     "a page": ["figure 'Not on any page....': 'c' crosses the frame of its axes"]}


def test_no_log_no_problems(tmp_path):
    assert build_book.figure_problems(tmp_path / "none.jsonl", tmp_path) == {}


def _site(tmp_path, body):
    (tmp_path / "book").mkdir(exist_ok=True)
    (tmp_path / "book" / "page.html").write_text(f'<html><body><article class="bd-article">{body}</article></body></html>')
    return tmp_path


def _checked(tmp_path, monkeypatch, body, strict=True):
    monkeypatch.setattr(build_book, "HTML", _site(tmp_path, body))
    monkeypatch.setattr(build_book, "toc_pages", lambda: ["book/page"])
    monkeypatch.setattr(build_book, "figure_problems", lambda: {})
    build_book.check(figures=strict)


def test_the_check_fails_on_a_repr_or_an_unformatted_number_naming_page_and_rule(tmp_path, monkeypatch):
    out = '<div class="cell_output"><pre>Workload(llama3-70b, batch 8) took 0.43508877432736315 s</pre></div>'
    with pytest.raises(SystemExit) as e:
        _checked(tmp_path, monkeypatch, out)
    assert "book/page: repr: Workload(llama3-70b" in str(e.value) and "book/page: long float:" in str(e.value)


def test_the_check_passes_a_page_whose_numbers_are_in_code_and_math(tmp_path, monkeypatch):
    _checked(tmp_path, monkeypatch, '<p>Pass <code>--bytes 1e9</code>; <span class="math">\\(1.5e13\\)</span>; 3.2 ms.</p>')


def test_without_check_the_findings_are_listed_not_fatal(tmp_path, monkeypatch, capsys):
    _checked(tmp_path, monkeypatch, "<p>6.35e+24 FLOP</p>", strict=False)
    assert "book/page: outputs a reader should not see" in capsys.readouterr().err
