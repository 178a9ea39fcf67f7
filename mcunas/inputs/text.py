"""Strings a user writes, bounded before any conversion.

A setup key, a version, a name or an address comes from a profile, a flag or a
client. Its length is checked before ``int()`` or ``float()`` sees it: Python
refuses integers of more than 4300 digits with its own error, and a string of
megabytes is a mistake to refuse, not to convert. Each refusal is one line
that names the key.
"""

from __future__ import annotations

import math

from mcunas.errors import UserError
from mcunas.limits import MAX_NAME_CHARS, MAX_NUMBER_CHARS

__all__ = ["bounded_float", "bounded_int", "bounded_text"]


def _cut(text: str, chars: int = 24) -> str:
    return repr(text) if len(text) <= chars else f"{text[:chars]!r}... ({len(text):,} characters)"


def bounded_text(
    value: object,
    what: str,
    max_chars: int = MAX_NAME_CHARS,
    error: type[UserError] = UserError,
) -> str:
    """``value`` as a string of at most ``max_chars`` printable characters.

    Raises:
        UserError (``error``): not a string, too long, or holding control characters.
    """
    if not isinstance(value, str):
        raise error(f"{what} must be text, got {type(value).__name__} {_cut(str(value))}.")
    if len(value) > max_chars:
        raise error(f"{what} is {len(value):,} characters long: at most {max_chars}.")
    if any(ord(c) < 32 or ord(c) == 127 for c in value):
        raise error(f"{what} holds control characters: {_cut(value)}.")
    return value


def bounded_int(value: object, what: str, error: type[UserError] = UserError) -> int:
    """A whole number from an int or a short string (``"20240301"``, ``"0x10"`` not taken).

    Raises:
        UserError (``error``): a bool, a float that is not whole, a string longer
            than :data:`mcunas.limits.MAX_NUMBER_CHARS` or not a whole number.
    """
    if isinstance(value, bool):
        raise error(f"{what} must be a whole number, got {value!r}.")
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        if math.isfinite(value) and value == int(value):
            return int(value)
        raise error(f"{what} must be a whole number, got {value!r}.")
    text = bounded_text(value, what, MAX_NUMBER_CHARS, error).strip().replace("_", "")
    try:
        return int(text, 10)
    except ValueError:
        raise error(f"{what} must be a whole number, got {_cut(text)}.") from None


def bounded_float(value: object, what: str, error: type[UserError] = UserError) -> float:
    """A finite number from an int, a float or a short string.

    Raises:
        UserError (``error``): a bool, NaN or infinite, a string longer than
            :data:`mcunas.limits.MAX_NUMBER_CHARS` or not a number.
    """
    if isinstance(value, bool):
        raise error(f"{what} must be a number, got {value!r}.")
    if isinstance(value, int):
        if abs(value) > 10**MAX_NUMBER_CHARS:
            raise error(f"{what} is out of range: {_cut(str(value))}.")
        return float(value)
    if isinstance(value, float):
        number = value
    else:
        text = bounded_text(value, what, MAX_NUMBER_CHARS, error).strip()
        try:
            number = float(text)
        except ValueError:
            raise error(f"{what} must be a number, got {_cut(text)}.") from None
    if not math.isfinite(number):
        raise error(f"{what} must be a finite number, got {value!r}.")
    return number
