"""The training recipe for real data: sizes from the dataset, augmentation, schedule, loss.

:func:`plan_recipe` decides, from the dataset alone (no model yet):

- **batch size**: the power of two nearest N/40, between 16 and 128 (digits'
  1437 training images: 32; a set of 40 series: 16; 10,000 clips: 128),
  unless ``--batch-size`` is given;
- **passes per epoch**: a small set is repeated so that one epoch is at least
  :data:`MIN_STEPS_PER_EPOCH` optimizer steps (40 series at batch 16 are three
  steps; thirty epochs of three steps train nothing). ``--epochs`` and early
  stopping keep their meaning;
- **longer for small series sets**: a series set of fewer than
  :data:`SMALL_SERIES` training samples (public series archives' usual sizes)
  gets :data:`SMALL_SERIES_STEPS_PER_EPOCH` steps an epoch, four times the
  rest's: on such sets the longer schedule scored higher for under twice a
  trial's wall time, and window slicing, time warping and mixup gave nothing
  consistent on top, so they stay off (docs/benchmarks/recipe.md);
- **class weights** when the largest class has over :data:`IMBALANCE` times the
  samples of the smallest (weights ``N / (K * n_k)``, as scikit-learn's
  "balanced");
- **augmentation** by the dataset's kind (:mod:`mcunas.search.training.augment`): for
  series, the operations of :data:`SERIES_OPS` and mixup at :data:`MIXUP_ALPHA`
  (0 leaves it out).

The recipe states its optimizer steps: :attr:`Recipe.steps_per_epoch` and,
in :meth:`Recipe.describe`, the steps of a full ``--epochs`` schedule.

Every candidate then trains with Adam (AdamW when the recipe has a weight
decay, :data:`SERIES_WEIGHT_DECAY` for series) on a cosine-decayed learning rate (from
the candidate's own ``learning_rate`` down to :data:`COSINE_FLOOR` of it) and
categorical cross-entropy with label smoothing :data:`LABEL_SMOOTHING`.
Validation data is never augmented or weighted.
"""

from __future__ import annotations

import dataclasses
import math
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from mcunas.data.datasets import Dataset
from mcunas.search.training.augment import DEFAULT_SERIES_OPS

if TYPE_CHECKING:
    import keras
    import tensorflow as tf

__all__ = [
    "AUGMENT_CHOICES",
    "LABEL_SMOOTHING",
    "MIN_STEPS_PER_EPOCH",
    "SMALL_SERIES",
    "SMALL_SERIES_STEPS_PER_EPOCH",
    "PER_STEP_ENV",
    "Recipe",
    "auto_batch_size",
    "build_training_state",
    "common_steps",
    "compile_for_training",
    "execution_steps",
    "per_step_training",
    "plan_recipe",
    "steps_per_epoch",
    "training_data",
]

AUGMENT_CHOICES = ("auto", "flip", "off")
MIN_STEPS_PER_EPOCH = 30
LABEL_SMOOTHING = 0.1
COSINE_FLOOR = 0.05
IMBALANCE = 1.5
MIN_BATCH, MAX_BATCH = 16, 128
SHUFFLE_BUFFER = 20_000
SMALL_SERIES = 500  # training samples; a series set below this trains longer
SMALL_SERIES_STEPS_PER_EPOCH = 4 * MIN_STEPS_PER_EPOCH
SERIES_OPS = DEFAULT_SERIES_OPS  # series augmentation operations of a planned recipe
MIXUP_ALPHA = 0.0  # mixup's Beta(alpha, alpha) for series (0: none)
SERIES_WEIGHT_DECAY = 0.0  # AdamW's decoupled weight decay for series (0: plain Adam)
# Benchmarks only: "1" trains as mcunas did before whole epochs ran in one call: one
# optimizer step per call, the training state built while the first step is traced,
# validation after every epoch (scripts/bench throughput's "before" column).
PER_STEP_ENV = "MCUNAS_PER_STEP_TRAINING"


def per_step_training() -> bool:
    """True when the environment asks for the old per-step training (benchmarks only)."""
    return os.environ.get(PER_STEP_ENV, "").strip() == "1"


