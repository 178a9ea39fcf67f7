"""The search as a library call: ``run_search(SearchConfig(...)) -> SearchResult``.

Example::

    from mcunas.search import SearchConfig, run_search
    result = run_search(SearchConfig(board="esp32s3", max_latency_ms=50, out="runs/x"))
    print(result.best.int8_accuracy if result.best else result.message)
"""

from __future__ import annotations

import contextlib
import errno
import sys
import time
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, TextIO

from mcunas.boards import BoardProfile, load_board
from mcunas.errors import McunasError, UserError
from mcunas.search.config import IDENTITY, SearchConfig
from mcunas.search.progress import Progress
from mcunas.search.store import DiskFull, TrialRecord, TrialStatus, TrialStore, ensure_writable

__all__ = ["SearchConfig", "SearchResult", "run_search"]

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
    wall_s: float
    stopped_reason: str | None = None
    message: str | None = None  # why nothing is feasible, when nothing is
    paths: dict[str, str] = field(default_factory=dict)

    def counts(self) -> dict[str, int]:
        """Trials per status."""
        return {s.value: sum(r.status == s for r in self.trials) for s in TrialStatus
                if any(r.status == s for r in self.trials)}

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
            "stopped_reason": self.stopped_reason,
            "message": self.message,
            "paths": self.paths,
        }


def infeasible_train_s(records: list[TrialRecord]) -> float:
    """Seconds of training spent on candidates that turned out infeasible."""
    return round(sum(r.train_s for r in records if r.status == TrialStatus.INFEASIBLE), 3)


def default_out(board: str) -> Path:
    """``runs/<board>-<YYYYmmdd-HHMMSS>``."""
    return Path("runs") / f"{board}-{datetime.now():%Y%m%d-%H%M%S}"


def run_search(config: SearchConfig, *, stream: TextIO | None | str = "stderr") -> SearchResult:
    """Run (or resume) a hardware-aware search and write its results.

    Args:
        config: SearchConfig, the search's settings.
        stream: TextIO | None | str, where progress lines go (default ``"stderr"``: the
            current ``sys.stderr``; None: silent).

    Returns:
        The :class:`SearchResult` (``best`` is None when no candidate was feasible).

    Raises:
        UnknownBoard, DatasetError, UserError: bad input, before any training.
        FatalError: the environment broke mid-search (finished trials are kept).
        DiskFull: the disk filled up (finished trials are kept; use --resume).
    """
    config.validate()
    if stream == "stderr":
        stream = sys.stderr
    board = load_board(config.board)
    out_dir = Path(config.out) if config.out else default_out(board.name)
    config.out = str(out_dir)
    store = _open_store(out_dir, config)
    try:
        from mcunas.search.session import SearchSession

        session = SearchSession(config, board, out_dir, store)
        started = time.monotonic()
        progress = Progress(config.max_trials, config.time_budget_s, stream=stream)
        try:
            # keras-tuner and Keras print to stdout; keep stdout for the --json summary.
            with contextlib.redirect_stdout(sys.stderr):
                stopped = session.run(progress)
        except OSError as exc:
            if exc.errno == errno.ENOSPC:
                raise DiskFull(out_dir) from exc
            raise
        return session.finish(time.monotonic() - started, stopped)
    finally:
        store.close()


def _open_store(out_dir: Path, config: SearchConfig) -> TrialStore:
    """Open the store, refusing to mix a new search into an old folder."""
    had_store = TrialStore.exists_in(out_dir)
    if config.resume and not had_store:
        raise UserError(f"Nothing to resume: {out_dir} holds no search. Drop --resume.")
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
    diffs = [f"{k}: {stored.get(k)!r} then, {now.get(k)!r} now" for k in IDENTITY
             if k in stored and stored.get(k) != now.get(k)]
    if diffs:
        raise UserError(
            "--resume needs the same search settings as the interrupted run ("
            + "; ".join(diffs) + "). Use a new --out for a different search."
        )
