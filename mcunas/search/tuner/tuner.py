"""The hardware-aware Keras Tuner: one ``run_trial`` from hyperparameters to a measured model.

Per trial: build -> cost check of the *untrained* INT8 model (op audit, arena,
peak SRAM, flash, latency estimate) against the board and the user's budgets
-> [infeasible: recorded with its reason, never trained] -> train -> INT8
conversion with real representative data -> INT8 accuracy with the real TFLite
Micro kernels -> measure -> score (see :mod:`mcunas.search.results.budgets`).

Error contract (keras-tuner's two tiers): an infeasible or failing candidate is
recorded in the trial store and raised as ``keras_tuner.errors.FailedTrialError``
(the oracle marks it FAILED, the search goes on); a broken environment
(:class:`mcunas.errors.FatalError`, a full disk) is raised as :class:`SearchFatal`,
which keras-tuner does not catch, so the search stops and the trial stays
``running`` in the store, to be re-run by ``--resume``.

Hyperband's promoted trials continue from their parent's weights: see
:mod:`mcunas.search.tuner.warmstart`.
"""

from __future__ import annotations

import contextlib
import io
from pathlib import Path
from typing import Any

import keras_tuner

from mcunas.errors import FatalError, McunasError, TrialTakenAway
from mcunas.search.config import DRAWS_PER_TRIAL
from mcunas.search.progress import Progress
from mcunas.search.results.budgets import Budgets
from mcunas.search.results.pareto import DEFAULT_OBJECTIVES
from mcunas.search.results.store import TrialStatus
from mcunas.search.trial.pipeline import (
    REFERENCE_ORIGIN,
    CandidateRunner,
    CheckResult,
    EvalResult,
    Outcome,
    TrainResult,
    TrialPipeline,
    training_seed,
)
from mcunas.search.trial_store import Store
from mcunas.search.tuner.kt_state import (
    DeclaredSpace,
    declare_space_default,
    is_oracle_client,
    oracle_is_remote,
    set_debug,
)
from mcunas.search.tuner.warmstart import WARM_START_ENV, WarmStart

__all__ = [
    "WARM_START_ENV",
    "CandidateRunner",
    "CheckResult",
    "EvalResult",
    "HardwareAwareTuner",
    "SearchFatal",
    "TrainResult",
]

# Failed (not infeasible) candidates in a row before the setup is deemed broken.
MAX_CONSECUTIVE_FAILURES = 5


class SearchFatal(keras_tuner.errors.FatalError):
    """Carries a :class:`McunasError` through keras-tuner's loop to stop the search."""

    def __init__(self, error: McunasError) -> None:
        super().__init__(str(error))
        self.error = error


