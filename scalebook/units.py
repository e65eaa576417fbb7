"""SI prefixes, dtype sizes, and formatting/parsing of quantities with units.

Inside scalebook every quantity is a plain float in SI base units: seconds, bytes, FLOPs,
bytes/s, FLOPs/s. Human strings (`"3.2 ms"`, `"70 GB"`, `"4.6e14 FLOP/s"`) are turned into those
floats by `parse_quantity` and back by `format_quantity`; nothing else in the package formats
numbers with units. Decimal prefixes throughout (1 GB = 10⁹ B), as vendors print them; binary
prefixes (KiB, MiB, GiB) are accepted where a string says so.
"""
from __future__ import annotations

import math
import numbers
import re

from .errors import Error, _show
from .errors import integer as _integer, number as _number, text as _text

#: Bytes per element of each dtype the package knows. int4/fp4 pack two values per byte.
DTYPE_BYTES: dict[str, float] = {
    "fp32": 4.0,
    "f32": 4.0,
    "float32": 4.0,
    "bf16": 2.0,
    "bfloat16": 2.0,
    "fp16": 2.0,
    "f16": 2.0,
    "float16": 2.0,
    "int32": 4.0,
    "fp8": 1.0,
    "int8": 1.0,
    "int4": 0.5,
    "fp4": 0.5,
}

_CANONICAL_DTYPE = {
    "f32": "fp32", "float32": "fp32", "bfloat16": "bf16", "f16": "fp16", "float16": "fp16",
}

_PREFIX = {
    "": 1.0, "Z": 1e21, "Y": 1e24, "k": 1e3, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15, "E": 1e18,
    "m": 1e-3, "u": 1e-6, "µ": 1e-6, "μ": 1e-6, "n": 1e-9, "p": 1e-12,
    "Ki": 2.0**10, "Mi": 2.0**20, "Gi": 2.0**30, "Ti": 2.0**40, "Pi": 2.0**50,
}

# Spelled-out units a reader may type, mapped to (canonical unit, factor to SI).
_BASE = {
    "s": ("s", 1.0), "sec": ("s", 1.0), "secs": ("s", 1.0), "second": ("s", 1.0),
    "seconds": ("s", 1.0), "min": ("s", 60.0), "h": ("s", 3600.0), "hour": ("s", 3600.0),
    "hours": ("s", 3600.0), "day": ("s", 86400.0), "days": ("s", 86400.0),
    "B": ("B", 1.0), "byte": ("B", 1.0), "bytes": ("B", 1.0),
    "b": ("B", 1 / 8), "bit": ("B", 1 / 8), "bits": ("B", 1 / 8),
    "FLOP": ("FLOP", 1.0), "FLOPs": ("FLOP", 1.0), "flop": ("FLOP", 1.0), "flops": ("FLOP", 1.0),
    "FLOPS": ("FLOP/s", 1.0), "OPs": ("FLOP", 1.0), "ops": ("FLOP", 1.0),
    "bps": ("B/s", 1 / 8), "Bps": ("B/s", 1.0),
    "token": ("token", 1.0), "tokens": ("token", 1.0),
    "chip": ("chip", 1.0), "chips": ("chip", 1.0),
    "param": ("param", 1.0), "params": ("param", 1.0),
    "$": ("$", 1.0), "USD": ("$", 1.0),
    "%": ("%", 1.0), "percent": ("%", 1.0),
}

_NUMBER = re.compile(r"^\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*(.*?)\s*$")


def dtype_bytes(dtype: str, name: str = "dtype") -> float:
    """Bytes per element of `dtype` (e.g. 2 for bf16, 0.5 for int4); `name` is the argument's name
    for the error message."""
    if not isinstance(name, str):
        raise Error(f"name must be the argument's name (a string), got {type(name).__name__}")
    if not isinstance(dtype, str) or dtype not in DTYPE_BYTES:
        raise Error(f"unknown {name} {_show(dtype)}; valid: {', '.join(sorted(set(map(canonical_dtype, DTYPE_BYTES))))}")
    return DTYPE_BYTES[dtype]


