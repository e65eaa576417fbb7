"""check() verdicts and messages pinned by hand, written to kill mutants `make mutate` found surviving.

Each expected message is what a reader sees: the answer in the problem's unit (with its SI
reading when that reads better), then the verdict's reason. The slip hints fire where
answer / key is within 10% (in ln) of the slip's factor; 2%-tolerance problems call an answer
within 2% correct and one within 4% close.
"""
import json
import math

import pytest

from scalebook.exercises import check, problem, problems
from scalebook.exercises.answers import number, read_answer, show

# The test's own problems (ids "0m.N", apart from tests/test_check.py's "0.N"); "0m.12" is
# registered before "0m.9" so that sorting, not registration order, decides the id order.
problem("0m.12", title="a time in ms", unit="ms", rel_tol=0.02)(lambda: 24650.0)
problem("0m.9", title="a size with a hint", unit="GB", rel_tol=0.02, hint="count both copies")(lambda: 80.0)
problem("0m.10", title="a time of 8 chips", unit="s", rel_tol=0.02, chips=8,
        slips={1.5: "the peak, not the sustained rate"})(lambda: 2.0)
problem("0m.11", title="a count of tokens", unit="token", rel_tol=0.02)(lambda: 4096.0)
problem("0m.13", title="a fraction with own slips", unit="", rel_tol=0.02,
        slips={2.04: "both ends of the ring", 0.8: "(N-1)/N for N = 5"})(lambda: 1.0)
problem("0m.14", title="a bandwidth", unit="GB/s", rel_tol=0.02)(lambda: 45.0)
problem("0m.15", title="a time of 2 chips", unit="s", rel_tol=0.02, chips=2)(lambda: 3.0)
problem("0m.16", title="a time of 64 chips", unit="s", rel_tol=0.02, chips=64)(lambda: 1.0)
problem("0m.17", title="a size with 3% tolerance", unit="MB", rel_tol=0.03)(lambda: 100.0)
problem("0m.18", title="a time with 25% tolerance", unit="s", rel_tol=0.25)(lambda: 4.0)
problem("0m.19", title="a time whose key is zero", unit="s")(lambda: 0.0)
problem("0m.20", title="a time in fortnights", unit="fortnight")(lambda: 2.0)

ROUNDING = "rounding? Carry three significant digits and take specs from `scalebook.chip(...)`"
READ = "write a number, optionally with a unit, like 7.6 or '7.6 ms' (code in a string is never run)"


