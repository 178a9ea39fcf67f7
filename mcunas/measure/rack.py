"""A rack of boards measuring models in parallel: one worker thread per board.

The boards come from a ``rack.toml`` (:mod:`mcunas.measure.rack_file`).
A board that fails ``max_failures`` times in a row (silence, crash, lost port,
wrong CRC...) is taken out of rotation and reported; its candidate is retried
on another board, then recorded as failed with the reason. A model the board
rejects (``CandidateError``) fails at once without counting against the board.

A model may come with a front end (``frontend.tflite``): each board then runs
both graphs, as :meth:`BoardMeasurer.measure` does. A board whose pinned TFLite
Micro lacks the signal ops (the Cortex-M Arduino library) takes no such job; a
job no board in rotation can take fails at once with that one-line reason.

Example::

    with RackMeasurer(load_board("esp32s3"), rack="rack.toml") as rack:
        outcomes = rack.measure_many([model_a, model_b, model_c])
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from mcunas.boards.catalog import BoardProfile
from mcunas.errors import CandidateError, FatalError, McunasError
from mcunas.figures import Figures
from mcunas.measure.base import MeasureOptions
from mcunas.measure.board import DEFAULT_TIMEOUT_S, BoardMeasurer
from mcunas.measure.rack_file import (
    DEFAULT_MAX_FAILURES,
    Rack,
    RackBoard,
    RackError,
    load_rack,
    probe_rack,
)

__all__ = [
    "DEFAULT_MAX_FAILURES",
    "BoardStatus",
    "Rack",
    "RackBoard",
    "RackError",
    "RackMeasurer",
    "RackOutcome",
    "load_rack",
    "probe_rack",
]

log = logging.getLogger("mcunas.rack")


@dataclass
class BoardStatus:
    """How one board of the rack is doing."""

    name: str
    port: str
    measured: int = 0
    failures_in_row: int = 0
    failures: int = 0
    out_reason: str | None = None


@dataclass(frozen=True)
class RackOutcome:
    """What became of one model: a measurement, or the reason it failed."""

    index: int
    measurement: Figures | None
    error: str | None
    attempts: tuple[str, ...] = ()  # "board: reason" of every failed attempt

    @property
    def ok(self) -> bool:
        """True when the model was measured."""
        return self.measurement is not None


@dataclass
class _Job:
    index: int
    model_bytes: bytes
    frontend: bytes | None = None
    future: Future = field(default_factory=Future)
    tried: list[str] = field(default_factory=list)
    attempts: list[str] = field(default_factory=list)


MeasurerFactory = Callable[[RackBoard], Any]


class RackMeasurer:
    """Measure models on every board of one profile in a rack, one worker per board.

    Args:
        board: BoardProfile, the profile measured (the rack's other boards are unused).
        rack: str | Path | Rack, the ``rack.toml`` (default ``rack.toml``).
        flash: bool, flash each model (default True).
        timeout_s: float, read-stage deadline per measurement.
        max_failures: int | None, failures in a row that retire a board (default: the rack's).
        retries: int, other boards a candidate is tried on after a board failure (default 1).
        measurer_factory: ``(RackBoard) -> measurer`` (default: a :class:`BoardMeasurer`).
        **options: passed to :class:`BoardMeasurer` (``project_factory``, ``trace``...).
    """

    name = "rack"

    @classmethod
    def open(
        cls, board: BoardProfile, options: MeasureOptions, stack: contextlib.ExitStack
    ) -> RackMeasurer:
        """Every board of ``board``'s profile in the ``rack.toml`` (registered as ``rack``)."""
        return cls(
            board,
            rack=options.rack or "rack.toml",
            flash=options.flash,
            timeout_s=options.timeout_s or DEFAULT_TIMEOUT_S,
        )

    def __init__(
        self,
        board: BoardProfile,
        rack: str | Path | Rack = "rack.toml",
        flash: bool = True,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        *,
        max_failures: int | None = None,
        retries: int = 1,
        measurer_factory: MeasurerFactory | None = None,
        **options: Any,
    ) -> None:
        self.board = board
        self.rack = rack if isinstance(rack, Rack) else load_rack(rack)
        members = self.rack.for_profile(board.name)
        if not members:
            found = ", ".join(sorted({b.profile.name for b in self.rack.boards}))
            raise FatalError(f"{self.rack.path} has no {board.name} board (it has: {found})")
        self.max_failures = max_failures or self.rack.max_failures
        self.retries = retries

        def default_factory(rb: RackBoard) -> BoardMeasurer:
            return BoardMeasurer(
                rb.profile,
                port=rb.port,
                flash=flash,
                timeout_s=timeout_s,
                power=rb.power,
                **options,
            )

        factory = measurer_factory or default_factory
        self._measurers = {rb.name: factory(rb) for rb in members}
        self._no_frontend = {
            rb.name: why for rb in members if (why := _frontend_refusal(rb)) is not None
        }
        self._status = {rb.name: BoardStatus(rb.name, rb.port) for rb in members}
        self._cond = threading.Condition(threading.RLock())
        self._pending: list[_Job] = []
        self._threads: list[threading.Thread] = []
        self._closed = False
        self._fatal: BaseException | None = None
        self._count = 0

    # -- public API ---------------------------------------------------------------
    def submit(self, model_bytes: bytes, frontend: bytes | None = None) -> Future:
        """Queue one model (run after ``frontend``, if given); the future gives its figures.

        The future raises ``CandidateError`` when the model failed (with the reason
        of every attempt, or why no board can run its front end) and ``FatalError``
        when no board is left or the setup broke.
        """
        return self._submit(model_bytes, frontend).future

    def measure(self, model_bytes: bytes, frontend: bytes | None = None) -> Figures:
        """Measure one model on the first free board (the ``Measurer`` interface).

        With ``frontend`` the board runs it and then the model, as
        :meth:`BoardMeasurer.measure`: its figures are in ``details["frontend"]``.
        """
        return self.submit(model_bytes, frontend).result()

    def measure_many(
        self, models: Sequence[bytes], frontend: bytes | None = None
    ) -> list[RackOutcome]:
        """Measure models in parallel (each after ``frontend``, if given); outcomes in order.

        Raises:
            FatalError: the setup broke, or every board left the rotation.
        """
        jobs = [self._submit(m, frontend) for m in models]
        outcomes = []
        for job in jobs:
            try:
                outcomes.append(
                    RackOutcome(job.index, job.future.result(), None, tuple(job.attempts))
                )
            except CandidateError as exc:
                outcomes.append(RackOutcome(job.index, None, str(exc), tuple(job.attempts)))
        return outcomes

    def status(self) -> list[BoardStatus]:
        """A copy of every board's status (measured, failures, out of rotation and why)."""
        with self._cond:
            return [replace(s) for s in self._status.values()]

    def test_connection(self) -> None:
        """Check every board; retire the ones that fail; FatalError if none is left."""
        for name, measurer in self._measurers.items():
            try:
                measurer.test_connection()
            except McunasError as exc:
                self._retire(name, f"connection check failed: {exc}")
        self._raise_if_none_left()

    def close(self) -> None:
        """Stop the workers once the queue is done."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        for t in self._threads:
            t.join()
        for measurer in self._measurers.values():
            close = getattr(measurer, "close", None)
            if close is not None:
                close()

    def __enter__(self) -> RackMeasurer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- scheduling -----------------------------------------------------------------
    def _submit(self, model_bytes: bytes, frontend: bytes | None = None) -> _Job:
        with self._cond:
            if self._fatal is not None:
                raise FatalError(f"the rack stopped: {self._fatal}")
            self._raise_if_none_left()
            if not self._threads:
                for name in self._measurers:
                    t = threading.Thread(
                        target=self._work, args=(name,), daemon=True, name=f"rack-{name}"
                    )
                    self._threads.append(t)
                    t.start()
            job = _Job(self._count, model_bytes, frontend)
            self._count += 1
            if not self._takers(job):
                self._fail(job)
                return job
            self._pending.append(job)
            self._cond.notify_all()
            return job

    def _live(self) -> list[str]:
        return [n for n, s in self._status.items() if s.out_reason is None]

    def _takes(self, name: str, job: _Job) -> bool:
        """Whether board ``name`` may run ``job``: not tried yet, and runs its front end."""
        return name not in job.tried and (job.frontend is None or name not in self._no_frontend)

    def _takers(self, job: _Job) -> list[str]:
        return [n for n in self._live() if self._takes(n, job)]

    def _raise_if_none_left(self) -> None:
        if not self._live():
            why = "; ".join(f"{s.name}: {s.out_reason}" for s in self._status.values())
            raise FatalError(
                f"every {self.board.name} board of the rack is out of rotation ({why})"
            )

    def _next_job(self, name: str) -> _Job | None:
        with self._cond:
            while True:
                if self._status[name].out_reason or self._fatal is not None:
                    return None
                job = next((j for j in self._pending if self._takes(name, j)), None)
                if job is not None:
                    self._pending.remove(job)
                    job.tried.append(name)
                    self._cond.notify_all()  # a waiting close() may now see an empty queue
                    return job
                if self._closed and not self._pending:
                    return None
                self._cond.wait()

    def _work(self, name: str) -> None:
        while (job := self._next_job(name)) is not None:
            try:
                m = self._measurers[name].measure(job.model_bytes, frontend=job.frontend)
            except FatalError as exc:
                self._stop_all(job, exc)
            except CandidateError as exc:  # the model's fault: the board is fine
                self._board_ok(name)
                job.future.set_exception(exc)
            except McunasError as exc:  # the board's fault
                self._board_failed(name, job, str(exc))
            except Exception as exc:  # noqa: BLE001 - a bug: surface it on the future
                job.future.set_exception(exc)
            else:
                self._board_ok(name)
                details = {**m.details, "rack_board": name, "failed_attempts": list(job.attempts)}
                job.future.set_result(replace(m, details=details))

    def _board_ok(self, name: str) -> None:
        with self._cond:
            self._status[name].measured += 1
            self._status[name].failures_in_row = 0

    def _board_failed(self, name: str, job: _Job, reason: str) -> None:
        with self._cond:
            st = self._status[name]
            st.failures += 1
            st.failures_in_row += 1
            job.attempts.append(f"{name}: {reason}")
            if st.failures_in_row >= self.max_failures:
                self._retire(name, f"{st.failures_in_row} failures in a row, last: {reason}")
            others = self._takers(job)
            if others and len(job.tried) <= self.retries:
                self._pending.insert(0, job)
                self._cond.notify_all()
            else:
                self._fail(job)

    def _retire(self, name: str, reason: str) -> None:
        with self._cond:
            self._status[name].out_reason = reason
            log.warning("rack: board %s taken out of rotation: %s", name, reason)
            for job in [j for j in self._pending if not self._takers(j)]:
                self._pending.remove(job)
                self._fail(job)
            self._cond.notify_all()

    def _fail(self, job: _Job) -> None:
        if not self._live():
            why = "; ".join(job.attempts) or "no board left"
            job.future.set_exception(FatalError(f"every {self.board.name} board is out ({why})"))
            return
        if job.frontend is not None and not job.attempts:
            refusals = sorted({why for n, why in self._no_frontend.items() if n in self._live()})
            if refusals:
                job.future.set_exception(CandidateError("; ".join(refusals)))
                return
        job.future.set_exception(
            CandidateError(
                f"measurement failed on {len(job.tried)} board(s): " + "; ".join(job.attempts)
            )
        )

    def _stop_all(self, job: _Job, exc: FatalError) -> None:
        with self._cond:
            self._fatal = exc
            job.future.set_exception(exc)
            for other in self._pending:
                other.future.set_exception(exc)
            self._pending.clear()
            self._cond.notify_all()


def _frontend_refusal(rb: RackBoard) -> str | None:
    """Why ``rb`` cannot run a front-end graph (its pinned TFLM lacks the signal ops), or None."""
    from mcunas.frontend.build import NO_SIGNAL_OPS, runs_signal_ops

    return None if runs_signal_ops(rb.profile) else f"{rb.name}: {rb.profile.name}: {NO_SIGNAL_OPS}"
