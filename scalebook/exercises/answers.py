"""Reading a reader's answer in a problem's unit, and printing quantities the way a problem asks.

`read_answer(value, unit)` turns what a reader assigned to `answer` into a float in the problem's
unit, or raises `Unreadable` (a `scalebook.Error`) whose message says what was wrong and what is
accepted. `check()` turns that into a `wrong` verdict instead of stopping the notebook.

What is accepted (the problem pages tell readers the same):

- a number: `int`, `float`, numpy scalars of any width (`np.float32(7.6)`), `Fraction`, `Decimal`;
- a numpy array holding exactly one value (`np.array([7.6])`, a 0-d array), read as that value,
  since a reader who slices one element out of a computation should not be refused;
- a string: a number with an optional unit, `"7.6"`, `"7.6 ms"`, `"0.0076 s"`, `"52.1%"` (a
  percentage where a fraction is asked is divided by 100), `"1e9 tokens"`, `"7_600"`, `"$1.71"`.

Refused, with a message: booleans (`True` is not a count), complex numbers, lists, arrays of more
than one value, inf and NaN alike (a non-finite answer is never right), integers too large for a
float (`10**400`), a string whose unit measures something else (`"7.6 GB"` for a time: "units
don't match"), and decimal commas. Commas are read only as thousands separators, and only where
that reading is the sole one: `"1,234,567"` and `"7,600.5"` are accepted; `"7,6"` and `"7,600"` are
refused because a decimal comma would read them as 7.6 (write `"7.6"` or `"7600"`).
"""
from __future__ import annotations

import math
import re

from .. import units
from ..errors import Error, require_count
from ..errors import text as text_check
from ..errors import number as number_check

__all__ = ["Unreadable", "read_answer", "show", "number", "asks_for"]


class Unreadable(Error):
    """An answer that cannot be read as a quantity in the problem's unit; the message says why."""


#: What each canonical unit measures, to say what a problem asks for.
_KIND = {
    "": "a plain number", "s": "a time", "B": "a size in bytes", "B/s": "a bandwidth", "FLOP": "an amount of work",
    "FLOP/s": "a compute rate", "FLOP/B": "an arithmetic intensity", "token": "a number of tokens",
    "chip": "a number of chips", "param": "a number of parameters", "$": "a cost in dollars",
    "%": "a percentage", "token/s": "a throughput", "hop": "a number of hops",
}
_COUNTS = ("", "token", "chip", "param", "%", "$", "hop")
#: Units that are nouns counted in words: plural unless the number is 1 ('1 token', '2 tokens').
_NOUNS = {"token": "tokens", "chip": "chips", "param": "params", "hop": "hops", "day": "days", "days": "days"}

_NUMBER = re.compile(r"^(?P<num>[-+]?(?:\d[\d,]*\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*(?P<unit>.*?)$")
_GROUPED = re.compile(r"^[-+]?\d{1,3}(?:,\d{3})+(?P<rest>\.\d*)?(?:[eE][-+]?\d+)?$")
_NON_FINITE = {"inf", "+inf", "-inf", "infinity", "+infinity", "-infinity", "nan", "+nan", "-nan"}
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def _unit(unit: str) -> tuple[str, float]:
    """(canonical unit, factor to SI) of a problem's unit; a unit the parser does not know stands for itself."""
    try:
        return units.parse_unit(unit)
    except Error:
        return unit, 1.0


def asks_for(unit: str) -> str:
    """What a problem in `unit` asks for, in words: 'a time in ms', 'a size in kB', 'a number of
    tokens', 'a plain number' (a size asked in plain bytes is 'a size in bytes')."""
    canon, _ = _unit(text_check("unit", unit))
    kind = _KIND.get(canon, f"a quantity in {unit}")
    if canon in _COUNTS or canon not in _KIND or unit == "B":
        return kind
    return f"{kind.removesuffix(' in bytes')} in {unit}"


def _unit_word(unit: str, text: str) -> str:
    """`unit` as written after the number `text`: nouns agree with it ('1 day', '3 days', '10 hops')."""
    if unit in _NOUNS:
        return unit.removesuffix("s") if text in ("1", "-1") else _NOUNS[unit]
    return unit


def _quote(value: object) -> str:
    """A short, printable repr of what the reader gave (no control characters, at most 40 characters)."""
    text = _CONTROL.sub("?", repr(value))
    return text if len(text) <= 40 else text[:37] + "..."


def _finite(x: float, given: object) -> float:
    if not math.isfinite(x):
        raise Unreadable(f"{_quote(given)} is not a finite number (inf and NaN are never an answer): "
                         "look for a division by zero or an overflow in your calculation")
    return x


def _from_number(value: object) -> float:
    """A float from a Python or numpy number; refuses bools, complex values and overflowing integers."""
    if isinstance(value, bool) or type(value).__name__ in ("bool_", "bool"):
        raise Unreadable(f"{value!r} is a yes/no value, not a number: give the number itself")
    if isinstance(value, complex) or "complex" in type(value).__name__:
        raise Unreadable(f"{_quote(value)} is a complex number: give a real number")
    try:
        x = float(value)  # type: ignore[arg-type]
    except OverflowError:
        digits = int(abs(value).bit_length() * math.log10(2)) + 1 if isinstance(value, int) else None
        raise Unreadable(f"an integer of {digits} digits is too large to be a number of this kind"
                         if digits else f"{_quote(value)} is too large to be read as a number") from None
    except (TypeError, ValueError):
        raise Unreadable(f"{_quote(value)} cannot be read as a number") from None
    return _finite(x, value)


