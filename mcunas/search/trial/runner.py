"""The real stages of one trial: Keras build, TFLite cost check, training, INT8, measurement.

TensorFlow and Keras are imported here, so this module is only imported once
a search actually starts.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import keras
import numpy as np

from mcunas.boards.catalog import BoardProfile
from mcunas.data.datasets import Dataset
from mcunas.errors import CandidateError, describe
from mcunas.figures import Figures
from mcunas.search.results.curves import CurveBound, curve_text, rung_epochs
from mcunas.search.training.recipe import (
    Recipe,
    build_training_state,
    compile_for_training,
    execution_steps,
    per_step_training,
    plan_recipe,
    steps_per_epoch,
    training_data,
)
from mcunas.search.trial.isolate import TflmWorker
from mcunas.search.trial.retrain import RetrainRunner
from mcunas.search.trial.stages import CheckResult, EvalResult, SearchSpace, TrainResult
from mcunas.search.trial.watch import SecondHalfStop, Watch
from mcunas.tflite.convert import convert_int8, tensorflow_chatter_dropped, to_inference_model

if TYPE_CHECKING:
    import keras_tuner as kt

    from mcunas.measure.base import Measurer
    from mcunas.search.frontends.searched import FrontendSearch

__all__ = ["KerasRunner"]

# Samples used to quantize the untrained model for the cost check: the graph
# (ops, shapes, tensor sizes) does not depend on the calibration, so a few do.
CHECK_SAMPLES = 8
# Samples used to calibrate the trained model's activation ranges.
CALIBRATION_SAMPLES = 200
# Epochs without a better validation loss before training stops.
EARLY_STOP_PATIENCE = 3


def early_stopping(initial_epoch: int, epochs: int) -> keras.callbacks.EarlyStopping:
    """Stop on validation loss, watched only over the second half of the cosine schedule.

    While the learning rate is high a small validation split's loss jumps about:
    watched from the first epoch, a split of a few dozen samples stops a
    training almost anywhere in its schedule, well short of what training to
    the end scores. Best weights are restored.
    """
    return SecondHalfStop(
        monitor="val_loss",
        patience=EARLY_STOP_PATIENCE,
        restore_best_weights=True,
        start_from_epoch=initial_epoch + (epochs - initial_epoch) // 2,
    )


def _quiet_tensorflow() -> None:
    """Silence TensorFlow's Python warnings (retracing notes) during a search."""
    import logging

    logging.getLogger("tensorflow").setLevel(logging.ERROR)


def _deterministic_tensorflow() -> None:
    """Make training reproducible: the same seed gives the same weights, run after run.

    TensorFlow's multi-threaded CPU kernels otherwise sum in a varying order;
    two runs of one search then differ by a test sample or two on small data,
    and a resumed trial is not the one that was interrupted. On the CPU the
    cost was within run-to-run noise where it was measured.
    """
    import tensorflow as tf

    tf.config.experimental.enable_op_determinism()


