"""Datasets for the search: a built-in default, ``.npz`` files, folders of images or WAV files.

``load_dataset(spec)`` returns a :class:`Dataset` with float32 inputs shaped
``(N, H, W, C)``, integer labels ``0..K-1`` and a seeded, stratified
train/validation split. What each source gives:

- ``None`` or ``"digits"``: scikit-learn's 8x8 handwritten digits (1797 images,
  10 classes, no download), scaled to [0, 1], shape (8, 8, 1).
- ``PATH.npz`` with ``x_train``, ``y_train`` and optionally ``x_val``, ``y_val``,
  ``x_test``, ``y_test`` and ``kind``: ``x`` of shape (N, H, W), (N, H, W, C) or
  (N, F) (made (N, F, 1, 1)). uint8 inputs are scaled by 1/255; other numeric
  inputs are used as they are. Without ``x_val`` the validation split is drawn
  from the training data. The test split is never used for selection; the
  chosen model's INT8 accuracy on it is reported. ``kind`` (a string:
  ``image``, ``audio`` or ``series``) picks the training augmentation; without
  it, (N, F) and (N, T, 1, C) inputs are series and the rest images. With
  ``kind="series"`` a 3-D ``x`` is (N, T, C) and is made (N, T, 1, C).
- A folder of class subfolders of images (PNG, JPEG, BMP): the class names are
  the subfolder names in sorted order. Images are read with Pillow, kept
  grayscale (1 channel) if every image is grayscale, otherwise converted to
  RGB (3 channels), resized (bilinear) to the most common image size, shrunk
  to fit within 96x96 keeping the aspect ratio, and scaled to [0, 1].
- A folder of class subfolders of WAV files (PCM 8/16/32-bit, any channel count,
  mixed to mono, one sample rate for all files): each clip is zero-padded or
  cut to the longest clip's length and turned into a log-mel spectrogram by
  :func:`mcunas.data.audio.log_mel`, the same features the deployed model expects,
  shape (frames, mel bands, 1).

Every problem with the data raises :class:`~mcunas.errors.DatasetError` with
one line that names the file or the array at fault.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from mcunas.data.audio import log_mel
from mcunas.data.folder import read_folder
from mcunas.errors import DatasetError
from mcunas.inputs.formats import load_npz
from mcunas.inputs.shapes import check_labels
from mcunas.limits import MAX_CLASSES

if TYPE_CHECKING:
    from mcunas.frontend.port import Frontend

KINDS = ("image", "audio", "series")

__all__ = ["KINDS", "Dataset", "load_dataset", "log_mel", "stratified_split"]


@dataclass(frozen=True)
class Dataset:
    """A classification dataset split into training and validation parts.

    Attributes:
        name: Where the data came from ("digits" or the path given).
        x_train: float32 inputs, shape (N, *input_shape).
        y_train: int32 labels in 0..num_classes-1.
        x_val: float32 validation inputs.
        y_val: int32 validation labels.
        num_classes: Number of classes K.
        input_shape: Shape of one input, (H, W, C).
        class_names: Name of each class, index = label.
        preprocessing: What was done to the raw data (the deployed model's input contract).
        kind: "image", "audio" (log-mel spectrograms) or "series" (sensor time series):
            picks the training augmentation.
        x_test: float32 test inputs or None; never used for selection.
        y_test: int32 test labels or None.
        noise: log-mel background-noise windows for audio augmentation, or None.
        frontend: the front end the inputs went through (:mod:`mcunas.frontend.port`):
            the graph's parameters when its outputs are the WAV features
            (``load_dataset(frontend=...)``), else None.
    """

    name: str
    x_train: np.ndarray
    y_train: np.ndarray
    x_val: np.ndarray
    y_val: np.ndarray
    num_classes: int
    input_shape: tuple[int, ...]
    class_names: tuple[str, ...]
    preprocessing: str
    kind: str = "image"
    x_test: np.ndarray | None = None
    y_test: np.ndarray | None = None
    noise: np.ndarray | None = None
    frontend: Frontend = None

    def pooled(self) -> Dataset:
        """The dataset with its validation samples added to its training samples.

        The validation part stays as it is; re-scoring's folds and the refit of the
        chosen design (:mod:`mcunas.search.finish.refit`) train on the pooled samples.
        """
        return replace(
            self,
            x_train=np.concatenate([self.x_train, self.x_val]),
            y_train=np.concatenate([self.y_train, self.y_val]),
        )

    def representative(self, n: int = 200, seed: int = 0) -> np.ndarray:
        """A seeded random sample of training inputs for INT8 calibration.

        Args:
            n: int, number of samples (default 200; fewer if the set is smaller).
            seed: int, random seed (default 0).

        Returns:
            float32 array of shape (min(n, N), *input_shape).
        """
        rng = np.random.default_rng(seed)
        count = min(n, len(self.x_train))
        return self.x_train[np.sort(rng.choice(len(self.x_train), count, replace=False))]


def load_dataset(
    spec: str | Path | None = None,
    *,
    seed: int = 0,
    val_fraction: float = 0.2,
    frontend: Frontend = None,
    cache_dir: Path | None = None,
) -> Dataset:
    """Load a dataset and split it reproducibly.

    Args:
        spec: str | Path | None, ``None``/``"digits"`` for the built-in digits, a ``.npz``
            file, or a folder of class subfolders of images or WAV files (default None).
        seed: int, seed of the stratified train/validation split (default 0).
        val_fraction: float, share of each class held out for validation when the
            source has no validation part (default 0.2).
        frontend: FrontendConfig | None, make a WAV folder's features with this
            front-end graph in the host TFLM runtime instead of the numpy log-mel.
        cache_dir: Path | None, where the front end's features are cached.

    Returns:
        The loaded :class:`Dataset`.

    Raises:
        DatasetError: The data is missing, unreadable, empty or mislabelled.
    """
    if not 0.0 < val_fraction < 1.0:
        raise DatasetError(f"val_fraction must be between 0 and 1, got {val_fraction}")
    if spec is None or str(spec) == "digits":
        return _digits(seed, val_fraction)
    path = Path(spec).expanduser()
    if not path.exists():
        raise DatasetError(f"Dataset not found: {path}")
    if not path.is_file() and not path.is_dir():
        raise DatasetError(f"Dataset {path} is not a regular file or folder (a pipe or device?)")
    if path.is_file():
        if path.suffix.lower() != ".npz":
            raise DatasetError(
                f"Unknown dataset format: {path} (give a .npz file, a folder of class "
                "subfolders of images or WAV files, or 'digits')"
            )
        return _npz(path, seed, val_fraction)
    return _folder(path, seed, val_fraction, frontend, cache_dir)


def stratified_split(
    y: np.ndarray, val_fraction: float, seed: int
) -> tuple[np.ndarray, np.ndarray]:
    """Seeded stratified split of sample indices.

    Each class with n >= 2 samples gives ``max(1, round_half_up(n * val_fraction))`` samples
    (but never all of them) to validation; a class with one sample stays in training.

    Args:
        y: np.ndarray, integer labels.
        val_fraction: float, share of each class for validation.
        seed: int, random seed.

    Returns:
        (train_indices, val_indices), each sorted.
    """
    rng = np.random.default_rng(seed)
    train, val = [], []
    for label in np.unique(y):
        idx = rng.permutation(np.flatnonzero(y == label))
        n_val = 0 if len(idx) < 2 else min(len(idx) - 1, max(1, int(len(idx) * val_fraction + 0.5)))
        val.append(idx[:n_val])
        train.append(idx[n_val:])
    return np.sort(np.concatenate(train)), np.sort(np.concatenate(val))


@dataclass
class _Raw:
    """A source's arrays before validation and splitting."""

    name: str
    x_train: np.ndarray
    y_train: np.ndarray
    class_names: tuple[str, ...]
    preprocessing: str
    kind: str
    x_val: np.ndarray | None = None
    y_val: np.ndarray | None = None
    x_test: np.ndarray | None = None
    y_test: np.ndarray | None = None
    noise: np.ndarray | None = None


def _digits(seed: int, val_fraction: float) -> Dataset:
    from sklearn.datasets import load_digits

    bunch = load_digits()
    x = (bunch.images.astype(np.float32) / 16.0)[..., None]
    names = tuple(str(n) for n in bunch.target_names)
    note = "scikit-learn digits: 8x8 grayscale, pixel/16 -> [0, 1]"
    raw = _Raw("digits", x, bunch.target.astype(np.int32), names, note, "image")
    return _finish(raw, seed, val_fraction)


def _folder(
    path: Path, seed: int, val_fraction: float, frontend: Frontend, cache_dir: Path | None
) -> Dataset:
    got = read_folder(path, frontend, cache_dir)
    raw = _Raw(str(path), got.x, got.y, got.class_names, got.preprocessing, got.kind)
    raw.noise = got.noise
    return replace(_finish(raw, seed, val_fraction), frontend=got.frontend)


def _read_npz(path: Path) -> dict[str, np.ndarray]:
    arrays = load_npz(path, "dataset", DatasetError)
    for key in ("x_train", "y_train"):
        if key not in arrays:
            raise DatasetError(f"{path.name} has no '{key}' array (found: {sorted(arrays)})")
    for part in ("val", "test"):
        if (f"x_{part}" in arrays) != (f"y_{part}" in arrays):
            raise DatasetError(f"{path.name} must have both x_{part} and y_{part}, or neither")
    return arrays


def _npz_kind(arrays: dict[str, np.ndarray], path: Path) -> str:
    """The ``kind`` array, or series for (N, F) and (N, T, 1, C) inputs, else image."""
    if "kind" in arrays:
        kind = str(arrays["kind"])
        if kind not in KINDS:
            raise DatasetError(f"{path.name}: kind must be one of {', '.join(KINDS)}; got {kind!r}")
        return kind
    shape = arrays["x_train"].shape
    return "series" if len(shape) == 2 or (len(shape) == 4 and shape[2] == 1) else "image"


def _npz(path: Path, seed: int, val_fraction: float) -> Dataset:
    arrays = _read_npz(path)
    kind = _npz_kind(arrays, path)
    x_train = _npz_inputs(arrays["x_train"], "x_train", kind)
    raw = _Raw(str(path), x_train, arrays["y_train"], (), "", kind)
    for part in ("val", "test"):
        if f"x_{part}" not in arrays:
            continue
        x = _npz_inputs(arrays[f"x_{part}"], f"x_{part}", kind)
        if x.shape[1:] != x_train.shape[1:]:
            raise DatasetError(
                f"x_{part} samples have shape {x.shape[1:]}, x_train samples {x_train.shape[1:]}"
            )
        setattr(raw, f"x_{part}", x)
        setattr(raw, f"y_{part}", arrays[f"y_{part}"])
    scaled = arrays["x_train"].dtype == np.uint8
    note = "npz: uint8 inputs / 255" if scaled else "npz: inputs used as given (float32)"
    raw.preprocessing = f"{note}; {kind}"
    return _finish(raw, seed, val_fraction)


def _npz_inputs(x: np.ndarray, key: str, kind: str) -> np.ndarray:
    if not np.issubdtype(x.dtype, np.number) or np.issubdtype(x.dtype, np.complexfloating):
        raise DatasetError(f"{key} must be numeric, got dtype {x.dtype}")
    scale = 1.0 / 255.0 if x.dtype == np.uint8 else 1.0
    x = x.astype(np.float32) * np.float32(scale)
    if x.ndim == 2:
        return x[:, :, None, None]
    if x.ndim == 3:
        return x[:, :, None, :] if kind == "series" else x[..., None]
    if x.ndim == 4:
        return x
    raise DatasetError(f"{key} must have shape (N, H, W), (N, H, W, C) or (N, F); got {x.shape}")


def _labels(y: np.ndarray, key: str) -> np.ndarray:
    return check_labels(y, key, DatasetError)


def _held_out(raw: _Raw, part: str, num_classes: int) -> tuple[np.ndarray, np.ndarray] | None:
    """Checked ``x_val``/``y_val`` or ``x_test``/``y_test``; None when the source has none."""
    x, y = getattr(raw, f"x_{part}"), getattr(raw, f"y_{part}")
    if x is None:
        return None
    y = _labels(y, f"y_{part}")
    if len(x) != len(y):
        raise DatasetError(f"x_{part} has {len(x)} samples but y_{part} has {len(y)}")
    if len(y) and y.max() >= num_classes:
        raise DatasetError(
            f"y_{part} has label {int(y.max())} but y_train has classes 0..{num_classes - 1}"
        )
    if len(x) == 0:
        raise DatasetError(f"{raw.name}: x_{part} holds no samples")
    _check_inputs(x, f"x_{part}", raw.name)
    return np.ascontiguousarray(x, dtype=np.float32), y


def _finish(raw: _Raw, seed: int, val_fraction: float) -> Dataset:
    """Validate labels and shapes, split if needed, and build the Dataset."""
    name, x_train = raw.name, raw.x_train
    y_train = _labels(raw.y_train, "y_train")
    if len(x_train) != len(y_train):
        raise DatasetError(f"x_train has {len(x_train)} samples but y_train has {len(y_train)}")
    if len(x_train) == 0:
        raise DatasetError(f"{name}: no training samples")
    _check_inputs(x_train, "x_train", name)
    num_classes = _class_count(y_train, name)
    val = _held_out(raw, "val", num_classes)
    if val is None:
        train_idx, val_idx = stratified_split(y_train, val_fraction, seed)
        if len(val_idx) == 0:
            raise DatasetError(f"{name}: too few samples for a validation split")
        val = (x_train[val_idx], y_train[val_idx])
        x_train, y_train = x_train[train_idx], y_train[train_idx]
    test = _held_out(raw, "test", num_classes)
    names = raw.class_names
    if len(names) != num_classes:
        names = tuple(str(i) for i in range(num_classes))
    return Dataset(
        name=name,
        x_train=np.ascontiguousarray(x_train, dtype=np.float32),
        y_train=y_train,
        x_val=np.ascontiguousarray(val[0], dtype=np.float32),
        y_val=val[1],
        num_classes=num_classes,
        input_shape=tuple(int(d) for d in x_train.shape[1:]),
        class_names=names,
        preprocessing=raw.preprocessing,
        kind=raw.kind,
        x_test=None if test is None else test[0],
        y_test=None if test is None else test[1],
        noise=raw.noise,
    )


def _class_count(y_train: np.ndarray, name: str) -> int:
    """K for labels that are exactly the class indices 0..K-1, every class present."""
    present = np.unique(y_train)
    if present.max() >= MAX_CLASSES:
        raise DatasetError(
            f"{name}: y_train has label {int(present.max())}; labels must be class indices "
            f"0..K-1 with K at most {MAX_CLASSES}"
        )
    num_classes = int(present.max()) + 1
    if num_classes < 2 or len(present) < 2:
        raise DatasetError(f"{name}: need at least 2 classes, found {len(present)}")
    if len(present) != num_classes:
        missing = sorted(set(range(num_classes)) - set(present.tolist()))
        raise DatasetError(
            f"y_train labels must be integers 0..{num_classes - 1} with every class present; "
            f"missing {missing[:5]}"
        )
    return num_classes


def _check_inputs(x: np.ndarray, key: str, name: str) -> None:
    """Inputs a model can learn from: no zero-sized sample, no NaN or infinite value."""
    if x.ndim < 2 or 0 in x.shape[1:]:
        raise DatasetError(f"{name}: {key} samples have zero size (shape {x.shape[1:]})")
    bad = ~np.isfinite(x)
    if bad.any():
        first = int(np.flatnonzero(bad.reshape(len(x), -1).any(axis=1))[0])
        raise DatasetError(
            f"{name}: {key} holds {int(bad.sum())} NaN or infinite value(s), the first in "
            f"sample {first}; clean or impute them first"
        )
