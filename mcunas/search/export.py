"""Export the chosen model for deployment: ``best/`` inside the search's folder."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from mcunas.errors import ModelError
from mcunas.search.store import TrialRecord, disk_full_as_fatal, write_file

__all__ = ["ACCURACY_TIE", "choose_best", "export_best"]

# Scores this close to the top count as a tie (0.5 percentage points is under two
# samples of digits' 360-sample validation split): the tie goes to lower latency.
ACCURACY_TIE = 0.005


def choose_best(records: list[TrialRecord]) -> TrialRecord | None:
    """The feasible trial with the highest score.

    Scores within :data:`ACCURACY_TIE` of the top tie; among those the lowest
    latency wins, then the lowest peak SRAM, then the higher score (a Hyperband
    round often re-trains the same architecture: same costs, better accuracy).
    """
    ok = [r for r in records if r.feasible and r.model_path]
    if not ok:
        return None
    top = max(r.score or 0.0 for r in ok)
    near = [r for r in ok if (r.score or 0.0) >= top - ACCURACY_TIE]
    return min(
        near,
        key=lambda r: (r.latency_ms or 0.0, r.peak_sram_bytes or 0, -(r.score or 0.0), r.trial_id),
    )


def export_best(best: TrialRecord, out_dir: Path, context: dict[str, Any]) -> Path:
    """Write ``model.tflite``, ``model_data.cc/.h``, ``model_ops.h`` and ``best.json``.

    Args:
        best: TrialRecord, the chosen trial (its ``model_path`` must exist).
        out_dir: Path, the search's output folder; files go to ``out_dir/best``.
        context: dict, board, budgets and dataset facts copied into ``best.json``.

    Returns:
        The ``best`` folder.

    Raises:
        ModelError: the trial's model file is missing or altered.
        DiskFull: the disk filled up while writing.
    """
    src = Path(best.model_path or "")
    if not src.is_file():
        raise ModelError(f"Model of trial {best.trial_id} not found at {src}.")
    model_bytes = src.read_bytes()
    if best.model_sha256 and hashlib.sha256(model_bytes).hexdigest() != best.model_sha256:
        raise ModelError(f"Model file {src} changed since trial {best.trial_id} recorded it.")
    from mcunas.convert import write_model_sources
    from mcunas.graph import read_graph

    dest = Path(out_dir) / "best"
    write_file(dest / "model.tflite", model_bytes)
    op_names = read_graph(model_bytes).op_names()
    with disk_full_as_fatal(dest):
        sources = write_model_sources(model_bytes, dest, op_names)
    info = {
        **context,
        "trial": best.to_dict(),
        "ops": op_names,
        "files": ["model.tflite", *sorted(Path(p).name for p in sources), "best.json"],
        "model_bytes": len(model_bytes),
        "model_sha256": hashlib.sha256(model_bytes).hexdigest(),
    }
    write_file(dest / "best.json", json.dumps(info, indent=2, default=str))
    return dest
