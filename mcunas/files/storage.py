"""Storage faults in one place: a full disk, an unwritable path, a locked or damaged store.

Low layer: imports only ``mcunas.errors``.
"""

from __future__ import annotations

import contextlib
import errno
import os
import sqlite3
from collections.abc import Iterator
from pathlib import Path

from mcunas.errors import FatalError, UserError

__all__ = ["FILE_MODE", "DiskFull", "free_bytes", "is_disk_full", "storage_errors"]

# Permissions of result files (mkstemp would leave them owner-only).
FILE_MODE = 0o644


class DiskFull(FatalError):
    """The disk filled up while writing search results."""

    def __init__(self, what: str | os.PathLike[str]) -> None:
        super().__init__(
            f"Disk full while writing {what}. Free some space, then run the same command "
            "with --resume: finished trials are kept."
        )


def is_disk_full(exc: BaseException, where: str | os.PathLike[str] | None = None) -> bool:
    """True if ``exc`` says the disk (or the database file's disk) is full.

    SQLite reports a write that found no space as "disk I/O error" on some paths
    (the WAL index, a journal): with ``where`` given, such an error counts as a full
    disk when the file system holding ``where`` has less than ``FULL_BELOW_BYTES``
    free, so a resume on a full disk says so instead of calling the store damaged.
    """
    if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return True
    text = str(exc).lower()
    if isinstance(exc, sqlite3.Error) and "disk is full" in text:
        return True
    io_error = isinstance(exc, sqlite3.Error) and "disk i/o error" in text
    return io_error and where is not None and free_bytes(where) < FULL_BELOW_BYTES


# Less free space than this on a file system that failed a write: the disk is full.
FULL_BELOW_BYTES = 1 << 20


def free_bytes(where: str | os.PathLike[str]) -> int:
    """Bytes free for this user on the file system of ``where`` (its nearest existing parent)."""
    path = Path(where).absolute()
    while not path.exists() and path.parent != path:
        path = path.parent
    try:
        st = os.statvfs(path)
    except OSError:
        return 1 << 62  # unknown: not full as far as anyone can tell
    return st.f_bavail * st.f_frsize


# errno values that mean "this path cannot be written", with the words for each.
_UNWRITABLE = {
    errno.EROFS: "is on a read-only file system",
    errno.EACCES: "is not writable (permission denied)",
    errno.EPERM: "is not writable (operation not permitted)",
    errno.ENAMETOOLONG: "has a name too long for the file system",
}


@contextlib.contextmanager
def storage_errors(what: str | os.PathLike[str]) -> Iterator[None]:
    """Turn storage faults inside the block into one clear line about ``what``.

    A full disk raises :class:`DiskFull` (stop, resume later); a read-only,
    unwritable, locked or damaged file or folder raises :class:`UserError` with
    the path and what to do. Anything else passes through.
    """
    try:
        yield
    except (OSError, sqlite3.OperationalError, sqlite3.DatabaseError) as exc:
        if is_disk_full(exc, what):
            raise DiskFull(what) from exc
        message = _storage_message(exc)
        if message is None:
            raise
        raise UserError(f"{what} {message}.") from exc


def _storage_message(exc: BaseException) -> str | None:
    if isinstance(exc, OSError):
        return _UNWRITABLE.get(exc.errno or 0)
    text = str(exc).lower()
    if "readonly" in text or "read-only" in text:
        return "is read-only: make it writable, or give another --out"
    if "locked" in text:
        return "is locked by another process: wait for it, or give another --out"
    if "malformed" in text or "not a database" in text:
        return f"is damaged ({exc}): restore it from a copy, or give another --out"
    if "disk i/o" in text:
        return (
            f"could not be read or written ({exc}): check the disk (dmesg) and its free "
            "space; the store may well be intact, so keep it"
        )
    if "unable to open" in text:
        return "cannot be opened: check that its folder exists and is writable"
    return None