class HardwareAwareTuner(DeclaredSpace, keras_tuner.Tuner):
    """A ``keras_tuner.Tuner`` whose only override is :meth:`run_trial`.

    Args:
        oracle: keras_tuner.Oracle, from :func:`mcunas.search.tuner.oracles.make_oracle`.
        hypermodel: keras_tuner.HyperModel, the search space.
        runner: CandidateRunner, the trial stages.
        store: Store, where every trial is recorded.
        budgets: Budgets, the user's limits.
        progress: Progress, the clock and progress line.
        models_dir: Path, where each finished trial's ``.tflite`` is kept.
        epochs: int, training epochs (Hyperband's ``tuner/epochs`` wins).
        seed: int, base seed; a trial trains with
            :func:`~mcunas.search.trial.pipeline.training_seed` of it and the design's
            values (the same design, the same model).
        warm_start: bool | None, Hyperband's promoted trials start from their parent's
            weights (``SearchConfig.warm_start``; default True).
            Runners without ``save_weights``/``load_weights`` always train from scratch.
        max_draws: int | None, candidates drawn at most (default ``DRAWS_PER_TRIAL`` x the
            oracle's ``max_trials``): a draw refused before training is drawn again, so
            ``max_trials`` counts trained candidates, until this cap.
        debug: bool, let keras-tuner print each failed trial's traceback (``mcunas --debug``;
            default False: the reason is in the store and the progress line).
        seeds: list of hyperparameter values of the ``--seed-arch`` design and its smaller
            variants: a trial drawing one of them is stored with ``origin = "seed"``.
        objectives: the Pareto front's objectives (``--objectives``), for ``--measure hybrid``'s
            test of which candidates go to the board.
        frontend: callable | None, adds the audio front end's cost to a model's figures
            (:meth:`mcunas.search.run.SearchRun.frontend_adder`; None: no front end).
        **kwargs: ``directory``, ``project_name``, ``overwrite`` for keras-tuner.
    """

    def __init__(
        self,
        oracle: keras_tuner.Oracle,
        hypermodel: Any,
        *,
        runner: CandidateRunner,
        store: Store,
        budgets: Budgets,
        progress: Progress,
        models_dir: Path,
        epochs: int,
        seed: int = 0,
        warm_start: bool = True,
        max_draws: int | None = None,
        debug: bool = False,
        seeds: list[dict[str, Any]] | None = None,
        objectives: tuple[str, ...] = DEFAULT_OBJECTIVES,
        frontend: Any = None,
        **kwargs: Any,
    ) -> None:
        self.runner, self.store, self.budgets = runner, store, budgets
        self.objectives = objectives
        self.abandoned: set[str] = set()  # trials the chief took back (distributed worker)
        self.seeds = list(seeds or [])
        self.progress, self.models_dir = progress, Path(models_dir)
        self.epochs, self.seed = epochs, seed
        self.warm = WarmStart(runner, store, self.models_dir, warm_start)
        self.pipeline = TrialPipeline(
            runner, store, budgets, self.models_dir, objectives, frontend=frontend
        )
        self.stopped_reason: str | None = None
        with contextlib.redirect_stdout(io.StringIO()):  # keras-tuner's "Reloading Tuner from"
            super().__init__(oracle=oracle, hypermodel=hypermodel, **kwargs)
        self.oracle.verbose = 0  # our own progress line replaces keras-tuner's tables
        self.trials_wanted = int(self.oracle.max_trials or 0)
        self.max_draws = max(self.trials_wanted, max_draws or DRAWS_PER_TRIAL * self.trials_wanted)
        # a distributed search's worker has the chief's oracle (Keras Tuner's OracleClient):
        # it runs trials and prints their lines; the chief keeps the draw cap, the time
        # budget and the failure streak
        self.owns_oracle = not is_oracle_client(self.oracle)
        if self.owns_oracle:
            self._apply_draw_cap(self.store.trials())
        # keras-tuner prints a traceback for every failed trial unless told not to; the
        # reason is in the store and the progress line (mcunas --debug brings them back).
        set_debug(debug)

    def declare_space(self) -> None:
        """Declare the space to the oracle (not on a Keras Tuner worker: the chief's holds it).

        keras-tuner's default builds the model once per conditional scope to find
        every hyperparameter (20-30 s for mcunas's space); a hypermodel whose
        ``declare_hyperparameters`` declares them all, conditions included, needs
        one call (the same space: checked by tests/space/test_space.py).
        """
        if oracle_is_remote():
            return
        own = type(self.hypermodel).declare_hyperparameters
        if own is keras_tuner.HyperModel.declare_hyperparameters:
            declare_space_default(self)
            return
        hp = self.oracle.get_space()
        self.hypermodel.declare_hyperparameters(hp)
        self.oracle.update_space(hp)

    def run_trial(self, trial: Any, *args: Any, **kwargs: Any) -> dict[str, float]:
        """Run one candidate through every stage and return its metrics.

        A promoted Hyperband trial (``tuner/trial_id`` in its hyperparameters) is
        built and cost-checked as any other, then loads its parent's weights and
        trains epochs ``tuner/initial_epoch`` to ``tuner/epochs`` only. Its
        ``epochs_run`` is the cumulative count: the parent's ``epochs_run`` plus
        the epochs run here (``train_s`` is this trial's time only).

        Raises:
            keras_tuner.errors.FailedTrialError: infeasible or failed (recorded).
            SearchFatal: the environment is broken; the search must stop.
        """
        tid = trial.trial_id
        self.abandoned.discard(tid)  # given to this worker again (after a chief restart)
        values = dict(trial.hyperparameters.values)
        seeded = any(values.items() <= s.items() for s in self.seeds)
        self.pipeline.begin(
            tid, values, family=values.get("family"), origin=REFERENCE_ORIGIN if seeded else None
        )
        fatal = False
        try:
            outcome = self._run(trial, tid, values)
        except TrialTakenAway as exc:  # a distributed worker that was silent too long
            self.abandoned.add(tid)
            raise keras_tuner.errors.FailedTrialError(str(exc)) from exc
        except (FatalError, SearchFatal) as exc:
            fatal = True
            error = exc.error if isinstance(exc, SearchFatal) else exc
            with contextlib.suppress(McunasError):
                self.store.update(tid, reason=f"interrupted: {error}")
            raise SearchFatal(error) from exc
        finally:
            if not fatal and tid not in self.abandoned:
                self.after_trial(tid)
        return _metrics(outcome)

    def on_trial_end(self, trial: Any) -> None:
        """Tell the oracle the trial ended, unless the chief already gave it to another worker."""
        if trial.trial_id in self.abandoned:
            self.progress.note(f"trial {trial.trial_id}: handed to another worker, dropped here")
            return
        super().on_trial_end(trial)

    def _run(self, trial: Any, tid: str, values: dict[str, Any]) -> Outcome:
        """The trial through the pipeline; Hyperband's promoted ones start warm."""
        notes: list[str | None] = []

        def build() -> Any:
            return self.runner.build(trial.hyperparameters, training_seed(self.seed, values))

        def train(model: Any, check: CheckResult | None) -> TrainResult:
            start = self.warm.start(model, values)
            notes.append(self.warm.note(tid, check.description if check else None, start))
            trained = self.warm.train(model, values, start, self.epochs)
            return TrainResult(
                trained.float_accuracy,
                start.before + trained.epochs_run,
                _cumulative_steps(trained, start.before),
            )

        def keep(model: Any) -> str | None:  # only OK trials can be promoted
            return self.warm.save(model, tid) if self.warm.keeps_weights(values) else None

        return self.pipeline.run(tid, build, train, keep=keep, notes=notes, passes=(SearchFatal,))

    @property
    def warm_start(self) -> bool:
        """Whether Hyperband's promoted trials start from their parent's weights."""
        return self.warm.enabled

    def weights_path(self, trial_id: str) -> Path:
        """Where trial ``trial_id``'s trained weights are kept (Hyperband parents only)."""
        return self.warm.weights_path(trial_id)

    def after_trial(self, tid: str) -> None:
        """Progress line, time budget and the consecutive-failure guard."""
        rows = self.store.trials()
        done = sum(r.status != TrialStatus.RUNNING and not _untrained(r) for r in rows)
        ok = [r for r in rows if r.status == TrialStatus.OK]
        best = max(ok, key=lambda r: r.score or 0.0, default=None)
        rec = self.store.get(tid)
        if rec is None or rec.status == TrialStatus.RUNNING:  # interrupted: no line
            return
        self.progress.trial_done(rec, done, best)
        if not self.owns_oracle:
            return
        if self.progress.time_up() and self.stopped_reason is None:
            self.stopped_reason = "time budget reached"
            self.oracle.max_trials = len(self.oracle.trials)  # create_trial now says STOPPED
        self._apply_draw_cap(rows)
        self._check_failure_streak(rows)

    def _apply_draw_cap(self, rows: list[Any]) -> None:
        """Draw again for every candidate refused before training, up to ``max_draws``."""
        if self.stopped_reason is not None:
            return
        untrained = sum(_untrained(r) for r in rows)
        extra = min(untrained, self.max_draws - self.trials_wanted)
        self.oracle.max_trials = self.trials_wanted + extra
        if len(rows) >= self.max_draws and len(rows) - untrained < self.trials_wanted:
            self.stopped_reason = (
                f"draw cap reached: {len(rows)} candidates drawn, {untrained} refused before "
                f"training (cap {self.max_draws}; raise --max-draws or relax the budgets)"
            )

    def _check_failure_streak(self, rows: list[Any]) -> None:
        streak = 0
        for r in rows:
            streak = streak + 1 if r.status == TrialStatus.FAILED else 0
        if streak >= MAX_CONSECUTIVE_FAILURES:
            raise SearchFatal(
                FatalError(
                    f"{streak} candidates in a row failed (last: {rows[-1].reason}). The setup "
                    "looks broken; see the trial table (mcunas search --resume continues)."
                )
            )


