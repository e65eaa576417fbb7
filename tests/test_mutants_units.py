"""How quantities print, pinned by hand; written to kill mutants `make mutate` found surviving.

Counts (tokens, chips, params, FLOP/B, dollars) print as plain numbers to 3 significant digits
with the unit after, never with an SI prefix; seconds and bytes take an SI prefix; a missing
value prints as 'n/a'.
"""
import math

import pytest

from scalebook import Error
from scalebook.units import canonical_dtype, dtype_bytes, fmt_bytes, fmt_seconds, format_quantity, parse_unit


@pytest.mark.parametrize("unit", ["token", "chip", "param", "FLOP/B", "$"])
def test_counts_print_without_a_prefix(unit):
    assert format_quantity(3.2e6, unit) == f"3.2 × 10⁶ {unit}"
    assert format_quantity(250, unit) == f"250 {unit}"


def test_a_plain_number_has_no_unit_after_it():
    assert format_quantity(1234.5) == "1.23 × 10³"


@pytest.mark.parametrize("value", [None, math.nan])
def test_missing_values_print_as_n_a(value):
    assert format_quantity(value, "s") == "n/a"


def test_seconds_and_bytes_take_an_si_prefix():
    assert fmt_seconds(3.2e-3) == "3.2 ms"
    assert fmt_seconds(0) == "0 s"
    assert fmt_bytes(16e9) == "16 GB"
    assert fmt_bytes(512) == "512 B"


@pytest.mark.parametrize("seconds, text", [
    (2 * 86400, "2 days"), (2.5 * 86400, "2.5 days"),  # two days or more: days
    (7200, "2 h"), (9000, "2.5 h"), (86400, "24 h"),  # two hours or more: hours
])
def test_long_times_print_in_days_or_hours(seconds, text):
    assert fmt_seconds(seconds) == text


def test_beyond_exa_a_quantity_prints_with_an_exponent():
    assert format_quantity(9.99e20, "FLOP") == "999 EFLOP"
    assert format_quantity(1e21, "FLOP") == "1 × 10²¹ FLOP"
    assert format_quantity(3.14159e22, "FLOP") == "3.14 × 10²² FLOP"


def test_digits_are_significant_figures_up_to_a_floats_precision():
    assert format_quantity(0.01234, "s", digits=2) == "12 ms"
    assert format_quantity(1.0, "s", digits=17) == "1 s"
    with pytest.raises(Error, match="at most 17"):
        format_quantity(1.0, "s", digits=18)


def test_a_unit_per_a_smaller_unit_scales_up():
    assert parse_unit("B/ms") == ("B/s", 1000.0)
    assert parse_unit("GB/s") == ("B/s", 1e9)


@pytest.mark.parametrize("text", ["B/s/s", "GFLOPS/B", "TFLOPS/chip"])
def test_units_with_two_slashes_or_a_rate_over_something_are_refused(text):
    with pytest.raises(Error, match="cannot read the unit"):
        parse_unit(text)


@pytest.mark.parametrize("dtype", [None, 2, ["bf16"], "bfloat17"])
def test_an_unknown_dtype_is_refused_with_the_valid_names(dtype):
    with pytest.raises(Error, match="valid: .*bf16, .*fp32"):
        dtype_bytes(dtype)
    with pytest.raises(Error, match="valid: "):
        canonical_dtype(dtype)
