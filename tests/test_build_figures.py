"""tools/build_book.py: the figure problems the kernels log are listed under the page showing them."""
import importlib.util
import json
import sys
from pathlib import Path

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
