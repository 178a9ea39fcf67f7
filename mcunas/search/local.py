"""The local executor: every piece of a search's work runs in this process."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Generic, TypeVar

from mcunas.search.job_protocols import Epoch
from mcunas.search.run import Planner, SearchRun, Strategy, Tuner, Wire, Work
from mcunas.search.settings.progress import Progress
from mcunas.search.trial.pipeline import CandidateRunner

if TYPE_CHECKING:
    import keras_tuner as kt

    from mcunas.space.hypermodel import McuSearchSpace

__all__ = ["LocalExecutor", "LocalJobs"]

J = TypeVar("J")  # a strategy's job
R = TypeVar("R")  # a job's result


class LocalJobs(Generic[J, R]):
    """Runs a strategy's jobs one after the other with this process's :class:`Work`.

    Args:
        work: does each job.
    """

    def __init__(self, work: Work[J, R]) -> None:
        self.work = work

    def run(
        self,
        jobs: Sequence[J],
        *,
        on_done: Callable[[J, R | None], None] | None = None,
        on_epoch: Callable[[Epoch], bool] | None = None,
        progress: Progress | None = None,
    ) -> list[R | None]:
        """Each job's result, in order (see :class:`mcunas.search.run.Jobs`)."""
        results: list[R | None] = []
        for job in jobs:
            if progress is not None and progress.time_up():
                result = None  # cancelled: the time budget ran out before it
            else:
                result = self.work.do(job, on_epoch or _never_stop)
            results.append(result)
            if on_done is not None:
                on_done(job, result)
        return results


class LocalExecutor:
    """Runs the strategy's plan and every trial or job in this process."""

    name = "local"

    def execute(self, strategy: Strategy, run: SearchRun, progress: Progress) -> str | None:
        """The strategy's search, here."""
        return strategy.search(run, self, progress)

    def candidates(self, run: SearchRun) -> tuple[McuSearchSpace, CandidateRunner | None]:
        """Every candidate trains here: the run's space and runner, open until the run ends."""
        return run.trial_components()

    def tuner_options(self) -> dict[str, object]:
        """A local search keeps Keras Tuner's defaults."""
        return {}

    def drive_tuner(
        self, run: SearchRun, tuner: Tuner, oracle: kt.Oracle, progress: Progress
    ) -> str | None:
        """Keras Tuner's own loop in this process."""
        tuner.search()
        return tuner.stopped_reason

    @contextlib.contextmanager
    def jobs(
        self,
        run: SearchRun,
        progress: Progress,
        make_work: Callable[[], Work],
        wire: Wire,
    ) -> Iterator[LocalJobs]:
        """Jobs done here, by one :class:`Work` closed at the end (``wire`` is not needed)."""
        work = make_work()
        try:
            yield LocalJobs(work)
        finally:
            work.close()

    def retraining(
        self, run: SearchRun, families: tuple[str, ...] | None
    ) -> contextlib.AbstractContextManager[tuple[McuSearchSpace, CandidateRunner]]:
        """Here: with the trials' own runner when the search left it open, else a new one."""
        return run.retraining_here(families)


def _never_stop(epoch: Epoch) -> bool:
    return False


_: type[Planner] = LocalExecutor  # checked against the protocol by type checkers
