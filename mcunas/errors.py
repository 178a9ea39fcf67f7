"""The one user-facing exception root of mcunas.

Library code raises subclasses of :class:`McunasError`; the CLI catches them
once and prints one line (exit code 2). Inside a search, a candidate that
cannot run raises :class:`CandidateError`, which the tuner turns into a
recorded failed trial; :class:`FatalError` stops the search at once.
"""

from __future__ import annotations


class McunasError(Exception):
    """Root of every error meant for the user: one clear line, exit code 2."""

    exit_code = 2


class UserError(McunasError):
    """Bad input from the user: a path, a flag, a file's contents."""


class UnknownBoard(UserError):
    """No board profile with that name or path."""

    def __init__(self, name: str, known: list[str]) -> None:
        super().__init__(
            f"Unknown board '{name}'. Known boards: {', '.join(known)}. "
            "Run `mcunas boards` to list them, or pass a profile file's path."
        )


class BoardProfileError(UserError):
    """A board profile file that cannot be read or is missing keys."""


class ModelError(UserError):
    """A model file that is missing, not a .tflite, or not runnable here."""


class DatasetError(UserError):
    """A dataset that cannot be read or is mislabelled."""


class FatalError(McunasError):
    """The environment is broken (no board, no PlatformIO): stop the search."""


class CandidateError(McunasError):
    """One candidate cannot run on the board: record a failed trial, go on."""


class MeasurementError(McunasError):
    """A board or the simulator could not measure a model."""


class ImplausibleFigure(MeasurementError):
    """A figure no board can produce (NaN, infinite, negative or absurdly large)."""

    def __init__(self, name: str, value: object, source: str, bounds: str) -> None:
        super().__init__(
            f"implausible {name} = {value!r} from {source or 'an unnamed source'} "
            f"(expected {bounds}): refused"
        )


def describe(exc: BaseException, limit: int = 300) -> str:
    """One line for a trial's reason: the message, with the type for non-mcunas errors."""
    text = " ".join(str(exc).split()) or type(exc).__name__
    if isinstance(exc, McunasError):
        return text[:limit]
    return f"{type(exc).__name__}: {text}"[:limit]
