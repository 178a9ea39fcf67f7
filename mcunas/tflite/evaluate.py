"""INT8 accuracy with the real TensorFlow Lite Micro kernels (the host build of the runtime).

This is the accuracy mcunas reports: the numbers the device would compute, not
the float model's. Float inputs are quantized with the model's input scale and
zero point, each sample is run at batch size 1, and the class is the argmax of
the int8 output (monotonic in the dequantized scores).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mcunas.errors import CandidateError

HOST_ARENA_BYTES = 16 * 1024 * 1024  # host arena: generous, only touched as needed
# Softmax Prepare checks beta * input_scale * 2**26 > 1 (QuantizeMultiplierGreaterThanOne).
MIN_SOFTMAX_INPUT_SCALE = 2.0**-26
# The cross-entropy's floor for a probability the INT8 softmax output (steps of
# 1/256) rounds to zero: half a step.
MIN_PROB = 1.0 / 512

__all__ = [
    "check_runtime_loads",
    "int8_accuracy",
    "int8_outputs",
    "int8_predict",
    "int8_scores",
    "quantize_inputs",
]


def quantize_inputs(x: np.ndarray, scale: float, zero_point: int, dtype: type) -> np.ndarray:
    """Quantize float inputs as TFLite does: ``clip(round(x / scale) + zero_point)``.

    Args:
        x: np.ndarray, float inputs.
        scale: float, the input tensor's scale.
        zero_point: int, the input tensor's zero point.
        dtype: numpy integer type of the input tensor (np.int8 or np.uint8).

    Returns:
        Quantized array of ``dtype``.
    """
    info = np.iinfo(dtype)
    q = np.round(np.asarray(x, dtype=np.float32) / np.float32(scale)) + zero_point
    return np.clip(q, info.min, info.max).astype(dtype)


def check_runtime_loads(model_bytes: bytes, arena_size: int = HOST_ARENA_BYTES) -> None:
    """Load the model once in a forked child, because TFLite Micro may abort the process.

    Some kernels' Prepare ends in a failed ``TFLITE_CHECK`` (``abort()``), e.g. a
    SOFTMAX whose input scale is below 2**-26 (an untrained model with collapsed
    activations). In-process that kills the whole search; here it becomes a
    :class:`CandidateError`. Other load failures are left to the caller, which
    reports them with the runtime's message. No-op where ``os.fork`` is missing.

    Args:
        model_bytes: bytes, the .tflite model.
        arena_size: int, arena bytes for the trial load (default 16 MiB).

    Raises:
        CandidateError: The runtime crashed while loading the model.
    """
    from mcunas.tflite.runtime import NativeCrash, run_forked

    try:
        run_forked(_load_only, bytes(model_bytes), arena_size)
    except NativeCrash as exc:
        name, _, tail = str(exc).partition(": ")
        reason = f": {tail}" if tail else _crash_hint(model_bytes)
        raise CandidateError(f"TFLite Micro crashed ({name}) loading the model{reason}") from None
    except Exception:  # noqa: BLE001 - ordinary load failures are the caller's to report
        return


def _load_only(model_bytes: bytes, arena_size: int) -> None:
    from tflite_micro.python.tflite_micro import runtime

    runtime.Interpreter.from_bytes(model_bytes, arena_size=arena_size)


def _crash_hint(model_bytes: bytes) -> str:
    """Name the known cause of a Prepare abort when the graph shows it."""
    from mcunas.tflite.reader import read_graph

    for op in read_graph(model_bytes).ops:
        scale = op.inputs[0].scale if op.inputs and op.inputs[0] is not None else None
        if op.name == "SOFTMAX" and scale is not None and scale < MIN_SOFTMAX_INPUT_SCALE:
            return (
                f": SOFTMAX input scale {scale:.3g} < 2**-26 (collapsed logits, "
                "e.g. an untrained model)"
            )
    return " (a kernel's Prepare check failed)"


def _load(model_bytes: bytes) -> Any:
    """A TFLite Micro interpreter for ``model_bytes`` (one readable line if it cannot load)."""
    from tflite_micro.python.tflite_micro import runtime

    from mcunas.tflite.runtime import capture_fd2, missing_ops_in_log

    check_runtime_loads(model_bytes)
    try:
        with capture_fd2() as log:  # the runtime explains failures on fd 2 only
            return runtime.Interpreter.from_bytes(bytes(model_bytes), arena_size=HOST_ARENA_BYTES)
    except Exception as exc:  # the runtime raises RuntimeError/ValueError with C++ text
        missing = missing_ops_in_log(log[0] if log else "")
        reason = f"no kernel for {', '.join(missing)}" if missing else _one_line(exc)
        raise CandidateError(f"TFLite Micro cannot load the model: {reason}") from None


def _quantized(details: dict[str, Any], x: np.ndarray) -> np.ndarray:
    """``x`` in the tensor's type and shape (quantized when the tensor is integer)."""
    shape = tuple(int(d) for d in details["shape"])
    dtype = np.dtype(details["dtype"]).type
    if int(np.prod(shape)) != int(np.prod(x.shape[1:])):
        raise CandidateError(f"Inputs of shape {x.shape[1:]} do not fit the model input {shape}")
    params = details["quantization_parameters"]
    if np.issubdtype(dtype, np.integer):
        q = quantize_inputs(x, float(params["scales"][0]), int(params["zero_points"][0]), dtype)
    else:
        q = np.asarray(x, dtype=dtype)
    return q.reshape((len(x), *shape))


