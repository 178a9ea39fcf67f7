"""From a trained Keras model to a deployable INT8 TFLite Micro model and its C sources.

- :func:`to_inference_model`: the same network with a fixed batch size of 1 (a
  free batch size converts to SHAPE/REDUCE_PROD ops TFLite Micro cannot run).
- :func:`convert_int8`: full-integer post-training quantization, int8 input and
  output, calibrated on representative inputs.

The model's C sources are written by :mod:`mcunas.tflite.csource`.

TensorFlow is imported inside the functions, never at module import.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import sys
import tempfile
import warnings
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import numpy as np

from mcunas.errors import CandidateError

if TYPE_CHECKING:
    import keras

MAX_REPRESENTATIVE = 200  # calibration samples used by the converter

__all__ = [
    "convert_int8",
    "import_tensorflow",
    "to_inference_model",
]


# Start-up chatter TensorFlow prints to fd 2 before its logging is set up.
_TF_NOISE = (
    "absl::InitializeLog",
    "oneDNN custom operations are on",
    # op determinism (training) rewrites tf.data maps; the rewrite logs this, harmlessly
    "use_unbounded_threadpool",
)


@contextlib.contextmanager
def tensorflow_chatter_dropped() -> Iterator[None]:
    """Run TensorFlow work with its known harmless native log lines dropped.

    Everything else TensorFlow writes to standard error is passed on after the block.
    """
    from mcunas.tflite.runtime import capture_fd2

    log: list[str] = []
    try:
        with capture_fd2() as log:
            yield
    finally:
        _pass_on(log[0] if log else "")


def _pass_on(text: str) -> None:
    kept = [ln for ln in text.splitlines() if ln and not any(n in ln for n in _TF_NOISE)]
    if kept:
        sys.stderr.write("\n".join(kept) + "\n")


def import_tensorflow() -> Any:
    """Import TensorFlow once, without its start-up chatter on standard error.

    Lines other than the known start-up notices are passed on.
    """
    import sys

    if "tensorflow" in sys.modules:
        return sys.modules["tensorflow"]
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    with tensorflow_chatter_dropped():
        import tensorflow as tf
    return tf


_tf = import_tensorflow


def to_inference_model(model: keras.Model) -> keras.Model:
    """The same architecture with ``keras.Input(shape, batch_size=1)`` and the same weights.

    Args:
        model: keras.Model, a single-input functional model (e.g. from the search space).

    Returns:
        A new keras.Model with batch size 1 whose weights equal ``model``'s.

    Raises:
        CandidateError: The model cannot be rebuilt or its weights do not carry over.
    """
    import keras

    if len(model.inputs) != 1:
        raise CandidateError(f"Expected a single-input model, got {len(model.inputs)} inputs")
    shape = tuple(model.inputs[0].shape[1:])
    try:
        clone = keras.models.clone_model(model, input_tensors=keras.Input(shape, batch_size=1))
        clone.set_weights(model.get_weights())
    except Exception as exc:  # keras raises many types when a layer cannot be rebuilt
        raise CandidateError(
            f"Cannot rebuild the model with batch size 1: {_first_line(exc)}"
        ) from None
    for old, new in zip(model.weights, clone.weights, strict=True):
        if old.shape != new.shape or not np.array_equal(np.asarray(old), np.asarray(new)):
            raise CandidateError(f"Weight {old.path} did not carry over to the batch-1 model")
    return clone


def convert_int8(model: keras.Model, representative: np.ndarray) -> bytes:
    """Full-integer INT8 conversion for TFLite Micro (int8 input and output).

    A model with a free batch size is first rebuilt with :func:`to_inference_model`.

    Args:
        model: keras.Model to convert.
        representative: np.ndarray, float inputs shaped like the model's input
            (N, *input_shape); up to 200 are used to calibrate activation ranges.

    Returns:
        The .tflite flatbuffer bytes.

    Raises:
        CandidateError: The converter failed (one-line reason).
    """
    rep = np.asarray(representative, dtype=np.float32)
    if rep.ndim != len(model.inputs[0].shape) or len(rep) == 0:
        raise CandidateError(
            f"Representative data of shape {rep.shape} does not fit the model input "
            f"{tuple(model.inputs[0].shape)}"
        )
    if model.inputs[0].shape[0] != 1:
        model = to_inference_model(model)
    rep = rep[:MAX_REPRESENTATIVE]
    tf = _tf()

    def samples() -> Any:
        for i in range(len(rep)):
            yield [rep[i : i + 1]]

    log: list[str] = []
    try:
        with _quiet(log):
            converter = tf.lite.TFLiteConverter.from_keras_model(model)
            converter.optimizations = [tf.lite.Optimize.DEFAULT]
            converter.representative_dataset = samples
            converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
            converter.inference_input_type = tf.int8
            converter.inference_output_type = tf.int8
            return bytes(converter.convert())
    except Exception as exc:  # the converter raises ConverterError, ValueError, ...
        raise CandidateError(f"INT8 conversion failed: {_first_line(exc, log)}") from None


@contextlib.contextmanager
def _quiet(log: list[str]) -> Iterator[None]:
    """Send the converter's chatter (Python and C++, stdout and stderr) to ``log``."""
    from mcunas.tflite.runtime import FD_LOCK

    with FD_LOCK, tempfile.TemporaryFile(mode="w+b") as sink, warnings.catch_warnings():
        sys.stdout.flush()
        sys.stderr.flush()
        saved = [os.dup(1), os.dup(2)]
        warnings.simplefilter("ignore")
        os.dup2(sink.fileno(), 1)
        os.dup2(sink.fileno(), 2)
        text = io.StringIO()
        try:
            with contextlib.redirect_stdout(text), contextlib.redirect_stderr(text):
                yield
        finally:
            log.extend(text.getvalue().splitlines())
            sys.stdout.flush()
            sys.stderr.flush()
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            for fd in saved:
                os.close(fd)
            sink.seek(0)
            log.extend(sink.read().decode("utf-8", "replace").splitlines())


def _first_line(exc: BaseException, log: list[str] | None = None) -> str:
    """The most useful single line of an exception (and the converter's log)."""
    lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
    for ln in lines + (log or []):  # MLIR puts the reason after "<location>: error:"
        if "error:" in ln:
            return ln.split("error:", 1)[1].strip()[:300]
    first = lines[0] if lines else type(exc).__name__
    located = re.match(r"loc\(.*\)\s*:\s*(.+)$", first)  # "loc(callsite(...)): reason"
    return (located.group(1) if located else first)[:300]
