"""A search's settings checked, and a planned search run in its folder.

:func:`check_search` checks the settings before a folder is created or
TensorFlow loads; :func:`run_planned` runs a strategy with an executor in the
output folder (its lock, the store, resume). The library entry,
:func:`mcunas.engine.run_search`, picks the strategy and executor by name
and calls both.
"""

from __future__ import annotations

import contextlib
import errno
import shutil
import sqlite3
import sys
from datetime import datetime
from pathlib import Path
from typing import TextIO

from mcunas.boards.catalog import BoardProfile, load_board
from mcunas.errors import DatasetError, McunasError, ResumableStop, UserError
from mcunas.files import (
    DiskFull,
    FolderLock,
    ensure_writable,
    first_missing,
    plain_name,
    refuse_links,
)
from mcunas.jsontext import JsonObject
from mcunas.measure.ports import check_port
from mcunas.search.report.result import SearchResult
from mcunas.search.results.store import TrialStore
from mcunas.search.run import Executor, SearchRun, Strategy
from mcunas.search.settings.config import IDENTITY, SearchConfig
from mcunas.search.settings.progress import Progress
from mcunas.search.trial.nofit import check_budget_floor

__all__ = ["check_search", "run_planned"]


def default_out(board: str) -> Path:
    """``runs/<board>-<YYYYmmdd-HHMMSS>``."""
    return Path("runs") / f"{plain_name(board, 'board name')}-{datetime.now():%Y%m%d-%H%M%S}"


def check_search(config: SearchConfig) -> BoardProfile:
    """Check what can be checked before a folder is created or TensorFlow loads.

    Sets ``config.out`` to the default folder when it is empty.

    Returns:
        The board profile.

    Raises:
        UnknownBoard, DatasetError, UserError: bad settings, a missing dataset, an
            output folder that cannot be created, ``--resume`` without a search.
    """
    config.validate()
    if config.port and config.rack:
        raise UserError("Give either --port or --rack, not both.")
    check_port(config.port)
    if config.rack and not Path(config.rack).expanduser().is_file():
        raise UserError(
            f"rack file not found: {config.rack} (see `mcunas rack --help` for its format)"
        )
    board = load_board(config.board)
    if config.clock_mhz is not None:
        board = board.at_clock(config.clock_mhz, above_profile=config.overclock)
    check_budget_floor(config.budgets, board)
    if config.frontend == "tflm" and config.measure != "simulator":
        _check_frontend_boards(config, board)
    out_dir = Path(config.out) if config.out else default_out(board.name)
    config.out = str(out_dir)
    if config.resume and not TrialStore.exists_in(out_dir):
        raise UserError(f"Nothing to resume: {out_dir} holds no search. Drop --resume.")
    first_missing(out_dir)
    if config.dataset and config.dataset != "digits":
        path = Path(config.dataset).expanduser()
        if not path.exists():
            raise DatasetError(f"Dataset not found: {path}")
    return board


def _check_frontend_boards(config: SearchConfig, board: BoardProfile) -> None:
    """Refuse now a front end that no measuring board can run, not after every training.

    ESP32 boards run it on esp-tflite-micro, Cortex-M boards on mcunas's signal
    kernels; a board with neither cannot: the board itself, or every board of the
    rack that measures ``board``'s profile.

    Raises:
        BoardProfileError: the board cannot run the front end.
        RackError: the rack file is unusable, or none of its boards can.
    """
    if not config.rack:
        from mcunas.frontend.build import check_signal_ops

        check_signal_ops(board)
        return
    from mcunas.measure.rack_file import check_rack_frontend, load_rack

    check_rack_frontend(load_rack(Path(config.rack).expanduser()), board)


def run_planned(
    config: SearchConfig,
    board: BoardProfile,
    parts: tuple[Strategy, Executor],
    *,
    stream: TextIO | None | str = "stderr",
    debug: bool = False,
    overwrite: bool = False,
) -> SearchResult:
    """Run (or resume) ``parts`` (a strategy and an executor) on checked settings.

    ``config`` and ``board`` are what :func:`check_search` checked and returned.
    Only one search may use a folder at a time: it is locked for the run's life
    (the OS releases the lock however the process ends). A run that fails before
    any trial is recorded removes the output folder it created (never one that
    existed before); from the first trial on, the folder is kept for ``--resume``.
    See :func:`mcunas.engine.run_search` for the arguments, the result and the errors.
    """
    out_dir = Path(config.out or "")
    created = first_missing(out_dir)  # the folder this run makes, removed if it fails early
    ensure_writable(out_dir)
    with FolderLock(out_dir, "mcunas search"):  # one writer per folder, released on death
        if overwrite:
            _clear_earlier_search(out_dir)
        _refuse_planted_links(out_dir)
        made = (out_dir, created)
        return _run_locked(config, board, made, parts, stream, debug)


