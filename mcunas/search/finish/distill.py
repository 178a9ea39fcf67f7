"""A teacher for the refit: the reference design at full size, whatever the budget.

On a small dataset the chosen model is refitted on every training sample
(:mod:`mcunas.search.finish.refit`). It learns more from those few samples when its
targets also carry what a larger network makes of them (knowledge
distillation, Hinton et al. 2015): the refit's training targets are
``(1 - ALPHA) x one-hot + ALPHA x the teacher's probabilities at temperature
TEMPERATURE``, and the loss (cross-entropy with the recipe's label smoothing)
is unchanged. The teacher is the reference design of the input's kind at full
width and resolution (:func:`teacher_name`: the MLPerf Tiny DS-CNN for series
and audio, ResNet-8 or MobileNetV1 for images), trained once with the search's
recipe and seed on the same samples; it never runs on the board, so the budget
does not bind it. Its probabilities are taken on the samples as they are (not
augmented).

``mcunas search --distill`` turns it on (off by default): it has not yet
shown a gain beyond seed-to-seed noise (docs/benchmarks/series.md).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from mcunas.search.trial.pipeline import training_seed
from mcunas.search.trial.retrain import Retraining, RetrainRunner

if TYPE_CHECKING:
    from numpy.typing import NDArray

    from mcunas.data.datasets import Dataset
    from mcunas.search.training.recipe import Recipe

__all__ = ["ALPHA", "TEMPERATURE", "soft_targets", "teacher_name", "teacher_targets"]

ALPHA = 0.5  # the teacher's share of the targets
TEMPERATURE = 3.0  # softens the teacher's probabilities


def teacher_name(kind: str, input_shape: tuple[int, ...]) -> str:
    """The reference that teaches: ``--seed-arch auto``'s, with the DS-CNN for long series.

    ``series-s4`` is a design cut to fit small budgets; the DS-CNN it replaces
    there is the larger network.
    """
    from mcunas.space.reference import auto_choice

    name = auto_choice(kind, input_shape)[0]
    return "kws-dscnn" if name == "series-s4" else name


def soft_targets(probabilities: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """``(1 - ALPHA) x one-hot(labels) + ALPHA x softmax(log(probabilities) / TEMPERATURE)``."""
    logits = np.log(np.clip(probabilities.astype(np.float64), 1e-7, 1.0)) / TEMPERATURE
    soft = np.exp(logits - logits.max(axis=-1, keepdims=True))
    soft /= soft.sum(axis=-1, keepdims=True)
    onehot = np.eye(probabilities.shape[-1])[labels]
    return ((1.0 - ALPHA) * onehot + ALPHA * soft).astype(np.float32)


def teacher_targets(
    runner: RetrainRunner, data: Dataset, recipe: Recipe, base_seed: int, epochs: int
) -> tuple[NDArray[np.float32], str]:
    """Train the teacher on ``data``'s training samples; their soft targets and its name.

    Args:
        runner: the search's candidate runner (``for_data`` gives one on ``data``).
        data: Dataset, the refit's pooled samples.
        recipe: Recipe, the refit's recipe (the teacher trains as the refit does).
        base_seed: int, the search's ``--seed`` (the teacher's own seed is derived from it).
        epochs: int, the search's ``--epochs`` (the whole schedule, no early stopping).

    Raises:
        Exception: whatever building or training the teacher raised (the refit goes on
            without it).
    """
    from mcunas.space import McuSearchSpace
    from mcunas.space.reference import reference_hyperparameters

    name = teacher_name(data.kind, data.input_shape)
    values = reference_hyperparameters(name, data.input_shape)
    space = McuSearchSpace(data.input_shape, data.num_classes, ("stages",))
    seed = training_seed(base_seed, values)
    fit = Retraining(space, values, data, seed, epochs, recipe=recipe).runner_from(runner)
    fit.space = space  # the teacher is a stage-space model whatever the search's families
    model = fit.build(space.hyperparameters(**values), seed)
    fit.train(model, epochs, early_stop=False)
    probabilities = model.predict(data.x_train, batch_size=256, verbose=0)
    return soft_targets(np.asarray(probabilities), data.y_train), name
