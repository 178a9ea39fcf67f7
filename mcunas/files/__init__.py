"""Writing results safely: atomic files, a full disk as one clear error, output folders.

Used by the trial store, the report, the export of ``best/`` and anything else
that writes a result a user will read. A path the user names may be a symlink
(its target is written); a file mcunas names inside a folder it manages is
written by :mod:`mcunas.files.managed`, which follows no link. Storage faults
are :mod:`mcunas.files.storage`'s. Low layer: imports only ``mcunas.errors``.
"""

from __future__ import annotations

import hashlib
import os
import stat
import sys
import tempfile
import zipfile
import zlib
from pathlib import Path

from mcunas.errors import UserError
from mcunas.files.managed import (
    kind_of,
    managed_folder,
    open_managed,
    plain_name,
    refuse_links,
    write_managed,
)
from mcunas.files.storage import FILE_MODE, DiskFull, is_disk_full, storage_errors

__all__ = [
    "FILE_MODE",
    "DiskFull",
    "FolderLock",
    "content_sha256",
    "ensure_writable",
    "READ_ERRORS",
    "first_missing",
    "is_disk_full",
    "managed_folder",
    "output_path",
    "plain_name",
    "refuse_links",
    "storage_errors",
    "unreadable",
    "write_file",
    "write_managed",
]

_NOTED: set[str] = set()  # symlinks already announced in this process


def _special_kind(path: Path) -> str | None:
    """What ``path`` is if it exists and is not a regular file (None: new or regular)."""
    try:
        mode = path.lstat().st_mode
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise UserError(f"Cannot write {path}: {exc.strerror or exc}.") from None
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISLNK(mode):
        return "a symlink that loops or leads nowhere readable"
    return kind_of(mode)


def output_path(path: str | os.PathLike[str], what: str = "output") -> Path:
    """Where an output file named ``path`` may be written: a regular file or a new path.

    Every file mcunas writes passes here first. A path that exists and is a
    folder, a device (``/dev/null``, ``/dev/full``), a named pipe or a socket is
    refused before anything is written, so no command can replace a special
    file. A symlink is followed: its final target is written (and replaced
    atomically) and the link stays; stderr says so once per path.

    Args:
        path: str | PathLike. The output the user or the program named.
        what: str, default "output". What the file is, for the refusal's words.

    Returns:
        The path to write: ``path`` itself, or its symlink's final target.

    Raises:
        UserError: the path or its symlink's target is not a regular file.
    """
    given = Path(path).expanduser()
    target = given
    if given.is_symlink():
        target = Path(os.path.realpath(given))
    kind = _special_kind(target)
    if kind is not None:
        shown = f"{given} (a symlink to {target})" if target != given else str(given)
        raise UserError(
            f"Refused to write the {what} {shown}: it is {kind}, not a regular file. "
            "Give the path of a file to create or replace."
        )
    if target != given and str(given) not in _NOTED:
        _NOTED.add(str(given))
        sys.stderr.write(f"Note: {given} is a symlink; writing its target {target}.\n")
    return target


# What reading a damaged, truncated or foreign file raises, from the standard library,
# numpy (ValueError for a file that is no .npy/.npz) and json (JSONDecodeError is a ValueError).
READ_ERRORS: tuple[type[BaseException], ...] = (
    OSError,
    EOFError,
    ValueError,
    KeyError,
    IndexError,
    TypeError,
    AttributeError,
    zipfile.BadZipFile,
    zlib.error,
)


def unreadable(path: str | os.PathLike[str], what: str, fix: str, exc: BaseException) -> UserError:
    """The one line for a file mcunas wrote earlier that cannot be read back.

    The reader's own words are kept out where they mislead (numpy's advice to load
    a file "unsafely" with ``allow_pickle``); the line says what the file is, what
    is wrong with it in plain words, and ``fix``, what to do.

    Example::

        except READ_ERRORS as exc:
            raise unreadable(path, "supernet checkpoint", "delete it to start over", exc)
    """
    return UserError(f"{path} is not a readable {what} ({_damage(exc)}): {fix}.")


def _damage(exc: BaseException) -> str:
    """What is wrong with a file, from the exception its reader raised."""
    if isinstance(exc, zipfile.BadZipFile | EOFError | zlib.error):
        return "damaged or cut short"
    if isinstance(exc, FileNotFoundError):
        return "missing"
    if isinstance(exc, OSError):
        return exc.strerror or "cannot be read"
    if isinstance(exc, UnicodeDecodeError):
        return "not text: damaged, or another kind of file"
    if isinstance(exc, ValueError) and "pickle" in str(exc):
        return "not a numpy archive: text or another kind of file"
    if isinstance(exc, KeyError):
        return f"a part is missing: {exc}"
    return f"damaged or of another kind: {type(exc).__name__}"


