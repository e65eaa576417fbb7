"""exercises.check: verdicts, units, hints for the usual slips, strict mode, grading records."""
import json
import math

import numpy as np
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


def test_a_unit_of_another_kind_is_wrong_and_names_both_kinds():
    r = check("0.1", "7.6 GB")
    assert r.status == "wrong" and r.given is None
    assert "units don't match" in r.message and "expected" not in r.message
    assert "is a size in bytes" in r.message and "asks for a time in s" in r.message


def test_code_is_never_evaluated(tmp_path):
    marker = tmp_path / "ran"
    r = check("0.1", f"__import__('pathlib').Path({str(marker)!r}).touch()")
    assert r.status == "wrong" and "cannot read" in r.message and not marker.exists()


def test_unknown_id_raises_error_listing_valid_ids():
    with pytest.raises(Error, match="valid ids"):
        check("99.99", 1.0)


def test_verdicts_are_recorded_for_grading(tmp_path, monkeypatch):
    record = tmp_path / "v.jsonl"
    monkeypatch.setenv("SCALEBOOK_RECORD", str(record))
    check("0.1", KEY_SECONDS)
    row = json.loads(record.read_text().splitlines()[-1])
    # the answer as read, so that the grader can judge it again; no score (the grader computes it)
    assert {k: row[k] for k in ("id", "status", "given")} == {"id": "0.1", "status": "correct", "given": KEY_SECONDS}
    assert "score" not in row and row["message"] == "0.0025 s (2.5 ms) is right"
    # outside a kernel there is no running cell to name
    assert row["execution_count"] is None and row["source"] is None


def test_every_bank_problem_has_a_positive_finite_key_and_a_title():
    for p in problems():
        value = p.answer()
        assert value == value and value not in (float("inf"),), p.id
        assert p.title and p.id.count(".") == 1


# A problem asked in ms, as most of the book's are, to pin how keys and answers are printed.
problem("0.2", title="a test problem in ms", unit="ms", rel_tol=0.02)(lambda: 24650.0)
# A fraction, for percentages.
problem("0.3", title="a test fraction", unit="", rel_tol=0.02)(lambda: 0.521)
# A count of tokens, with a slip of its own at (N - 1)/N for N = 8.
problem("0.4", title="a test count", unit="token", rel_tol=0.02,
        slips={8 / 7: "off by 8/7: the ring moves (N - 1)/N of the data"})(lambda: 10200.0)


def test_a_key_in_ms_prints_in_ms_with_its_reading_in_seconds():
    assert check("0.2", 24650).message == "24650 ms (24.65 s) is right"
    assert "kms" not in check("0.2", 24650).message


def test_plain_numbers_print_as_written_not_in_exponent_form():
    m = check("0.4", 10200).message
    assert m == "10200 tokens is right"
    assert check("0.3", 0.521).message == "0.521 is right"


@pytest.mark.parametrize("answer", [np.array([24650.0]), np.array(24650.0), np.float32(24650), np.int64(24650),
                                    "24650", "24650 ms", "24.65 s", "24,650.0 ms", "24_650"])
def test_numbers_numpy_scalars_one_value_arrays_and_strings_with_units_are_read(answer):
    assert check("0.2", answer).status == "correct"


problem("0.6", title="a test cost", unit="$", rel_tol=0.02)(lambda: 1.71)


def test_a_cost_prints_and_reads_with_a_leading_dollar_sign():
    assert check("0.6", "$1.71").message == "$1.71 is right"
    assert check("0.6", "1.71 USD").status == "correct"


def test_a_percentage_string_is_read_as_a_fraction():
    assert check("0.3", "52.1%").status == "correct"
    assert check("0.3", "52.1 %").status == "correct"


@pytest.mark.parametrize("answer, words", [
    (True, "yes/no value"), (np.bool_(False), "yes/no value"),
    (float("inf"), "not a finite number"), (float("-inf"), "not a finite number"),
    (float("nan"), "not a finite number"), ("nan", "not a finite number"), ("1e999 ms", "not a finite number"),
    (10**400, "an integer of 401 digits is too large"),
    (np.array([1.0, 2.0]), "an array of 2 values"), ([24650], "is a list"), (3 + 1j, "complex"),
    ("7,6", "decimal comma"), ("24,650", "ambiguous"), ("abc", "cannot read 'abc'"),
    ("24650 parsecs", "cannot read the unit"), (object(), "cannot be read as a number"),
])
def test_unreadable_answers_are_wrong_with_what_is_accepted(answer, words):
    r = check("0.2", answer)
    assert (r.status, r.given, r.score) == ("wrong", None, 0.0)
    assert words in r.message, r.message
    assert "asks for a time in ms" in r.message


def test_inf_and_nan_get_the_same_verdict():
    assert check("0.2", float("inf")).message == check("0.2", float("nan")).message.replace("nan", "inf")


