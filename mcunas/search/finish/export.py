"""Export the chosen model for deployment: ``best/`` inside the search's folder.

``best/`` holds the model, its C sources, ``best.json`` and ``project/``, a
PlatformIO project for the search's board (:mod:`mcunas.deploy`);
:func:`export_project` writes that project again, for the same board or
another one (``mcunas export``).
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import TYPE_CHECKING

from mcunas.boards.catalog import BoardProfile
from mcunas.errors import BoardProfileError, CandidateError, ModelError, UserError
from mcunas.files import managed_folder, plain_name, storage_errors, write_file
from mcunas.inputs.formats import read_model
from mcunas.jsontext import JsonObject, dumps
from mcunas.search.finish.refit_records import Refit
from mcunas.search.results.store import TrialRecord
from mcunas.search.results.summary import cost_split

if TYPE_CHECKING:
    from mcunas.deploy import ArenaFigure
    from mcunas.frontend.port import Frontend

__all__ = [
    "PROJECT_DIR",
    "export_best",
    "export_project",
    "exported_arena",
    "find_best_dir",
    "trial_model_bytes",
]

PROJECT_DIR = "project"  # best/project: the deployable project for the search's board

# What to do about a trial's model file that is gone or changed.
_MODEL_FIX = (
    "restore the folder from a copy, or start the search over with --overwrite "
    "(the report and best/ need the chosen trial's model as it was trained)"
)


def trial_model_bytes(best: TrialRecord, out_dir: Path) -> bytes:
    """The bytes of a trial's ``.tflite``, checked against the hash the store kept.

    Raises:
        ModelError: the file is missing, unreadable, or not the one the trial wrote
            (one line naming it and what to do).
    """
    src = Path(out_dir) / (best.model_path or "")
    if not src.exists():
        raise ModelError(f"Model of trial {best.trial_id} not found at {src}: {_MODEL_FIX}.")
    model_bytes = read_model(src, f"model of trial {best.trial_id}", ModelError)
    if best.model_sha256 and hashlib.sha256(model_bytes).hexdigest() != best.model_sha256:
        raise ModelError(
            f"Model file {src} is damaged or changed since trial {best.trial_id} wrote it "
            f"(its SHA-256 differs): {_MODEL_FIX}."
        )
    return model_bytes


def export_best(
    best: TrialRecord,
    out_dir: Path,
    context: JsonObject,
    board: BoardProfile | None = None,
    frontend: Frontend = None,
    model: bytes | None = None,
    refit: Refit | None = None,
) -> Path:
    """Write ``model.tflite``, ``model_data.cc/.h``, ``model_ops.h``, ``best.json``, ``project/``.

    With ``frontend`` also ``frontend.tflite``, its C sources and ``README.md``
    (:func:`_with_frontend`); ``best.json`` holds its parameters under ``frontend``.

    Args:
        best: TrialRecord, the chosen trial (its ``model_path``, relative to ``out_dir``
            or absolute as older stores kept it, must exist).
        out_dir: Path, the search's output folder; files go to ``out_dir/best``.
        context: dict, board, budgets and dataset facts copied into ``best.json``.
        board: BoardProfile | None, the search's board: ``project/`` is written for it
            (a model or board the project cannot be made for is noted in ``best.json``
            as ``project_error``, and the export goes on).
        frontend: Frontend, exported beside the model (None: the model alone).
        model: bytes | None, the model to export in place of the trial's own: its refit
            (:mod:`mcunas.search.finish.refit`, the same graph, or an average of refits).
        refit: Refit | None, that refit: an average's own arena goes into ``project/``.

    Returns:
        The ``best`` folder.

    Raises:
        ModelError: the trial's model file is missing or altered.
        DiskFull: the disk filled up while writing.
    """
    model_bytes = trial_model_bytes(best, out_dir) if model is None else model
    from mcunas.tflite.csource import write_model_sources
    from mcunas.tflite.reader import read_graph

    dest = managed_folder(Path(out_dir), Path(out_dir) / "best")  # never a planted link
    write_file(dest / "model.tflite", model_bytes, inside=dest)
    op_names = read_graph(model_bytes).op_names()
    with storage_errors(dest):
        sources = write_model_sources(model_bytes, dest, op_names)
    lead, context = _with_frontend(frontend, dest, context)
    info = {
        **context,
        "trial": best.to_dict(),
        "ops": op_names,
        "files": [*lead, *sorted(Path(p).name for p in sources), "best.json"],
        "model_bytes": len(model_bytes),
        "model_sha256": hashlib.sha256(model_bytes).hexdigest(),
    }
    split = cost_split(best)
    if split is not None:  # latency, SRAM, flash: front end / model / total
        info["cost_split"] = split
    if board is not None:
        front = (dest / "frontend.tflite").read_bytes() if frontend is not None else None
        _add_project(model_bytes, board, dest, (best, refit), info, front)
    write_file(dest / "best.json", dumps(info), inside=dest)
    return dest


def _add_project(
    model_bytes: bytes,
    board: BoardProfile,
    dest: Path,
    chosen: tuple[TrialRecord, Refit | None],
    info: JsonObject,
    frontend: bytes | None = None,
) -> None:
    """Write ``project/`` and list it in ``info``, or note there why it could not be made."""
    try:
        arena = exported_arena(*chosen)
        project = managed_folder(dest, dest / PROJECT_DIR)
        _write_project(model_bytes, board, project, arena, info, frontend)
        info["files"].append(f"{PROJECT_DIR}/")
    except (BoardProfileError, CandidateError, ModelError, UserError) as exc:
        info["project_error"] = str(exc)  # UserError: a front end the board's kernels refuse


def _with_frontend(
    frontend: Frontend, dest: Path, context: JsonObject
) -> tuple[list[str], JsonObject]:
    """The files listed before the model's, and the context with the front end's parameters.

    With a front end (a FrontendConfig: the graph that made the training features)
    ``frontend.tflite``, ``frontend_data.cc/.h``, ``frontend_ops.h`` and a ``README.md``
    with the call sequence are written.
    """
    if frontend is None:
        return ["model.tflite"], context
    from mcunas.frontend.csource import write_frontend_sources
    from mcunas.frontend.graph import frontend_model, readme

    front_bytes = frontend_model(frontend)
    write_file(dest / "frontend.tflite", front_bytes, inside=dest)
    write_file(dest / "README.md", readme(frontend), inside=dest)
    with storage_errors(dest):
        names = sorted(p.name for p in write_frontend_sources(front_bytes, dest))
    lead = ["frontend.tflite", *names, "README.md", "model.tflite"]
    return lead, {**context, "frontend": frontend.to_dict()}


def exported_arena(trial: TrialRecord, refit: Refit | None) -> ArenaFigure | None:
    """The exported model's arena figure: an averaged refit's own, else the trial's (or None)."""
    from mcunas.deploy import ArenaFigure

    own = None if refit is None else refit.figures
    if own is None:
        return _trial_arena(trial)
    return ArenaFigure(int(own.arena_bytes), measured=not own.estimated, source=str(own.source))


