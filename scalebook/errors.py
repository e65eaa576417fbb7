"""The one exception type that scalebook raises for bad input."""


class Error(ValueError):
    """Bad input to scalebook: the message says what was wrong and what would be valid."""


def require_positive(**values: float) -> None:
    """Raise `Error` unless every named value is a finite number greater than zero."""
    for name, value in values.items():
        try:
            ok = value > 0 and value != float("inf")
        except TypeError:
            raise Error(f"{name} must be a positive number, got {value!r}") from None
        if not ok:  # also catches NaN, for which every comparison is False
            raise Error(f"{name} must be a positive finite number, got {value!r}")


def require_non_negative(**values: float) -> None:
    """Raise `Error` unless every named value is a finite number of zero or more."""
    for name, value in values.items():
        try:
            ok = value >= 0 and value != float("inf")
        except TypeError:
            raise Error(f"{name} must be a number >= 0, got {value!r}") from None
        if not ok:
            raise Error(f"{name} must be a finite number >= 0, got {value!r}")


def choose(kind: str, value: str, valid: "list[str] | tuple[str, ...]") -> str:
    """Return `value` if it is one of `valid`, else raise `Error` listing the valid choices."""
    if value not in valid:
        raise Error(f"unknown {kind} {value!r}; valid: {', '.join(valid)}")
    return value