def _dequantized(details: dict[str, Any], out: np.ndarray) -> np.ndarray:
    params = details["quantization_parameters"]
    values = np.asarray(out, dtype=np.float64).reshape(-1)
    if np.issubdtype(np.dtype(details["dtype"]).type, np.integer) and len(params["scales"]):
        values = (values - float(params["zero_points"][0])) * float(params["scales"][0])
    return values


def int8_outputs(model_bytes: bytes, x: np.ndarray) -> np.ndarray:
    """The model's outputs (dequantized to float) for each input, run by TFLite Micro.

    Args:
        model_bytes: bytes, an INT8 .tflite model with batch size 1.
        x: np.ndarray, float inputs (N, *input_shape).

    Returns:
        float64 array (N, K) of the output tensor's values (class probabilities
        for the models mcunas builds).

    Raises:
        CandidateError: The runtime cannot load or run the model.
    """
    interp = _load(model_bytes)
    q = _quantized(interp.get_input_details(0), np.asarray(x))
    out_details = interp.get_output_details(0)
    rows = []
    try:
        for i in range(len(q)):
            interp.set_input(q[i], 0)
            interp.invoke()
            rows.append(_dequantized(out_details, interp.get_output(0)))
    except Exception as exc:  # report the runtime's reason
        raise CandidateError(f"TFLite Micro failed to run the model: {_one_line(exc)}") from None
    return np.stack(rows) if rows else np.empty((0, 0))


def int8_predict(model_bytes: bytes, x: np.ndarray) -> np.ndarray:
    """Class predictions (int64, N) of an INT8 model run by TFLite Micro (see int8_outputs)."""
    return np.argmax(int8_outputs(model_bytes, x), axis=-1).astype(np.int64)


def int8_accuracy(model_bytes: bytes, x: np.ndarray, y: np.ndarray) -> float:
    """Top-1 accuracy of an INT8 model on (x, y) with the real TFLite Micro kernels.

    Args:
        model_bytes: bytes, an INT8 .tflite model with batch size 1.
        x: np.ndarray, float inputs (N, *input_shape), preprocessed like training data.
        y: np.ndarray, integer labels (N,).

    Returns:
        Accuracy in [0, 1].

    Raises:
        CandidateError: The runtime cannot load or run the model.
        ValueError: x and y have different lengths or are empty.
    """
    return int8_scores(model_bytes, x, y)[0]


def int8_scores(model_bytes: bytes, x: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """Top-1 accuracy and mean cross-entropy (nats) of an INT8 model on (x, y), in TFLM.

    The cross-entropy reads the dequantized softmax output; a probability the
    INT8 output rounds to 0 counts as half its smallest step (:data:`MIN_PROB`),
    so the loss stays finite.

    Raises:
        CandidateError: The runtime cannot load or run the model.
        ValueError: x and y have different lengths or are empty.
    """
    y = np.asarray(y).reshape(-1)
    if len(x) != len(y) or len(y) == 0:
        raise ValueError(f"need as many labels as inputs (>0), got {len(x)} and {len(y)}")
    probs = int8_outputs(model_bytes, np.asarray(x))
    accuracy = float(np.mean(np.argmax(probs, axis=-1) == y))
    picked = probs[np.arange(len(y)), np.clip(y, 0, probs.shape[1] - 1)]
    loss = float(np.mean(-np.log(np.clip(picked, MIN_PROB, 1.0))))
    return accuracy, loss


def _one_line(exc: BaseException) -> str:
    lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
    return (lines[0] if lines else type(exc).__name__)[:300]
