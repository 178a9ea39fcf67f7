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
import dataclasses
import io
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import keras_tuner

from mcunas.errors import FatalError, McunasError, TrialTakenAway
from mcunas.figures import Figures
from mcunas.search.results.budgets import Budgets
from mcunas.search.results.curves import CurveBound, rung_epochs
from mcunas.search.results.pareto import DEFAULT_OBJECTIVES
from mcunas.search.results.record import HpValues
from mcunas.search.results.store import TrialRecord, TrialStatus
from mcunas.search.results.trial_store import Store
from mcunas.search.settings.config import DRAWS_PER_TRIAL
from mcunas.search.settings.progress import Progress
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
from mcunas.search.tuner.accounting import (
    cumulative_steps,
    draw_cap,
    failure_streak,
    trial_metrics,
    untrained,
)
from mcunas.search.tuner.kt_state import (
    DeclaredSpace,
    declare_space_default,
    is_oracle_client,
    oracle_is_remote,
    set_debug,
    trial_module,
)
from mcunas.search.tuner.warmstart import WARM_START_ENV, WarmStart

if TYPE_CHECKING:
    import keras

__all__ = [
    "WARM_START_ENV",
    "CandidateRunner",
    "CheckResult",
    "EvalResult",
    "HardwareAwareTuner",
    "SearchFatal",
    "TrainResult",
]


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
        references: list of hyperparameter values of the reference (``--seed-arch``) and
            its smaller variants: a trial drawing one of them is stored with
            :data:`~mcunas.search.trial.pipeline.REFERENCE_ORIGIN` (``"seed"``).
        objectives: the Pareto front's objectives (``--objectives``), for ``--measure hybrid``'s
            test of which candidates go to the board.
        frontend: callable | None, adds the audio front end's cost to a model's figures
            (:meth:`mcunas.search.run.SearchRun.frontend_adder`; None: no front end).
        early_stop: bool, stop a candidate on a rung when its curve cannot reach the front
            at its cost (:mod:`mcunas.search.results.curves`; ``--no-early-stop``: never).
        **kwargs: ``directory``, ``project_name``, ``overwrite`` for keras-tuner.
    """

    def __init__(
        self,
        oracle: keras_tuner.Oracle,
        hypermodel: keras_tuner.HyperModel,
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
        references: list[HpValues] | None = None,
        objectives: tuple[str, ...] = DEFAULT_OBJECTIVES,
        frontend: Callable[[Figures], Figures] | None = None,
        early_stop: bool = True,
        **kwargs: object,
    ) -> None:
        self.runner, self.store, self.budgets = runner, store, budgets
        self.early_stop = early_stop
        self.objectives = objectives
        self.abandoned: set[str] = set()  # trials the chief took back (distributed worker)
        self.references = list(references or [])
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

    def run_trial(
        self, trial: trial_module.Trial, *args: object, **kwargs: object
    ) -> dict[str, float]:
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
        drawn = any(values.items() <= r.items() for r in self.references)
        self.pipeline.begin(
            tid, values, family=values.get("family"), origin=REFERENCE_ORIGIN if drawn else None
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
        return trial_metrics(outcome)

    def on_trial_end(self, trial: trial_module.Trial) -> None:
        """Tell the oracle the trial ended, unless the chief already gave it to another worker."""
        if trial.trial_id in self.abandoned:
            self.progress.note(f"trial {trial.trial_id}: handed to another worker, dropped here")
            return
        super().on_trial_end(trial)

    def _run(self, trial: trial_module.Trial, tid: str, values: HpValues) -> Outcome:
        """The trial through the pipeline; Hyperband's promoted ones start warm."""
        notes: list[str | None] = []

        def build() -> keras.Model:
            return self.runner.build(trial.hyperparameters, training_seed(self.seed, values))

        def train(model: keras.Model, check: CheckResult | None) -> TrainResult:
            start = self.warm.start(model, values)
            notes.append(self.warm.note(tid, check.description if check else None, start))
            bound = None if start.warm else self._bound(values, check)
            trained = self.warm.train(model, values, start, self.epochs, bound=bound)
            return dataclasses.replace(
                trained,
                epochs_run=start.before + trained.epochs_run,
                steps=cumulative_steps(trained, start.before),
            )

        def keep(model: keras.Model) -> str | None:  # only OK trials can be promoted
            return self.warm.save(model, tid) if self.warm.keeps_weights(values) else None

        return self.pipeline.run(tid, build, train, keep=keep, notes=notes, passes=(SearchFatal,))

    def _bound(self, values: HpValues, check: CheckResult | None) -> CurveBound | None:
        """The rung test of a candidate trained from scratch (None: it trains to its end)."""
        epochs = self.warm.epochs(values, self.epochs)
        if not self.early_stop or check is None or not rung_epochs(epochs):
            return None
        return CurveBound(self.store.trials(), check.cost, epochs, self.objectives)

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
        done = sum(r.status != TrialStatus.RUNNING and not untrained(r) for r in rows)
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

    def _apply_draw_cap(self, rows: list[TrialRecord]) -> None:
        """Draw again for every candidate refused before training, up to ``max_draws``."""
        if self.stopped_reason is not None:
            return
        self.oracle.max_trials, self.stopped_reason = draw_cap(
            rows, self.trials_wanted, self.max_draws
        )

    def _check_failure_streak(self, rows: list[TrialRecord]) -> None:
        error = failure_streak(rows)
        if error is not None:
            raise SearchFatal(error)
