"""The check before training: a model TensorFlow cannot train is infeasible, with its cause."""

from __future__ import annotations

import numpy as np
import pytest

from mcunas.boards import load_board
from mcunas.data import Dataset
from mcunas.errors import describe
from mcunas.figures import Figures


def test_describe_keeps_the_cause_of_a_long_framework_error() -> None:
    class InvalidArgumentError(Exception):
        pass

    frames = '  File "train.py", line 9, in step\n' * 40
    exc = InvalidArgumentError(
        "Graph execution error:\n\nDetected at node m/dw defined at (most recent call last):\n"
        + frames
        + "Current implementation only supports equal length strides in the row and column "
        "dimensions.\n\t [[{{node m/dw/depthwise}}]] [Op:__inference_one_step_1234]"
    )
    text = describe(exc)
    assert text.startswith("InvalidArgumentError: Graph execution error")
    assert text.endswith("only supports equal length strides in the row and column dimensions.")
    assert "File" not in text and "{{node" not in text and len(text) <= 300


@pytest.mark.slow
def test_a_candidate_tensorflow_cannot_train_is_refused_with_its_cause() -> None:
    import keras

    from mcunas.search.candidate import KerasRunner

    x = np.random.default_rng(0).random((4, 16, 1, 3), dtype=np.float32)
    y = np.array([0, 1, 0, 1], dtype=np.int32)
    data = Dataset("series", x, y, x, y, 2, (16, 1, 3), ("a", "b"), "test", kind="series")

    class Worker:
        def profile(self, model_bytes):
            return Figures("simulator:test", True, 1.0, 1000, 2000, 3000)

    inputs = keras.Input((16, 1, 3))
    x = keras.layers.DepthwiseConv2D(3, strides=(2, 1), padding="same")(inputs)
    x = keras.layers.GlobalAveragePooling2D()(x)
    model = keras.Model(inputs, keras.layers.Dense(2, activation="softmax")(x))
    before = [w.copy() for w in model.get_weights()]
    runner = KerasRunner(None, data, load_board("esp32s3"), Worker())
    check = runner.check(model)
    assert not check.cost.fits
    (reason,) = check.cost.reasons
    assert reason.startswith("TensorFlow cannot train it:") and "strides" in reason
    assert all(np.array_equal(a, b) for a, b in zip(before, model.get_weights(), strict=True))