def _from_text(text: str, unit: str) -> float:
    """A float in `unit` from a string such as '7.6', '7.6 ms', '52.1%' or '1,234,567 tokens'."""
    s = text.strip().replace("\u2212", "-").replace("\u00a0", " ")
    s = re.sub(r"(?<=\d)_(?=\d)", "", s)
    if s.lower() in _NON_FINITE:
        return _finite(float("nan"), text)
    dollars = re.match(r"^([-+]?)\$\s*(.*)$", s)  # "$1.71" reads as "1.71 $"
    if dollars:
        s = f"{dollars.group(1)}{dollars.group(2)} $"
    m = _NUMBER.match(s)
    if not m:
        raise Unreadable(f"cannot read {_quote(text)} as a number: write a number, optionally with a unit, "
                         "like 7.6 or '7.6 ms' (code in a string is never run)")
    num, unit_text = m.group("num"), m.group("unit")
    if "," in num:
        g = _GROUPED.match(num)
        if not g:
            raise Unreadable(f"{_quote(text)} has a decimal comma: write a decimal point ('7.6'); commas are "
                             "read only as thousands separators, as in '1,234,567'")
        if num.count(",") == 1 and not g.group("rest"):
            raise Unreadable(f"{_quote(text)} is ambiguous: a thousands separator reads it as "
                             f"{num.replace(',', '')}, a decimal comma as {num.replace(',', '.')}; "
                             "write it without the comma")
        num = num.replace(",", "")
    x = _finite(float(num), text)
    if not unit_text:
        return x
    try:
        got, factor = units.parse_unit(unit_text)
    except Error as e:
        raise Unreadable(f"{_quote(text)}: {e}") from None
    want, want_factor = _unit(unit)
    if got == "%" and want == "":  # "52.1%" where a fraction is asked
        got, factor = "", 0.01
    if got != want:
        what = _KIND.get(got, f"in {got}")
        raise Unreadable(f"units don't match: {_quote(text)} is {what}, but this problem asks for {asks_for(unit)}")
    return _finite(x * factor / want_factor, text)


def read_answer(value: object, unit: str) -> float:
    """`value` (a number, a one-value array, or a string with units) as a float in `unit`.

    Raises `Unreadable` for anything else, saying what is accepted (see the module docstring).
    Never evaluates code: strings are matched against a number-and-unit pattern.
    """
    text_check("unit", unit)
    if isinstance(value, str):
        return _from_text(value, unit)
    if isinstance(value, (bytes, list, tuple, dict, set)):
        raise Unreadable(f"{_quote(value)} is a {type(value).__name__}: give one number, or a string like '7.6 ms'")
    shape = getattr(value, "shape", None)
    if shape is not None and hasattr(value, "item"):  # numpy, JAX, torch arrays and scalars
        try:
            dims = tuple(int(d) for d in shape)
        except (TypeError, ValueError):
            raise Unreadable(f"{_quote(value)} cannot be read as a number") from None
        if math.prod(dims) != 1:
            raise Unreadable(f"an array of {math.prod(dims)} values (shape {dims}) is not one answer: "
                             "give the single number")
        try:
            value = value.item()
        except Exception:  # an array type whose item() fails is as unreadable as any other object
            raise Unreadable(f"{_quote(value)} cannot be read as a number") from None
        if isinstance(value, str):
            return _from_text(value, unit)
    if value is None:
        raise Unreadable("None is not a number")
    return _from_number(value)


def number(x: float, digits: int = 4) -> str:
    """A number as a reader writes it: `'24650'`, `'7.6'`, `'0.0076'`, `'1.2e9'` (no '+', no padded exponent).

    At most `digits` significant digits below 1000; whole numbers up to ten million in full; others
    as a mantissa and a power of ten.
    """
    x = number_check("x", x, maximum=math.inf)
    digits = require_count("digits", digits, maximum=17, what="a float's precision")
    if x == 0:
        return "0"
    mag = abs(x)
    if 1e3 <= mag < 1e7:
        return str(int(round(x)))
    if 1e-3 <= mag < 1e3:
        text = f"{x:.{digits}g}"
        return text
    mantissa, exponent = f"{x:.{digits - 1}e}".split("e")
    mantissa = mantissa.rstrip("0").rstrip(".")
    return f"{mantissa}e{int(exponent)}"


def show(x: float, unit: str) -> str:
    """`x` (in `unit`) with its unit, readably: '7.6 ms', '24650 ms (24.65 s)', '4096 tokens', '0.52'.

    A value asked in a prefixed unit that reads better with another prefix gets the SI reading in
    parentheses; the number itself always stays in the problem's unit, since that is what to type.
    """
    x, unit = number_check("x", x, maximum=math.inf), text_check("unit", unit)
    text = (f"${number(x)}" if unit == "$" else
            number(x) + (f" {_unit_word(unit, number(x))}" if unit else ""))
    canon, factor = _unit(unit)
    if canon in ("s", "B", "B/s", "FLOP", "FLOP/s") and x != 0 and not (1e-1 <= abs(x) < 1e4) and abs(x * factor) <= 1e30:
        alt = units.format_quantity(x * factor, canon, 4)
        if alt.split(" ")[-1] != unit:
            text += f" ({alt})"
    return text
