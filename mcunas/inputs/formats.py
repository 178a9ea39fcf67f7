"""JSON, TOML, ``.npz`` and WAV files read through the guarded opener.

Each reader opens with :func:`mcunas.inputs.opener.open_input` and turns its
parser's own failures into one line that says what the file is and what is
wrong, in plain words (never numpy's advice to load "unsafely" with pickles).
Claims a header makes are checked against the file before memory is taken for
them: an ``.npz`` member that says it holds more than its bytes, a WAV header
that says it lasts longer than :data:`mcunas.limits.MAX_WAV_SECONDS`.
"""

from __future__ import annotations

import io
import json
import os
import struct
import tomllib
import zipfile
import zlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mcunas.errors import UserError
from mcunas.inputs.opener import open_input, read_input, read_input_text, shown
from mcunas.limits import MAX_WAV_SECONDS, READ_BOUNDS

if TYPE_CHECKING:
    import numpy as np

__all__ = ["WavData", "load_npz", "read_json", "read_model", "read_toml", "read_wav_data"]

_ZIP_MAGIC = b"PK\x03\x04"  # numpy.savez writes a zip archive
_NPY_MAGIC = b"\x93NUMPY"


def read_json(path: str | os.PathLike[str], what: str, error: type[UserError] = UserError) -> Any:
    """A JSON file's value (any JSON value: check its shape with :mod:`mcunas.inputs.shapes`).

    Raises:
        UserError (``error``): not a regular file, over the ``json`` bound, not UTF-8,
            not JSON, or nested deeper than Python's parser goes.
    """
    text = read_input_text(path, "json", what, error)
    try:
        return json.loads(text)
    except ValueError as exc:
        raise error(f"The {what} {shown(path)} is not valid JSON ({exc}).") from None
    except RecursionError:
        raise error(
            f"The {what} {shown(path)} is nested too deeply to be JSON mcunas wrote."
        ) from None


def read_toml(
    path: str | os.PathLike[str], kind: str, what: str, error: type[UserError] = UserError
) -> dict[str, Any]:
    """A TOML file's table (``kind``: its size bound, ``profile`` for profiles and racks).

    Raises:
        UserError (``error``): unreadable, over the bound, or not TOML (an integer of
            thousands of digits included: Python refuses to convert it).
    """
    text = read_input_text(path, kind, what, error)
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise error(f"The {what} {shown(path)} is not valid TOML: {exc}.") from None
    except (ValueError, RecursionError) as exc:  # an integer beyond Python's digit limit
        words = str(exc).split(";")[0][:120]
        raise error(
            f"The {what} {shown(path)} holds a value mcunas cannot read: {words}."
        ) from None


def load_npz(
    path: str | os.PathLike[str],
    what: str,
    error: type[UserError] = UserError,
    kind: str = "npz",
) -> dict[str, np.ndarray]:
    """Every array of an ``.npz`` file, without pickles, within the kind's bound.

    The archive's table of contents is checked first: the members' total size
    uncompressed stays within the bound, and each member's array header claims
    no more bytes than the member holds, so a small file cannot make numpy
    allocate gigabytes.

    Raises:
        UserError (``error``): not an ``.npz`` (a zip archive of ``.npy`` files),
            damaged, cut short, larger than the bound (packed or unpacked) or
            holding object arrays.
    """
    import numpy as np

    with open_input(path, kind, what, error) as fh:
        if fh.read(4) != _ZIP_MAGIC:
            raise error(
                f"The {what} {shown(path)} is not an .npz file (numpy.savez writes a zip "
                "archive; this file is not one)."
            )
        fh.seek(0)
        try:
            with zipfile.ZipFile(fh) as archive:
                _check_members(archive, kind, Path(path), what, error)
            fh.seek(0)
            with np.load(fh, allow_pickle=False) as got:
                return {name: got[name] for name in got.files}
        except UserError:
            raise
        except _NPZ_ERRORS as exc:
            raise error(f"The {what} {shown(path)} cannot be read: {_npz_damage(exc)}.") from None
        except MemoryError:
            raise error(f"The {what} {shown(path)} claims arrays too large to load.") from None


