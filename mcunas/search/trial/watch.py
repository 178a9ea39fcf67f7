"""What a candidate's training looks at while it runs: validation where needed, its curve, rungs.

Keras's ``fit`` validates after every epoch; a candidate's training needs the
validation loss only where early stopping watches it (the schedule's second
half) and the validation accuracy only on its rungs
(:func:`mcunas.search.results.curves.rung_epochs`). :class:`Watch` validates
there and nowhere else (validation changes no weight, so the model is the
one a validation after every epoch gives), keeps the curve and, given a
:class:`~mcunas.search.results.curves.CurveBound`, stops a candidate whose
curve cannot reach the front at its cost.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import keras
import numpy as np

from mcunas.search.results.curves import Curve, CurveBound

if TYPE_CHECKING:
    from mcunas.data.datasets import Dataset

__all__ = ["SecondHalfStop", "Watch"]

VALIDATION_BATCH = 32  # Keras's default: the batches fit's own validation used


class Watch(keras.callbacks.Callback):
    """Validates on the chosen epochs, records the curve and applies the rung test.

    Args:
        data: the dataset (its validation split).
        epochs: 1-based epochs to validate after (others are not validated).
        rungs: 1-based epochs the stop test runs on (a subset of ``epochs``).
        bound: the stop test (None: no candidate stops).
    """

    def __init__(
        self, data: Dataset, epochs: Sequence[int], rungs: Sequence[int], bound: CurveBound | None
    ) -> None:
        super().__init__()
        self.x = data.x_val
        self.y = np.eye(data.num_classes, dtype=np.float32)[data.y_val]
        self.epochs, self.rungs, self.bound = set(epochs), set(rungs), bound
        self.curve: Curve = {}
        self.stopped: str | None = None

    def scores(self) -> dict[str, float]:
        """The model's validation loss and accuracy now."""
        got = self.model.evaluate(
            self.x, self.y, batch_size=VALIDATION_BATCH, verbose=0, return_dict=True
        )
        return {"val_loss": float(got["loss"]), "val_accuracy": float(got["accuracy"])}

    def on_epoch_end(self, epoch: int, logs: dict[str, float] | None = None) -> None:
        """Validate after the chosen epochs (into ``logs``), and stop on a rung if hopeless."""
        done = epoch + 1
        if done not in self.epochs or logs is None:
            return
        logs.update(self.scores())
        self.curve[done] = logs["val_accuracy"]
        if self.bound is not None and done in self.rungs and self.stopped is None:
            self.stopped = self.bound.stop(done, logs["val_accuracy"], len(self.y))
            if self.stopped is not None:
                self.model.stop_training = True


class SecondHalfStop(keras.callbacks.EarlyStopping):
    """Keras's early stopping, looking at epochs from ``start_from_epoch`` only.

    Before it no validation loss is computed (:class:`Watch`), and Keras's own
    callback would warn of the missing value each epoch.
    """

    def on_epoch_end(self, epoch: int, logs: dict[str, float] | None = None) -> None:
        """Keras's test from ``start_from_epoch`` on; nothing before."""
        if epoch >= self.start_from_epoch:
            super().on_epoch_end(epoch, logs)
