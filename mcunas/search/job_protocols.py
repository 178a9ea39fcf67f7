"""The jobs of a strategy that schedules its own work (the supernet's), as protocols.

A :class:`~mcunas.search.run.Strategy` may plan its work as typed jobs ``J``
with results ``R``: a :class:`Work` does one job where it runs, a :class:`Wire`
turns jobs and results into JSON for a chief and its workers (and says what
the distributed search must know of them: which job trains the shared
checkpoint, which trial row records its worker), and :class:`Jobs` is where
they run (this process, or a chief's workers), handed out by the run's
executor. :mod:`mcunas.search.run` re-exports them. A training job reports each
:class:`Epoch`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, TypeVar

from mcunas.jsontext import JsonObject
from mcunas.search.settings.progress import Progress

__all__ = ["Epoch", "Jobs", "Wire", "Work"]

J = TypeVar("J")  # a strategy's job
R = TypeVar("R")  # a job's result
J_in = TypeVar("J_in", contravariant=True)
R_out = TypeVar("R_out", covariant=True)


@dataclass(frozen=True)
class Epoch:
    """One training epoch done: its loss and time, and where its checkpoint is."""

    epoch: int
    loss: float
    seconds: float
    checkpoint: Path


class Work(Protocol[J_in, R_out]):
    """Does one job of a strategy that schedules its own work (the supernet's)."""

    def do(self, job: J_in, on_epoch: Callable[[Epoch], bool]) -> R_out:
        """The job's typed result; ``on_epoch(epoch)`` returning True stops a training."""
        ...

    def close(self) -> None:
        """Release the measurers and the TFLM worker."""
        ...


class Wire(Protocol[J, R]):
    """A strategy's jobs and results as JSON for the wire (converted here only).

    ``checkpoint`` is the shared model's file in the search folder (relative):
    a job whose kind :meth:`trains` it takes the chief's copy along and sends
    one back after every epoch.
    """

    checkpoint: str

    def job_to_wire(self, job: J) -> JsonObject:
        """The job as JSON, with its ``kind``."""
        ...

    def job_from_wire(self, data: JsonObject) -> J:
        """The typed job back."""
        ...

    def result_to_wire(self, result: R) -> JsonObject:
        """The result as JSON."""
        ...

    def result_from_wire(self, data: JsonObject) -> R:
        """The typed result back."""
        ...

    def trial_ids(self, job: J) -> tuple[str, ...]:
        """The trial rows the job writes (its worker may write them)."""
        ...

    def failed(self, error: str) -> R:
        """The result of a job that could not be done."""
        ...

    def trains(self, kind: str) -> bool:
        """Whether a job of ``kind`` trains the shared checkpoint."""
        ...

    def records_worker(self, kind: str) -> bool:
        """Whether a job of ``kind`` names its worker on its trial row."""
        ...

    def epochs_done(self, checkpoint: Path) -> int:
        """The epochs the checkpoint file holds (0: none, or unreadable)."""
        ...

    def done_line(self, job: J) -> str | None:
        """What a worker says after doing ``job`` (None: nothing; a long job's line)."""
        ...


class Jobs(Protocol[J_in, R]):
    """Where a strategy's jobs run: in this process, or on a chief's workers."""

    def run(
        self,
        jobs: Sequence[J_in],
        *,
        # (job, result): typing the job here would make J_in invariant, and Jobs with it
        on_done: Callable[[Any, Any], None] | None = None,
        on_epoch: Callable[[Epoch], bool] | None = None,
        progress: Progress | None = None,
    ) -> list[R | None]:
        """Each job's result, in order; ``on_done(job, result)`` as each ends.

        With ``progress``, a time budget that runs out cancels the jobs not yet
        started: their result is None.
        """
        ...