@pytest.mark.parametrize("pid, answer, status, message", [
    # no answer, an unreadable one: what the problem asks for, in words
    ("0m.12", None, "missing", "no answer yet: set `answer` to a time in ms"),
    ("0m.12", "abc", "wrong", f"cannot read 'abc' as a number: {READ} "
                              "(this problem asks for a time in ms: a number in ms or a string like '1.5 ms')"),
    ("0m.11", "abc", "wrong", f"cannot read 'abc' as a number: {READ} (this problem asks for a number of tokens)"),
    ("0m.13", "abc", "wrong", f"cannot read 'abc' as a number: {READ} (this problem asks for a plain number)"),
    ("0m.14", "abc", "wrong", f"cannot read 'abc' as a number: {READ} "
                              "(this problem asks for a bandwidth in GB/s: a number in GB/s or a string like '1.5 GB/s')"),
    ("0m.12", "7.6 GB", "wrong", "units don't match: '7.6 GB' is a size in bytes, but this problem asks for a time in ms"),
    # close: which side of the key and the tolerance, never how far (that would give the key away)
    ("0m.12", 24650 * 1.0294, "close", f"25375 ms (25.37 s) is just above the key, outside the 2% tolerance: {ROUNDING}"),
    ("0m.12", 24650 / 1.0294, "close", f"23946 ms (23.95 s) is just below the key, outside the 2% tolerance: {ROUNDING}"),
    ("0m.13", 1.03, "close", f"1.03 is just above the key, outside the 2% tolerance: {ROUNDING}"),
    ("0m.9", 82.4, "close", f"82.4 GB is just above the key, outside the 2% tolerance: {ROUNDING}"),
    ("0m.17", 100 * 1.024**2, "close", "104.9 MB is just above the key, outside the 3% tolerance: MiB (2^20) vs MB (1e6)?"),
    ("0m.9", 80 * 1.024, "close", "81.92 GB is just above the key, outside the 2% tolerance: KiB vs kB (1024 vs 1000)?"),
    ("0m.14", 45 * 1.024, "close", "46.08 GB/s is just above the key, outside the 2% tolerance: "
                                   "KiB vs kB (1024 vs 1000)?"),
    # 5% off with a 2% tolerance is wrong, not close: no slip is near 1.05
    ("0m.12", 24650 * 1.05, "wrong", "25882 ms (25.88 s): too large by less than 25%"),
    ("0m.12", 24650 * 3.14159, "wrong", "77440 ms (77.44 s): too large by a factor between 2 and 10"),
    # generic slips, either way round, saying which way
    ("0m.12", 24650 * 2, "wrong", "49300 ms (49.3 s): off by a factor of 2: check 2 FLOPs per multiply-add, "
                                  "one-way vs both-ways bandwidth, or bf16's 2 bytes (yours is larger)"),
    ("0m.12", 24650 / 2, "wrong", "12325 ms (12.33 s): off by a factor of 2: check 2 FLOPs per multiply-add, "
                                  "one-way vs both-ways bandwidth, or bf16's 2 bytes (yours is smaller)"),
    ("0m.12", 24650 * 4, "wrong", "98600 ms (98.6 s): off by a factor of 4: check bytes per element "
                                  "(fp32 = 4, bf16 = 2, int8 = 1) (yours is larger)"),
    ("0m.12", 24650 / 8, "wrong", "3081 ms: off by a factor of 8: bits vs bytes? (yours is smaller)"),
    ("0m.12", 24650 * 100, "wrong", "2465000 ms (41.08 min): off by a factor of 100: a percentage where a fraction "
                                    "is asked (or the reverse)? (yours is larger)"),
    ("0m.12", 24650e3, "wrong", "2.465e7 ms (6.847 h): off by a factor of 1000: a unit prefix "
                                "(ms vs s, GB vs MB, TFLOP vs GFLOP)? (yours is larger)"),
    ("0m.12", 24650e6, "wrong", "2.465e10 ms (285.3 days): off by a factor of a million: a unit prefix "
                                "(us vs s, TB vs MB)? (yours is larger)"),
    ("0m.12", 24650e9, "wrong", "2.465e13 ms (2.853 × 10⁵ days): off by a factor of 1e9: a unit prefix "
                                "(ns vs s, GB vs B)? (yours is larger)"),
    ("0m.12", 24650e12, "wrong", "2.465e16 ms (2.853 × 10⁸ days): off by a factor of 1e12: a unit prefix "
                                 "(TFLOP vs FLOP)? (yours is larger)"),
    # binary prefixes, for sizes and bandwidths only; a size problem still gets the common slips
    ("0m.9", 80 * 1024, "wrong", "81920 GB (81.92 TB): off by a factor of 1024: a binary prefix step (KiB to MiB) "
                                 "where a decimal one (kB to MB) is meant? (yours is larger)"),
    ("0m.9", 80 * 1.024**3, "wrong", "85.9 GB: off by about 7%: GiB (2^30 bytes) vs GB (1e9)? (yours is larger)"),
    ("0m.9", 80 / 1.024**2, "wrong", "76.29 GB: off by about 5%: MiB (2^20 bytes) vs MB (1e6)? (yours is smaller)"),
    ("0m.14", 45 * 1.024**2, "wrong", "47.19 GB/s: off by about 5%: MiB (2^20 bytes) vs MB (1e6)? (yours is larger)"),
    ("0m.9", 160, "wrong", "160 GB: off by a factor of 2: check 2 FLOPs per multiply-add, one-way vs both-ways "
                           "bandwidth, or bf16's 2 bytes (yours is larger)"),
    # 4% beyond the GiB factor: outside its narrow window (0.35 x ln 1.024^3 = 2.5%), so no slip is named
    ("0m.9", 80 / 1.024**3 / 1.04, "wrong", "71.64 GB: too small by less than 25%; hint: count both copies"),
    ("0m.9", 264, "wrong", "264 GB: too large by a factor between 2 and 10; hint: count both copies"),
    # per chip vs total: for 2 and 8 chips either way; for other counts, one message per direction
    ("0m.10", 16, "wrong", "16 s: off by a factor of 8: per chip vs total?"),
    ("0m.10", 0.25, "wrong", "0.25 s: off by a factor of 8: per chip vs total?"),
    ("0m.15", 6, "wrong", "6 s: off by a factor of 2: per chip vs total?"),
    ("0m.15", 1.5, "wrong", "1.5 s: off by a factor of 2: per chip vs total?"),
    ("0m.16", 64, "wrong", "64 s: your answer is 64x the key: did you give the total instead of the per-chip value?"),
    ("0m.16", 1 / 64, "wrong", "0.01562 s (15.62 ms): your answer is 1/64 of the key: did you give a per-chip "
                               "value instead of the total?"),
    # a problem's own slips, either way round, and first when within the tolerance even if a common slip is nearer
    ("0m.10", 3.0, "wrong", "3 s: the peak, not the sustained rate"),
    ("0m.13", 2.01, "wrong", "2.01: both ends of the ring"),
    ("0m.13", 0.8, "wrong", "0.8: (N-1)/N for N = 5"),
    ("0m.13", 1.25, "wrong", "1.25: (N-1)/N for N = 5"),
    # signs and zeros
    ("0m.12", -24650 * 3.3, "wrong", "-81345 ms (-81.34 s): the sign is wrong, and too large by a factor between 2 and 10"),
    ("0m.12", -24650, "wrong", "-24650 ms (-24.65 s): the size is right but the sign is wrong"),
    ("0m.12", 0, "wrong", "0 ms: the answer is zero, the key is not"),
    ("0m.19", 0, "correct", "0 s is right"),
    ("0m.19", 1e-9, "wrong", "1e-9 s (1 ns): the key is zero"),
    # exactly twice the tolerance off (ln 6/4 = ln 1.5) is still close
    ("0m.18", 6.0, "close", f"6 s is just above the key, outside the 25% tolerance: {ROUNDING}"),
])
def test_each_verdict_reads_exactly(pid, answer, status, message):
    r = check(pid, answer)
    assert (r.id, r.status, r.message) == (pid, status, message)


