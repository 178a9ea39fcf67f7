"""One search run: what every strategy and executor shares, and the two roles' protocols.

A :class:`SearchRun` is one search in one folder: its settings, board, store,
data, search space and measurers (set up by :class:`~mcunas.search.run_setup.RunSetup`,
which it extends), and how it ends (result, report, ``best/``:
:class:`~mcunas.search.run_end.RunEnd`).
What is *tried* is a :class:`Strategy` (Keras Tuner trials under an oracle, or
the supernet's stages); *where* the work runs is an :class:`Executor` (this
process, a chief serving workers, or a worker of a chief). Both are chosen by
name from the registries of :mod:`mcunas.engine`; this module knows neither
the supernet nor the distributed search.

Every trained candidate goes through the one trial pipeline
(:mod:`mcunas.search.trial.pipeline`), whichever strategy and executor. A strategy
that schedules its own jobs uses the protocols of :mod:`mcunas.search.job_protocols`
(``Work``, ``Wire``, ``Jobs``; re-exported here).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from mcunas.boards.catalog import BoardProfile
from mcunas.search.job_protocols import Jobs, Wire, Work
from mcunas.search.report.result import SearchResult
from mcunas.search.results.record import TrialRecord
from mcunas.search.results.store import TrialStore
from mcunas.search.run_end import RunEnd, data_of
from mcunas.search.run_setup import RunSetup
from mcunas.search.settings.config import SearchConfig
from mcunas.search.settings.progress import Progress
from mcunas.search.trial.pipeline import CandidateRunner, TrialPipeline

if TYPE_CHECKING:
    import keras_tuner as kt

    from mcunas.data.datasets import Dataset
    from mcunas.space.hypermodel import McuSearchSpace

__all__ = [
    "Executor",
    "Jobs",
    "Planner",
    "SearchRun",
    "Strategy",
    "Tuner",
    "TunerRole",
    "Wire",
    "Work",
    "WorkerRole",
]


class Executor(Protocol):
    """Where the work runs: ``local``, ``chief`` (serves workers) or ``worker``.

    The roles differ only in what they hand a strategy: the planning roles
    (:class:`Planner`: ``local``, ``chief``) run its plan, the ``worker``
    (:class:`WorkerRole`) does the chief's part of it.
    """

    name: str

    def execute(self, strategy: Strategy, run: SearchRun, progress: Progress) -> str | None:
        """Run ``strategy`` here; why it stopped early, or None."""
        ...

    def retraining(
        self, run: SearchRun, families: tuple[str, ...] | None
    ) -> contextlib.AbstractContextManager[tuple[McuSearchSpace, CandidateRunner]] | None:
        """Where finishing retrains designs: the space and runner for the block.

        None: this role finishes nothing (a worker; its chief does). Nothing is
        built until the block is entered (:class:`mcunas.search.finish.stage.FinishStage`).
        """
        ...


class Tuner(Protocol):
    """The Keras Tuner tuner a role drives (``tuner.tuner.HardwareAwareTuner``)."""

    oracle: kt.Oracle
    stopped_reason: str | None

    def search(self) -> None:
        """Run trials until the oracle stops."""
        ...

    def save(self) -> None:
        """Write the tuner's state (what a resume reloads)."""
        ...

    def after_trial(self, tid: str) -> None:
        """Note one trial done elsewhere (a chief's bookkeeping)."""
        ...


class TunerRole(Protocol):
    """What a role gives the Keras Tuner strategy: its tuner settings and its trial loop."""

    def tuner_options(self) -> dict[str, object]:
        """What this role changes in the Keras Tuner tuner's settings."""
        ...

    def drive_tuner(
        self, run: SearchRun, tuner: Tuner, oracle: kt.Oracle, progress: Progress
    ) -> str | None:
        """Run Keras Tuner's trials (search here, or serve the oracle); the stop reason.

        A worker's ``oracle`` is the chief's, through Keras Tuner's ``OracleClient``.
        """
        ...