# What zipfile and numpy raise on a damaged archive: an unknown compression method is
# NotImplementedError, an encrypted member RuntimeError, a cut header struct.error.
_NPZ_ERRORS = (
    OSError,
    EOFError,
    ValueError,
    KeyError,
    zipfile.BadZipFile,
    zlib.error,
    NotImplementedError,
    RuntimeError,
    struct.error,
)


def _npz_damage(exc: BaseException) -> str:
    if "pickle" in str(exc).lower():
        return "it holds object arrays (Python objects), which mcunas does not load"
    if isinstance(exc, zipfile.BadZipFile | EOFError | zlib.error | struct.error):
        return "damaged or cut short"
    return f"damaged or not numpy arrays ({type(exc).__name__})"


def _check_members(
    archive: zipfile.ZipFile, kind: str, path: Path, what: str, error: type[UserError]
) -> None:
    """Refuse an archive whose members unpack beyond the bound or claim more than they hold."""
    import numpy as np

    bound = READ_BOUNDS[kind][0]
    members = archive.infolist()
    if sum(m.file_size for m in members) > bound:
        raise error(
            f"Refused to read the {what} {shown(path)}: its arrays unpack to more than "
            f"{bound >> 20} MiB."
        )
    for member in members:
        with archive.open(member) as raw:
            head = io.BytesIO(raw.read(4096))
        if not head.getvalue().startswith(_NPY_MAGIC):
            continue  # numpy itself says what is wrong with a member that is no array
        version = np.lib.format.read_magic(head)
        reader = (
            np.lib.format.read_array_header_1_0
            if version == (1, 0)
            else np.lib.format.read_array_header_2_0
        )
        shape, _, dtype = reader(head, max_header_size=4096)
        claimed = int(np.prod(shape, dtype=object)) * dtype.itemsize
        if claimed > member.file_size:
            raise error(
                f"The {what} {shown(path)} is damaged: array {member.filename} claims "
                f"{claimed:,} bytes and holds {member.file_size:,}."
            )


class WavData:
    """A WAV file's header and sample bytes, checked against the file and the bounds."""

    def __init__(self, width: int, channels: int, rate: int, raw: bytes) -> None:
        """Keep what :func:`read_wav_data` read."""
        self.width, self.channels, self.rate, self.raw = width, channels, rate, raw


def read_wav_data(
    path: str | os.PathLike[str], what: str, error: type[UserError] = UserError
) -> WavData:
    """A WAV file's sample width, channels, rate and sample bytes.

    Raises:
        UserError (``error``): not a regular file, over the ``wav`` bound, not a WAV
            file, or a header that claims more audio than the file holds or more
            than :data:`mcunas.limits.MAX_WAV_SECONDS`.
    """
    import wave

    with open_input(path, "wav", what, error) as fh:
        size = os.fstat(fh.fileno()).st_size
        try:
            with wave.open(fh, "rb") as w:
                width, channels, rate = w.getsampwidth(), w.getnchannels(), w.getframerate()
                frames = w.getnframes()
                if rate > 0 and frames / rate > MAX_WAV_SECONDS:
                    raise error(
                        f"Refused to read the {what} {shown(path)}: its header says "
                        f"{frames / rate:,.0f} s, more than {MAX_WAV_SECONDS:g} s."
                    )
                if frames * width * channels > size:
                    raise error(
                        f"The {what} {shown(path)} is cut short or damaged: its header claims "
                        f"{frames * width * channels:,} bytes of samples, the file has {size:,}."
                    )
                raw = w.readframes(frames)
        except UserError:
            raise
        except (wave.Error, EOFError, OSError, ValueError, RuntimeError, struct.error) as exc:
            raise error(
                f"Cannot read the {what} {shown(path)}: {str(exc) or 'cut short'}."
            ) from None
    whole = len(raw) - len(raw) % max(1, width * channels)  # a frame cut by the file's end
    return WavData(width, channels, rate, raw[:whole])


def read_model(path: str | os.PathLike[str], what: str, error: type[UserError]) -> bytes:
    """A ``.tflite`` file's bytes within the ``model`` bound (its reader checks the graph)."""
    return read_input(path, "model", what, error)