@pytest.mark.parametrize("ratio, words", [
    (1.2499, "by less than 25%"), (1.2501, "by less than a factor of 2"), (1.9999, "by less than a factor of 2"),
    (2.0001, "by a factor between 2 and 10"), (9.999, "by a factor between 2 and 10"),
    (10.001, "by roughly a factor of 10"), (31.6, "by roughly a factor of 10"), (31.7, "by roughly a factor of 100"),
    (2e6, "by roughly a factor of 1,000,000"), (2e7, "by roughly a factor of 10^7"),
])
def test_how_far_off_is_told_in_coarse_bands(ratio, words):
    # 1 + 1/4, 2 and 10 bound the bands; past 10 the ratio is rounded to a power of ten (in log)
    from scalebook.exercises import _magnitude

    assert _magnitude(math.log(ratio)) == words and _magnitude(-math.log(ratio)) == words


def test_a_subnormal_answer_is_told_its_power_of_ten():
    # 1e-320 ms against 24650 ms: a ratio of 10^-324.4, rounded to 10^324
    assert check("0m.12", 1e-320).message.endswith(": too small by roughly a factor of 10^324")


@pytest.mark.parametrize("pid, answer, given, unit", [
    ("0m.12", None, None, "ms"), ("0m.12", "abc", None, "ms"),
    ("0m.12", "24650 ms", 24650.0, "ms"), ("0m.12", 0, 0.0, "ms"),
    ("0m.12", -24650, -24650.0, "ms"), ("0m.19", 0, 0.0, "s"),
])
def test_a_result_carries_what_was_read_and_the_unit_but_not_the_key(pid, answer, given, unit):
    r = check(pid, answer)
    assert (r.id, r.given, r.unit) == (pid, given, unit)
    assert not hasattr(r, "expected")


