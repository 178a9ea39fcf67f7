"""Datasets from folders: class subfolders of images, or of WAV clips.

:func:`read_folder` returns the raw arrays; :mod:`mcunas.data.datasets` validates and
splits them. A WAV dataset may hold a ``_background_noise_`` folder (the usual
keyword-spotting layout): it is not a class, its recordings are cut into
clip-length windows that training mixes into the clips.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from mcunas.data.audio import wav_features
from mcunas.errors import DatasetError
from mcunas.inputs.opener import check_input, open_input

if TYPE_CHECKING:
    from mcunas.frontend.port import Frontend

__all__ = ["AUDIO_SUFFIXES", "IMAGE_SUFFIXES", "NOISE_FOLDER", "FolderData", "read_folder"]

IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".bmp")
AUDIO_SUFFIXES = (".wav",)
NOISE_FOLDER = "_background_noise_"
MAX_IMAGE_SIDE = 96  # larger images are shrunk to fit MCU-sized models
_GRAY_MODES = {"1", "L", "LA", "I", "I;16", "F"}


@dataclass(frozen=True)
class FolderData:
    """What a folder gave: inputs, labels, class names, preprocessing, kind, noise."""

    x: np.ndarray
    y: np.ndarray
    class_names: tuple[str, ...]
    preprocessing: str
    kind: str
    noise: np.ndarray | None = None
    frontend: Frontend = None  # the front-end graph that made WAV features


def _listdir(folder: Path) -> list[Path]:
    try:
        return sorted(folder.iterdir())
    except OSError as exc:
        raise DatasetError(f"Cannot read dataset folder {folder}: {exc.strerror}") from None


def _files(folder: Path, suffixes: tuple[str, ...]) -> list[Path]:
    """The clips or images of a folder, each a regular file within its kind's bound.

    A file with a clip's or an image's name that is not one (a FIFO, a socket, a
    folder, a device, a file over :data:`mcunas.limits.READ_BOUNDS`) refuses the
    whole dataset, naming it: skipping it would train on other data than the user
    gave, and change the class balance without a word.
    """
    found = [f for f in _listdir(folder) if f.suffix.lower() in suffixes]
    for f in found:
        kind = "wav" if f.suffix.lower() in AUDIO_SUFFIXES else "image"
        check_input(f, kind, "WAV file" if kind == "wav" else "image", DatasetError)
    return found


def read_folder(path: Path, frontend: Frontend = None, cache_dir: Path | None = None) -> FolderData:
    """Read a folder of class subfolders of images or WAV files.

    WAV features are today's numpy log-mel, or with ``frontend`` the outputs of
    that front-end graph (at the clips' sample rate: ``FrontendConfig.at_rate``)
    in the host TFLM runtime, cached in ``cache_dir``.

    Raises:
        DatasetError: No classes, an empty class, mixed kinds, an unreadable file.
    """
    classes = [
        p
        for p in _listdir(path)
        if p.is_dir() and not p.name.startswith(".") and p.name != NOISE_FOLDER
    ]
    if not classes:
        raise DatasetError(f"{path} has no class subfolders (expected {path}/<class>/<files>)")
    files: list[tuple[Path, int]] = []
    for label, folder in enumerate(classes):
        found = _files(folder, IMAGE_SUFFIXES + AUDIO_SUFFIXES)
        if not found:
            raise DatasetError(f"Class folder {folder} has no image or WAV files")
        files.extend((f, label) for f in found)
    kinds = {f.suffix.lower() in AUDIO_SUFFIXES for f, _ in files}
    if len(kinds) > 1:
        raise DatasetError(f"{path} mixes WAV files and images; use one kind per dataset")
    if len(classes) < 2:
        raise DatasetError(f"{path}: need at least 2 classes, found 1 ({classes[0].name})")
    y = np.array([label for _, label in files], dtype=np.int32)
    names = tuple(c.name for c in classes)
    paths = [f for f, _ in files]
    if kinds == {True}:
        noise_dir = path / NOISE_FOLDER
        noise_paths = _files(noise_dir, AUDIO_SUFFIXES) if noise_dir.is_dir() else None
        if frontend is None:
            x, note, noise = wav_features(paths, noise_paths)
        else:
            from mcunas.data.audio import read_wav
            from mcunas.data.clip_features import graph_wav_features

            frontend = frontend.at_rate(read_wav(paths[0])[1])
            x, note, noise = graph_wav_features(paths, frontend, noise_paths, cache_dir)
        if noise is not None:
            note += f"; {len(noise)} background-noise windows for training"
        return FolderData(x, y, names, note, "audio", noise, frontend)
    x, note = _read_images(paths)
    return FolderData(x, y, names, note, "image")


def _read_images(paths: list[Path]) -> tuple[np.ndarray, str]:
    from PIL import Image

    sizes: list[tuple[int, int]] = []
    gray = True
    for p in paths:
        try:
            with open_input(p, "image", "image", DatasetError) as fh, Image.open(fh) as im:
                sizes.append(im.size)
                gray = gray and im.mode in _GRAY_MODES
        except DatasetError:
            raise
        except Exception as exc:  # Pillow raises many types
            raise DatasetError(f"Cannot read image {p}: {exc}") from None
    width, height = Counter(sizes).most_common(1)[0][0]
    shrink = min(1.0, MAX_IMAGE_SIDE / max(width, height))
    size = (max(1, round(width * shrink)), max(1, round(height * shrink)))
    mode = "L" if gray else "RGB"
    out = np.empty((len(paths), size[1], size[0], 1 if gray else 3), dtype=np.float32)
    for i, p in enumerate(paths):
        try:
            with open_input(p, "image", "image", DatasetError) as fh, Image.open(fh) as im:
                img = im.convert(mode)
                if img.size != size:
                    img = img.resize(size, Image.Resampling.BILINEAR)
                arr = np.asarray(img, dtype=np.float32) / 255.0
        except DatasetError:
            raise
        except Exception as exc:  # truncated files fail here
            raise DatasetError(f"Cannot read image {p}: {exc}") from None
        out[i] = arr.reshape(out.shape[1:])
    note = (
        f"images: {'grayscale' if gray else 'RGB'}, resized (bilinear) to "
        f"{size[0]}x{size[1]}, pixel/255 -> [0, 1]"
    )
    return out, note
