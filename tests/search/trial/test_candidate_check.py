"""The check before training: a model TensorFlow cannot train is infeasible, with its cause."""

from __future__ import annotations

import numpy as np
import pytest

from mcunas.boards.catalog import load_board
from mcunas.data.datasets import Dataset
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


def _gradient_refusing_layer():  # noqa: ANN202
    """A Keras layer whose forward pass converts cleanly and whose backward pass fails.

    TensorFlow's own refusals depend on the machine (a depthwise convolution with
    unequal strides trains where oneDNN's kernels are on and not elsewhere), so
    the refusal here is made deterministic: an InvalidArgumentError on every CPU.
    """
    import keras
    import tensorflow as tf

    @tf.custom_gradient
    def refuse(t):  # noqa: ANN001, ANN202
        def grad(dy):  # noqa: ANN001, ANN202
            return tf.debugging.check_numerics(dy * float("nan"), "this layer refuses gradients")

        return tf.identity(t), grad

    class RefusesGradients(keras.layers.Layer):
        def call(self, t):  # noqa: ANN001, ANN202
            return refuse(t)

    return RefusesGradients()


@pytest.mark.slow
def test_a_candidate_tensorflow_cannot_train_is_refused_with_its_cause() -> None:
    import keras

    from mcunas.search.trial.runner import KerasRunner

    x = np.random.default_rng(0).random((4, 16, 1, 3), dtype=np.float32)
    y = np.array([0, 1, 0, 1], dtype=np.int32)
    data = Dataset("series", x, y, x, y, 2, (16, 1, 3), ("a", "b"), "test", kind="series")

    class Worker:
        def profile(self, model_bytes):
            return Figures("simulator:test", True, 1.0, 1000, 2000, 3000)

    inputs = keras.Input((16, 1, 3))
    x = keras.layers.DepthwiseConv2D(3, padding="same")(inputs)
    x = keras.layers.BatchNormalization()(x)
    x = _gradient_refusing_layer()(x)
    x = keras.layers.GlobalAveragePooling2D()(x)
    model = keras.Model(inputs, keras.layers.Dense(2, activation="softmax")(x))
    before = [w.copy() for w in model.get_weights()]
    runner = KerasRunner(None, data, load_board("esp32s3"), Worker())
    check = runner.check(model)
    assert not check.cost.fits
    (reason,) = check.cost.reasons
    assert reason.startswith("TensorFlow cannot train it:") and "refuses gradients" in reason
    # The BatchNorm statistics the forward pass moved are put back.
    assert all(np.array_equal(a, b) for a, b in zip(before, model.get_weights(), strict=True))
