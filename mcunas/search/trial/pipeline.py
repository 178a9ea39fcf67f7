"""The one trial pipeline every strategy runs its trained candidates through.

build -> cost check of the untrained INT8 graph -> record -> train -> convert
-> evaluate (INT8, TFLite Micro kernels) -> measure -> record the model ->
score -> finish. A Keras Tuner trial, the supernet search's reference design
and its fine-tuned finalists all end here, so a new stage or budget rule is
written once. Its second entry, :meth:`TrialPipeline.retrain`, trains a design
again outside the trial loop (re-scoring, the refit, an average of refits;
:mod:`mcunas.search.trial.retrain`) and records nothing. The cost check
(:meth:`TrialPipeline.cost_reasons`) is also the one the supernet's subnet
screening uses.

Verdicts are values, not exceptions: :meth:`TrialPipeline.run` returns an
:class:`Outcome` (``ok``, ``infeasible`` or ``failed``, already in the store).
Only a broken environment (:class:`~mcunas.errors.FatalError`), a trial the
chief took away (:class:`~mcunas.errors.TrialTakenAway`) and the caller's own
stop signals (``passes``) leave it as exceptions.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, cast

from mcunas.errors import FatalError, TrialTakenAway, describe
from mcunas.figures import Figures
from mcunas.search.results.budgets import Budgets, score, violations
from mcunas.search.results.pareto import DEFAULT_OBJECTIVES, front_test
from mcunas.search.results.store import TrialOrigin, TrialStatus
from mcunas.search.results.trial_store import Store
from mcunas.search.trial.retrain import (
    Attempt,
    Retrained,
    Retraining,
    RetrainRunner,
    trial_hyperparameters,
)
from mcunas.search.trial.stages import (
    CandidateRunner,
    CheckResult,
    EvalResult,
    HpValue,
    Outcome,
    Train,
    TrainResult,
    TrialUnderWay,
    training_seed,
)

if TYPE_CHECKING:
    import keras

__all__ = [
    "REFERENCE_ORIGIN",
    "CandidateRunner",
    "CheckResult",
    "EvalResult",
    "Outcome",
    "Retrained",
    "Retraining",
    "TrainResult",
    "TrialPipeline",
    "training_seed",
]

# The origin of the --seed-arch design's rows, in every strategy.
REFERENCE_ORIGIN = TrialOrigin.SEED


class TrialPipeline:
    """Runs trials through the stages and records each in the store (see the module).

    Args:
        runner: CandidateRunner, the stages' real work.
        store: Store, where every trial is recorded (a worker's: the chief's, remote).
        budgets: Budgets, the user's limits.
        models_dir: Path, where each trained trial's ``.tflite`` is kept.
        objectives: the Pareto front's objectives (which results deserve a board run).
        frontend: adds the audio front end's cost to a model's figures
            (:func:`mcunas.cost.profile.with_frontend` bound to the run's front end and board;
            None: no front end). Every figure recorded and checked is then front end +
            model, the split kept in ``details``.
    """

    def __init__(
        self,
        runner: CandidateRunner,
        store: Store,
        budgets: Budgets,
        models_dir: Path,
        objectives: tuple[str, ...] = DEFAULT_OBJECTIVES,
        frontend: Callable[[Figures], Figures] | None = None,
    ) -> None:
        self.runner, self.store, self.budgets = runner, store, budgets
        self.models_dir, self.objectives = Path(models_dir), objectives
        self.frontend = frontend

    def total(self, cost: Figures) -> Figures:
        """``cost`` with the front end's added (as it is without a front end, or if added)."""
        return cost if self.frontend is None else self.frontend(cost)

    def cost_reasons(self, cost: Figures) -> str | None:
        """The cost check: why front end + model break the board or the budgets, or None.

        ``cost`` is the model's (or already the total); reasons are "; "-joined.
        """
        return "; ".join(violations(self.total(cost), self.budgets)) or None

    def begin(
        self, tid: str, values: dict[str, HpValue], *, family: str | None, origin: str | None
    ) -> None:
        """Start trial ``tid`` as ``running`` with its hyperparameter values."""
        self.store.start_trial(tid, values, family=family, origin=origin, started_at=time.time())

    def end(self, tid: str, status: TrialStatus, reason: str | None, **values: object) -> Outcome:
        """Finish trial ``tid`` as ``status`` with ``reason`` (and further columns)."""
        self.store.finish_trial(tid, status, reason=reason, finished_at=time.time(), **values)
        return Outcome(status, reason)

    def run(
        self,
        tid: str,
        make: Callable[[], keras.Model],
        train: Train,
        *,
        check: bool = True,
        names: tuple[str, str] = ("build", "train"),
        keep: Callable[[keras.Model], str | None] | None = None,
        notes: list[str | None] | None = None,
        passes: tuple[type[BaseException], ...] = (),
    ) -> Outcome:
        """Make, check, train, convert, evaluate, measure, record and score trial ``tid``.

        Args:
            tid: the trial (already begun).
            make: builds the model (random weights, or inherited ones).
            train: trains it in place (``epochs_run`` of its result is what the row keeps).
            check: run the cost check before training (False: checked before, e.g. a subnet).
            names: what making and training are called in a failed trial's reason.
            keep: called with the model of a trial about to be ``ok`` (a note, or None).
            notes: notes for the ``ok`` row's reason, added to by ``train`` meanwhile.
            passes: exceptions that leave the pipeline as they are (the caller's stop signals).
        """
        trial = TrialUnderWay(tid, notes=notes if notes is not None else [])
        try:
            done = self._stages(trial, make, train, check, names)
        except (FatalError, TrialTakenAway):
            raise
        except passes:
            raise
        except Exception as exc:  # noqa: BLE001 - a failing candidate is recorded, search goes on
            reason = f"{trial.stage} failed: {describe(exc)}"
            return self.end(tid, TrialStatus.FAILED, reason, **trial.timings)
        if isinstance(done, Outcome):
            return done
        return self._record(trial, *done, keep)

    def _stages(
        self,
        trial: TrialUnderWay,
        make: Callable[[], keras.Model],
        train: Train,
        check: bool,
        names: tuple[str, str],
    ) -> Outcome | tuple[keras.Model, bytes, Figures, TrainResult, EvalResult]:
        """The stages up to the measurement; an Outcome if the cost check refused the model."""
        with trial.stage_of(names[0], "build_s"):
            model = make()
        checked = None
        if check:
            with trial.stage_of("check", "check_s"):
                checked = self.runner.check(model)
                checked = dataclasses.replace(checked, cost=self.total(checked.cost))
            self.store.record_figures(trial.tid, checked.cost, before_training=True)
            self.store.update(  # the row shows the check done while the model trains
                trial.tid, **trial.timings, params=checked.params, description=checked.description
            )
            reason = self.cost_reasons(checked.cost)
            if reason:
                return self.end(trial.tid, TrialStatus.INFEASIBLE, reason, **trial.timings)
        with trial.stage_of(names[1], "train_s"):
            trained = train(model, checked)
        with trial.stage_of("convert", "convert_s"):
            model_bytes = self.runner.convert(model)
        with trial.stage_of("evaluate", "eval_s"):
            evaluated = self.runner.evaluate(model_bytes)
        with trial.stage_of("measure", "measure_s"):
            cost = self.total(self.runner.measure(model_bytes, self.promising(evaluated.accuracy)))
        return model, model_bytes, cost, trained, evaluated

    def _record(
        self,
        trial: TrialUnderWay,
        model: keras.Model,
        model_bytes: bytes,
        cost: Figures,
        trained: TrainResult,
        evaluated: EvalResult,
        keep: Callable[[keras.Model], str | None] | None,
    ) -> Outcome:
        """Keep the model and its figures; ``ok`` within every budget, else ``infeasible``."""
        self.store.record_model(
            trial.tid,
            self.models_dir,
            model_bytes,
            cost,
            float_accuracy=trained.float_accuracy,
            int8_accuracy=evaluated.accuracy,
            int8_loss=evaluated.loss,
            epochs_run=trained.epochs_run,
            steps=trained.steps,
            curve=trained.curve,
            steps_saved=trained.steps_saved,
            **trial.timings,
        )
        if trained.stopped:
            trial.notes.append(trained.stopped)
        reason = self.cost_reasons(cost)
        if reason:  # a measurement broke a budget the estimate met: trained, but infeasible
            return self.end(trial.tid, TrialStatus.INFEASIBLE, reason)
        if keep is not None:
            trial.notes.append(keep(model))
        result = score(evaluated.accuracy, cost, self.budgets)
        note = "; ".join(filter(None, trial.notes)) or None
        self.store.finish_trial(
            trial.tid, TrialStatus.OK, score=result, finished_at=time.time(), reason=note
        )
        return Outcome(TrialStatus.OK, note, result, evaluated.accuracy, cost)

    def retrain(
        self, job: Retraining, *, convert: bool = True, evaluate: bool = True, measure: bool = False
    ) -> Retrained:
        """The second entry: ``job``'s design built, trained and, as asked, assessed.

        Nothing is recorded in the store; a failure is in the result (see
        :mod:`mcunas.search.trial.retrain`). ``convert=False`` stops after training (an
        average converts its members together, :meth:`assess`).
        """
        attempt = Attempt()
        with attempt.guard():
            # retraining needs a runner that trains on other data (KerasRunner's for_data)
            runner = job.runner_from(cast(RetrainRunner, self.runner))
            model = runner.build(trial_hyperparameters(job.space, job.values), job.seed)
            attempt.made.update(model=model, runner=runner)
            attempt.at("train")
            attempt.made["trained"] = job.train(runner, model)
            if convert:
                self._assess(attempt, runner, model, evaluate, measure)
        return attempt.result()

    def assess(
        self,
        runner: CandidateRunner,
        make: Callable[[], keras.Model],
        *,
        evaluate: bool = True,
        measure: bool = True,
    ) -> Retrained:
        """A trained model (``make()``) converted by ``runner``, evaluated and measured.

        The measurement is this pipeline's runner's (board or simulator), plus the
        front end, checked against the budgets (``violations``); the failure policy
        is :meth:`retrain`'s.
        """
        attempt = Attempt(stage="make", made={"runner": runner})
        with attempt.guard():
            model = attempt.made["model"] = make()
            self._assess(attempt, runner, model, evaluate, measure)
        return attempt.result()

    def _assess(
        self,
        attempt: Attempt,
        runner: CandidateRunner,
        model: keras.Model,
        evaluate: bool,
        measure: bool,
    ) -> None:
        """Convert, evaluate and measure into ``attempt`` (measured wherever promising or not)."""
        attempt.at("convert")
        model_bytes = attempt.made["model_bytes"] = runner.convert(model)
        if evaluate:
            attempt.at("evaluate")
            attempt.made["evaluated"] = runner.evaluate(model_bytes)
        if measure:
            attempt.at("measure")
            cost = self.total(self.runner.measure(model_bytes, lambda _: True))
            attempt.made.update(cost=cost, violations=tuple(violations(cost, self.budgets)))

    def promising(self, accuracy: float) -> Callable[[Figures], bool]:
        """A test: would a candidate with these figures (plus the front end) join the front."""
        test = front_test(self.store.trials(TrialStatus.OK), accuracy, self.objectives)
        return test if self.frontend is None else (lambda cost: test(self.total(cost)))
