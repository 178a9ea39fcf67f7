"""The chief's job board: work of a supernet search handed to workers, and taken back.

The supernet strategy's work (width probes, the supernet's training, subnet
screening, fine-tuning) is not a Keras Tuner trial, so the chief schedules it
itself: it submits jobs, a worker asking for work takes the oldest one, and
its result comes back through :meth:`JobBoard.finish`. A worker that falls
silent loses its jobs to the front of the queue (:meth:`JobBoard.release`); a
result from a worker that no longer owns the job is refused, so no job's
result counts twice.

Example::

    board = JobBoard()
    ids = [board.submit("screen", {"tid": "s0001"}, tids=("s0001",))]
    job = board.take("w1")                 # on a worker's request
    board.finish("w1", job.id, {"accuracy": 0.9})
    done = board.wait(ids, timeout_s=1.0)  # the finished ones among ids
"""

from __future__ import annotations

import itertools
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from mcunas.errors import McunasError

__all__ = ["Job", "JobBoard"]


@dataclass
class Job:
    """One unit of work: its kind, what the worker needs, and (once done) its result."""

    id: int
    kind: str
    payload: dict[str, Any]
    tids: tuple[str, ...] = ()  # the trial rows it writes (the owner may write them)
    owner: str | None = None
    result: dict[str, Any] | None = None
    taken: list[str] = field(default_factory=list)  # every worker that took it


class JobBoard:
    """A thread-safe queue of jobs with owners (see the module)."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._ids = itertools.count(1)
        self.jobs: dict[int, Job] = {}
        self._pending: deque[int] = deque()
        self.closed = False

    def submit(self, kind: str, payload: dict[str, Any], tids: tuple[str, ...] = ()) -> int:
        """Queue a job; return its id."""
        with self._cond:
            job = Job(next(self._ids), kind, payload, tids)
            self.jobs[job.id] = job
            self._pending.append(job.id)
            return job.id

    def take(self, worker: str) -> Job | None:
        """The oldest waiting job, now ``worker``'s; None if none waits."""
        with self._cond:
            while self._pending:
                job = self.jobs[self._pending.popleft()]
                if job.result is None:
                    job.owner = worker
                    job.taken.append(worker)
                    return job
            return None

    def owned(self, worker: str, job_id: int) -> Job:
        """``worker``'s running job ``job_id``.

        Raises:
            McunasError: no such job, or it was handed to another worker.
        """
        with self._cond:
            job = self.jobs.get(int(job_id))
            if job is None or job.owner != worker or job.result is not None:
                raise McunasError(
                    f"job {job_id} was handed to another worker (or is over); dropping it here"
                )
            return job

    def finish(self, worker: str, job_id: int, result: dict[str, Any]) -> Job:
        """Keep ``worker``'s result of ``job_id`` (refused if it no longer owns it)."""
        with self._cond:
            job = self.owned(worker, job_id)
            job.result, job.owner = dict(result), None
            self._cond.notify_all()
            return job

    def release(self, worker: str) -> list[Job]:
        """Put ``worker``'s running jobs back at the front of the queue; return them."""
        with self._cond:
            lost = [j for j in self.jobs.values() if j.owner == worker and j.result is None]
            for job in reversed(lost):
                job.owner = None
                self._pending.appendleft(job.id)
            return lost

    def handed_back(self) -> list[Job]:
        """The waiting jobs a worker had taken before (it fell silent)."""
        with self._cond:
            return [self.jobs[i] for i in self._pending if self.jobs[i].taken]

    def cancel_waiting(self) -> int:
        """Drop every job not yet taken (a time budget ran out); how many."""
        with self._cond:
            dropped = len(self._pending)
            for job_id in self._pending:
                self.jobs[job_id].result = {"cancelled": True}
            self._pending.clear()
            self._cond.notify_all()
            return dropped

    def wait(self, ids: list[int] | set[int], timeout_s: float) -> list[Job]:
        """The finished jobs among ``ids``, waiting up to ``timeout_s`` for at least one."""
        deadline = time.monotonic() + timeout_s
        with self._cond:
            while True:
                done = [self.jobs[i] for i in ids if self.jobs[i].result is not None]
                left = deadline - time.monotonic()
                if done or left <= 0:
                    return done
                self._cond.wait(left)

    def close(self) -> None:
        """The search is over: workers asking for work are told to stop."""
        with self._cond:
            self.closed = True
            self._cond.notify_all()
