"""Writing inside a folder mcunas manages: no link followed, no name leaves the folder.

A user names a folder (``--out``, ``--project-dir``, ``mcunas export --out``);
mcunas names the files and sub-folders inside it (the lock, ``trials.sqlite``,
``models/``, ``best/``, the project, the report, checkpoints). Those names are
mcunas's, so a symlink found at one was planted: in a folder others can
write (a mode-777 folder in ``/tmp``) or in a folder received from elsewhere.
Writing through it would write wherever it points. So below the user's folder:

- every sub-folder is opened with ``O_NOFOLLOW`` relative to its parent's open
  descriptor (``openat``): a sub-folder that is a symlink is refused in one
  line, and nothing swapped in along the way is followed;
- a file is written to a new temporary name (``O_CREAT | O_EXCL | O_NOFOLLOW``)
  and renamed over its name: a link there is replaced, its target untouched;
- a file kept open (the lock) is opened with ``O_NOFOLLOW`` and must be a
  regular file with one link;
- a name built from data (a trial id, a class name, a board name) must be a
  plain name (:func:`plain_name`): no ``/``, no ``..``, so it stays inside.

The user's folder itself may be a symlink: the user named it.

Example::

    write_managed(Path("runs/demo"), Path("runs/demo/best/model.tflite"), data)
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
from collections.abc import Iterator, Sequence
from pathlib import Path

from mcunas.errors import UserError
from mcunas.files.storage import FILE_MODE, storage_errors

__all__ = [
    "MAX_NAME_CHARS",
    "kind_of",
    "managed_folder",
    "open_managed",
    "plain_name",
    "refuse_links",
    "write_managed",
]

MAX_NAME_CHARS = 200  # a name built from data: room left for a prefix and a suffix in 255
# What a path is, for the refusal of an output that is not a regular file.
_KINDS = (
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISFIFO, "a named pipe"),
    (stat.S_ISSOCK, "a socket"),
)


def kind_of(mode: int) -> str:
    """What a path of ``mode`` (from ``lstat``) is, in words: "a named pipe", "a folder"..."""
    if stat.S_ISLNK(mode):
        return "a symlink"
    return next((words for test, words in _KINDS if test(mode)), "not a regular file")


_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC
_NEW_FILE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


def plain_name(name: object, what: str = "name") -> str:
    """``name`` if it is one plain file name, safe to join to a folder.

    Refused: not a string, empty, ``.``, ``..``, a ``/``, a backslash or a
    control character inside, more than :data:`MAX_NAME_CHARS` characters.

    Raises:
        UserError: not a plain name (one line; a chief turns it into a refusal).
    """
    ok = (
        isinstance(name, str)
        and name not in ("", ".", "..")
        and len(name) <= MAX_NAME_CHARS
        and not any(c in "/\\" or ord(c) < 32 or ord(c) == 127 for c in name)
    )
    if not ok or not isinstance(name, str):
        raise UserError(
            f"Refused the {what} {repr(name)[:80]}: a name mcunas makes a file or folder of "
            f"must be one plain name (no '/', no '..', at most {MAX_NAME_CHARS} characters)."
        )
    return name


def _parts(root: Path, path: Path) -> tuple[str, ...]:
    """The names of ``path`` below ``root`` (lexically); refused if it is not below."""
    try:
        rel = Path(path).relative_to(root)
    except ValueError:
        raise UserError(f"Refused to write {path}: it is not inside {root}.") from None
    if not rel.parts or any(p in ("", ".", "..") for p in rel.parts):
        raise UserError(f"Refused to write {path}: it is not inside {root}.")
    return rel.parts


def _planted(root: Path, rel: Sequence[str], why: str) -> UserError:
    where = Path(root, *rel)
    return UserError(
        f"Refused to use {where}: it is {why} where mcunas keeps a folder or file of its "
        "own (a link planted there could send what mcunas writes anywhere). Remove it, "
        "or give another folder."
    )


def _kind_at(dir_fd: int, name: str) -> str:
    """What the entry ``name`` is, in words (for a refusal)."""
    try:
        mode = os.lstat(name, dir_fd=dir_fd).st_mode
    except OSError:
        return "not a folder"
    return "a symlink" if stat.S_ISLNK(mode) else "not a folder"


@contextlib.contextmanager
def _folder_fd(root: Path, names: Sequence[str], create: bool = True) -> Iterator[int]:
    """An open descriptor of ``root/names...``, each below ``root`` opened without following.

    ``root`` is made (parents too) if it is missing and ``create``; so is each name.
    """
    root = Path(root).expanduser()
    if create:
        root.mkdir(parents=True, exist_ok=True)
    fd = os.open(root, _DIR_FLAGS)
    try:
        for i, name in enumerate(names):
            if create:
                with contextlib.suppress(FileExistsError):
                    os.mkdir(name, 0o777, dir_fd=fd)
            try:
                child = os.open(name, _DIR_FLAGS | os.O_NOFOLLOW, dir_fd=fd)
            except OSError as exc:
                if exc.errno not in (errno.ELOOP, errno.ENOTDIR):
                    raise
                raise _planted(root, names[: i + 1], _kind_at(fd, name)) from None
            os.close(fd)
            fd = child
        yield fd
    finally:
        os.close(fd)


def managed_folder(root: Path, folder: Path) -> Path:
    """Make ``folder`` (below ``root``) with no symlink on the way; return it.

    Raises:
        UserError: a folder on the way is a symlink or a file.
    """
    names = () if Path(folder) == Path(root) else _parts(root, folder)
    with storage_errors(folder), _folder_fd(root, names):
        return Path(folder)


def write_managed(root: Path, path: Path, data: bytes, what: str = "output") -> Path:
    """Write ``path`` (below ``root``) atomically, following no link below ``root``.

    The bytes go to a new temporary file beside ``path`` (``O_EXCL |
    O_NOFOLLOW``), renamed over ``path``: a symlink at ``path`` is replaced,
    its target untouched. A folder at ``path`` is refused.

    Returns:
        ``path``.

    Raises:
        UserError: a folder on the way is a symlink, or ``path`` is a folder.
        DiskFull: the disk filled up.
    """
    *folders, name = _parts(root, path)
    with storage_errors(path), _folder_fd(root, folders) as dir_fd:
        with contextlib.suppress(FileNotFoundError):
            if stat.S_ISDIR(os.lstat(name, dir_fd=dir_fd).st_mode):
                raise UserError(f"Refused to write the {what} {path}: it is a folder.")
        tmp = f".{name[:MAX_NAME_CHARS]}.{secrets.token_hex(4)}"
        fd = os.open(tmp, _NEW_FILE, FILE_MODE, dir_fd=dir_fd)
        try:
            os.fchmod(fd, FILE_MODE)
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
            os.replace(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp, dir_fd=dir_fd)
            raise
    return Path(path)


def open_managed(root: Path, path: Path, flags: int, what: str, *, fresh: bool = False) -> int:
    """Open (or create) ``path`` below ``root`` following no link: a regular file's descriptor.

    For a file written in place (the folder lock, a build log). ``O_NOFOLLOW``
    refuses a symlink at ``path`` in one line; with ``fresh`` whatever is at
    ``path`` (a symlink, a hard link to another file) is removed first and a
    new file made with ``O_EXCL``, so nothing planted there is written. A
    caller that keeps an existing file (the lock) must not write into it while
    it has other hard links (``os.fstat(fd).st_nlink > 1``): those are another
    file's names too.

    Raises:
        UserError: ``path`` is a symlink (without ``fresh``), or not a regular file.
    """
    *folders, name = _parts(root, path)
    extra = os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    with storage_errors(path), _folder_fd(root, folders) as dir_fd:
        if fresh:
            with contextlib.suppress(FileNotFoundError, IsADirectoryError):
                os.unlink(name, dir_fd=dir_fd)
            flags |= os.O_CREAT | os.O_EXCL
        try:
            fd = os.open(name, flags | extra, FILE_MODE, dir_fd=dir_fd)
        except OSError as exc:
            if exc.errno != errno.ELOOP:
                raise
            raise _planted(root, _parts(root, path), "a symlink") from None
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise UserError(
            f"Refused to use the {what} {path}: it is {kind_of(mode)}, not a regular file. "
            "Remove it."
        )
    os.set_blocking(fd, True)
    return fd


def refuse_links(
    root: Path, names: Sequence[str], what: str, *, deep: bool = False, linked_ok: bool = False
) -> None:
    """Refuse in one line if a name below ``root`` is a symlink, holds one, or shares its file.

    For files another library opens by path (SQLite's database and its
    ``-wal``/``-shm``/``-journal``, Keras Tuner's ``tuner/`` folder): checked
    before they are opened, since that library follows links. With ``deep``, a
    folder among ``names`` is searched (no link followed) for a symlink inside.
    With ``linked_ok`` a regular file with other hard links passes (a store in
    a backup made of hard links, ``cp -al``, is still the user's store).

    Raises:
        UserError: one of ``names`` (or a path inside one) is a symlink, or a
            regular file with other hard links.
    """
    for name in names:
        path = Path(root, name)
        try:
            info = path.lstat()
        except FileNotFoundError:
            continue
        if stat.S_ISLNK(info.st_mode):
            raise _planted(Path(root), (name,), "a symlink")
        if not linked_ok and stat.S_ISREG(info.st_mode) and info.st_nlink > 1:
            raise UserError(
                f"Refused to use the {what} {path}: it has {info.st_nlink} hard links (one "
                "may be another file of yours). Copy it to a file of its own, or remove it."
            )
        if deep and stat.S_ISDIR(info.st_mode):
            _refuse_links_inside(Path(root), path)


def _refuse_links_inside(root: Path, folder: Path) -> None:
    """Refuse a symlink anywhere inside ``folder`` (its sub-folders searched, none followed)."""
    for here, dirs, files in os.walk(folder):
        for entry in (*dirs, *files):
            if os.path.islink(os.path.join(here, entry)):
                rel = Path(here, entry).relative_to(root).parts
                raise _planted(root, rel, "a symlink")