class KerasRunner:
    """Runs a candidate of :class:`mcunas.space.McuSearchSpace` through every stage.

    Args:
        space: McuSearchSpace, builds compiled models from hyperparameters.
        dataset: Dataset, training and validation data.
        board: BoardProfile, the target.
        worker: TflmWorker, runs profiling, INT8 accuracy and simulation out of process.
        hardware: Measurer | None, a board or rack measurer (None: simulator only); it is
            given the front end of the data a trial trains on (``Dataset.frontend``).
        hybrid: bool, simulate every candidate and measure on ``hardware`` only those
            whose simulated figures would join the Pareto front (``--measure hybrid``).
        recipe: Recipe | None, how candidates train (default: :func:`plan_recipe`).
        seed: int, calibration sampling and shuffling seed (default 0).
        fronts: FrontendSearch | None, the searched front ends (``--frontend-space
            search``): each trial trains on its own front end's data; None: every
            trial on ``dataset``.
    """

    def __init__(
        self,
        space: SearchSpace,
        dataset: Dataset,
        board: BoardProfile,
        worker: TflmWorker,
        hardware: Measurer | None = None,
        hybrid: bool = False,
        recipe: Recipe | None = None,
        seed: int = 0,
        fronts: FrontendSearch | None = None,
    ) -> None:
        self.space, self.dataset, self.board = space, dataset, board
        self.worker, self.hardware, self.hybrid = worker, hardware, hybrid
        self._recipe, self.seed, self.fronts = recipe, seed, fronts
        self._check_samples = dataset.representative(CHECK_SAMPLES, seed)
        self._calibration = dataset.representative(CALIBRATION_SAMPLES, seed)
        self._description: str | None = None
        self.targets: np.ndarray | None = None  # a teacher's soft targets (the refit's)
        _quiet_tensorflow()
        _deterministic_tensorflow()

    def for_data(self, dataset: Dataset, seed: int, recipe: Recipe | None = None) -> KerasRunner:
        """A runner of the same space, board, worker and recipe on other data (no board).

        Re-scoring (:mod:`mcunas.search.finish.rescore`) trains finalists on other folds
        with it: the same build, training, conversion and INT8 scoring as a trial.
        ``recipe`` replaces the search's (the refit's, planned for more samples).
        """
        return KerasRunner(  # no front ends: these data, whatever the trial's front end
            self.space, dataset, self.board, self.worker, recipe=recipe or self.recipe, seed=seed
        )

    @property
    def recipe(self) -> Recipe:
        """How candidates train (planned from the dataset when none was given)."""
        if self._recipe is None:
            self._recipe = plan_recipe(self.dataset)
        return self._recipe

    def build(self, hp: kt.HyperParameters, seed: int) -> keras.Model:
        """Seed every generator, then build and compile the candidate."""
        keras.utils.set_random_seed(seed)
        keras.backend.clear_session()
        if self.fronts is not None:  # the trial's own front end's data
            self._use(self.fronts.select(dict(hp.values)))
        self._description = self.space.describe(hp)
        return self.space.build(hp)

    def _use(self, dataset: Dataset) -> None:
        """Train, check and calibrate on ``dataset`` from now on (a searched front end's)."""
        if dataset is self.dataset:
            return
        self.dataset = dataset
        self._check_samples = dataset.representative(CHECK_SAMPLES, self.seed)
        self._calibration = dataset.representative(CALIBRATION_SAMPLES, self.seed)

    def check(self, model: keras.Model) -> CheckResult:
        """Profile the untrained model's INT8 graph against the board (no training)."""
        model_bytes = convert_int8(to_inference_model(model), self._check_samples)
        figures = self.worker.profile(model_bytes)
        cause = self._train_step_error(model) if figures.fits else None
        if cause is not None:
            reasons = (*figures.reasons, f"TensorFlow cannot train it: {cause}")
            figures = dataclasses.replace(figures, reasons=reasons)
        return CheckResult(figures, int(model.count_params()), self._description)

    def _train_step_error(self, model: keras.Model) -> str | None:
        """One forward and backward step on two samples: the cause if TensorFlow refuses it.

        The weights (BatchNorm statistics included) are put back afterwards, so the
        candidate trains from the same start as without the check.
        """
        import tensorflow as tf

        x, y = self.dataset.x_train[:2], self.dataset.y_train[:2]
        weights = model.get_weights()
        try:
            with tf.GradientTape() as tape:
                loss = keras.ops.mean(
                    keras.losses.sparse_categorical_crossentropy(y, model(x, training=True))
                )
            tape.gradient(loss, model.trainable_variables)
        except Exception as exc:  # noqa: BLE001 - any refusal is the candidate's
            return describe(exc)
        finally:
            model.set_weights(weights)
        return None

    def train(
        self,
        model: keras.Model,
        epochs: int,
        initial_epoch: int = 0,
        early_stop: bool = True,
        *,
        bound: CurveBound | None = None,
    ) -> TrainResult:
        """Fit epochs ``initial_epoch`` to ``epochs``, early stopping in the second half.

        As Keras's ``fit``: ``epochs - initial_epoch`` epochs at most; ``epochs_run`` of
        the result counts the epochs of this call only. ``early_stop=False`` runs the
        whole cosine schedule and keeps the last weights (a reference training, where
        the epoch a small validation split stops at would add its own noise).
        ``bound``: a candidate whose curve cannot reach the front stops on a rung
        (:mod:`mcunas.search.results.curves`; a fresh training only).
        """
        d = self.dataset
        initial_epoch = max(0, int(initial_epoch))
        epochs = max(initial_epoch + 1, int(epochs))
        steps = steps_per_epoch(self.recipe, len(d.x_train))
        compile_for_training(
            model, self.recipe, steps * (epochs - initial_epoch), execution_steps(steps)
        )
        build_training_state(model, d, self.targets)
        watch = self._watch(initial_epoch, epochs, early_stop, bound)
        callbacks: list[keras.callbacks.Callback] = [keras.callbacks.TerminateOnNaN(), watch]
        if early_stop:
            callbacks.append(early_stopping(initial_epoch, epochs))
        with tensorflow_chatter_dropped():
            history = model.fit(
                training_data(d, self.recipe, self.seed, self.targets),
                shuffle=False,  # the pipeline shuffles
                epochs=epochs,
                initial_epoch=initial_epoch,
                callbacks=callbacks,
                verbose=0,
            )
        losses = history.history.get("loss", [])
        if not losses or any(not math.isfinite(v) for v in losses):
            raise CandidateError("training diverged (loss is NaN or infinite)")
        ran = len(losses)
        return TrainResult(
            float_accuracy=watch.scores()["val_accuracy"],
            epochs_run=ran,
            steps=steps * ran,
            curve=curve_text(epochs, watch.curve) if watch.curve else None,
            stopped=watch.stopped,
            steps_saved=steps * (epochs - initial_epoch - ran) if watch.stopped else None,
        )

    def _watch(
        self, initial_epoch: int, epochs: int, early_stop: bool, bound: CurveBound | None
    ) -> Watch:
        """The validation of a training: rungs, and early stopping's second half."""
        rungs = rung_epochs(epochs) if initial_epoch == 0 else ()
        watched = set(rungs)
        if per_step_training():  # the old loop, for benchmarks: after every epoch
            watched.update(range(initial_epoch + 1, epochs + 1))
        elif early_stop:
            start = initial_epoch + (epochs - initial_epoch) // 2
            watched.update(range(start + 1, epochs + 1))
        return Watch(self.dataset, sorted(watched), rungs, bound if rungs else None)

    def save_weights(self, model: keras.Model, path: Path) -> None:
        """Write the model's weights, trainable or not (no optimizer state), as ``.npz``."""
        with open(path, "wb") as fh:
            np.savez(fh, *model.get_weights())

    def load_weights(self, model: keras.Model, path: Path) -> bool:
        """Load weights saved by :meth:`save_weights`; False (model unchanged) if they don't fit.

        As keras-tuner's Hyperband (whose children's optimizers are not built yet when
        the checkpoint loads), only the layers' weights carry over, not Adam's moments.

        Raises:
            UserError: the file is not a readable ``.npz`` (one line naming it).
        """
        from mcunas.inputs.formats import load_npz

        data = load_npz(path, "checkpoint", kind="checkpoint")
        saved = [data[f"arr_{i}"] for i in range(len(data))]
        current = model.get_weights()
        if [w.shape for w in saved] != [w.shape for w in current]:
            return False
        model.set_weights(saved)
        return True

    def convert(self, model: keras.Model) -> bytes:
        """INT8 ``.tflite`` (batch size 1) calibrated on real training samples."""
        return convert_int8(to_inference_model(model), self._calibration)

    def evaluate(self, model_bytes: bytes) -> EvalResult:
        """INT8 accuracy and cross-entropy on the validation split with the TFLM kernels."""
        d = self.dataset
        return EvalResult(*self.worker.int8_scores(model_bytes, d.x_val, d.y_val))

    def measure(self, model_bytes: bytes, promising: Callable[[Figures], bool]) -> Figures:
        """Measure with the chosen backend; in hybrid mode, promising ones on the board too."""
        hardware = self.hardware
        if hardware is not None and not self.hybrid:
            return self._on_board(hardware, model_bytes)
        simulated = self.worker.simulate(model_bytes)
        if hardware is None or not promising(simulated):
            return simulated
        return self._on_board(hardware, model_bytes).checked_against(simulated)

    def _on_board(self, hardware: Measurer, model_bytes: bytes) -> Figures:
        """The board's figures, given the front end of the trial's data.

        A board that runs the front-end graph with the model reports its time in
        ``details["frontend"]`` (:func:`mcunas.cost.profile.with_frontend` uses it); a
        measurer that cannot run it measures the model alone.
        """
        from mcunas.frontend.port import graph_of

        return hardware.measure(model_bytes, frontend=graph_of(self.dataset.frontend))


_: type[RetrainRunner] = KerasRunner  # checked against the protocol by type checkers
