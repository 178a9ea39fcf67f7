"""Export the chosen model for deployment: ``best/`` inside the search's folder."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from mcunas.errors import ModelError
from mcunas.files import storage_errors, write_file
from mcunas.jsontext import dumps
from mcunas.search.store import TrialRecord

__all__ = ["export_best"]


def export_best(best: TrialRecord, out_dir: Path, context: dict[str, Any]) -> Path:
    """Write ``model.tflite``, ``model_data.cc/.h``, ``model_ops.h`` and ``best.json``.

    Args:
        best: TrialRecord, the chosen trial (its ``model_path``, relative to ``out_dir``
            or absolute as older stores kept it, must exist).
        out_dir: Path, the search's output folder; files go to ``out_dir/best``.
        context: dict, board, budgets and dataset facts copied into ``best.json``.

    Returns:
        The ``best`` folder.

    Raises:
        ModelError: the trial's model file is missing or altered.
        DiskFull: the disk filled up while writing.
    """
    src = Path(out_dir) / (best.model_path or "")
    if not src.is_file():
        raise ModelError(f"Model of trial {best.trial_id} not found at {src}.")
    model_bytes = src.read_bytes()
    if best.model_sha256 and hashlib.sha256(model_bytes).hexdigest() != best.model_sha256:
        raise ModelError(f"Model file {src} changed since trial {best.trial_id} recorded it.")
    from mcunas.csource import write_model_sources
    from mcunas.tflite.reader import read_graph

    dest = Path(out_dir) / "best"
    write_file(dest / "model.tflite", model_bytes)
    op_names = read_graph(model_bytes).op_names()
    with storage_errors(dest):
        sources = write_model_sources(model_bytes, dest, op_names)
    info = {
        **context,
        "trial": best.to_dict(),
        "ops": op_names,
        "files": ["model.tflite", *sorted(Path(p).name for p in sources), "best.json"],
        "model_bytes": len(model_bytes),
        "model_sha256": hashlib.sha256(model_bytes).hexdigest(),
    }
    write_file(dest / "best.json", dumps(info))
    return dest