def canonical_dtype(dtype: str, name: str = "dtype") -> str:
    """The package's short name for a dtype ('bfloat16' -> 'bf16'); raises `Error` if unknown,
    naming the argument `name`."""
    if not isinstance(dtype, str) or dtype not in DTYPE_BYTES or not isinstance(name, str):
        dtype_bytes(dtype, name)
    return _CANONICAL_DTYPE.get(dtype, dtype)


def _parse_simple_unit(text: str) -> tuple[str, float]:
    """'GB' -> ('B', 1e9); 'ms' -> ('s', 1e-3); 'GiB' -> ('B', 2**30)."""
    if text in _BASE:
        return _BASE[text]
    for plen in (2, 1):
        prefix, rest = text[:plen], text[plen:]
        if prefix in _PREFIX and rest in _BASE:
            unit, factor = _BASE[rest]
            return unit, _PREFIX[prefix] * factor
    raise Error(
        f"cannot read the unit {text!r}; write e.g. 's', 'ms', 'us', 'B', 'GB', 'GiB', "
        "'FLOP', 'TFLOP/s', 'GB/s', 'FLOP/B', 'tokens'"
    )


def parse_unit(text: str) -> tuple[str, float]:
    """Split a unit string into (canonical unit, factor to SI).

    >>> parse_unit("GB/s")
    ('B/s', 1000000000.0)
    >>> parse_unit("TFLOPs/s")
    ('FLOP/s', 1000000000000.0)
    """
    text = _text("unit", text).strip().replace(" ", "")
    if not text:
        return "", 1.0
    parts = text.split("/")
    if len(parts) > 2:
        raise Error(f"cannot read the unit {text!r}: use at most one '/'")
    num_unit, factor = _parse_simple_unit(parts[0])
    if len(parts) == 1:
        return num_unit, factor
    den_unit, den_factor = _parse_simple_unit(parts[1])
    if num_unit == "FLOP/s" or num_unit == "B/s":
        raise Error(f"cannot read the unit {text!r}")
    return f"{num_unit}/{den_unit}", factor / den_factor


def parse_quantity(value: "str | float | int", unit: str = "") -> float:
    """Read a number, or a string with a unit, as a float in the SI form of `unit`.

    `parse_quantity("3.2 ms", "s") == 0.0032`; `parse_quantity("1.5e12 FLOP/s", "FLOP/s")`;
    a bare number is taken to be in `unit` already. A string whose unit measures something
    else (bytes where seconds are asked), a bool, an array, NaN, inf or a value too large for a
    float raises `Error`. Never evaluates code.
    """
    want_unit, want_factor = parse_unit(unit)
    if isinstance(value, str):
        m = _NUMBER.match(value.replace(",", "").replace("_", ""))
        if not m:
            raise Error(f"cannot read value {_show(value)} as a quantity; write a number, optionally with a unit, "
                        "like '3.2 ms'")
        x = float(m.group(1))
        if m.group(2):
            got_unit, factor = parse_unit(m.group(2))
            if got_unit == "%" and want_unit == "":  # "41%" where a fraction is asked
                got_unit, factor = "", 0.01
            if got_unit != want_unit and not (got_unit == "" or want_unit == ""):
                raise Error(f"{_show(value)} is in {got_unit}, but this asks for {unit or 'a plain number'}")
            if got_unit != want_unit and want_unit == "" and got_unit:
                raise Error(f"{_show(value)} has a unit, but this asks for a plain number")
            x = x * factor / want_factor
        if not math.isfinite(x):
            raise Error(f"value {_show(value)} is too large for a float; write a finite quantity like '3.2 ms'")
        return x
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise Error(f"value must be a number or a string like '3.2 ms', got {_show(value)} ({type(value).__name__})")
    return _number("value", value)