@pytest.mark.parametrize("answer, mark, color", [
    (24650, "✓ 0m.12 correct: 24650 ms (24.65 s) is right", "#1a7f37"),
    (24650 * 1.03, "~ 0m.12 close: 25390 ms (25.39 s) is just above the key", "#9a6700"),
    (1, "✗ 0m.12 wrong: 1 ms: too small by roughly a factor of 10,000", "#cf222e"),
    (None, "· 0m.12 missing: no answer yet: set `answer` to a time in ms", "#57606a"),
])
def test_a_result_prints_its_mark_and_shows_its_colour(answer, mark, color):
    r = check("0m.12", answer)
    assert repr(r).startswith(mark)
    assert r._repr_html_().startswith(f"<div style='border-left:4px solid {color};padding:2px 8px'>"
                                      f"<b style='color:{color}'>0m.12 {r.status}</b>: ")


def test_backquoted_code_in_a_message_shows_as_code_and_the_rest_is_escaped():
    assert check("0m.12", None)._repr_html_().endswith(
        ": no answer yet: set <code>answer</code> to a time in ms</div>")
    assert "cannot read &#x27;abc&#x27; as a number" in check("0m.12", "abc")._repr_html_()


def test_problem_ids_sort_by_number_not_by_text_or_registration():
    assert [p.id for p in problems("0m")] == [f"0m.{n}" for n in range(9, 21)]


def test_a_chapter_or_a_page_selects_only_its_problems():
    ch1 = problems("1")
    assert ch1 and all(p.id.startswith("1.") for p in ch1)
    assert problems(page="01-rooflines") == ch1
    assert len(problems()) > len(ch1)


def test_a_long_answer_is_quoted_to_forty_characters():
    r = check("0m.12", "x" * 60)
    assert r.message.startswith("cannot read '" + "x" * 36 + "... as a number")
    assert check("0m.12", "x" * 39).message.startswith("cannot read '" + "x" * 36 + "... as a number")  # 41 characters
    assert check("0m.12", "x" * 38).message.startswith("cannot read '" + "x" * 38 + "' as a number")


@pytest.mark.parametrize("x, text", [(1e-3, "0.001"), (9.9e-4, "9.9e-4"), (1e3, "1000"), (1e7, "1e7"), (1e-7, "1e-7")])
def test_numbers_switch_notation_at_a_thousandth_a_thousand_and_ten_million(x, text):
    assert number(x) == text


@pytest.mark.parametrize("x, unit, text", [
    (2, "chip", "2 chips"), (3, "param", "3 params"), (0.1, "s", "0.1 s"), (1e4, "ms", "10000 ms (10 s)"),
    (0.05, "GB/s", "0.05 GB/s (50 MB/s)"), (0.05, "TFLOP/s", "0.05 TFLOP/s (50 GFLOP/s)"),
    (123456, "ms", "123456 ms (123.5 s)"), (20000, "days", "20000 days"),
])
def test_quantities_get_their_plural_and_their_si_reading(x, unit, text):
    assert show(x, unit) == text


def test_a_string_inside_a_numpy_array_is_read_as_a_string():
    import numpy as np

    assert check("0m.12", np.array("24650 ms")).status == "correct"


def test_a_unicode_minus_and_a_no_break_space_are_read():
    assert read_answer("\u22127.6 ms", "ms") == -7.6
    assert read_answer("7.6\u00a0ms", "ms") == 7.6


