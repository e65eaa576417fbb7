"""units: parsing and formatting of quantities, dtype sizes."""
import numpy as np
import pytest

from scalebook import Error
from scalebook.units import canonical_dtype, dtype_bytes, format_quantity, parse_quantity, parse_unit


@pytest.mark.parametrize("text, unit, expected", [
    ("3.2 ms", "s", 3.2e-3),
    ("100us", "s", 100e-6),
    ("1.5e12 FLOP/s", "FLOP/s", 1.5e12),
    ("4.6e14 FLOPs/s", "FLOP/s", 4.6e14),
    ("197 TFLOP/s", "FLOP/s", 197e12),
    ("70 GB", "B", 70e9),
    ("2 GiB", "B", 2 * 2**30),
    ("820 GB/s", "B/s", 820e9),
    ("400 Gbps", "B/s", 50e9),
    ("240", "FLOP/B", 240.0),
    ("240 FLOP/B", "FLOP/B", 240.0),
    ("1.2 days", "s", 1.2 * 86400),
    ("3 ms", "ms", 3.0),
])
def test_parse_quantity_reads_strings_with_units(text, unit, expected):
    assert parse_quantity(text, unit) == pytest.approx(expected)


def test_parse_quantity_takes_bare_numbers_in_the_asked_unit():
    assert parse_quantity(0.5, "s") == 0.5
    assert parse_quantity("0.5", "s") == 0.5


def test_parse_quantity_refuses_a_unit_of_another_kind():
    with pytest.raises(Error, match="asks for s"):
        parse_quantity("3 GB", "s")


@pytest.mark.parametrize("bad", ["three ms", "1+1", "__import__('os')", "", "nan"])
def test_parse_quantity_refuses_what_is_not_a_quantity(bad):
    with pytest.raises(Error):
        parse_quantity(bad, "s")


@pytest.mark.parametrize("bad", [True, np.array([1.0, 2.0]), float("inf"), 10**400, "1e400 s", None])
def test_parse_quantity_names_the_value_it_refuses(bad):
    with pytest.raises(Error, match="value"):
        parse_quantity(bad, "s")


def test_parse_quantity_names_an_unreadable_unit_even_for_a_bare_number():
    with pytest.raises(Error, match="unit"):
        parse_quantity(3, "parsecs")


def test_parse_unit_gives_canonical_unit_and_factor():
    assert parse_unit("GB/s") == ("B/s", 1e9)
    assert parse_unit("ms") == ("s", 1e-3)


@pytest.mark.parametrize("value, unit, text", [
    (3.2e-3, "s", "3.2 ms"),
    (820e9, "B/s", "820 GB/s"),
    (1.97e14, "FLOP/s", "197 TFLOP/s"),
    (3 * 86400, "s", "3 days"),
    (0, "B", "0 B"),
    (240.24, "", "240"),
])
def test_format_quantity_uses_si_prefixes(value, unit, text):
    assert format_quantity(value, unit) == text


def test_dtype_bytes_knows_packed_int4():
    assert dtype_bytes("bf16") == 2 and dtype_bytes("int8") == 1 and dtype_bytes("int4") == 0.5


def test_unknown_dtype_raises_error_listing_valid_ones():
    with pytest.raises(Error, match="valid: .*bf16"):
        dtype_bytes("bf17")


def test_canonical_dtype_maps_long_names():
    assert canonical_dtype("bfloat16") == "bf16" and canonical_dtype("float32") == "fp32"


def test_a_percentage_reads_in_percent_or_as_a_fraction():
    from scalebook.units import parse_quantity
    assert parse_quantity("41%", "%") == pytest.approx(41)
    assert parse_quantity("41 %", "%") == pytest.approx(41)
    assert parse_quantity("41%", "") == pytest.approx(0.41)


@pytest.mark.parametrize("seconds, text", [(3600, "1 h"), (5400, "1.5 h"), (1000, "16.7 min"), (999, "999 s"),
                                           (172800, "2 days")])
def test_long_times_read_in_minutes_hours_and_days(seconds, text):
    assert format_quantity(seconds, "s") == text


# --- significant digits without an exponent (a value such as 330 ms at 2 digits) -------------

@pytest.mark.parametrize("value, unit, digits, text", [
    (0.33, "s", 2, "330 ms"),          # 'g' would print 3.3e+02 ms
    (456e9, "B", 1, "500 GB"),         # one significant figure, written out
    (123.4e12, "FLOP/s", 2, "120 TFLOP/s"),
    (123.4 * 86400, "s", 2, "120 days"),
])
def test_format_quantity_writes_significant_digits_out_in_full(value, unit, digits, text):
    assert format_quantity(value, unit, digits) == text


def test_format_quantity_picks_the_prefix_after_rounding():
    # 999.7 GB to 3 figures is 1000 GB, which reads as 1 TB (not '1e+03 GB')
    assert format_quantity(999.7e9, "B") == "1 TB"
    # with 4 figures the same value stays below the next prefix
    assert format_quantity(0.9996, "s", 4) == "999.6 ms"


def test_format_quantity_writes_small_counts_out_at_few_digits():
    assert format_quantity(330, "token", 2) == "330 token"