def _trial_arena(trial: TrialRecord) -> ArenaFigure | None:
    """The trial's arena figure, or None when it recorded none."""
    from mcunas.deploy import ArenaFigure

    if not trial.arena_bytes:
        return None
    source = trial.source or ("simulator" if trial.estimated else "board")
    return ArenaFigure(int(trial.arena_bytes), measured=trial.estimated is False, source=source)


def _write_project(
    model_bytes: bytes,
    board: BoardProfile,
    out: Path,
    arena: ArenaFigure | None,
    info: JsonObject,
    frontend: bytes | None = None,
) -> list[Path]:
    """The deployable project, ``frontend`` before the model; arena estimated when None."""
    from mcunas.deploy import ArenaFigure, write_project

    if arena is None:
        from mcunas.cost.profile import profile_model

        estimate = profile_model(model_bytes, board).memory.arena_bytes
        arena = ArenaFigure(int(estimate), measured=False, source=f"estimate for {board.name}")
    trial = info.get("trial") or {}
    meta = {
        "title": f"trial {trial.get('trial_id', '?')}"
        + (f", {trial['description']}" if trial.get("description") else ""),
        "class_names": info.get("class_names"),
        "preprocessing": info.get("preprocessing"),
    }
    return write_project(model_bytes, board, out, arena, meta, frontend)


def find_best_dir(source: Path) -> Path:
    """``source`` itself when it holds ``best.json``, else its ``best/``.

    Raises:
        UserError: neither holds ``best.json`` and ``model.tflite``.
    """
    for folder in (Path(source), Path(source) / "best"):
        if (folder / "best.json").exists() and (folder / "model.tflite").exists():
            return folder
    raise UserError(
        f"No best.json and model.tflite in {source} or {Path(source) / 'best'}: give a "
        "search's output folder or its best/ folder."
    )


def export_project(
    source: Path, board: BoardProfile | None = None, out: Path | None = None
) -> tuple[Path, BoardProfile, list[Path]]:
    """Write the deployable project for a search's chosen model (``mcunas export``).

    Args:
        source: Path, a search's output folder or its ``best/``.
        board: BoardProfile | None, the target (default: the search's board).
        out: Path | None, the project folder (default ``best/project`` for the search's
            board, ``best/project-<board>`` for another).

    Returns:
        The project folder, the board and the files written. For the search's own board
        the arena is the trial's figure; for another board it is estimated for that board.

    Raises:
        UserError: no ``best/`` there, or ``best.json`` unreadable.
        ModelError: the model file changed since the search wrote it, or is not int8.
        BoardProfileError: the board has no PlatformIO environment.
    """
    from mcunas.boards.catalog import load_board
    from mcunas.deploy.best_files import read_best

    best_dir = find_best_dir(source)
    best_files = read_best(best_dir)  # best.json's shape, the model's hash and kind, its front end
    info, model_bytes = best_files.info, best_files.model
    searched = (info.get("board") or {}).get("name")
    target = board or load_board(str(searched or ""))
    same = target.name == searched
    name = PROJECT_DIR if same else f"project-{plain_name(target.name, 'board name')}"
    folder = Path(out) if out else managed_folder(best_dir, best_dir / name)
    trial = TrialRecord(trial_id=str((info.get("trial") or {}).get("trial_id", "?")))
    for key in ("arena_bytes", "estimated", "source"):
        setattr(trial, key, (info.get("trial") or {}).get(key))
    arena = _trial_arena(trial) if same else None
    front = best_files.frontend
    return folder, target, _write_project(model_bytes, target, folder, arena, info, front)