def test_a_percentage_is_divided_by_100_only_where_a_fraction_is_asked():
    assert read_answer("52.1%", "%") == 52.1
    assert read_answer("52.1%", "") == pytest.approx(0.521)


@pytest.mark.parametrize("answer, words", [
    ("7,6", "'7,6' has a decimal comma: write a decimal point ('7.6'); commas are read only as thousands "
            "separators, as in '1,234,567'"),
    ("24,650", "'24,650' is ambiguous: a thousands separator reads it as 24650, a decimal comma as 24.650; "
               "write it without the comma"),
    ("nan", "'nan' is not a finite number (inf and NaN are never an answer): look for a division by zero or "
            "an overflow in your calculation"),
    ([1.0], "[1.0] is a list: give one number, or a string like '7.6 ms'"),
    (3 + 1j, "(3+1j) is a complex number: give a real number"),
    (True, "True is a yes/no value, not a number: give the number itself"),
    (10**400, "an integer of 401 digits is too large to be a number of this kind"),
    ("7.6 parsecs", "'7.6 parsecs': "),
    ("1e999 ms", "'1e999 ms' is not a finite number"),
    ("1e308 s", "'1e308 s' is not a finite number"),  # 1e311 ms overflows
    (float("inf"), "inf is not a finite number"),
])
def test_unreadable_answers_say_what_was_given_and_what_to_write(answer, words):
    assert check("0m.12", answer).message.startswith(words)


def test_a_unit_the_parser_does_not_know_stands_for_itself():
    assert check("0m.20", 2).status == "correct"
    assert check("0m.20", "abc").message.endswith("(this problem asks for a quantity in fortnight: a number in "
                                                  "fortnight or a string like '1.5 fortnight')")
    assert math.isclose(read_answer("3", "fortnight"), 3.0)


class _Shell:
    """What the grader reads from IPython's shell: the execution count and the input history `In`."""

    def __init__(self, count, history):
        self.execution_count, self.user_ns = count, {"In": history}


class _IPython:
    def __init__(self, shell):
        self._shell = shell

    def get_ipython(self):
        return self._shell


def test_a_verdict_inside_a_kernel_records_the_running_cell(tmp_path, monkeypatch):
    import sys

    record = tmp_path / "v.jsonl"
    monkeypatch.setenv("SCALEBOOK_RECORD", str(record))
    cell = 'check("0m.12", 24650)'
    monkeypatch.setitem(sys.modules, "IPython", _IPython(_Shell(7, ["", "x = 1", cell])))
    check("0m.12", 24650)
    row = json.loads(record.read_text(encoding="utf-8").splitlines()[-1])
    assert (row["execution_count"], row["source"]) == (7, cell)
    assert row["message"] == "24650 ms (24.65 s) is right" and row["given"] == 24650.0


@pytest.mark.parametrize("shell, expected", [
    (_Shell(3, []), (3, None)),  # nothing in the history yet
    (_Shell(3, "not a list"), (3, None)),
    (_Shell("3", ["", "x"]), (None, "x")),  # a count that is not an int is not passed on
    (None, (None, None)),  # IPython imported, but no shell running
])
def test_the_running_cell_is_read_only_from_what_ipython_really_holds(shell, expected, monkeypatch):
    import sys

    from scalebook.exercises import _running_cell

    monkeypatch.setitem(sys.modules, "IPython", _IPython(shell))
    assert _running_cell() == expected
    monkeypatch.delitem(sys.modules, "IPython")
    assert _running_cell() == (None, None)


@pytest.mark.parametrize("tol, shown", [(0.02, "2%"), (0.005, "0.5%"), (0.25, "25%"), (1e-4, "0.01%"),
                                        (1e-9, "near-exact")])
def test_a_tolerance_reads_as_a_percentage_without_e_notation(tol, shown):
    from scalebook.exercises import _percent

    assert _percent(tol) == shown
