"""Which ops TFLite Micro can run, and which ones each kernel library accelerates.

``TFLM_OPS`` is the set of builtin ops the installed ``tflite-micro`` runtime
registers. It was obtained by probing that runtime (tflite-micro
0.dev20261023182759): for every ``BuiltinOperator`` code a one-op model was
built with :func:`mcunas.tflite.writer.build_model` and loaded; an op is missing when
the runtime logs "Didn't find op for builtin opcode". 100 ops are registered,
109 are not (among them GELU, REDUCE_PROD, TILE, POW, ONE_HOT, RANGE and every
STABLEHLO_* op). ``tests/tflite/test_graph.py`` re-checks a few against the runtime;
re-run :func:`mcunas.tflite.runtime.runtime_has_op` over all codes when the pin changes.

``ACCELERATED`` lists, per kernel library, the ops that have an optimized
kernel for **int8** data; every other op (and any float op) runs TFLM's
portable reference kernel.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mcunas.tflite.reader import Op

__all__ = ["ACCELERATED", "KERNEL_LIBRARIES", "TFLM_OPS", "is_accelerated", "is_supported"]

TFLM_OPS: frozenset[str] = frozenset(
    {
        "ABS",
        "ADD",
        "ADD_N",
        "ARG_MAX",
        "ARG_MIN",
        "ASSIGN_VARIABLE",
        "AVERAGE_POOL_2D",
        "BATCH_MATMUL",
        "BATCH_TO_SPACE_ND",
        "BROADCAST_ARGS",
        "BROADCAST_TO",
        "CALL_ONCE",
        "CAST",
        "CEIL",
        "CONCATENATION",
        "CONV_2D",
        "COS",
        "CUMSUM",
        "DEPTHWISE_CONV_2D",
        "DEPTH_TO_SPACE",
        "DEQUANTIZE",
        "DIV",
        "DYNAMIC_UPDATE_SLICE",
        "ELU",
        "EMBEDDING_LOOKUP",
        "EQUAL",
        "EXP",
        "EXPAND_DIMS",
        "FILL",
        "FLOOR",
        "FLOOR_DIV",
        "FLOOR_MOD",
        "FULLY_CONNECTED",
        "GATHER",
        "GATHER_ND",
        "GREATER",
        "GREATER_EQUAL",
        "HARD_SWISH",
        "IF",
        "L2_NORMALIZATION",
        "L2_POOL_2D",
        "LEAKY_RELU",
        "LESS",
        "LESS_EQUAL",
        "LOG",
        "LOGICAL_AND",
        "LOGICAL_NOT",
        "LOGICAL_OR",
        "LOGISTIC",
        "LOG_SOFTMAX",
        "MAXIMUM",
        "MAX_POOL_2D",
        "MEAN",
        "MINIMUM",
        "MIRROR_PAD",
        "MUL",
        "NEG",
        "NOT_EQUAL",
        "PACK",
        "PAD",
        "PADV2",
        "PRELU",
        "QUANTIZE",
        "READ_VARIABLE",
        "REDUCE_ALL",
        "REDUCE_MAX",
        "REDUCE_MIN",
        "RELU",
        "RELU6",
        "RESHAPE",
        "RESIZE_BILINEAR",
        "RESIZE_NEAREST_NEIGHBOR",
        "REVERSE_V2",
        "ROUND",
        "RSQRT",
        "SELECT_V2",
        "SHAPE",
        "SIN",
        "SLICE",
        "SOFTMAX",
        "SPACE_TO_BATCH_ND",
        "SPACE_TO_DEPTH",
        "SPLIT",
        "SPLIT_V",
        "SQRT",
        "SQUARE",
        "SQUARED_DIFFERENCE",
        "SQUEEZE",
        "STRIDED_SLICE",
        "SUB",
        "SUM",
        "SVDF",
        "TANH",
        "TRANSPOSE",
        "TRANSPOSE_CONV",
        "UNIDIRECTIONAL_SEQUENCE_LSTM",
        "UNPACK",
        "VAR_HANDLE",
        "WHILE",
        "ZEROS_LIKE",
    }
)

KERNEL_LIBRARIES = ("reference", "cmsis-nn", "esp-nn")

ACCELERATED: dict[str, frozenset[str]] = {
    # TFLM's portable C++ kernels (tensorflow/lite/micro/kernels/*.cc): nothing optimized.
    "reference": frozenset(),
    # tensorflow/tflite-micro tensorflow/lite/micro/kernels/cmsis_nn/: add.cc,
    # batch_matmul.cc, conv.cc, depthwise_conv.cc, fully_connected.cc,
    # maximum_minimum.cc, mul.cc, pad.cc (PAD and PADV2), pooling.cc (average and
    # max), softmax.cc, svdf.cc, transpose.cc, transpose_conv.cc,
    # unidirectional_sequence_lstm.cc. Each calls arm_*_s8 for int8 data.
    "cmsis-nn": frozenset(
        {
            "ADD",
            "BATCH_MATMUL",
            "CONV_2D",
            "DEPTHWISE_CONV_2D",
            "FULLY_CONNECTED",
            "MAXIMUM",
            "MINIMUM",
            "MUL",
            "PAD",
            "PADV2",
            "AVERAGE_POOL_2D",
            "MAX_POOL_2D",
            "SOFTMAX",
            "SVDF",
            "TRANSPOSE",
            "TRANSPOSE_CONV",
            "UNIDIRECTIONAL_SEQUENCE_LSTM",
        }
    ),
    # espressif/esp-tflite-micro tensorflow/lite/micro/kernels/esp_nn/: add.cc,
    # conv.cc, depthwise_conv.cc, fully_connected.cc, mul.cc, pooling.cc (average
    # and max), softmax.cc. Each calls esp_nn_*_s8 for int8 data (softmax only for
    # int8 in and out).
    "esp-nn": frozenset(
        {
            "ADD",
            "CONV_2D",
            "DEPTHWISE_CONV_2D",
            "FULLY_CONNECTED",
            "MUL",
            "AVERAGE_POOL_2D",
            "MAX_POOL_2D",
            "SOFTMAX",
        }
    ),
}


def is_supported(op_name: str) -> bool:
    """True if the TFLM runtime registers a kernel for this op name."""
    return op_name in TFLM_OPS


def is_accelerated(op: Op, kernels: str) -> bool:
    """True if ``kernels`` has an optimized int8 kernel for ``op``.

    Args:
        op: a graph op.
        kernels: "reference", "cmsis-nn" or "esp-nn".

    Returns:
        False for float ops, ops outside the library's list, and unknown libraries.
    """
    if op.name not in ACCELERATED.get(kernels, frozenset()):
        return False
    if op.dtype != "int8":
        return False
    if op.name == "SOFTMAX" and kernels == "esp-nn":
        return bool(op.outputs) and op.outputs[0].dtype == "int8"
    return True