_FORMAT_PREFIXES = [(1e18, "E"), (1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"),
                    (1.0, ""), (1e-3, "m"), (1e-6, "µ"), (1e-9, "n")]


def _round(value: float, digits: int) -> float:
    """`value` rounded to `digits` significant figures (inf stays inf)."""
    return float(f"{value:.{digits - 1}e}")


def _positional(value: float, digits: int) -> str:
    """`value` to `digits` significant figures in positional notation: '330', '3.2', '0.0012'.

    Unlike the 'g' format it never switches to an exponent (`'3.3e+02'`) when the number has
    more integer digits than significant ones; trailing zeros after the point are dropped.
    """
    rounded = _round(value, digits)
    if rounded == 0:
        return "0"
    decimals = max(0, digits - 1 - math.floor(math.log10(abs(rounded))))
    text = f"{rounded:.{decimals}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


_SUPERSCRIPT = str.maketrans("0123456789-", "⁰¹²³⁴⁵⁶⁷⁸⁹⁻")


def scientific(value: float, digits: int = 3) -> str:
    """`value` to `digits` significant figures times a power of ten, as prose writes it.

    `scientific(6.35e24) == '6.35 × 10²⁴'`, `scientific(1e-5) == '1 × 10⁻⁵'`: the exponent in
    superscript digits, trailing zeros of the mantissa dropped; never the `'6.35e+24'` of code.
    Zero prints as '0'; infinities and NaN as Python prints them.
    """
    value = _number("value", value) if not (isinstance(value, float) and not math.isfinite(value)) else value
    digits = _integer("digits", digits)
    if not math.isfinite(value):
        return str(value)
    if value == 0:
        return "0"
    mantissa, exponent = f"{value:.{digits - 1}e}".split("e")
    if "." in mantissa:
        mantissa = mantissa.rstrip("0").rstrip(".")
    return f"{mantissa} × 10{str(int(exponent)).translate(_SUPERSCRIPT)}"


def _unprefixed(value: float, digits: int) -> str:
    """A number printed without a prefix: written out from 10⁻⁴ up to 1000, times a power of ten outside."""
    if math.isfinite(value) and 1e-4 <= abs(_round(value, digits)) < 1000:
        return _positional(value, digits)
    if math.isfinite(value) and value == 0:
        return "0"
    return scientific(value, digits) if math.isfinite(value) else f"{value:g}"


def format_quantity(value: float, unit: str = "", digits: int = 3) -> str:
    """Format an SI float with a prefix: `format_quantity(3.2e-3, "s") == '3.2 ms'`.

    `digits` significant figures, written out in full ('330 ms' at digits=2, never `'3.3e+02 ms'`);
    the prefix is chosen after rounding, so 999.7 GB at 3 digits prints as '1 TB'. Times of two
    days or more print in days, of an hour or more in hours, of 1000 s or more in minutes.
    Dimensionless values, counts (tokens, chips, params, FLOP/B, $) and those times take no
    prefix: written out from 10⁻⁴ up to 1000, times a power of ten outside that range
    ('1.23 × 10³', see `scientific`); beyond exa a prefixed quantity also takes a power of ten.
    """
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    value = _number("value", value)  # inf and magnitudes above 1e30 are refused: a page never shows them
    unit, digits = _text("unit", unit), _integer("digits", digits)
    if digits > 17:
        raise Error(f"digits must be at most 17 (a float's precision), got {digits}")
    if unit in ("", "token", "chip", "param", "FLOP/B", "$"):
        return _unprefixed(value, digits) + ("" if unit == "" else " " + unit)
    if unit == "s" and abs(value) >= 86400 * 2:
        return f"{_unprefixed(value / 86400, digits)} days"
    if unit == "s" and abs(value) >= 3600:
        return f"{_unprefixed(value / 3600, digits)} h"
    if unit == "s" and abs(value) >= 1000:  # "16.7 min", not "1 ks"
        return f"{_unprefixed(value / 60, digits)} min"
    mag = abs(_round(value, digits))
    if mag == 0:
        return f"0 {unit}"
    if mag >= 1e21:  # beyond exa, prefixes (zetta, yotta) read worse than an exponent
        return f"{scientific(value, digits)} {unit}"
    for scale, prefix in _FORMAT_PREFIXES:
        if mag >= scale:
            return f"{_positional(value / scale, digits)} {prefix}{unit}"
    return f"{scientific(value, digits)} {unit}"


def fmt_seconds(value: float) -> str:
    """`value` seconds as text with an SI prefix: `format_quantity(value, "s")`."""
    return format_quantity(value, "s")


_E_NOTATION = re.compile(r"(?<![\w.])(-?\d+(?:\.\d+)?)[eE]([+-]?\d+)(?!\w|\.\d)")


def prose_numbers(text: str) -> str:
    """`text` with every number in e-notation rewritten as prose writes it: `'2.25e15'` -> '2.25 × 10¹⁵'.

    For free text from the package data (a chip's notes and sources) shown on a page; the mantissa
    keeps the digits it was written with. Words and identifiers ('v5e', 'fp8e4') are left alone.
    """
    text = _text("text", text)
    return _E_NOTATION.sub(lambda m: f"{m.group(1)} × 10{str(int(m.group(2))).translate(_SUPERSCRIPT)}", text)


def _not_finite(value) -> "str | None":
    """'n/a' for None or NaN, '∞' or '-∞' for an infinity, None for anything else."""
    if value is None:
        return "n/a"
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        v = float(value)
        if math.isnan(v):
            return "n/a"
        if math.isinf(v):
            return "∞" if v > 0 else "-∞"
    return None


def fmt_number(value: float, digits: int = 3) -> str:
    """A plain number for a reader: '12,346' from 1000 up, '3.14' (`digits` significant) below.

    From 1000 to 10¹⁵ the whole number prints with thousands separators (a count or a rate reads
    better whole than rounded: '12,346 token/s'); beyond, and below 10⁻⁴, times a power of ten
    (`scientific`). Never e-notation.
    """
    if _not_finite(value):
        return _not_finite(value)
    value = _number("value", value)
    digits = _integer("digits", digits)
    if 1000 <= abs(value) < 1e15:
        return f"{value:,.0f}"
    return _unprefixed(value, digits)


_COUNT_SUFFIXES = ((1e12, "T"), (1e9, "B"), (1e6, "M"), (1e3, "k"))


def fmt_count(value: float, digits: int = 3) -> str:
    """A large count with a decimal suffix, as the book writes token and parameter counts.

    `fmt_count(4.194e6) == '4.19M'`, `fmt_count(1.5e13) == '15T'`, `fmt_count(8.03e9) == '8.03B'`
    (k = 10³, M = 10⁶, B = 10⁹, T = 10¹²; `digits` significant figures, the suffix chosen after
    rounding); below 1000 the number itself ('512'); from 1000T up, times a power of ten.
    None or NaN prints 'n/a', an infinity '∞'.
    """
    if _not_finite(value):
        return _not_finite(value)
    value = _number("value", value)
    digits = _integer("digits", digits)
    mag = abs(_round(value, digits))
    if mag >= 1e15:
        return scientific(value, digits)
    for scale, suffix in _COUNT_SUFFIXES:
        if mag >= scale:
            return f"{_positional(value / scale, digits)}{suffix}"
    return _unprefixed(value, digits)


def fmt_percent(fraction: float, decimals: int = 1, signed: bool = False) -> str:
    """`fraction` (0.0072) as a percentage for a reader: '0.7%', with `signed` '+0.7%'.

    Exactly zero prints '0%'; a nonzero share that rounds to zero at `decimals` prints
    '<0.1%' (signed: '+<0.1%' or '-<0.1%'), never `'0.0%'` or `'-0%'`. Trailing zeros stay
    ('12.0%') so a column of shares lines up. None or NaN prints 'n/a', an infinity '∞%'.
    """
    if _not_finite(fraction):
        return _not_finite(fraction) + ("%" if _not_finite(fraction) != "n/a" else "")
    fraction = _number("fraction", fraction)
    decimals = _integer("decimals", decimals, minimum=0)
    sign = ("+" if fraction > 0 else "-" if fraction < 0 else "") if signed else ("-" if fraction < 0 else "")
    if fraction == 0:
        return "0%"
    text = f"{abs(100 * fraction):.{decimals}f}"
    if float(text) == 0:
        return f"{sign}<{10 ** -decimals:.{decimals}f}%"
    return f"{sign}{text}%"


def fmt_bytes(value: float) -> str:
    """`value` bytes as text with a decimal prefix: `format_quantity(value, "B")`."""
    return format_quantity(value, "B")
