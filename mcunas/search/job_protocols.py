"""The jobs of a strategy that schedules its own work (the supernet's), as protocols.

A :class:`~mcunas.search.run.Strategy` may plan its work as typed jobs: a
:class:`Work` does one job where it runs, a :class:`Wire` turns jobs and results
into JSON for a chief and its workers, and :class:`Jobs` is where they run (this
process, or a chief's workers), handed out by the run's
:class:`~mcunas.search.run.Executor`. :mod:`mcunas.search.run` re-exports them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol

from mcunas.search.progress import Progress

__all__ = ["Jobs", "Wire", "Work"]


class Work(Protocol):
    """Does one job of a strategy that schedules its own work (the supernet's)."""

    def do(self, job: Any, on_epoch: Callable[[Any], bool]) -> Any:
        """The job's typed result; ``on_epoch(epoch)`` returning True stops a training."""
        ...

    def close(self) -> None:
        """Release the measurers and the TFLM worker."""
        ...


class Wire(Protocol):
    """A strategy's jobs and results as JSON for the wire (converted here only)."""

    def job_to_wire(self, job: Any) -> dict[str, Any]:
        """The job as JSON, with its ``kind``."""
        ...

    def job_from_wire(self, data: dict[str, Any]) -> Any:
        """The typed job back."""
        ...

    def result_to_wire(self, result: Any) -> dict[str, Any]:
        """The result as JSON."""
        ...

    def result_from_wire(self, data: dict[str, Any]) -> Any:
        """The typed result back."""
        ...

    def trial_ids(self, job: Any) -> tuple[str, ...]:
        """The trial rows the job writes (its worker may write them)."""
        ...

    def failed(self, error: str) -> Any:
        """The result of a job that could not be done."""
        ...


class Jobs(Protocol):
    """Where a strategy's jobs run: in this process, or on a chief's workers."""

    def run(
        self,
        jobs: Sequence[Any],
        *,
        on_done: Callable[[Any, Any], None] | None = None,
        on_epoch: Callable[[Any], bool] | None = None,
        progress: Progress | None = None,
    ) -> list[Any]:
        """Each job's result, in order; ``on_done(job, result)`` as each ends.

        With ``progress``, a time budget that runs out cancels the jobs not yet
        started: their result is None.
        """
        ...
