"""The guarded opener: regular files only, never blocking, bounded in size.

What esptool and pytest-embedded do with ports and files they did not make:
check the kind, bound the size, name the file, never block. A path is stat'ed
first (its kind in words for the refusal), then opened with ``O_NONBLOCK`` (a
FIFO swapped in meanwhile cannot hang the open) and checked again with
``fstat`` on the descriptor that is read, so what was checked is what is read.

Example::

    data = read_input(Path("serve.token"), "token", "--token-file")
    with open_input(path, "wav", "WAV clip", DatasetError) as fh:
        ...  # a regular file of at most READ_BOUNDS["wav"] bytes
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from mcunas.errors import UserError
from mcunas.limits import READ_BOUNDS

__all__ = ["check_input", "open_input", "read_input", "read_input_text", "shown"]

# What a path is, for the refusal of an input that is not a regular file.
_KINDS = (
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISFIFO, "a named pipe (FIFO)"),
    (stat.S_ISSOCK, "a socket"),
)
_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
_SHOWN_CHARS = 200


def shown(path: str | os.PathLike[str]) -> str:
    """A path as one line shows it: control characters escaped, a long one cut in the middle."""
    text = str(path)
    if any(ord(c) < 32 or ord(c) == 127 for c in text):
        text = repr(text)[1:-1]
    if len(text) > _SHOWN_CHARS:
        text = f"{text[:120]}...{text[-60:]}"
    return text


def _size_words(size: int) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size >= scale:
            return f"{size / scale:.1f} {unit}"
    return f"{size} bytes"


def _refuse_kind(mode: int, path: Path, what: str, error: type[UserError]) -> None:
    if stat.S_ISREG(mode):
        return
    kind = next((words for test, words in _KINDS if test(mode)), "not a regular file")
    raise error(f"Refused to read the {what} {shown(path)}: it is {kind}, not a regular file.")


def _refuse_size(size: int, kind: str, path: Path, what: str, error: type[UserError]) -> None:
    bound, words = READ_BOUNDS[kind]
    if size > bound:
        raise error(
            f"Refused to read the {what} {shown(path)}: it is {_size_words(size)}, more than "
            f"the {_size_words(bound)} such a file may be ({words})."
        )


def _os_error(exc: OSError, path: Path, what: str, error: type[UserError]) -> UserError:
    if isinstance(exc, FileNotFoundError):
        return error(f"The {what} {shown(path)} does not exist.")
    if exc.errno == errno.ENXIO:  # a socket, or a device without its driver
        return error(f"Refused to read the {what} {shown(path)}: it is a socket or a device.")
    return error(f"Cannot read the {what} {shown(path)}: {exc.strerror or exc}.")


def check_input(
    path: str | os.PathLike[str], kind: str, what: str, error: type[UserError] = UserError
) -> os.stat_result:
    """Check that ``path`` is a regular file within its kind's bound, reading nothing.

    For readers that need a path of their own (SQLite); others use :func:`open_input`.

    Args:
        path: str | PathLike. The file.
        kind: str. A key of :data:`mcunas.limits.READ_BOUNDS` (its size bound).
        what: str. What the file is, for the refusal ("WAV clip", "--token-file").
        error: type[UserError], default UserError. The error raised.

    Raises:
        UserError (``error``): missing, not a regular file, or larger than the bound.
    """
    given = Path(path).expanduser()
    try:
        st = os.stat(given)
    except OSError as exc:
        raise _os_error(exc, given, what, error) from None
    _refuse_kind(st.st_mode, given, what, error)
    _refuse_size(st.st_size, kind, given, what, error)
    return st


@contextlib.contextmanager
def open_input(
    path: str | os.PathLike[str], kind: str, what: str, error: type[UserError] = UserError
) -> Iterator[BinaryIO]:
    """Open a user's file for reading: regular, within its bound, without blocking.

    Args and Raises: as :func:`check_input`; the checks run on the opened descriptor.

    Yields:
        The file, opened in binary mode (blocking again once it is known to be regular).
    """
    given = Path(path).expanduser()
    check_input(given, kind, what, error)  # the kind in words before anything is opened
    try:
        fd = os.open(given, _FLAGS)
    except OSError as exc:
        raise _os_error(exc, given, what, error) from None
    try:
        st = os.fstat(fd)
        _refuse_kind(st.st_mode, given, what, error)  # nothing swapped in since the stat
        _refuse_size(st.st_size, kind, given, what, error)
        fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~os.O_NONBLOCK)
        fh = open(fd, "rb")  # noqa: SIM115 - closed by the with below
    except BaseException:
        os.close(fd)
        raise
    with fh:
        yield fh


def read_input(
    path: str | os.PathLike[str], kind: str, what: str, error: type[UserError] = UserError
) -> bytes:
    """The bytes of a user's file, through :func:`open_input`.

    At most the bound plus one byte is read, so a regular file that says it is
    small and never ends (``/proc`` files, a file growing while read) is refused
    too.
    """
    bound = READ_BOUNDS[kind][0]
    with open_input(path, kind, what, error) as fh:
        try:
            data = fh.read(bound + 1)
        except OSError as exc:
            raise _os_error(exc, Path(path), what, error) from None
    _refuse_size(len(data), kind, Path(path), what, error)
    return data


def read_input_text(
    path: str | os.PathLike[str], kind: str, what: str, error: type[UserError] = UserError
) -> str:
    """A user's text file (UTF-8, a byte-order mark dropped), through :func:`read_input`."""
    data = read_input(path, kind, what, error)
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise error(
            f"The {what} {shown(path)} is not UTF-8 text: damaged, or another kind of file."
        ) from None
