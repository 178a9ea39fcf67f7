"""What a trial's stages hand each other: the runner's protocol and its results.

A :class:`CandidateRunner` does the real work of the stages (build, check,
train, convert, evaluate, measure); :class:`CheckResult`, :class:`TrainResult`
and :class:`EvalResult` are what they give, :class:`Outcome` how a trial ended.
The trial pipeline (:mod:`mcunas.search.trial.pipeline`) runs them in order and
re-exports them. Keras and Keras Tuner are named for the types only (no import
at run time: this module loads without TensorFlow).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from mcunas.figures import Figures
from mcunas.search.results.store import TrialStatus
from mcunas.space.values import HpValue

if TYPE_CHECKING:
    import keras
    import keras_tuner as kt

    from mcunas.search.results.curves import CurveBound

__all__ = [
    "CandidateRunner",
    "CheckResult",
    "EvalResult",
    "HpValue",
    "Outcome",
    "SearchSpace",
    "Train",
    "TrainResult",
    "TrialUnderWay",
    "training_seed",
]

# One hyperparameter's value (Keras Tuner's choices: strings, ints, floats, booleans).


class SearchSpace(Protocol):
    """What the stages need of a search space: build a design and describe it.

    :class:`mcunas.space.hypermodel.McuSearchSpace` (and its front-end variant)
    is the real one.
    """

    def build(self, hp: kt.HyperParameters) -> keras.Model:
        """A compiled model for ``hp``."""
        ...

    def describe(self, hp: kt.HyperParameters) -> str:
        """One line that says what ``hp`` builds."""
        ...


def training_seed(base: int, values: Mapping[str, HpValue]) -> int:
    """The seed a design trains with: ``base`` and the design's own values, not its trial number.

    The same design drawn by two trials, two strategies or two searches (the
    reference grid's one-trial search and a search seeded with that variant)
    starts from the same weights and sees its batches in the same order, so
    with TensorFlow's deterministic kernels it gives the same model. Keras
    Tuner's bookkeeping values (``tuner/...``) are not part of the design, and
    a whole number counts the same as an int or a float.

    >>> training_seed(0, {"width": 1}) == training_seed(0, {"width": 1.0, "tuner/epochs": 3})
    True
    """
    design = {
        k: float(v) if isinstance(v, int | float) and not isinstance(v, bool) else v
        for k, v in values.items()
        if not str(k).startswith("tuner/")
    }
    text = json.dumps(design, sort_keys=True, default=str)
    digest = int.from_bytes(hashlib.sha256(text.encode()).digest()[:4], "big")
    return (int(base) + digest) % 2**31


@dataclass(frozen=True)
class CheckResult:
    """Cost of a candidate before training (from its untrained INT8 graph)."""

    cost: Figures
    params: int | None = None
    description: str | None = None


@dataclass(frozen=True)
class TrainResult:
    """What training gave: float validation accuracy, epochs and optimizer steps actually run.

    ``curve`` is the validation curve's stored text
    (:func:`mcunas.search.results.curves.curve_text`); ``stopped`` why the rung test
    stopped it, with ``steps_saved`` the steps of its schedule not trained.
    """

    float_accuracy: float | None
    epochs_run: int
    steps: int | None = None  # optimizer steps of those epochs (None: not counted)
    curve: str | None = None
    stopped: str | None = None
    steps_saved: int | None = None


@dataclass(frozen=True)
class EvalResult:
    """The INT8 model on the validation split: accuracy and mean cross-entropy (nats)."""

    accuracy: float
    loss: float | None = None


@dataclass(frozen=True)
class Outcome:
    """How a trial ended (its row is already finished in the store)."""

    status: TrialStatus
    reason: str | None = None
    score: float | None = None
    accuracy: float | None = None
    cost: Figures | None = None


class CandidateRunner(Protocol):
    """The stages of one trial; :class:`mcunas.search.trial.runner.KerasRunner` is the real one."""

    def build(self, hp: kt.HyperParameters, seed: int) -> keras.Model:
        """A compiled, trainable model for ``hp`` (random weights from ``seed``)."""
        ...

    def check(self, model: keras.Model) -> CheckResult:
        """Estimate cost from the untrained model's INT8 graph (no training)."""
        ...

    def train(
        self,
        model: keras.Model,
        epochs: int,
        initial_epoch: int = 0,
        *,
        bound: CurveBound | None = None,
    ) -> TrainResult:
        """Train in place, epochs ``initial_epoch`` to ``epochs``, with early stopping.

        ``epochs_run`` of the result counts the epochs of this call only. ``bound``
        (:class:`~mcunas.search.results.curves.CurveBound`) is given only when the
        search stops hopeless candidates on rungs: a runner without it still serves
        ``--no-early-stop`` and short schedules.
        """
        ...

    def save_weights(self, model: keras.Model, path: Path) -> None:
        """Write the model's weights (layers only, no optimizer state) to ``path``."""
        ...

    def load_weights(self, model: keras.Model, path: Path) -> bool:
        """Load weights from ``path``; False (model unchanged) if they do not fit it."""
        ...

    def convert(self, model: keras.Model) -> bytes:
        """The trained model as INT8 ``.tflite`` bytes (batch size 1)."""
        ...

    def evaluate(self, model_bytes: bytes) -> EvalResult:
        """INT8 accuracy and loss on the validation split with the TFLite Micro kernels."""
        ...

    def measure(self, model_bytes: bytes, promising: Callable[[Figures], bool]) -> Figures:
        """Measure; ``promising`` says whether a simulated result deserves a board run."""
        ...


# Trains a model in place: (model, its cost check or None) -> what training gave.
Train = Callable[["keras.Model", "CheckResult | None"], TrainResult]


@dataclass
class TrialUnderWay:
    """One trial on its way through the pipeline: its id, timings, notes, current stage."""

    tid: str
    timings: dict[str, float] = field(default_factory=dict)
    notes: list[str | None] = field(default_factory=list)
    stage: str = "build"

    @contextlib.contextmanager
    def stage_of(self, name: str, key: str) -> Iterator[None]:
        """Time stage ``name`` into ``timings[key]`` (a failure inside names the stage)."""
        self.stage, start = name, time.perf_counter()
        try:
            yield
        finally:
            self.timings[key] = self.timings.get(key, 0.0) + time.perf_counter() - start
