"""How a check's verdict shows in a notebook: an answer written as typed ('5e11') is code, not prose."""
from scalebook.exercises import CheckResult


def _html(message):
    return CheckResult("1.9", "correct", 5e11, "FLOP/s", message)._repr_html_()


def test_an_answer_in_e_notation_shows_as_code():
    assert ": <code>5e11</code> FLOP/s (500 GFLOP/s) is right</div>" in _html("5e11 FLOP/s (500 GFLOP/s) is right")
    assert "<code>$2.232e7</code> is right" in _html("$2.232e7 is right")


def test_words_and_plain_numbers_stay_prose_and_the_text_repr_is_unchanged():
    assert "<code>" not in _html("500 GFLOP/s on a v5e is right")
    assert repr(CheckResult("1.9", "correct", 5e11, "FLOP/s", "5e11 FLOP/s is right")) == "✓ 1.9 correct: 5e11 FLOP/s is right"