def write_file(
    path: Path, data: bytes | str, what: str = "output", *, inside: Path | None = None
) -> Path:
    """Write a file atomically (temporary file + rename); :class:`DiskFull` on ENOSPC.

    A path the user named (``inside`` None) is checked by :func:`output_path`
    first (special files refused, symlinks written through), and again just
    before the rename. A file mcunas names itself inside a folder it manages
    (``inside``, the folder the user named) goes through :func:`write_managed`:
    no link below ``inside`` is followed.

    Returns:
        The path written (a symlink's target where ``path`` is a user's symlink).
    """
    raw = data.encode() if isinstance(data, str) else data
    if inside is not None:
        return write_managed(Path(inside), Path(path), raw, what)
    path = output_path(path, what)
    path.parent.mkdir(parents=True, exist_ok=True)
    with storage_errors(path):
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(raw)
            os.chmod(tmp, FILE_MODE)
            output_path(path, what)  # nothing swapped in a special file meanwhile
            os.replace(tmp, path)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
    return path


def first_missing(out_dir: Path) -> Path | None:
    """The top-most folder of ``out_dir`` that does not exist yet (None if it exists).

    Raises:
        UserError: ``out_dir`` or one of its parents is a file, or the nearest
            existing parent is not writable: the folder could not be created.
    """
    path = Path(out_dir).expanduser().absolute()
    if path.exists() and not path.is_dir():
        kind = _special_kind(Path(os.path.realpath(path))) or "a file"
        raise UserError(f"Cannot use {out_dir} as the output folder: it is {kind}.")
    if path.is_dir():
        if not os.access(path, os.W_OK):
            raise UserError(f"Output folder {out_dir} is not writable.")
        return None
    missing = path
    while not missing.parent.exists() and missing.parent != missing:
        missing = missing.parent
    if missing.exists() or not missing.parent.is_dir():
        blocker = missing if missing.exists() else missing.parent
        raise UserError(f"Cannot create output folder {out_dir}: {blocker} is a file.")
    if not os.access(missing.parent, os.W_OK | os.X_OK):
        raise UserError(f"Cannot create output folder {out_dir}: {missing.parent} is not writable.")
    return missing


def ensure_writable(out_dir: Path) -> None:
    """Raise :class:`UserError` if ``out_dir`` cannot be created or written."""
    try:
        Path(out_dir).mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        if is_disk_full(exc):
            raise DiskFull(out_dir) from exc
        raise UserError(f"Cannot create output folder {out_dir}: {exc.strerror}") from exc
    if not os.access(out_dir, os.W_OK):
        raise UserError(f"Output folder {out_dir} is not writable.")


class FolderLock:
    """An exclusive lock on a folder for one process's life (``fcntl.flock``).

    The lock is a file inside the folder holding the owner's pid. The OS
    releases it when the owner exits, however it dies, so a ``kill -9`` leaves
    no stale lock; the file itself stays and is reused. It is opened with
    :func:`~mcunas.files.managed.open_managed`: a symlink planted at its name is
    refused; a file with other hard links is locked but never written.

    Example::

        with FolderLock(Path("runs/demo"), "mcunas search"):
            ...  # only this process writes runs/demo

    Raises (on entry):
        UserError: another process holds the lock (its pid is named).
    """

    NAME = ".mcunas.lock"

    def __init__(self, folder: Path, what: str) -> None:
        """Remember the folder; nothing is locked until the ``with`` block starts."""
        self.path = Path(folder) / self.NAME
        self.what = what
        self._fd: int | None = None

    def __enter__(self) -> FolderLock:
        """Take the lock or say who holds it."""
        import fcntl

        fd = open_managed(self.path.parent, self.path, os.O_RDWR | os.O_CREAT, "folder lock")
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            text = os.pread(fd, 64, 0).decode(errors="replace")
            holder = "".join(c for c in text if c.isdigit())[:12] or "unknown"
            os.close(fd)
            raise UserError(
                f"{self.path.parent} is in use by another {self.what} (pid {holder}). "
                "Wait for it to finish, or choose another --out."
            ) from None
        if os.fstat(fd).st_nlink == 1:  # a file with other names is theirs too: not written
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        self._fd = fd
        return self

    def __exit__(self, *exc: object) -> None:
        """Release the lock (the file stays)."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def content_sha256(path: Path, chunk: int = 1 << 20) -> str:
    """SHA-256 of a file's bytes, or of a folder's files (relative names and bytes).

    Hidden files and folders (names starting with ``.``) are skipped.
    """
    digest = hashlib.sha256()
    path = Path(path)
    files = (
        [path]
        if path.is_file()
        else sorted(p for p in path.rglob("*") if p.is_file() and not _hidden(p.relative_to(path)))
    )
    for file in files:
        if file is not path:
            digest.update(file.relative_to(path).as_posix().encode() + b"\0")
        with open(file, "rb") as fh:
            while block := fh.read(chunk):
                digest.update(block)
    return digest.hexdigest()


def _hidden(rel: Path) -> bool:
    return any(part.startswith(".") for part in rel.parts)
