"""The Keras Tuner strategy: trials drawn by an oracle (random, bayesian, hyperband, evolution).

As in Keras Tuner's own distributed search, the tuner is the same class in
every role: a local search runs its loop here, a chief serves its oracle to
workers and runs no trial, and a worker runs the same loop with the chief's
oracle (Keras Tuner's ``OracleClient``, chosen by its ``KERASTUNER_*``
variables) and the chief's store. The executor decides which.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import mcunas.search.tuner.kt_state as kt_state
from mcunas.errors import FatalError
from mcunas.files import READ_ERRORS, unreadable
from mcunas.search.results.record import HpValues
from mcunas.search.results.store import TrialStatus, TrialStore
from mcunas.search.run import Planner, SearchRun, WorkerRole
from mcunas.search.settings.progress import Progress
from mcunas.search.trial.pipeline import CandidateRunner

if TYPE_CHECKING:
    import keras_tuner

    from mcunas.search.tuner.tuner import HardwareAwareTuner

__all__ = ["TunerStrategy", "make_tuner", "reconcile"]


class TunerStrategy:
    """Keras Tuner trials under the oracle ``config.strategy`` names."""

    name = "keras-tuner"

    def search(self, run: SearchRun, executor: Planner, progress: Progress) -> str | None:
        """Declare the space, start on the reference, square the oracle with the store, run.

        The run finishes the search afterwards (re-scoring, the refit), with this
        runner when the trials ran here.
        """
        from mcunas.search.tuner.oracles import make_oracle, start_with_reference
        from mcunas.search.tuner.tuner import SearchFatal

        cfg = run.config
        run.load_data()
        # the trials' runner stays open for the finish, which the run closes
        space, runner = executor.candidates(run)
        if runner is not None:
            progress.note(f"{run.data_line()} Training: {run.recipe.describe(cfg.epochs)}.")
        try:
            oracle = make_oracle(cfg.strategy, cfg.max_trials, cfg.seed, cfg.epochs)
            references = run.reference_ladder(space)
            progress.note(run.reference_line(space))
            if references:
                start_with_reference(oracle, references)
            tuner = make_tuner(run, oracle, space, runner, progress, references)
            reconcile(run.store, oracle)
            return executor.drive_tuner(run, tuner, oracle, progress)
        except SearchFatal as exc:
            raise exc.error from None
        except RuntimeError as exc:  # keras-tuner's own stop conditions
            raise FatalError(f"Search stopped: {exc}") from exc

    def work(self, run: SearchRun, executor: WorkerRole, progress: Progress) -> None:
        """A worker: the same tuner, with the chief's oracle and store, until it says stop."""
        from mcunas.search.tuner.oracles import make_oracle
        from mcunas.search.tuner.tuner import SearchFatal

        cfg = run.config
        run.load_data()
        space, runner, close = run.components()
        references = run.reference_ladder(space)  # the chief's oracle holds them; rows say "seed"
        try:
            oracle = make_oracle(cfg.strategy, cfg.max_trials, cfg.seed, cfg.epochs)
            tuner = make_tuner(
                run, oracle, space, runner, progress, references, **executor.tuner_options()
            )
            executor.drive_tuner(run, tuner, oracle, progress)
        except SearchFatal as exc:
            raise exc.error from None
        finally:
            close()


def make_tuner(
    run: SearchRun,
    oracle: keras_tuner.Oracle,
    space: keras_tuner.HyperModel,
    runner: CandidateRunner | None,
    progress: Progress,
    references: list[HpValues],
    **options: object,
) -> HardwareAwareTuner:
    """The run's ``HardwareAwareTuner``; ``options`` (the executor's) override the defaults."""
    from mcunas.search.tuner.tuner import HardwareAwareTuner

    cfg = run.config
    settings: dict[str, Any] = {
        "runner": runner,
        "store": run.store,
        "budgets": cfg.budgets,
        "progress": progress,
        "models_dir": run.out_dir / "models",
        "epochs": cfg.epochs,
        "seed": cfg.seed,
        "directory": str(run.out_dir),
        "project_name": "tuner",
        "overwrite": not cfg.resume,
        "max_draws": cfg.draw_cap,
        "debug": run.debug,
        "objectives": cfg.objectives,
        "references": references,
        "warm_start": cfg.warm_start,
        "early_stop": cfg.early_stop,
        "frontend": run.frontend_adder(),
    }
    try:
        return HardwareAwareTuner(oracle, space, **{**settings, **options})
    except READ_ERRORS as exc:  # keras-tuner's reload of a damaged state file
        if not cfg.resume:
            raise
        raise unreadable(
            run.out_dir / "tuner",
            "Keras Tuner state (oracle.json, tuner0.json, trial_*/trial.json)",
            "restore the folder from a copy, or start over with --overwrite",
            exc,
        ) from None


def reconcile(store: TrialStore, oracle: keras_tuner.Oracle) -> None:
    """Square the store with keras-tuner's state after a kill.

    A ``running`` row whose trial keras-tuner will re-run stays ``running``
    (it is redone from scratch); one that finished in the store but not in
    keras-tuner is handed to the oracle as finished, not redone; any other
    ``running`` row is marked failed ("interrupted").
    """
    for tid in kt_state.retry_queue(oracle):
        rec = store.get(tid)
        if rec is None or rec.status == TrialStatus.RUNNING:
            continue
        kt_state.dequeue(oracle, tid)
        trial = oracle.trials[tid]
        if rec.status in (TrialStatus.OK, TrialStatus.INFEASIBLE):
            feasible = float(rec.status == TrialStatus.OK)
            oracle.update_trial(tid, {"score": rec.score or 0.0, "feasible": feasible})
            trial.status = kt_state.TrialStatus.COMPLETED
        else:
            trial.status = kt_state.TrialStatus.FAILED
        oracle.end_trial(trial)
    retry = set(kt_state.retry_queue(oracle))
    for rec in store.trials(TrialStatus.RUNNING):
        if rec.trial_id not in retry:
            store.finish_trial(
                rec.trial_id, TrialStatus.FAILED, reason="interrupted mid-trial; not re-run"
            )
