"""The search as a library call: ``run_search(SearchConfig(...)) -> SearchResult``.

Example::

    from mcunas.search import SearchConfig, run_search
    result = run_search(SearchConfig(board="esp32s3", max_latency_ms=50, out="runs/x"))
    print(result.best.int8_accuracy if result.best else result.message)
"""

from __future__ import annotations

import contextlib
import errno
import shutil
import sqlite3
import sys
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, TextIO

from mcunas.boards import BoardProfile, load_board
from mcunas.errors import DatasetError, McunasError, UserError
from mcunas.measure.ports import check_port
from mcunas.search.config import IDENTITY, SearchConfig
from mcunas.search.progress import Progress
from mcunas.search.store import (
    DiskFull,
    TrialRecord,
    TrialStatus,
    TrialStore,
    ensure_writable,
    first_missing,
)

__all__ = ["SearchConfig", "SearchResult", "check_search", "run_search"]

MAX_SEED = 2**32 - 1  # numpy's seeds are unsigned 32-bit


@dataclass
class SearchResult:
    """What a search found; ``to_dict()`` is the ``--json`` summary."""

    out_dir: Path
    board: BoardProfile
    config: SearchConfig
    trials: list[TrialRecord]
    front: list[TrialRecord]
    best: TrialRecord | None
    hypervolume: dict[str, Any]
    wall_s: float  # every session of this search (first run and resumes)
    session_wall_s: float | None = None  # this session only
    sessions: int = 1
    stopped_reason: str | None = None
    message: str | None = None  # why nothing is feasible, when nothing is
    paths: dict[str, str] = field(default_factory=dict)

    def counts(self) -> dict[str, int]:
        """Trials per status."""
        return {
            s.value: sum(r.status == s for r in self.trials)
            for s in TrialStatus
            if any(r.status == s for r in self.trials)
        }

    def to_dict(self) -> dict[str, Any]:
        """Machine-readable summary."""
        return {
            "out_dir": str(self.out_dir),
            "board": self.board.name,
            "config": self.config.to_dict(),
            "counts": self.counts(),
            "best": None if self.best is None else self.best.to_dict(),
            "front": [r.to_dict() for r in self.front],
            "hypervolume": self.hypervolume,
            "infeasible_train_s": infeasible_train_s(self.trials),
            "wall_s": round(self.wall_s, 2),
            "session_wall_s": _round(self.session_wall_s),
            "sessions": self.sessions,
            "stopped_reason": self.stopped_reason,
            "message": self.message,
            "paths": self.paths,
        }


def _round(seconds: float | None) -> float | None:
    return None if seconds is None else round(seconds, 2)


def infeasible_train_s(records: list[TrialRecord]) -> float:
    """Seconds of training spent on candidates that turned out infeasible."""
    return round(sum(r.train_s for r in records if r.status == TrialStatus.INFEASIBLE), 3)


def default_out(board: str) -> Path:
    """``runs/<board>-<YYYYmmdd-HHMMSS>``."""
    return Path("runs") / f"{board}-{datetime.now():%Y%m%d-%H%M%S}"


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
    if not 0 <= config.seed <= MAX_SEED:
        raise UserError(f"--seed must be between 0 and {MAX_SEED}, got {config.seed}.")
    if config.port and config.rack:
        raise UserError("Give either --port or --rack, not both.")
    check_port(config.port)
    if config.rack and not Path(config.rack).expanduser().is_file():
        raise UserError(
            f"rack file not found: {config.rack} (see `mcunas rack --help` for its format)"
        )
    board = load_board(config.board)
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


def run_search(config: SearchConfig, *, stream: TextIO | None | str = "stderr") -> SearchResult:
    """Run (or resume) a hardware-aware search and write its results.

    A run that fails before any trial is recorded removes the output folder it
    created (never one that existed before); from the first trial on, the folder
    is kept for ``--resume``.

    Args:
        config: SearchConfig, the search's settings.
        stream: TextIO | None | str, where progress lines go (default ``"stderr"``: the
            current ``sys.stderr``; None: silent).

    Returns:
        The :class:`SearchResult` (``best`` is None when no candidate was feasible;
        ``wall_s`` sums every session of the search).

    Raises:
        UnknownBoard, DatasetError, UserError: bad input, before any training.
        FatalError: the environment broke mid-search (finished trials are kept).
        DiskFull: the disk filled up (finished trials are kept; use --resume).
    """
    board = check_search(config)
    if stream == "stderr":
        stream = sys.stderr
    out_dir = Path(config.out or "")
    created = first_missing(out_dir)  # the folder this run makes, removed if it fails early
    store: TrialStore | None = None
    failed = discard = False
    try:
        store = _open_store(out_dir, config)
        store.begin_session()
        from mcunas.convert import import_tensorflow

        import_tensorflow()  # first and quietly: keras and keras-tuner import it too
        from mcunas.search.session import SearchSession

        session = SearchSession(config, board, out_dir, store)
        progress = Progress(config.max_trials, config.time_budget_s, stream=stream)
        try:
            # keras-tuner and Keras print to stdout; keep stdout for the --json summary.
            with contextlib.redirect_stdout(sys.stderr):
                stopped = session.run(progress)
        except OSError as exc:
            if exc.errno == errno.ENOSPC:
                raise DiskFull(out_dir) from exc
            raise
        return session.finish(stopped)
    except BaseException:
        failed = True
        discard = created is not None and (store is None or _no_trials(store))
        raise
    finally:
        if store is not None:
            if failed and not discard:  # a failed or interrupted session's time counts too
                with contextlib.suppress(McunasError, sqlite3.Error):
                    store.checkpoint_wall()
            store.close()
        if discard and created is not None:
            shutil.rmtree(created, ignore_errors=True)


def _no_trials(store: TrialStore) -> bool:
    try:
        return store.count() == 0
    except sqlite3.Error:
        return False


def _open_store(out_dir: Path, config: SearchConfig) -> TrialStore:
    """Open the store, refusing to mix a new search into an old folder."""
    ensure_writable(out_dir)
    store = TrialStore.open(out_dir)
    try:
        if not config.resume and store.count():
            raise UserError(
                f"{out_dir} already holds {store.count()} trials of an earlier search. "
                "Continue it with --resume, or choose a new --out."
            )
        if config.resume:
            _check_same_search(store.get_meta("config") or {}, config)
        store.set_meta("config", config.to_dict())
    except McunasError:
        store.close()
        raise
    return store


def _check_same_search(stored: dict[str, Any], config: SearchConfig) -> None:
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
