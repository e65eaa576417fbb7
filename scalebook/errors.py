"""The one exception type that scalebook raises for bad input, and the checks that raise it.

Every public function validates its arguments with these few helpers at its top, so that bad
input (a bool where a size is expected, NaN, inf, a number too large for a float, a numpy array
where a scalar is expected, a string where a config is expected) raises `Error` saying what was
wrong and what is valid, never a TypeError or OverflowError from deep inside the arithmetic.

Sizes have caps a model can mean, stated in each error: a number at most `MAX_NUMBER` (10³⁰; the
largest quantity in the book, a frontier run's training FLOPs, is about 4 × 10²⁵), a count of chips at
most `MAX_CHIPS` (10**7; the largest cluster in the book has about 10**5), a count of tokens
at most `MAX_TOKENS` (10**15; the largest training set in the book is about 1.5 × 10¹³ tokens), and
any other count at most `MAX_COUNT` (2**53, beyond which a float cannot hold every integer).
Positive quantities are at least `MIN_POSITIVE` (10⁻³⁰), so no division by a tiny input (10⁻³⁰⁰
bytes) overflows to inf: with every input within [10⁻³⁰, 10³⁰], a formula's few products and
quotients stay far inside a float's range.
"""
from __future__ import annotations

import math
import numbers
from typing import Any


MAX_NUMBER = 1e30
MAX_CHIPS = 10**7
MAX_TOKENS = 10**15
MAX_COUNT = 2**53


class Error(ValueError):
    """Bad input to scalebook: the message says what was wrong and what would be valid."""


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def number(name: str, value: Any, *, maximum: float = MAX_NUMBER) -> float:
    """`value` as a finite float; raise `Error` for bools, non-numbers, arrays, NaN, inf, overflow
    and magnitudes above `maximum` (default `MAX_NUMBER`, 10³⁰: no quantity a model means).

    Accepts Python and numpy real scalars (a 0-d or larger numpy array is refused: pass a number).
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise Error(f"{name} must be a number, got {_show(value)} ({type(value).__name__})")
    try:
        out = float(value)
    except (OverflowError, ValueError, TypeError):
        raise Error(f"{name} is too large for a float, got {_show(value)}") from None
    if not math.isfinite(out):
        raise Error(f"{name} must be a finite number, got {_show(value)}")
    if abs(out) > maximum:
        raise Error(f"{name} is too large (at most {maximum:g}), got {_show(value)}")
    return out


def require_finite(**values: Any) -> None:
    """Raise `Error` unless every named value is a finite real number (of magnitude <= 10³⁰)."""
    for name, value in values.items():
        number(name, value)


def require_count(name: str, value: Any, *, minimum: int = 1, maximum: int = MAX_COUNT, what: str = "") -> int:
    """`value` as an int in [minimum, maximum]: a Python or numpy integer, never a bool, a float
    (not even 4.0: a count is typed as one), NaN or an array, each refused with `Error`.

    Use `maximum=MAX_CHIPS` for chips (10**7) and `maximum=MAX_TOKENS` for tokens (10**15); `what`
    names the cap in the message ("mesh axes").
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise Error(f"{name} must be {'a positive integer' if minimum == 1 else f'an integer >= {minimum}'}, "
                    f"got {_show(value)}")
    out = int(value)
    if out < minimum:
        kind = "a positive integer" if minimum == 1 else f"an integer >= {minimum}"
        raise Error(f"{name} must be {kind}, got {_show(value)}")
    if out > maximum:
        why = f"; {what}" if what else ""
        raise Error(f"{name} is too large (at most {maximum:,}{why}), got {_show(value)}")
    return out


def require_flag(name: str, value: Any) -> bool:
    """`value` if it is True or False (a numpy bool too); anything else raises `Error`."""
    if isinstance(value, bool):
        return value
    if type(value).__module__ == "numpy" and type(value).__name__ in ("bool_", "bool"):  # without importing numpy
        return bool(value)
    raise Error(f"{name} must be True or False, got {_show(value)} ({type(value).__name__})")


MIN_POSITIVE = 1e-30


def require_positive(**values: Any) -> None:
    """Raise `Error` unless every named value is a finite number in [10⁻³⁰, 10³⁰] (`MIN_POSITIVE`,
    `MAX_NUMBER`): smaller positive values are no quantity a model means, and dividing by one
    overflows."""
    for name, value in values.items():
        x = number(name, value)
        if x <= 0:
            raise Error(f"{name} must be a positive number, got {_show(value)}")
        if x < MIN_POSITIVE:
            raise Error(f"{name} is too small (at least {MIN_POSITIVE:g}), got {_show(value)}")


def require_non_negative(**values: Any) -> None:
    """Raise `Error` unless every named value is zero or a finite number in [10⁻³⁰, 10³⁰]."""
    for name, value in values.items():
        x = number(name, value)
        if x < 0:
            raise Error(f"{name} must be a number >= 0, got {_show(value)}")
        if 0 < x < MIN_POSITIVE:
            raise Error(f"{name} is too small (0, or at least {MIN_POSITIVE:g}), got {_show(value)}")


def integer(name: str, value: Any, *, minimum: int = 1) -> int:
    """`value` as an int >= `minimum`; a float is accepted only when it is a whole number (4.0).

    Raises `Error` for bools, non-numbers, arrays, NaN, inf and fractions.
    """
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        out = int(value)
    else:
        x = number(name, value)
        if not x.is_integer():
            raise Error(f"{name} must be a whole number, got {_show(value)}")
        out = int(x)
    if out < minimum:
        what = "a positive integer (>= 1)" if minimum == 1 else f"an integer >= {minimum}"
        raise Error(f"{name} must be {what}, got {_show(value)}")
    if out > MAX_COUNT:  # beyond this a float cannot hold every integer; no count in the book comes near
        raise Error(f"{name} is too large (at most 2**53), got {_show(value)}")
    return out


def text(name: str, value: Any) -> str:
    """`value` if it is a str, else raise `Error` (naming `name`)."""
    if not isinstance(value, str):
        raise Error(f"{name} must be a string, got {_show(value)} ({type(value).__name__})")
    return value


def instance(name: str, value: Any, cls: type, hint: str = "") -> Any:
    """`value` if it is a `cls`, else raise `Error` (with `hint`: how to make one)."""
    if not isinstance(value, cls):
        extra = f"; {hint}" if hint else ""
        raise Error(f"{name} must be a {cls.__name__}, got {_show(value)} ({type(value).__name__}){extra}")
    return value


def model(value: Any, name: str = "model") -> Any:
    """A `models.Transformer`: one as is, or a preset name such as 'llama3-8b' resolved to its config.

    Anything else raises `Error` listing how to make a config.
    """
    from . import models  # light; imported here because models imports this module

    if isinstance(value, str):
        return models.preset(value)
    return instance(name, value, models.Transformer,
                    "pass models.preset('llama3-8b'), a preset name, or models.from_spec(...)")


def choose(kind: str, value: str, valid: "list[str] | tuple[str, ...]") -> str:
    """Return `value` if it is one of `valid`, else raise `Error` listing the valid choices."""
    if not isinstance(value, str) or value not in valid:
        raise Error(f"unknown {kind} {_show(value)}; valid: {', '.join(valid)}")
    return value
