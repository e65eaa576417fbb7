"""A problem's answer is not printed in the chapter it follows.

A reader who meets problem 1.2 should not find its key in chapter 1's table. For each page below,
the chapter is executed and every output it shows (printed text, tables, values) and its glued
prose (`glued_prose.render`, with the values that run glued) are collected; each key of the
page's problems, written as a chapter would print it (3 significant figures, with or without
thousands separators), must not appear there as a number of its own. A whole-number key under
100 (a count of layers, heads, nodes) would match by chance anywhere, so it counts only next to
the problem's unit ('16 chips', '4 hops'); a unitless small whole number is not checked.

`STILL_PRINTED` lists the problems known to leak that are not rewritten yet, each with where
the chapter prints its key; `COINCIDENT` the keys whose digits the chapter prints for another
quantity, each with the words around that figure (every occurrence must sit in them). The test
fails on any other leak, and on a listed one that no longer appears (remove it from the list then).
"""
import json
import math
import os
import re
import tempfile
from pathlib import Path

import jupytext
import nbclient
import pytest

import glued_prose as gp
from scalebook.exercises import problems

ROOT = Path(__file__).resolve().parent.parent
PAGES = ["01-rooflines", "02-accelerators", "02b-gpus", "03-sharding", "04-transformers", "05-training",
         "06-training-llama", "07-inference", "08-serving-llama", "09-profiling", "10-jax-parallelism",
         "11-conclusion"]