@dataclass(frozen=True)
class Recipe:
    """How every candidate of one search is trained.

    Attributes:
        batch_size: samples per optimizer step.
        repeats: passes over the training set per epoch (1 for sets big enough).
        augment: "auto" (by kind), "flip" (auto plus horizontal flips of images), "off".
        kind: the dataset's kind ("image", "audio", "series").
        class_weights: one weight per class, or None for balanced labels.
        label_smoothing: the loss's label smoothing.
        series_ops: the series augmentation's operations
            (see :mod:`mcunas.search.training.augment`).
        mixup: mixup's Beta(alpha, alpha) parameter (0: no mixup).
        steps_per_epoch: optimizer steps in one epoch (0: not planned from a dataset).
        weight_decay: AdamW's decoupled weight decay (0: Adam without decay).
    """

    batch_size: int
    repeats: int
    augment: str
    kind: str
    class_weights: tuple[float, ...] | None = None
    label_smoothing: float = LABEL_SMOOTHING
    series_ops: tuple[str, ...] = DEFAULT_SERIES_OPS
    mixup: float = 0.0
    steps_per_epoch: int = 0
    weight_decay: float = 0.0

    def describe(self, epochs: int | None = None) -> str:
        """One line for the search's start-up message and the report.

        Args:
            epochs: int | None, the search's ``--epochs``: adds the steps of the full schedule.
        """
        aug = "no augmentation" if self.augment == "off" else f"{self.kind} augmentation"
        if self.augment == "flip":
            aug += " with flips"
        if self.augment != "off" and self.kind == "series":
            aug += f" ({', '.join(self.series_ops)}{', mixup' if self.mixup > 0 else ''})"
        parts = [f"batch {self.batch_size}", aug, "cosine LR", f"smoothing {self.label_smoothing}"]
        if self.steps_per_epoch:
            steps = f"{self.steps_per_epoch} steps/epoch"
            if epochs:
                steps += f" ({self.steps_per_epoch * epochs} optimizer steps at {epochs} epochs)"
            parts.insert(1, steps)
        if self.repeats > 1:
            parts.insert(1, f"{self.repeats} passes/epoch")
        if self.weight_decay > 0:
            parts.append(f"weight decay {self.weight_decay:g}")
        if self.class_weights is not None:
            parts.append("balanced class weights")
        return ", ".join(parts)

    def steps(self, epochs_run: int) -> int:
        """Optimizer steps of a training that ran ``epochs_run`` epochs."""
        return int(self.steps_per_epoch) * int(epochs_run)


def auto_batch_size(n_train: int) -> int:
    """The power of two nearest ``n_train / 40``, clipped to 16..128."""
    exponent = round(math.log2(max(1.0, n_train / 40.0)))
    return int(min(MAX_BATCH, max(MIN_BATCH, 2**exponent)))


def _class_weights(y: np.ndarray, num_classes: int) -> tuple[float, ...] | None:
    counts = np.bincount(y, minlength=num_classes).astype(np.float64)
    present = counts[counts > 0]
    if present.max() <= IMBALANCE * present.min():
        return None
    weights = np.where(counts > 0, len(y) / (num_classes * np.maximum(counts, 1)), 0.0)
    return tuple(float(w) for w in weights)


def plan_recipe(dataset: Dataset, batch_size: int | None = None, augment: str = "auto") -> Recipe:
    """The recipe for ``dataset`` (see the module docstring).

    Args:
        dataset: Dataset, its training part sets the sizes.
        batch_size: int | None, a fixed batch size (None: :func:`auto_batch_size`).
        augment: str, one of :data:`AUGMENT_CHOICES` (default "auto").
    """
    if augment not in AUGMENT_CHOICES:
        raise ValueError(f"augment must be one of {', '.join(AUGMENT_CHOICES)}; got {augment!r}")
    n = len(dataset.x_train)
    batch = int(batch_size) if batch_size else auto_batch_size(n)
    series = dataset.kind == "series"
    least = SMALL_SERIES_STEPS_PER_EPOCH if series and n < SMALL_SERIES else MIN_STEPS_PER_EPOCH
    repeats = max(1, math.ceil(least * batch / n))
    return Recipe(
        batch_size=batch,
        repeats=repeats,
        augment=augment,
        kind=dataset.kind,
        class_weights=_class_weights(dataset.y_train, dataset.num_classes),
        series_ops=tuple(SERIES_OPS) if series else DEFAULT_SERIES_OPS,
        mixup=float(MIXUP_ALPHA) if series and augment != "off" else 0.0,
        steps_per_epoch=max(1, math.ceil(n * repeats / batch)),
        weight_decay=float(SERIES_WEIGHT_DECAY) if series else 0.0,
    )


def common_steps(recipe: Recipe, n_train: int) -> Recipe:
    """``recipe`` with the common minimum of steps per epoch (small series sets' 4x undone).

    The supernet's training keeps it: the longer schedule was measured for one
    network trained alone, not for the four subnets of each supernet step.
    """
    repeats = max(1, math.ceil(MIN_STEPS_PER_EPOCH * recipe.batch_size / n_train))
    steps = max(1, math.ceil(n_train * repeats / recipe.batch_size))
    return dataclasses.replace(recipe, repeats=repeats, steps_per_epoch=steps)