def _metrics(outcome: Outcome) -> dict[str, float]:
    """Keras Tuner's view of a trial: a failure raises, a refusal scores 0, ``ok`` its figures.

    An infeasible candidate completes with score 0 (so Bayesian optimisation
    models the limits); a failed one is a failed trial.
    """
    if outcome.status == TrialStatus.FAILED:
        raise keras_tuner.errors.FailedTrialError(f"{outcome.status}: {outcome.reason}")
    if outcome.status != TrialStatus.OK or outcome.cost is None:
        return {"score": 0.0, "feasible": 0.0}  # the oracle learns where the limits are
    return {
        "score": float(outcome.score or 0.0),
        "int8_accuracy": float(outcome.accuracy or 0.0),
        "latency_ms": float(outcome.cost.latency_ms),
        "peak_sram_bytes": float(outcome.cost.peak_sram_bytes),
        "feasible": 1.0,
    }


def _untrained(rec: Any) -> bool:
    """True for a finished trial that never reached training (a draw, not a trial)."""
    return rec.status in (TrialStatus.INFEASIBLE, TrialStatus.FAILED) and not rec.train_s


def _cumulative_steps(trained: TrainResult, epochs_before: int) -> int | None:
    """Optimizer steps of a warm-started trial: its parent's epochs at this recipe's rate, too."""
    if trained.steps is None or not trained.epochs_run:
        return trained.steps
    return trained.steps + epochs_before * (trained.steps // trained.epochs_run)
