"""exercises.check: verdicts, units, hints for the usual slips, strict mode, grading records."""
import json

import pytest

from scalebook import Error
from scalebook.exercises import AnswerError, check, problem, problems

# A problem of the test's own, so these specifications do not depend on any chapter's bank.
KEY_SECONDS = 2.5e-3
problem("0.1", title="a test problem", unit="s", rel_tol=0.02, chips=64)(lambda: KEY_SECONDS)


def test_the_key_is_correct():
    assert check("0.1", KEY_SECONDS).status == "correct"


def test_a_string_with_units_is_read():
    assert check("0.1", "2.5 ms").status == "correct"
    assert check("0.1", "2500 us").status == "correct"


def test_an_answer_within_tolerance_is_correct_and_one_just_outside_is_close():
    assert check("0.1", KEY_SECONDS * 1.015).status == "correct"
    assert check("0.1", KEY_SECONDS * 1.03).status == "close"


@pytest.mark.parametrize("factor, words", [(2, "factor of 2"), (0.5, "factor of 2"), (8, "bits vs bytes"),
                                           (1000, "unit prefix"), (1e-3, "unit prefix"), (64, "per-chip"),
                                           (1 / 64, "per-chip")])
def test_common_slips_are_wrong_with_a_hint_naming_them(factor, words):
    r = check("0.1", KEY_SECONDS * factor)
    assert r.status == "wrong"
    assert words in r.message


def test_no_answer_is_missing_not_wrong():
    assert check("0.1", None).status == "missing"


def test_strict_mode_raises_on_wrong_and_missing(monkeypatch):
    monkeypatch.setenv("SCALEBOOK_STRICT", "1")
    with pytest.raises(AnswerError):
        check("0.1", KEY_SECONDS * 2)
    with pytest.raises(AnswerError):
        check("0.1", None)
    assert check("0.1", KEY_SECONDS).status == "correct"


def test_a_unit_of_another_kind_raises_error():
    with pytest.raises(Error, match="asks for s"):
        check("0.1", "3 GB")


def test_code_is_never_evaluated():
    with pytest.raises(Error):
        check("0.1", "__import__('os').system('true')")


def test_unknown_id_raises_error_listing_valid_ids():
    with pytest.raises(Error, match="valid ids"):
        check("99.99", 1.0)


def test_verdicts_are_recorded_for_grading(tmp_path, monkeypatch):
    record = tmp_path / "v.jsonl"
    monkeypatch.setenv("SCALEBOOK_RECORD", str(record))
    check("0.1", KEY_SECONDS)
    row = json.loads(record.read_text().splitlines()[-1])
    assert row == {"id": "0.1", "status": "correct", "score": 1.0, "message": row["message"]}


def test_every_bank_problem_has_a_positive_finite_key_and_a_title():
    for p in problems():
        value = p.answer()
        assert value == value and value not in (float("inf"),), p.id
        assert p.title and p.id.count(".") == 1