class Planner(Executor, TunerRole, Protocol):
    """A role that runs a strategy's plan: this process (``local``) or a chief."""

    def candidates(self, run: SearchRun) -> tuple[McuSearchSpace, CandidateRunner | None]:
        """The search space, and the runner of candidates trained here (the run closes it).

        A chief trains nothing (its workers do): its runner is None.
        """
        ...

    def jobs(
        self, run: SearchRun, progress: Progress, make_work: Callable[[], Work], wire: Wire
    ) -> contextlib.AbstractContextManager[Jobs]:
        """A place to run jobs for the ``with`` block (``make_work`` where they run here)."""
        ...


class WorkerRole(Executor, TunerRole, Protocol):
    """A distributed search's worker: it does the chief's trials or jobs."""

    def serve_jobs(
        self,
        run: SearchRun,
        progress: Progress,
        make_work: Callable[[Callable[[], bytes] | None], Work],
        wire: Wire,
    ) -> None:
        """Do the chief's jobs until it says stop.

        ``make_work(fetch)`` makes the work; ``fetch`` brings the chief's shared
        model checkpoint.
        """
        ...


class Strategy(Protocol):
    """What is tried: Keras Tuner trials under an oracle, or the supernet's stages."""

    name: str

    def search(self, run: SearchRun, executor: Planner, progress: Progress) -> str | None:
        """Plan and run the search (this process or a chief); why it stopped early, or None."""
        ...

    def work(self, run: SearchRun, executor: WorkerRole, progress: Progress) -> None:
        """A worker's side: do the chief's work until the search is over."""
        ...


class SearchRun(RunSetup):
    """Runs and finishes one search in ``out_dir`` (see :func:`mcunas.engine.run_search`).

    Its set-up (data, space, runner, board, start-up lines) is :class:`RunSetup`'s;
    its end (result, report, ``best/``) is :class:`~mcunas.search.run_end.RunEnd`'s.

    Args:
        config: the search's settings.
        board: the board profile.
        out_dir: the output folder (a worker's is a temporary one).
        store: the trial store (a worker's is the chief's, remote).
        strategy: what is tried.
        executor: where the work runs.
        debug: print each failed trial's traceback.
    """

    def __init__(
        self,
        config: SearchConfig,
        board: BoardProfile,
        out_dir: Path,
        store: TrialStore,
        strategy: Strategy,
        executor: Executor,
        debug: bool = False,
    ) -> None:
        super().__init__(config, board, out_dir)
        self.store, self.strategy, self.executor, self.debug = store, strategy, executor, debug

    def run(self, progress: Progress) -> str | None:
        """Search until done or out of time, then finish; why it stopped early, or None.

        The finish (:class:`~mcunas.search.finish.stage.FinishStage`: the finalists
        re-scored, the choice refitted) runs after every strategy's search, where the
        executor says; a worker's run has none.
        """
        from mcunas.search.finish.stage import FinishStage

        with self._open:
            stopped = self.executor.execute(self.strategy, self, progress)
            FinishStage().run(self, progress)
        return stopped

    def pipeline(self, runner: CandidateRunner | None) -> TrialPipeline:
        """The trial pipeline over ``runner`` (None: only its cost check is used)."""
        cfg = self.config
        return TrialPipeline(
            runner,  # type: ignore[arg-type]
            self.store,
            cfg.budgets,
            self.out_dir / "models",
            cfg.objectives,
            frontend=self.frontend_adder(),
        )

    # ---------------------------------------------------------------- the end
    def finish(self, stopped: str | None) -> SearchResult:
        """Compute the result, write the report, export the chosen model (:class:`RunEnd`)."""
        end = RunEnd(self.config, self.board, self.out_dir, self.store, self.dataset, self.fronts)
        return end.finish(stopped)

    def data_of(self, rec: TrialRecord | None) -> Dataset:
        """The data trial ``rec`` trained on: its own front end's when that is searched."""
        return data_of(self.dataset, self.fronts, rec)