def test_a_tiny_subnormal_answer_is_wrong_by_a_huge_factor_not_an_exception():
    r = check("0.2", 1e-320)
    assert r.status == "wrong" and r.message.endswith("too small by roughly a factor of 10^324")


def test_a_comma_is_read_only_as_unambiguous_thousands_grouping():
    assert check("0.4", "10,200").status == "wrong"  # one comma, no point: 10200 or 10.2?
    assert check("0.4", "10,200.0").status == "correct"
    assert check("0.4", "1,02,00").status == "wrong"  # not groups of three


def test_close_says_which_side_of_the_key_and_the_likely_cause_in_one_short_line():
    r = check("0.2", 24650 * 1.03)
    assert r.status == "close"
    assert r.message == ("25390 ms (25.39 s) is just above the key, outside the 2% tolerance: rounding? "
                         "Carry three significant digits and take specs from `scalebook.chip(...)`")
    assert "below the key" in check("0.2", 24650 / 1.03).message
    assert "24650" not in r.message and "%" not in r.message.replace("2%", "")  # neither the key nor how far


@pytest.mark.parametrize("factor, words", [(2.1, "factor of 2"), (1 / 1.9, "factor of 2"), (8.5, "bits vs bytes"),
                                           (1100, "unit prefix"), (1 / 950, "unit prefix"),
                                           (100, "percentage")])
def test_slip_hints_fire_near_the_slip_not_only_on_it(factor, words):
    r = check("0.2", 24650 * factor)
    assert r.status == "wrong" and words in r.message, r.message


problem("0.5", title="a test size", unit="GB", rel_tol=0.02)(lambda: 80.0)


def test_binary_prefix_slips_are_named_for_sizes_only():
    assert "factor of 1024" in check("0.5", 80 * 1024).message
    assert "GiB (2^30 bytes) vs GB" in check("0.5", 80 / 1.024**3).message
    assert "unit prefix" in check("0.2", 24650 * 1024).message


def test_a_problem_s_own_slip_fires_near_its_factor():
    assert "(N - 1)/N" in check("0.4", 10200 * 8 / 7 * 1.03).message
    assert "(N - 1)/N" in check("0.4", 10200 * 7 / 8).message


@pytest.mark.parametrize("factor, words", [
    (1.1, "too large by less than 25%"), (1 / 1.1, "too small by less than 25%"),
    (1.5, "too large by less than a factor of 2"), (3.3, "too large by a factor between 2 and 10"),
    (1 / 3.3, "too small by a factor between 2 and 10"),
    (2.0e4, "too large by roughly a factor of 10,000"), (1 / 3.4e7, "too small by roughly a factor of 10^8"),
])
def test_a_ratio_far_from_every_slip_gets_its_direction_and_a_coarse_size(factor, words):
    # coarse on purpose: the key cannot be read back from the message (issue 21)
    assert check("0.2", 24650 * factor).message.endswith(words)


def test_strict_mode_raises_for_an_unreadable_answer(monkeypatch):
    monkeypatch.setenv("SCALEBOOK_STRICT", "1")
    with pytest.raises(AnswerError, match="cannot read"):
        check("0.2", "abc")


def test_a_problem_id_that_is_not_a_string_raises_error():
    with pytest.raises(Error, match="as a string"):
        check(1.1, 7.6)


def test_bank_problems_know_their_page_from_the_module_name():
    from scalebook.exercises import get, pages
    from scalebook.exercises.problem import page_of_module

    assert page_of_module("ch02b_gpus") == "02b-gpus"
    assert page_of_module("scalebook.exercises.bank.ch06_training_llama") == "06-training-llama"
    assert get("1.1").page == "01-rooflines" and "01-rooflines" in pages()
    assert problems(page="01-rooflines") == problems("1")


def test_a_problem_knows_its_page_when_a_wrapper_sits_between_it_and_the_bank_module():
    """`make mutate` wraps `problem` in mutmut's trampoline (a function of another module): the page
    must still come from the bank module that registers the problem, not from the wrapper's frame."""
    import importlib

    pm = importlib.import_module("scalebook.exercises.problem")  # the module, not the function
    wrapper_ns = {"__name__": "mutmut.mutation.trampoline", "problem": pm.problem}
    exec("def wrapped(*args, **kwargs):\n    return problem(*args, **kwargs)\n", wrapper_ns)
    bank_ns = {"__name__": "scalebook.exercises.bank.ch99_test_page", "wrapped": wrapper_ns["wrapped"]}
    try:
        exec("p = wrapped('99.1', title='t', unit='s')(lambda: 1.0)", bank_ns)
        assert bank_ns["p"].page == "99-test-page"
    finally:
        pm._BANK.pop("99.1", None)


