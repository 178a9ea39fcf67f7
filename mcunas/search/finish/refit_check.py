"""Which stored refit stands for the chosen trial, and whether a refit's graph is the trial's.

A refit (:mod:`.refit`) is kept in the store's ``refit`` meta with the key of the
choice it refits (trial, seed, ``--epochs``, ``--distill``, members planned) and
its model file's hash: :func:`refit_of` gives it while that key and file hold.
:func:`same_graph` says whether the refit's INT8 graph is the trial's, so that the
trial's latency, SRAM and flash stand for it.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import TYPE_CHECKING

from mcunas.errors import ModelError
from mcunas.inputs.formats import read_model
from mcunas.jsontext import JsonObject
from mcunas.search.finish.ensemble import planned_members
from mcunas.search.finish.refit_records import REFIT_META, Refit
from mcunas.search.results.store import TrialRecord, TrialStore
from mcunas.search.settings.config import SearchConfig
from mcunas.search.trial.pipeline import training_seed

if TYPE_CHECKING:
    from mcunas.tflite.reader import Graph

__all__ = ["KEY_DEFAULTS", "refit_key", "refit_of", "same_graph", "stored_refit"]

KEY_DEFAULTS = {"members_planned": 1}  # what a refit stored before ensembles held


def refit_key(best: TrialRecord, cfg: SearchConfig) -> JsonObject:
    """What makes a stored refit the one this choice needs."""
    seed = training_seed(cfg.seed, best.hyperparameters)
    return {
        "trial_id": best.trial_id,
        "seed": seed,
        "epochs": int(cfg.epochs),
        "distill": bool(cfg.distill),
        "members_planned": planned_members(cfg.ensemble, best, cfg.budgets),
    }


def stored_refit(
    store: TrialStore, best: TrialRecord, out_dir: Path, cfg: SearchConfig
) -> Refit | None:
    """:func:`refit_of` as a :class:`~mcunas.search.finish.refit_records.Refit`."""
    return Refit.from_dict(refit_of(store, best, out_dir, cfg))


def refit_of(
    store: TrialStore, best: TrialRecord, out_dir: Path, cfg: SearchConfig
) -> JsonObject | None:
    """The stored refit of ``best`` with its model file intact, or None (the meta as kept).

    A refit of another trial, seed or ``--epochs``, or whose file is gone or
    changed, is not used (and a later refit replaces it); nor is any under
    ``--refit off`` (a search resumed with it exports the trial's own model).
    """
    if cfg.refit == "off":
        return None
    info = store.get_meta(REFIT_META)
    if not isinstance(info, dict) or any(
        info.get(k, KEY_DEFAULTS.get(k)) != v for k, v in refit_key(best, cfg).items()
    ):
        return None
    path = Path(out_dir) / str(info.get("model_path", ""))
    try:
        digest = hashlib.sha256(read_model(path, "refit model", ModelError)).hexdigest()
    except ModelError:
        return None
    return info if digest == info.get("model_sha256") else None


def same_graph(before: bytes, after: bytes) -> str | None:
    """None when two INT8 models have the same ops on the same tensors; else what differs.

    The same op sequence with the same tensor shapes and types has the same
    arena plan and the same latency; the flatbuffer may differ by a few bytes
    of quantization metadata, so its size is allowed 1% either way.
    """
    from mcunas.tflite.reader import read_graph

    a, b = read_graph(before), read_graph(after)
    if _layout(a) != _layout(b):
        return "its graph is not the trial's (ops or tensor shapes differ)"
    if abs(a.model_size_bytes - b.model_size_bytes) > 0.01 * a.model_size_bytes:
        return f"its size is {b.model_size_bytes} bytes against the trial's {a.model_size_bytes}"
    return None


def _layout(graph: Graph) -> list[tuple[object, ...]]:
    """Each op's name and its tensors' shapes and types, in execution order."""
    return [
        (
            op.name,
            tuple(None if t is None else (t.shape, t.dtype) for t in op.inputs),
            tuple((t.shape, t.dtype) for t in op.outputs),
        )
        for op in graph.ops
    ]
