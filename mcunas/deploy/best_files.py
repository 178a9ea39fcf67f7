"""Reading a search's ``best/`` back, checked alike for ``mcunas predict`` and ``export``.

``best.json`` must be the object a search writes; ``model.tflite`` the file it names
(its SHA-256), INT8 in and out, not the front-end graph; the front end the one
``best.json`` names under ``frontend`` (none without the key, whatever files lie
beside the model). Every file is read through the guarded opener (:mod:`mcunas.inputs`).
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mcunas.errors import ModelError, UserError
from mcunas.inputs.formats import read_json, read_model
from mcunas.inputs.opener import shown
from mcunas.inputs.shapes import check_best_info

if TYPE_CHECKING:
    from mcunas.frontend.config import FrontendConfig

__all__ = ["BestFiles", "check_classes", "read_best"]

_FIX = "export it again (mcunas search --resume on the search's folder)"


@dataclass(frozen=True)
class BestFiles:
    """What ``best/`` holds, checked: its info, model bytes and front end (or None)."""

    folder: Path
    info: dict[str, Any]
    model: bytes
    frontend: bytes | None
    frontend_cfg: FrontendConfig | None


def read_best(folder: Path) -> BestFiles:
    """Read and check a ``best/`` folder (see the module docstring for what is checked).

    Raises:
        ModelError: no ``model.tflite`` or ``best.json``, either unreadable or of
            another shape, the model changed since the export or not INT8, the
            front end missing or another than ``best.json`` names.
    """
    folder = Path(folder)
    if not (folder / "model.tflite").exists():
        raise ModelError(f"{shown(folder)} has no model.tflite (give a search's best/ folder)")
    if not (folder / "best.json").exists():
        raise ModelError(f"No best.json in {shown(folder)}: give a search's best/ folder.")
    info = check_best_info(
        read_json(folder / "best.json", "best.json", ModelError), folder / "best.json", ModelError
    )
    model = read_model(folder / "model.tflite", "model", ModelError)
    sha = info.get("model_sha256")
    if sha and hashlib.sha256(model).hexdigest() != sha:
        raise ModelError(
            f"{shown(folder / 'model.tflite')} changed since the search exported it (its "
            f"SHA-256 is not the one best.json names): {_FIX}."
        )
    _check_model(model, folder / "model.tflite")
    cfg, front = _frontend(folder, info)
    return BestFiles(folder, info, model, front, cfg)


def check_classes(model: bytes, path: Path, classes: int) -> None:
    """A model gives one output per class name (``predict`` names its answers by them).

    Raises:
        ModelError: another count of outputs than of names.
    """
    from mcunas.tflite.reader import read_graph

    outputs = math.prod(read_graph(model, shown(path)).outputs[0].shape[1:])
    if classes and outputs != classes:
        raise ModelError(
            f"{shown(path)} gives {outputs} outputs and best.json names {classes} classes: {_FIX}."
        )


def _check_model(model: bytes, path: Path) -> None:
    """A full-integer model with one int8 input and output; not the front-end graph."""
    from mcunas.frontend.graph import config_of_model
    from mcunas.tflite.reader import read_graph

    graph = read_graph(model, shown(path))
    if config_of_model(model) is not None:
        raise ModelError(f"{shown(path)} is the audio front-end graph, not the model: {_FIX}.")
    for what, tensors in (("input", graph.inputs), ("output", graph.outputs)):
        if len(tensors) != 1:
            raise ModelError(f"{shown(path)} has {len(tensors)} {what} tensors, not one: {_FIX}.")
        tensor = tensors[0]
        if tensor.dtype.upper() != "INT8" or tensor.scale is None:
            raise ModelError(
                f"{shown(path)} has a {tensor.dtype} {what}, not quantised int8: it is not a "
                f"model mcunas exported ({_FIX})."
            )


def _frontend(folder: Path, info: dict[str, Any]) -> tuple[FrontendConfig | None, bytes | None]:
    """The front end ``best.json`` names and the bytes of its graph (both None without one)."""
    named = info.get("frontend")
    if named is None:
        return None, None
    from mcunas.frontend.config import FrontendConfig
    from mcunas.frontend.graph import config_of_model

    try:
        cfg = FrontendConfig.from_dict(named)
    except (UserError, TypeError, ValueError) as exc:
        raise ModelError(
            f"{shown(folder / 'best.json')}: its frontend is not readable ({exc})."
        ) from None
    path = folder / "frontend.tflite"
    if not path.exists():
        raise ModelError(f"best.json names a front end and {shown(path)} is missing: {_FIX}.")
    front = read_model(path, "front end", ModelError)
    try:
        found = config_of_model(front)
    except (UserError, TypeError, ValueError):
        found = None
    if found != cfg:
        raise ModelError(f"{shown(path)} is not the front end best.json names: {_FIX}.")
    return cfg, front
