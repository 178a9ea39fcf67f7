"""The one user-facing exception root of mcunas.

Library code raises subclasses of :class:`McunasError`; the CLI catches them
once and prints one line (exit code 2). Inside a search, a candidate that
cannot run raises :class:`CandidateError`, which the tuner turns into a
recorded failed trial; :class:`FatalError` stops the search at once.
"""

from __future__ import annotations

import re


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


class ResumableStop(McunasError):
    """A search stopped with work left that ``--resume`` continues: its folder is kept."""


class TrialTakenAway(McunasError):
    """A distributed search's chief handed this worker's trial to another worker."""


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
    """One line for a trial's reason: the message, with the type for non-mcunas errors.

    Long framework errors (TensorFlow's run to dozens of lines of node names and
    stack frames) are cut to their first line and their cause, the last line
    that says what went wrong, so the reason is never cut before the actual error.
    """
    if isinstance(exc, McunasError):
        return (" ".join(str(exc).split()) or type(exc).__name__)[:limit]
    message = str(exc).split("Arguments received by")[0]  # Keras's call context, not a cause
    lines = [_clean(line) for line in message.splitlines()]
    lines = [line for line in lines if line and not line.startswith(_NOISE)]
    if not lines:
        return type(exc).__name__
    text = lines[0] if len(lines) == 1 or lines[-1] in lines[0] else f"{lines[0]} ... {lines[-1]}"
    text = f"{type(exc).__name__}: {text}"
    if len(text) <= limit:
        return text
    cause = f"{type(exc).__name__}: ... {lines[-1]}"
    return cause[:limit] if len(cause) < len(text) else text[: limit - 3] + "..."


# Lines of framework errors that locate a fault but do not say what it is.
_NOISE = ("Detected at node", "File ", "Traceback", "Stack trace", "[[{{node", "Node:", "Op:")


def _clean(line: str) -> str:
    """A line without TensorFlow's ``[[{{node ...}}]]`` and ``[Op:...]`` suffixes."""
    line = re.sub(r"\x1b\[[0-9;]*m", "", line)  # terminal colours
    line = re.sub(r"\[\[\{\{node [^]]*\]\]|\[Op:[^]]*\]( name:)?|\{\{[^}]*\}\}", "", line)
    return " ".join(line.split()).strip(" :")
