"""The chief's executor: a distributed search's work runs on its workers.

:class:`ChiefExecutor` (``mcunas search --serve``) runs the strategy's plan
and serves its work: a Keras Tuner strategy's oracle (Keras Tuner's
``Oracle`` service), or a job board for a strategy that schedules its own
jobs; it trains no trial and alone writes the store. Once the workers are
done it finishes the search on its own cores: re-scoring the finalists and
refitting the choice train there (:meth:`ChiefExecutor.retraining`). The workers run the same
strategy (:mod:`mcunas.distributed.worker_executor`). Keras Tuner's design:
the tuner is the same class everywhere, only the oracle (and here the store)
becomes a proxy.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from typing import Any

import mcunas.search.tuner.kt_state as kt_state
from mcunas.distributed.chief import ChiefService
from mcunas.distributed.server import open_door
from mcunas.distributed.session import (
    DEFAULT_WORKER_TIMEOUT_S,
    POLL_S,
    linger,
    serving,
    welcome,
)
from mcunas.search.results.store import TrialStatus, TrialStore
from mcunas.search.run import Jobs, Planner, SearchRun, Strategy, Wire, Work
from mcunas.search.settings.progress import Progress

__all__ = ["ChiefExecutor", "hold_running"]


class ChiefExecutor:
    """Where the work runs on a distributed search's chief: on the workers.

    A Keras Tuner strategy's oracle is served to the workers (Keras Tuner's
    ``Oracle`` service) beside mcunas's ``Search`` service; a strategy that
    schedules its own jobs gets a job board the workers take them from. The
    chief builds, trains and measures no trial; it alone writes the store. The
    finish (re-scoring, the refit, an average) it runs itself, on its own cores,
    with no board: the simulator estimates an average's figures.
    """

    name = "chief"

    def execute(self, strategy: Strategy, run: SearchRun, progress: Progress) -> str | None:
        """The strategy's search, with its work on the workers."""
        return strategy.search(run, self, progress)

    def candidates(self, run: SearchRun) -> tuple[Any, Any]:
        """The space only: the candidates train on the workers."""
        return run.space(), None

    def tuner_options(self) -> dict[str, Any]:
        """The chief's tuner runs no trial (it is saved for a --resume of the chief)."""
        return {}

    def drive_tuner(
        self, run: SearchRun, tuner: Any, oracle: Any, progress: Progress
    ) -> str | None:
        """Serve the oracle until it has no trial left to give and none is running."""
        from mcunas.search.tuner.tuner import SearchFatal

        tuner.save()  # keras-tuner's tuner file: what a --resume of the chief reloads
        hold_running(run.store, oracle)
        fatal: list[BaseException] = []

        def after_trial(tid: str) -> None:
            try:
                tuner.after_trial(tid)
            except SearchFatal as exc:
                fatal.append(exc.error)
                tuner.stopped_reason = str(exc.error)
                oracle.max_trials = len(oracle.trials)

        service = self._service(run, oracle, after_trial, progress)
        door = open_door(run.config, run.out_dir, service, progress.note)
        with serving(run.config.serve or "", service, progress, oracle, door):
            _wait_done(service, oracle, tuner, progress)
            linger(service)
        if fatal:
            raise fatal[0]
        return tuner.stopped_reason

    @staticmethod
    def _service(
        run: SearchRun, oracle: Any, after_trial: Callable[[str], None], progress: Progress
    ) -> ChiefService:
        cfg = run.config
        service = ChiefService(
            run.store,
            oracle,
            run.out_dir / "models",
            welcome(cfg),
            after_trial=after_trial,
            note=progress.note,
            timeout_s=cfg.worker_timeout_s or DEFAULT_WORKER_TIMEOUT_S,
        )
        for name, trial in kt_state.running(oracle).items():
            service.adopt(name, trial.trial_id)
        return service

    def jobs(
        self, run: SearchRun, progress: Progress, make_work: Callable[[], Work], wire: Wire
    ) -> contextlib.AbstractContextManager[Jobs]:
        """The job board, served to the workers for the ``with`` block."""
        from mcunas.distributed.supernet_chief import chief_jobs

        return chief_jobs(run, progress, wire)

    def retraining(
        self, run: SearchRun, families: tuple[str, ...] | None
    ) -> contextlib.AbstractContextManager[tuple[Any, Any]]:
        """On the chief's own cores, once its workers are done: a runner built here, no board."""
        return run.retraining_here(families, kept=False)


def hold_running(store: TrialStore, oracle: Any) -> None:
    """After a chief restart: keep each running trial for the worker that ran it.

    Keras Tuner's reload queues every unfinished trial for a retry; a trial a
    worker was running goes back to that worker's name instead, so the worker
    can finish it when it reconnects (or it is handed on after the timeout).
    """
    queue = kt_state.retry_queue(oracle)
    for rec in store.trials(TrialStatus.RUNNING):
        if rec.worker and rec.trial_id in queue and rec.worker not in kt_state.running(oracle):
            kt_state.assign(oracle, rec.worker, rec.trial_id)


def _wait_done(service: ChiefService, oracle: Any, tuner: Any, progress: Progress) -> None:
    while True:
        time.sleep(POLL_S)
        service.check_silence()
        if progress.time_up() and tuner.stopped_reason is None:
            tuner.stopped_reason = "time budget reached"
        if tuner.stopped_reason is not None:
            oracle.max_trials = len(oracle.trials)  # create_trial now says STOPPED
        with service.lock:
            running = bool(kt_state.running(oracle))
            queued = bool(kt_state.retry_queue(oracle))
            full = len(oracle.trials) >= (oracle.max_trials or 0)
        if full and not running and (not queued or tuner.stopped_reason is not None):
            return


_: type[Planner] = ChiefExecutor  # checked against the protocol by type checkers
