"""How quantities print, pinned by hand; written to kill mutants `make mutate` found surviving.

Counts (tokens, chips, params, FLOP/B, dollars) print as plain numbers to 3 significant digits
with the unit after, never with an SI prefix; seconds and bytes take an SI prefix; a missing
value prints as 'n/a'.
"""
import math

import pytest

from scalebook.units import fmt_bytes, fmt_seconds, format_quantity


@pytest.mark.parametrize("unit", ["token", "chip", "param", "FLOP/B", "$"])
def test_counts_print_without_a_prefix(unit):
    assert format_quantity(3.2e6, unit) == f"3.2e+06 {unit}"
    assert format_quantity(250, unit) == f"250 {unit}"


def test_a_plain_number_has_no_unit_after_it():
    assert format_quantity(1234.5) == "1.23e+03"


@pytest.mark.parametrize("value", [None, math.nan])
def test_missing_values_print_as_n_a(value):
    assert format_quantity(value, "s") == "n/a"


def test_seconds_and_bytes_take_an_si_prefix():
    assert fmt_seconds(3.2e-3) == "3.2 ms"
    assert fmt_seconds(0) == "0 s"
    assert fmt_bytes(16e9) == "16 GB"
    assert fmt_bytes(512) == "512 B"
