"""What a reader parsed has the shape it needs: ``best.json``'s schema, labels.

A file can be valid JSON or a valid ``.npz`` and still not be what its reader
uses (``best.json`` holding ``[1, 2]`` or ``null``, ``class_names`` a number,
labels of ``NaN``, ``-1`` or ``2.5``): each check here raises one line that
names the file and the field, before any code indexes into it.
"""

from __future__ import annotations

import os
import re
from typing import TYPE_CHECKING, Any

from mcunas.errors import UserError
from mcunas.inputs.opener import shown
from mcunas.limits import MAX_CLASSES, MAX_NAME_CHARS

if TYPE_CHECKING:
    import numpy as np

__all__ = ["BEST_FIELDS", "check_best_info", "check_labels", "check_samples"]

_HEX64 = re.compile(r"[0-9a-f]{64}")
# best.json's fields that mcunas reads back, and the JSON type each must have (or null).
BEST_FIELDS: dict[str, type] = {
    "class_names": list,
    "model_sha256": str,
    "board": dict,
    "trial": dict,
    "frontend": dict,
}
_JSON_TYPES = {list: "a list", str: "text", int: "a whole number", dict: "an object"}


def check_best_info(data: Any, path: str | os.PathLike[str], error: type[UserError]) -> dict:
    """``best.json``'s parsed value, checked to be the object a search writes.

    Raises:
        UserError (``error``): not an object, a known field of another type,
            ``class_names`` not a list of short names, ``model_sha256`` not a SHA-256,
            ``board.name`` not text.
    """
    fix = "export the search again (mcunas search --resume on its folder)"
    if not isinstance(data, dict):
        found = "null" if data is None else type(data).__name__
        raise error(f"{shown(path)} is not a best.json a search wrote (a JSON {found}): {fix}.")
    for key, kind in BEST_FIELDS.items():
        value = data.get(key)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, kind):
            raise error(f"{shown(path)}: {key} must be {_JSON_TYPES[kind]}: {fix}.")
    names = data.get("class_names") or []
    if len(names) > MAX_CLASSES or not all(
        isinstance(n, str) and 0 < len(n) <= MAX_NAME_CHARS for n in names
    ):
        raise error(f"{shown(path)}: class_names must be up to {MAX_CLASSES} short names: {fix}.")
    sha = data.get("model_sha256")
    if sha is not None and not _HEX64.fullmatch(sha):
        raise error(f"{shown(path)}: model_sha256 is not a SHA-256 in hex: {fix}.")
    board = data.get("board") or {}
    if board.get("name") is not None and not isinstance(board["name"], str):
        raise error(f"{shown(path)}: board.name must be text: {fix}.")
    return data


def check_labels(
    y: Any,
    key: str,
    error: type[UserError],
    samples: int | None = None,
    classes: int | None = None,
) -> np.ndarray:
    """Labels as int32 class indices: whole, finite, from 0, as many as the samples.

    Args:
        y: array-like. The labels read (one column, or an (N, 1) array).
        key: str. Where they came from ("y_test", "test.npz[y]"), for the refusal.
        error: type[UserError]. The error raised.
        samples: int | None. How many there must be (the inputs' count).
        classes: int | None. Labels must be below it (the model's class count).

    Raises:
        UserError (``error``): not numbers (text, objects, structured), not whole,
            NaN, negative, beyond the classes, or a count other than the samples'.
    """
    import numpy as np

    arr = np.asarray(y)
    if arr.ndim == 2 and arr.shape[1] == 1:
        arr = arr[:, 0]
    if arr.ndim != 1:
        raise error(f"{key} must be a 1-D array of class indices, got shape {arr.shape}.")
    if arr.dtype.kind not in "iuf" or arr.dtype.fields is not None:
        raise error(f"{key} labels must be integers 0..K-1, got dtype {arr.dtype}.")
    if arr.dtype.kind == "f":
        if not np.all(np.isfinite(arr)):
            raise error(f"{key} holds NaN or infinite labels: labels are class indices 0..K-1.")
        if not np.all(arr == np.round(arr)):
            raise error(
                f"{key} holds labels that are not whole numbers: labels are integers 0..K-1."
            )
    if samples is not None and len(arr) != samples:
        raise error(f"{key} has {len(arr)} labels for {samples} samples.")
    if len(arr) and arr.min() < 0:
        raise error(f"{key} labels must be integers 0..K-1 (class indices), found {arr.min():.0f}.")
    if len(arr) and arr.max() >= 2**31:
        raise error(f"{key} has label {arr.max():.0f}: class indices are below {MAX_CLASSES}.")
    if classes is not None and len(arr) and arr.max() >= classes:
        raise error(f"{key} has label {arr.max():.0f}: the classes are 0 to {classes - 1}.")
    return arr.astype(np.int32)


def check_samples(x: Any, key: str, error: type[UserError]) -> np.ndarray:
    """Inputs as float32 (uint8 scaled by 1/255): real numbers, no NaN or infinite value.

    Raises:
        UserError (``error``): text, objects, a structured or complex dtype, no
            samples of their own (a scalar), or a NaN or infinite value (the
            first sample holding one is named).
    """
    import numpy as np

    arr = np.asarray(x)
    if arr.dtype.kind not in "iuf" or arr.dtype.fields is not None:
        raise error(f"{key} must hold numbers, got dtype {arr.dtype}.")
    if arr.ndim < 2 or 0 in arr.shape[1:]:
        raise error(f"{key} must be an array of samples (N, ...), got shape {arr.shape}.")
    scale = np.float32(1.0 / 255.0) if arr.dtype == np.uint8 else np.float32(1.0)
    out = arr.astype(np.float32) * scale
    bad = ~np.isfinite(out.reshape(len(out), -1)).all(axis=1)
    if bad.any():
        first = int(np.flatnonzero(bad)[0])
        raise error(f"{key} holds NaN or infinite values, the first in sample {first}.")
    return out
