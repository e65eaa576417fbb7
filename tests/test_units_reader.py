"""Numbers as a reader sees them: powers of ten instead of e-notation, counts with a suffix,
whole numbers with separators, shares that never read '0.0%' or '-0%'. Pinned by hand."""
import pytest

from scalebook import Error
from scalebook.units import fmt_count, fmt_number, fmt_percent, format_quantity, prose_numbers, scientific


@pytest.mark.parametrize("value, digits, text", [
    (6.35e24, 3, "6.35 × 10²⁴"), (1e-5, 3, "1 × 10⁻⁵"), (-2.5e7, 2, "-2.5 × 10⁷"),
    (1.999e9, 3, "2 × 10⁹"),  # rounds up into the next power; trailing zeros go
    (0, 3, "0"),
])
def test_scientific_writes_a_power_of_ten_in_superscript(value, digits, text):
    assert scientific(value, digits) == text


def test_scientific_refuses_zero_digits():
    with pytest.raises(Error, match="digits"):
        scientific(1.0, 0)


def test_format_quantity_never_prints_e_notation():
    assert format_quantity(6.35e24, "FLOP") == "6.35 × 10²⁴ FLOP"
    assert format_quantity(1.5e13, "token") == "1.5 × 10¹³ token"
    assert "e" not in format_quantity(2e-12, "s").replace("s", "")


@pytest.mark.parametrize("value, text", [
    (4.194e6, "4.19M"), (1.5e13, "15T"), (8.03e9, "8.03B"), (266_240, "266k"), (512, "512"),
    (999_700, "1M"),  # the suffix is chosen after rounding: not '1e+03k'
    (3e16, "3 × 10¹⁶"), (0.5, "0.5"),
])
def test_counts_take_the_books_decimal_suffixes(value, text):
    assert fmt_count(value) == text


@pytest.mark.parametrize("value, digits, text", [
    (12345.6, 3, "12,346"), (-1234.4, 3, "-1,234"), (3.14159, 3, "3.14"), (135.15, 4, "135.2"),
    (2.6e-5, 3, "2.6 × 10⁻⁵"), (1.5e15, 3, "1.5 × 10¹⁵"), (0, 3, "0"),
])
def test_plain_numbers_are_whole_with_separators_from_a_thousand(value, digits, text):
    assert fmt_number(value, digits) == text


@pytest.mark.parametrize("fraction, decimals, signed, text", [
    (0.0072, 2, True, "+0.72%"), (0.0072, 1, False, "0.7%"), (0.12, 1, False, "12.0%"),
    (-0.355, 1, True, "-35.5%"),
    (0.0, 1, True, "0%"), (-0.0, 1, False, "0%"),  # zero: no sign, no decimals
    (0.00001, 1, False, "<0.1%"), (0.00001, 1, True, "+<0.1%"), (-0.00001, 1, True, "-<0.1%"),
    (-0.00001, 0, False, "-<1%"),
])
def test_percent_never_reads_zero_point_zero_or_negative_zero(fraction, decimals, signed, text):
    assert fmt_percent(fraction, decimals, signed) == text


def test_prose_numbers_rewrites_e_notation_in_free_text_and_leaves_words():
    text = "uses 9e10 B/s (4.5e10 one-way), 0.92e15 / x = 1.75e-3 on v5e in fp8e4; dense 9.89e14."
    assert prose_numbers(text) == ("uses 9 × 10¹⁰ B/s (4.5 × 10¹⁰ one-way), 0.92 × 10¹⁵ / x = 1.75 × 10⁻³ on v5e "
                                   "in fp8e4; dense 9.89 × 10¹⁴.")


def test_missing_and_infinite_values_print_as_text_not_an_error():
    nan, inf = float("nan"), float("inf")
    assert (fmt_number(None), fmt_number(nan), fmt_number(inf), fmt_number(-inf)) == ("n/a", "n/a", "∞", "-∞")
    assert (fmt_count(nan), fmt_percent(nan), fmt_percent(inf)) == ("n/a", "n/a", "∞%")