def steps_per_epoch(recipe: Recipe, n_train: int) -> int:
    """Optimizer steps in one epoch of ``n_train`` samples under ``recipe``."""
    return max(1, math.ceil(n_train * recipe.repeats / recipe.batch_size))


def training_data(
    dataset: Dataset, recipe: Recipe, seed: int = 0, targets: np.ndarray | None = None
) -> tf.data.Dataset:
    """The training split as a shuffled, augmented, batched ``tf.data`` pipeline.

    Elements are (input, one-hot label, sample weight); the weight is the
    label's class weight (1 when the labels are balanced). ``targets`` (one row
    of class probabilities per training sample, a teacher's:
    :mod:`mcunas.search.finish.distill`) replaces the one-hot labels.
    """
    import tensorflow as tf

    from mcunas.search.training.augment import augmenter, mixup

    d = dataset
    onehot = np.eye(d.num_classes, dtype=np.float32)[d.y_train]
    if targets is not None:
        onehot = np.asarray(targets, np.float32)
    weights = np.ones(len(d.y_train), np.float32)
    if recipe.class_weights is not None:
        weights = np.asarray(recipe.class_weights, np.float32)[d.y_train]
    data = tf.data.Dataset.from_tensor_slices((d.x_train, onehot, weights))
    data = data.repeat(recipe.repeats).shuffle(
        min(len(d.y_train) * recipe.repeats, SHUFFLE_BUFFER), seed=seed
    )
    data = data.batch(recipe.batch_size)
    fn = augmenter(recipe.kind, recipe.augment, d.noise, recipe.series_ops)
    if fn is not None:
        data = data.map(lambda x, y, w: (fn(x), y, w), num_parallel_calls=tf.data.AUTOTUNE)
    if recipe.mixup > 0 and recipe.augment != "off":
        data = data.map(mixup(recipe.mixup), num_parallel_calls=tf.data.AUTOTUNE)
    return data.prefetch(tf.data.AUTOTUNE)


def execution_steps(per_epoch: int) -> int:
    """Optimizer steps run in one call into TensorFlow: a whole epoch of ``per_epoch`` steps.

    Keras's per-step Python overhead (a call, callbacks, logs) costs about as much as
    a small candidate's step itself; a compiled loop over the epoch's batches gives the
    same weights, step for step (tests/search/trial/test_watch.py). One step a
    call under :func:`per_step_training`.
    """
    return 1 if per_step_training() else max(1, int(per_epoch))


def compile_for_training(
    model: keras.Model, recipe: Recipe, steps: int, per_execution: int = 1
) -> None:
    """Recompile ``model``: Adam(W) on a cosine decay over ``steps``, smoothed cross-entropy.

    AdamW when the recipe has a weight decay, Adam otherwise.
    The starting learning rate is the one the model was compiled with (the
    candidate's ``learning_rate`` hyperparameter). ``per_execution``: optimizer
    steps per call into TensorFlow (Keras's ``steps_per_execution``).
    """
    import keras

    start = getattr(model, "mcunas_base_lr", None)
    if start is None:  # first training of this model: its hyperparameter's rate
        start = float(model.optimizer.learning_rate.numpy())
        model.mcunas_base_lr = start
    schedule = keras.optimizers.schedules.CosineDecay(
        start, decay_steps=max(1, steps), alpha=COSINE_FLOOR
    )
    optimizer = (
        keras.optimizers.AdamW(schedule, weight_decay=recipe.weight_decay)
        if recipe.weight_decay > 0
        else keras.optimizers.Adam(schedule)
    )
    model.compile(
        optimizer=optimizer,
        loss=keras.losses.CategoricalCrossentropy(label_smoothing=recipe.label_smoothing),
        metrics=["accuracy"],
        jit_compile=False,
        steps_per_execution=max(1, int(per_execution)),
    )


def build_training_state(model: keras.Model, dataset: Dataset, targets: np.ndarray | None) -> None:
    """Create the optimizer's, loss's and metrics' variables before the first training step.

    Left to the first step, they are created while TensorFlow traces it, and a
    function that creates variables is traced twice: on a small candidate the
    second trace cost more than the epoch's steps. Built here from one sample's
    shapes (Keras's own symbolic build, as under a distribution strategy), the
    step is traced once; the variables start at the same values, so the
    weights are the same, step for step.
    """
    if per_step_training():
        return
    width = dataset.num_classes if targets is None else int(np.shape(targets)[-1])
    batch = (
        np.asarray(dataset.x_train[:1], np.float32),
        np.zeros((1, width), np.float32),
        np.ones(1, np.float32),
    )
    model._symbolic_build(data_batch=batch)  # Keras's own, before tracing
