"""The trial pipeline's second entry: a design trained again, outside the trial loop.

Finishing a search trains designs it has already tried once more: each
finalist on re-scoring's folds or seeds, the chosen design on every sample
(the refit) and the members of an average of refits. Each is the same build ->
train -> convert -> evaluate -> measure as a trial, on other data and another
seed, and none is a trial row: :meth:`mcunas.search.trial.pipeline.TrialPipeline.retrain`
returns a :class:`Retrained` value and records nothing.

One failure policy for all of them (:class:`Attempt`): a broken environment
(:class:`~mcunas.errors.FatalError`) and a trial the chief took away leave as
exceptions; any other exception ends the retraining with its stage and reason
in the result (``Retrained.error``), and the caller says what that means (a
finalist leaves the tie, the trial's own model is exported...).

Example::

    done = pipeline.retrain(Retraining(space, rec.hyperparameters, fold, seed, epochs))
    done.ok, done.evaluated.accuracy, done.reason
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from mcunas.errors import FatalError, TrialTakenAway, describe
from mcunas.figures import Figures
from mcunas.search.trial.stages import (
    CandidateRunner,
    HpValue,
    SearchSpace,
    TrainResult,
)

if TYPE_CHECKING:
    import keras
    import keras_tuner as kt
    import numpy as np
    from numpy.typing import NDArray

    from mcunas.data.datasets import Dataset
    from mcunas.search.results.curves import CurveBound
    from mcunas.search.training.recipe import Recipe

__all__ = ["Attempt", "RetrainRunner", "Retrained", "Retraining", "trial_hyperparameters"]


class RetrainRunner(CandidateRunner, Protocol):
    """A runner that trains a design again on other data (:class:`~.runner.KerasRunner`)."""

    targets: NDArray[np.float32] | None  # a teacher's soft targets (None: the labels)
    space: SearchSpace  # the space its models are built from

    def for_data(self, dataset: Dataset, seed: int, recipe: Recipe | None = None) -> RetrainRunner:
        """A runner of the same space and board on ``dataset`` (no board attached)."""
        ...

    def train(
        self,
        model: keras.Model,
        epochs: int,
        initial_epoch: int = 0,
        early_stop: bool = True,
        *,
        bound: CurveBound | None = None,
    ) -> TrainResult:
        """Train in place (``early_stop=False``: the whole schedule)."""
        ...


@dataclass(frozen=True)
class Retraining:
    """One design to train again: its values, the data, the seed and the schedule.

    ``recipe`` replaces the search's (None: the runner's own, and ``for_data`` is
    called without it); ``targets`` are a teacher's soft targets for the labels;
    ``early_stop=False`` runs the whole schedule (nothing held out to stop on).
    """

    space: SearchSpace
    values: Mapping[str, HpValue]
    data: Dataset
    seed: int
    epochs: int
    recipe: Recipe | None = None
    targets: NDArray[np.float32] | None = None
    early_stop: bool = True

    def runner_from(self, runner: RetrainRunner) -> RetrainRunner:
        """The runner that trains this design: ``runner`` on these data and seed."""
        if self.recipe is None:
            fit = runner.for_data(self.data, self.seed)
        else:
            fit = runner.for_data(self.data, self.seed, recipe=self.recipe)
        if self.targets is not None:
            fit.targets = self.targets
        return fit

    def train(self, runner: RetrainRunner, model: keras.Model) -> TrainResult:
        """Train ``model`` in place with ``runner`` (what training gave)."""
        if self.early_stop:
            return runner.train(model, self.epochs)
        return runner.train(model, self.epochs, early_stop=False)


@dataclass(frozen=True)
class Retrained:
    """What retraining gave, stage by stage (None: not asked for, or not reached).

    ``model`` is the trained Keras model (an average is made of such models) and
    ``runner`` the one that trained it; ``violations`` are the budgets the measured
    figures break; ``error`` says why it stopped at ``stage`` (None: it did not).
    """

    model: keras.Model | None = None
    runner: Any = None  # a RetrainRunner once made (read after ``ok``, as made)
    model_bytes: bytes | None = None
    trained: TrainResult | None = None
    evaluated: Any = None  # an EvalResult once made (read after ``ok``, as made)
    cost: Figures | None = None
    violations: tuple[str, ...] = ()
    stage: str | None = None
    error: str | None = None
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        """True when every stage asked for ran."""
        return self.error is None

    @property
    def reason(self) -> str | None:
        """``train failed: ValueError: ...``; None when it did not fail."""
        return None if self.error is None else f"{self.stage} failed: {self.error}"


@dataclass
class Attempt:
    """A retraining under way: the stage it is at, what it made, and how it failed.

    :meth:`guard` is the one failure policy (see the module); :meth:`result`
    freezes what was made into a :class:`Retrained`.
    """

    stage: str = "build"
    error: str | None = None
    made: dict[str, Any] = field(default_factory=dict)  # Retrained's fields, as made
    began: float = field(default_factory=time.perf_counter)

    @contextlib.contextmanager
    def guard(self) -> Iterator[Attempt]:
        """Run the block; a failure other than a fatal one becomes ``error``."""
        try:
            yield self
        except (FatalError, TrialTakenAway):
            raise
        except Exception as exc:  # noqa: BLE001 - a retraining's failure is its result
            self.error = describe(exc)

    def at(self, stage: str) -> None:
        """The next stage begins (a failure from here on names it)."""
        self.stage = stage

    def result(self) -> Retrained:
        """What was made, the failure if any, and the seconds since it began."""
        return Retrained(
            **self.made,
            stage=self.stage if self.error is not None else None,
            error=self.error,
            seconds=time.perf_counter() - self.began,
        )


def trial_hyperparameters(space: SearchSpace, values: Mapping[str, HpValue]) -> kt.HyperParameters:
    """The trial's hyperparameters as the space builds them (Hyperband's own keys dropped)."""
    import keras_tuner

    from mcunas.space.hypermodel import McuSearchSpace

    values = {k: v for k, v in values.items() if not k.startswith("tuner/")}
    if isinstance(space, McuSearchSpace):
        return space.hyperparameters(**values)
    hp = keras_tuner.HyperParameters()
    hp.values.update(values)
    return hp
