"""A problem's answer is not printed in the chapter it follows.

A reader who meets problem 1.2 should not find its key in chapter 1's table. For each page below,
the chapter is executed and every output it shows (printed text, tables, values) and its glued
prose (`glued_prose.render`) are collected; each key of the page's problems, written as a chapter
would print it (3 significant figures, with or without thousands separators), must not appear
there as a number of its own. Whole-number keys under 100 (a count of layers, heads, nodes)
would match by chance and are left out.

`STILL_PRINTED` lists the problems known to leak that are not rewritten yet, each with where
the chapter prints its key; the test fails on any other leak, and on a listed one that no longer
leaks (remove it from the list then).
"""
import math
import re
from pathlib import Path

import jupytext
import nbclient
import pytest

import glued_prose as gp
from scalebook.exercises import problems

ROOT = Path(__file__).resolve().parent.parent
PAGES = ["01-rooflines", "02b-gpus", "04-transformers"]
STILL_PRINTED = {
    "01-rooflines": set(),
    "02b-gpus": set(),
    "04-transformers": set(),
}


def printed_forms(x: float) -> set[str]:
    """How a chapter would print `x` to 3 significant figures: '206', '7.73', '16.0', '61,500' / '61500'."""
    if abs(x) >= 100:
        s = str(int(round(x, 2 - math.floor(math.log10(abs(x))))))
    else:
        s = f"{x:#.3g}"  # keeps the third figure: '16.0', '7.73', '0.250'
    forms = {s}
    if re.fullmatch(r"-?\d+(\.\d+)?", s):
        whole, _, frac = s.partition(".")
        forms.add(f"{int(whole):,}" + (f".{frac}" if frac else ""))
    return forms


def appears(form: str, text: str) -> bool:
    """`form` as a number of its own: not part of a longer number ('206' is not in '2,206' or '20.6')."""
    return re.search(rf"(?<![\d.,]){re.escape(form)}(?![\d]|[.,]\d)", text) is not None


def chapter_text(page: str) -> str:
    md = ROOT / "chapters" / f"{page}.md"
    nb = jupytext.read(md, fmt="md:myst")
    nbclient.NotebookClient(nb, timeout=600, kernel_name="python3",
                            resources={"metadata": {"path": str(md.parent)}}).execute()
    parts = []
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            parts.append(out.get("text", ""))
            for mime in ("text/plain", "text/markdown", "text/html"):
                parts.append(re.sub(r"<[^>]+>", " ", str(out.get("data", {}).get(mime, ""))))
    sents, _ = gp.render(md.read_text(encoding="utf-8"), gp.glue_values(md), page)
    parts += [s.plain for s in sents]
    return "\n".join(parts)


def test_printed_forms_and_appears_read_numbers_as_a_chapter_prints_them():
    assert printed_forms(205.99) == {"206"}
    assert printed_forms(7.734375) == {"7.73"}
    assert printed_forms(15.996) == {"16.0"}
    assert printed_forms(61502.4) == {"61500", "61,500"}
    assert appears("206", "| H200 | 206 |") and not appears("206", "2,206 or 20.6 or 206.5")


@pytest.mark.slow
@pytest.mark.parametrize("page", PAGES)
def test_no_problem_key_is_printed_in_its_chapter(page):
    text = chapter_text(page)
    leaks = {}
    for p in problems(page=page):
        key = p.answer()
        if not isinstance(key, (int, float)) or float(key).is_integer() and abs(key) < 100:
            continue  # small whole numbers match by chance
        found = sorted(f for f in printed_forms(float(key)) if appears(f, text))
        if found:
            leaks[p.id] = f"{p.id} ({p.title}): key {found[0]} is printed in chapters/{page}.md"
    new = [msg for pid, msg in leaks.items() if pid not in STILL_PRINTED[page]]
    assert not new, "problem keys printed in the chapter:\n" + "\n".join(new)
    fixed = STILL_PRINTED[page] - set(leaks)
    assert not fixed, f"no longer printed in the chapter, remove from STILL_PRINTED: {sorted(fixed)}"
