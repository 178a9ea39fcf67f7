"""Subnets of a trained supernet: recalibrated, scored with inherited weights, extracted.

A subnet's BatchNorm statistics are those of the supernet's mixed training,
not its own, so each is first recalibrated: one forward pass over
:data:`CALIBRATION_SAMPLES` training samples sets every statistic to that
batch's (Once-for-All does the same). Its inherited accuracy then is one
forward pass over the validation split. :meth:`SubnetScorer.extract` gives
the subnet's own stage-family Keras model with the sliced weights and those
statistics, ready to fine-tune, convert and measure like any trial.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import keras
import numpy as np

from mcunas.supernet.model import Supernet, controls, standalone_weights
from mcunas.supernet.spec import Subnet, subnet_values

__all__ = ["CALIBRATION_SAMPLES", "InheritedScore", "SubnetScorer"]

CALIBRATION_SAMPLES = 500
EVAL_BATCH = 512


@dataclass(frozen=True)
class InheritedScore:
    """A subnet's float accuracy and cross-entropy on validation, inherited weights."""

    accuracy: float
    loss: float


class SubnetScorer:
    """Scores and extracts subnets of one trained supernet.

    Args:
        model: Supernet, trained.
        dataset: Dataset, its training split calibrates, its validation split scores.
        seed: int, which training samples calibrate.
    """

    def __init__(self, model: Supernet, dataset: Any, seed: int = 0) -> None:
        self.model, self.spec, self.dataset = model, model.spec, dataset
        rng = np.random.default_rng(seed)
        n = min(CALIBRATION_SAMPLES, len(dataset.x_train))
        pick = rng.choice(len(dataset.x_train), size=n, replace=False)
        self.x_cal = np.asarray(dataset.x_train[np.sort(pick)], np.float32)
        self._recal: dict[int, Any] = {}
        self._logits: dict[int, Any] = {}

    def recalibrate(self, net: Subnet) -> None:
        """Set every BatchNorm statistic to ``net``'s on the calibration samples."""
        fn = self._recal.get(net.resolution)
        if fn is None:
            fn = self._recal[net.resolution] = _traced(self.model, net.resolution, True)
        fn(self.x_cal, controls(self.spec, net))

    def score(self, net: Subnet) -> InheritedScore:
        """Recalibrate, then accuracy and mean cross-entropy on the validation split."""
        self.recalibrate(net)
        fn = self._logits.get(net.resolution)
        if fn is None:
            fn = self._logits[net.resolution] = _traced(self.model, net.resolution, False)
        d, ctrl = self.dataset, controls(self.spec, net)
        parts = [
            np.asarray(fn(np.asarray(d.x_val[i : i + EVAL_BATCH], np.float32), ctrl))
            for i in range(0, len(d.x_val), EVAL_BATCH)
        ]
        logits = np.concatenate(parts).astype(np.float64)
        logits -= logits.max(axis=1, keepdims=True)
        log_probs = logits - np.log(np.exp(logits).sum(axis=1, keepdims=True))
        y = np.asarray(d.y_val)
        accuracy = float(np.mean(np.argmax(logits, axis=1) == y))
        loss = float(-np.mean(log_probs[np.arange(len(y)), y]))
        return InheritedScore(accuracy, loss)

    def extract(self, net: Subnet, space: Any) -> keras.Model:
        """``net`` as its own compiled stage-family model, recalibrated weights sliced in."""
        self.recalibrate(net)
        model = space.build(space.hyperparameters(**subnet_values(self.spec, net)))
        model.set_weights(standalone_weights(self.model, net))
        return model


def _traced(model: Supernet, resolution: int, recalibrate: bool) -> Any:
    import tensorflow as tf

    @tf.function(reduce_retracing=True)
    def run(x: Any, ctrl: Any) -> Any:
        return model(x, ctrl, resolution=resolution, recalibrate=recalibrate)

    return run