def _run_locked(
    config: SearchConfig,
    board: BoardProfile,
    made: tuple[Path, Path | None],
    parts: tuple[Strategy, Executor],
    stream: TextIO | None | str,
    debug: bool,
) -> SearchResult:
    """:func:`run_planned` once the folder is ours; an early failure removes what it made."""
    out_dir, created = made
    store: TrialStore | None = None
    failed = discard = False
    try:
        store = _open_store(out_dir, config, threads=bool(config.serve))
        store.begin_resume()
        from mcunas.tflite.convert import import_tensorflow

        import_tensorflow()  # first and quietly: keras and keras-tuner import it too
        session = SearchRun(config, board, out_dir, store, *parts, debug=debug)
        out = sys.stderr if isinstance(stream, str) else stream  # "stderr": the current one
        progress = Progress(config.max_trials, config.time_budget_s, stream=out)
        try:
            # keras-tuner and Keras print to stdout; keep stdout for the --json summary.
            with contextlib.redirect_stdout(sys.stderr):
                stopped = session.run(progress)
        except OSError as exc:
            if exc.errno == errno.ENOSPC:
                raise DiskFull(out_dir) from exc
            raise
        return session.finish(stopped)
    except BaseException as exc:
        failed = True
        # a stop that names --resume keeps the folder it names, trials or not
        kept = isinstance(exc, ResumableStop)
        discard = created is not None and not kept and (store is None or _no_trials(store))
        raise
    finally:
        if store is not None:
            if failed and not discard:  # a failed or interrupted resume's time counts too
                with contextlib.suppress(McunasError, sqlite3.Error):
                    store.checkpoint_wall()
            store.close()
        if discard and created is not None:
            shutil.rmtree(created, ignore_errors=True)


# What a search writes into its folder; --overwrite removes these and nothing else.
_SEARCH_FILES = (
    "trials.sqlite",
    "trials.sqlite-wal",
    "trials.sqlite-shm",
    "pareto.json",
    "pareto.png",
    "energy.png",
    "report.html",
)
_SEARCH_DIRS = ("models", "best", "tuner", "supernet")


def _clear_earlier_search(out_dir: Path) -> None:
    """Remove an earlier search's store, models, report and ``best/`` (``--overwrite``).

    A symlink at one of these names is removed itself, never what it points to.
    """
    for name in _SEARCH_FILES:
        (out_dir / name).unlink(missing_ok=True)
    for name in _SEARCH_DIRS:
        if (out_dir / name).is_symlink():
            (out_dir / name).unlink()
        shutil.rmtree(out_dir / name, ignore_errors=True)


def _refuse_planted_links(out_dir: Path) -> None:
    """Refuse in one line a symlink at a folder the search keeps, or at a file opened by path.

    The search's own files are written following no link (:mod:`mcunas.files.managed`:
    a link at a file's name is replaced). SQLite and Keras Tuner open theirs by
    path, following links: the store's files and everything in ``tuner/`` are
    checked before either runs; the folders, so that a search stops before its
    first trial rather than at its first write.
    """
    refuse_links(out_dir, (*_SEARCH_FILES[:3], *_SEARCH_DIRS), "search folder")
    refuse_links(out_dir, ("tuner",), "Keras Tuner state", deep=True)


def _no_trials(store: TrialStore) -> bool:
    try:
        return store.count() == 0
    except sqlite3.Error:
        return False


def _open_store(out_dir: Path, config: SearchConfig, threads: bool = False) -> TrialStore:
    """Open the store, refusing to mix a new search into an old folder."""
    store = TrialStore.open(out_dir, threads=threads)
    try:
        if not config.resume and store.count():
            raise UserError(
                f"{out_dir} already holds {store.count()} trials of an earlier search. "
                "Continue it with --resume, start over with --overwrite, or choose a new --out."
            )
        dataset_sha = config.dataset_sha256()
        if config.resume:
            _check_same_search(store.get_meta("config") or {}, config)
            _check_same_data(store.get_meta("dataset_sha256"), dataset_sha, config)
        store.set_meta("config", config.to_dict())
        store.set_meta("dataset_sha256", dataset_sha)
    except McunasError:
        store.close()
        raise
    return store


def _check_same_search(stored: JsonObject, config: SearchConfig) -> None:
    now = config.to_dict()
    diffs = [
        f"{k}: {stored.get(k)!r} then, {now.get(k)!r} now"
        for k in IDENTITY
        if k in stored and stored.get(k) != now.get(k)
    ]
    if diffs:
        raise UserError(
            "--resume needs the same search settings as the interrupted run ("
            + "; ".join(diffs)
            + "). Use a new --out for a different search."
        )


def _check_same_data(stored: str | None, now: str, config: SearchConfig) -> None:
    if stored is not None and stored != now:
        raise UserError(
            f"--resume: the dataset {config.dataset or 'digits'} changed since the search "
            "started (its content hash differs). Resume with the original data, or start "
            "a new search in a new --out."
        )