def test_any_answer_gets_a_verdict_never_an_exception():
    from hypothesis import given, settings
    from hypothesis import strategies as st
    from hypothesis.extra import numpy as hnp

    answers = st.one_of(
        st.none(), st.booleans(), st.integers(), st.integers(min_value=10**300, max_value=10**5000), st.floats(),
        st.complex_numbers(), st.text(), st.from_regex(r"\s*[-+]?[\d,._]{0,12}([eE][-+]?\d{1,4})?\s*[a-zA-Z%/µ$ ]{0,8}"),
        st.lists(st.floats(), max_size=3), hnp.arrays(hnp.floating_dtypes() | hnp.integer_dtypes(), hnp.array_shapes(max_dims=2, max_side=2)),
        st.builds(np.float32, st.floats(width=32)), st.binary(max_size=8),
    )

    @settings(max_examples=1500, deadline=None)
    @given(answers)
    def verdict(answer):
        r = check("0.2", answer)
        assert r.status in ("correct", "close", "wrong", "missing")
        assert r.message and not any(ord(c) < 32 for c in r.message)
        assert r.given is None or math.isfinite(r.given)  # what was read is a finite number, or nothing
        assert r.status not in ("correct", "close") or r.given is not None

    verdict()


@pytest.mark.parametrize("x, text", [(24650, "24650"), (7.6, "7.6"), (0.0076, "0.0076"), (1.2e9, "1.2e9"),
                                     (3.3e-5, "3.3e-5"), (0, "0"), (-24650.4, "-24650"), (1234567.8, "1234568"),
                                     (197.34, "197.3")])
def test_numbers_print_as_a_reader_writes_them(x, text):
    from scalebook.exercises.answers import number

    assert number(x) == text


@pytest.mark.parametrize("x, unit, text", [(0.05, "ms", "0.05 ms (50 µs)"), (4096, "token", "4096 tokens"),
                                           (1, "chip", "1 chip"), (0.521, "", "0.521"), (3, "days", "3 days"),
                                           (2.5e13, "FLOP", "2.5e13 FLOP (25 TFLOP)")])
def test_quantities_print_in_the_problem_s_unit(x, unit, text):
    from scalebook.exercises.answers import show

    assert show(x, unit) == text


@pytest.mark.parametrize("unit, words", [("ms", "a time in ms"), ("", "a plain number"), ("token", "a number of tokens"),
                                         ("GB/s", "a bandwidth in GB/s"), ("%", "a percentage")])
def test_what_a_problem_asks_for_is_said_in_words(unit, words):
    from scalebook.exercises.answers import asks_for

    assert asks_for(unit) == words


problem("0.7", title="a test problem whose key is zero", unit="s")(lambda: 0.0)


def test_signs_and_zeros_are_named():
    assert check("0.2", -24650).message == "-24650 ms (-24.65 s): the size is right but the sign is wrong"
    assert check("0.2", -2 * 24650).message.startswith("-49300 ms (-49.3 s): the sign is wrong, and off by a factor of 2")
    assert check("0.2", 0).message == "0 ms: the answer is zero, the key is not"
    assert check("0.7", 0).status == "correct"
    assert check("0.7", 1e-9).message.endswith("the key is zero")


def test_close_names_binary_prefixes_for_sizes():
    r = check("0.5", 80 * 1.024)
    assert r.status == "close" and "KiB vs kB" in r.message


@pytest.mark.parametrize("unit, asks", [("kB", "a size in kB"), ("GB", "a size in GB"), ("B", "a size in bytes"),
                                        ("hop", "a number of hops"), ("token", "a number of tokens"),
                                        ("days", "a time in days"), ("GB/s", "a bandwidth in GB/s")])
def test_what_a_problem_asks_for_reads_as_english(unit, asks):
    from scalebook.exercises.answers import asks_for

    assert asks_for(unit) == asks


@pytest.mark.parametrize("x, unit, shown", [(10, "hop", "10 hops"), (1, "hop", "1 hop"), (1, "days", "1 day"),
                                            (3, "days", "3 days"), (1, "token", "1 token"), (2, "chip", "2 chips"),
                                            (10, "kB", "10 kB")])
def test_counted_units_agree_with_their_number(x, unit, shown):
    from scalebook.exercises.answers import show

    assert show(x, unit) == shown


def test_check_prints_its_verdict_in_a_plain_script(tmp_path):
    import subprocess
    import sys

    script = tmp_path / "mine.py"
    script.write_text("from scalebook.exercises import check\ncheck('1.1', None)\n")
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "· 1.1 missing: no answer yet: set `answer` to a time in ms\n"


def test_check_prints_nothing_where_the_result_is_shown_anyway(monkeypatch, capsys):
    import sys

    monkeypatch.setattr(sys, "ps1", ">>> ", raising=False)  # the interactive prompt echoes the result
    check("0.2", 24650)
    monkeypatch.delattr(sys, "ps1")

    class Shell:
        pass

    class IPython:
        @staticmethod
        def get_ipython():
            return Shell()

    monkeypatch.setitem(sys.modules, "IPython", IPython)  # Jupyter displays the cell's last value
    check("0.2", 24650)
    assert capsys.readouterr().out == ""
