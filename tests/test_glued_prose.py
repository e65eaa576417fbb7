"""No page contradicts its own glued numbers.

Every page's prose is rendered with the values its code cells glued (`glued_prose.render`, read
from the committed notebooks and `build/glue/`, so nothing is executed here) and read sentence by
sentence with a few rules that catch what the reviews found: "1.0 times faster", "only A, B ...
for none", "0%" or a negative share, "hidden" beside a positive exposed time, "a is larger than b"
with a < b. Each rule is specified first on sentences of its own: one it must flag (most are
sentences the reviews quoted) and one it must pass.
"""
import pytest

import glued_prose as gp
from notebook_tools import CHAPTERS, EXERCISES

G = lambda v: gp.OPEN + v + gp.CLOSE  # noqa: E731  (a glued value inside a test sentence)


def flags(rule, text):
    return rule(gp.Sentence("t", text)) is not None


# ------------------------------------------------------------------ the renderer

def test_render_substitutes_glue_as_the_book_formats_it_and_drops_code():
    md = ("Intro with {glue:text}`a:.1f` ms and {glue:text}`b`.\n\n```{code-cell} ipython3\n"
          "glue('a', 2.25)\n```\n\nNo glue here. Then {glue:text}`n:,` tokens {cite}`k`.\n")
    sents, missing = gp.render(md, {"a": "2.25", "b": "'H100'", "n": "1024"})
    assert [s.plain for s in sents] == ["Intro with 2.2 ms and H100.", "Then 1,024 tokens (ref)."]
    assert missing == set()


def test_render_reports_a_glue_name_without_a_value_and_skips_its_sentence():
    sents, missing = gp.render("Value {glue:text}`gone:.0f` here. Kept {glue:text}`x`.", {"x": "3"})
    assert missing == {"gone"} and [s.plain for s in sents] == ["Kept 3."]


def test_quantity_reads_the_unit_inside_or_right_after_the_glued_text():
    assert gp.quantity("4.2 MB", "") == ("bytes", 4.2e6)
    assert gp.quantity("27", " ms exposed") == ("time", pytest.approx(0.027))
    assert gp.quantity("1,024", " tokens") is None  # a count of something else: not compared
    assert gp.quantity("3", " chips") == ("", 3.0)


# ------------------------------------------------------------------ each rule

def test_times_rule_flags_a_factor_of_at_most_one_called_faster_or_less():
    assert flags(gp.times_rule, f"TP16 is {G('1.00')} times faster than TP8.")
    assert flags(gp.times_rule, f"Its cache is {G('0.8')}x smaller.")
    assert flags(gp.times_rule, f"It runs {G('1.0x')} faster.")
    assert not flags(gp.times_rule, f"TP16 is {G('1.23')} times faster than TP8.")
    assert not flags(gp.times_rule, f"It takes {G('0.8')} times the time.")


def test_empty_list_rule_flags_an_empty_list_or_none_where_names_belong():
    assert flags(gp.empty_list_rule, f"Only {G('TPU v5e, H100')} can meet it; for {G('none')} the floor is too slow.")
    assert flags(gp.empty_list_rule, f"The chips that fit are {G('')}.")
    assert not flags(gp.empty_list_rule, f"The runs table records remat {G('none')}.")


def test_only_all_rule_flags_the_field_narrowing_to_every_chip():
    assert flags(gp.only_all_rule, "The field narrows. Only TPU v5e, H100 and B200 can meet it; for none the floor is too slow.")
    assert not flags(gp.only_all_rule, "Only H100 and B200 can meet it; for TPU v5e the floor is too slow.")


def test_percent_rule_flags_zero_percent_and_a_negative_share_or_gain():
    assert flags(gp.percent_rule, f"The count is off by {G('0.00')}%.")
    assert flags(gp.percent_rule, f"The match is within {G('-0')}%.")
    assert flags(gp.percent_rule, f"The network is busy {G('-3')}% of the step.")
    assert flags(gp.percent_rule, f"Interleaving gives {G('-4')}% more tokens per second.")
    assert not flags(gp.percent_rule, f"The prediction is {G('-31')}% off the published figure.")
    assert not flags(gp.percent_rule, f"The network is busy {G('42')}% of the step.")


def test_hidden_rule_flags_hidden_beside_a_positive_exposed_time():
    assert flags(gp.hidden_rule, f"Accumulation keeps the AllReduce hidden: {G('27')} ms exposed per step.")
    assert not flags(gp.hidden_rule, f"Accumulation keeps the AllReduce hidden: {G('0')} ms exposed per step.")
    assert not flags(gp.hidden_rule, f"Only part is hidden: {G('27')} ms stays exposed.")
    assert not flags(gp.hidden_rule, f"The AllReduce takes {G('27')} ms, all of it hidden.")


def test_comparative_rule_flags_larger_than_with_the_smaller_number_first():
    assert flags(gp.comparative_rule, f"The cache ({G('3.2 GB')}) is larger than the weights ({G('16 GB')}).")
    assert flags(gp.comparative_rule, f"A step takes {G('40')} ms, less than the {G('35')} ms budget.")
    assert not flags(gp.comparative_rule, f"The cache ({G('32 GB')}) is larger than the weights ({G('16 GB')}).")
    assert not flags(gp.comparative_rule, f"It sends {G('4.2 MB')}, less than the {G('120')} ms step.")  # two kinds
    assert not flags(gp.comparative_rule, f"It is {G('2')} times larger than the {G('16 GB')} cache.")  # a ratio


def test_count_decimal_rule_flags_a_count_written_with_decimals():
    assert flags(gp.count_decimal_rule, f"The queue holds {G('137.0')} requests at the peak.")
    assert flags(gp.count_decimal_rule, f"It needs {G('4.0 chips')} to hold the weights.")
    assert flags(gp.count_decimal_rule, f"The job needs {G('240.2')} chips to finish in time.")
    assert not flags(gp.count_decimal_rule, f"The queue holds {G('137')} requests at the peak.")
    assert not flags(gp.count_decimal_rule, f"It accepts an average of {G('2.5')} tokens.")
    assert not flags(gp.count_decimal_rule, f"The server completes {G('6.5')} requests per second.")
    assert not flags(gp.count_decimal_rule, f"A batch reaches {G('5.3')} nodes on average.")
    assert not flags(gp.count_decimal_rule, f"The ratio is {G('50.6')} chips, which rounds up to {G('51')}.")
    assert not flags(gp.count_decimal_rule, f"The threshold is {G('38.7')} tokens for int4.")
    assert not flags(gp.count_decimal_rule, f"The step takes {G('4.0')} ms on {G('8')} chips.")


# ------------------------------------------------------------------ every page

@pytest.mark.parametrize("md", CHAPTERS + EXERCISES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_no_page_contradicts_its_glued_numbers(md):
    sents, missing = gp.render(md.read_text(encoding="utf-8"), gp.glue_values(md), f"{md.parent.name}/{md.name}")
    assert sents or missing, "a page with glued prose renders no sentence"
    found = gp.problems(sents)
    assert not found, "glued prose that contradicts itself:\n" + "\n".join(found)


def test_execute_mode_reads_the_current_values(monkeypatch, tmp_path):
    monkeypatch.setenv("SCALEBOOK_GLUED_PROSE_EXECUTE", "1")
    monkeypatch.setattr(gp.make_notebooks, "glued_values", lambda md: {"fresh": "1.5"})
    assert gp.glue_values(tmp_path / "page.md") == {"fresh": "1.5"}