# problem id: where the chapter prints its key (page not rewritten here; its numbers may still change)
STILL_PRINTED = {page: {} for page in PAGES}
COINCIDENT = {
    # problem id: words around the other quantity the chapter prints with the key's digits
    "2.11": "a v5e chip gets 3.12 GB/s",  # a DCN share per chip; the key is a weight read in ms
    "7.9": "with 90%, 1.40 times",  # prefix caching's throughput gain; the key is speculation's speedup
    "4.14": "15.4 kFLOP",  # rotary embeddings per token and layer; the key is PFLOP of attention matmuls
    "9.2": "262 kB for 16.4 kB",  # a padded tile's bytes; the key is an AllReduce's array (also 2^18 B)
    "6.7": "b-a100-",  # the 530B runs on 2,240 A100s (ids ...-530b-a100-...); the key is a critical batch in tokens
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


#: Time units a chapter prints its measurements in (wall-clock times of this run, which vary).
TIME_UNITS = ("ns", "µs", "us", "ms", "s")


def appears(form: str, text: str, unit: str = "", key_unit: str = "") -> bool:
    """`form` as a number of its own: not part of a longer number ('206' is not in '2,206' or '20.6');
    with `unit`, only when the unit follows it ('16 chips', '4 ms'). A number followed by a time
    unit is a time: it is not the key when `key_unit` is not one (chapters 9 and 10 print measured
    times, which differ from run to run, and a '12.5 ms' is not a 12.5 GB key)."""
    after = rf"\s*{re.escape(unit)}(?:s|es)?(?!\w)" if unit else r"(?![\d]|[.,]\d)"
    time = rf"\s*(?:{'|'.join(TIME_UNITS)})(?!\w)"
    for m in re.finditer(rf"(?<![\d.,]){re.escape(form)}{after}", text):
        if key_unit and key_unit not in TIME_UNITS and re.match(time, text[m.end():]):
            continue
        return True
    return False


def occurrences(form: str, text: str, width: int = 40) -> list[str]:
    """The text around each occurrence of `form` as a number of its own."""
    return [text[max(0, m.start() - width):m.end() + width]
            for m in re.finditer(rf"(?<![\d.,]){re.escape(form)}(?![\d]|[.,]\d)", text)]


def chapter_text(page: str) -> str:
    md = ROOT / "chapters" / f"{page}.md"
    nb = jupytext.read(md, fmt="md:myst")
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "glue.jsonl"  # what this run glues (scalebook.notebook.glue writes it)
        saved = os.environ.get("SCALEBOOK_GLUE_LOG")
        os.environ["SCALEBOOK_GLUE_LOG"] = str(log)
        try:
            nbclient.NotebookClient(nb, timeout=600, kernel_name="python3",
                                    resources={"metadata": {"path": str(md.parent)}}).execute()
        finally:
            if saved is None:
                os.environ.pop("SCALEBOOK_GLUE_LOG")
            else:
                os.environ["SCALEBOOK_GLUE_LOG"] = saved
        values = {}
        if log.exists():
            for line in log.read_text(encoding="utf-8").splitlines():
                rec = json.loads(line)
                values[rec["name"]] = rec["text"]
    parts = []
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            parts.append(out.get("text", ""))
            for mime in ("text/plain", "text/markdown", "text/html"):
                parts.append(re.sub(r"<[^>]+>", " ", str(out.get("data", {}).get(mime, ""))))
    sents, _ = gp.render(md.read_text(encoding="utf-8"), values or gp.glue_values(md), page)
    parts += [s.plain for s in sents]
    return "\n".join(parts)


def leaks_in(page: str, text: str) -> dict[str, str]:
    """{problem id: message} for each key of `page`'s problems that `text` prints."""
    leaks = {}
    for p in problems(page=page):
        key = p.answer()
        if not isinstance(key, (int, float)):
            continue
        small = float(key).is_integer() and abs(key) < 100
        if small and not p.unit:
            continue  # a unitless small whole number matches by chance
        found = sorted(f for f in printed_forms(float(key)) if appears(f, text, p.unit if small else "", p.unit or ""))
        if not found:
            continue
        around = COINCIDENT.get(p.id)
        if around and all(around in ctx for f in found for ctx in occurrences(f, text, 30)):
            continue
        leaks[p.id] = f"{p.id} ({p.title}): key {found[0]} is printed in chapters/{page}.md"
    return leaks


def test_printed_forms_and_appears_read_numbers_as_a_chapter_prints_them():
    assert printed_forms(205.99) == {"206"}
    assert printed_forms(7.734375) == {"7.73"}
    assert printed_forms(15.996) == {"16.0"}
    assert printed_forms(61502.4) == {"61500", "61,500"}
    assert appears("206", "| H200 | 206 |") and not appears("206", "2,206 or 20.6 or 206.5")


def test_a_time_is_not_a_key_of_another_unit():
    assert not appears("12.5", "the step took 12.5 ms", key_unit="GB")
    assert appears("12.5", "the step took 12.5 ms", key_unit="ms")
    assert appears("12.5", "it grows to 12.5 GB", key_unit="GB")


def test_a_small_whole_number_counts_only_next_to_its_unit():
    assert appears("16", "on 16 chips", "chip") and appears("4", "4 hops", "hop")
    assert not appears("16", "16.0 GB and 16 layers", "chip")


@pytest.mark.slow
@pytest.mark.parametrize("page", PAGES)
def test_no_problem_key_is_printed_in_its_chapter(page):
    text = chapter_text(page)
    leaks = leaks_in(page, text)
    new = [msg for pid, msg in leaks.items() if pid not in STILL_PRINTED[page]]
    assert not new, "problem keys printed in the chapter:\n" + "\n".join(new)
    fixed = set(STILL_PRINTED[page]) - set(leaks)
    assert not fixed, f"no longer printed in the chapter, remove from STILL_PRINTED: {sorted(fixed)}"
    gone = [pid for pid in COINCIDENT if pid in {p.id for p in problems(page=page)} and COINCIDENT[pid] not in text]
    assert not gone, f"no longer printed in the chapter, remove from COINCIDENT: {gone}"


def test_every_listed_problem_exists_on_its_page():
    for page, listed in STILL_PRINTED.items():
        assert set(listed) <= {p.id for p in problems(page=page)}
    assert set(COINCIDENT) <= {p.id for p in problems()}
