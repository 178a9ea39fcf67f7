"""Op audit: unsupported ops, float ops in an INT8 model, unaccelerated ops."""

from __future__ import annotations

from mcunas.boards.catalog import load_board
from mcunas.tflite.audit import audit_graph, is_float_model
from mcunas.tflite.reader import read_graph
from mcunas.tflite.writer import build_model
from tests.repo import REPO

MODELS = REPO / "mcunas" / "calibration" / "models"
Q = {"scale": 0.05, "zero_point": 0}


def layernorm_like_model() -> bytes:
    """int8 FC, then the DEQUANTIZE -> RSQRT -> QUANTIZE a LayerNorm converts to."""
    return build_model(
        [
            ("FULLY_CONNECTED", [0, 1], [2]),
            ("DEQUANTIZE", [2], [3]),
            ("RSQRT", [3], [4]),
            ("QUANTIZE", [4], [5]),
        ],
        [
            {"shape": [1, 8], "dtype": "int8", **Q},
            {"shape": [8, 8], "dtype": "int8", "data": bytes(64), **Q},
            {"shape": [1, 8], "dtype": "int8", **Q},
            {"shape": [1, 8], "dtype": "float32"},
            {"shape": [1, 8], "dtype": "float32"},
            {"shape": [1, 8], "dtype": "int8", **Q},
        ],
        [0],
        [5],
    )


def gelu_model() -> bytes:
    """int8 FC followed by GELU, which this TFLM build has no kernel for."""
    return build_model(
        [("FULLY_CONNECTED", [0, 1], [2]), ("GELU", [2], [3])],
        [
            {"shape": [1, 8], "dtype": "int8", **Q},
            {"shape": [4, 8], "dtype": "int8", "data": bytes(32), **Q},
            {"shape": [1, 4], "dtype": "int8", **Q},
            {"shape": [1, 4], "dtype": "int8", **Q},
        ],
        [0],
        [3],
    )


def test_unsupported_op_is_named() -> None:
    report = audit_graph(read_graph(gelu_model()), load_board("esp32s3"))
    assert report.unsupported == ("GELU",)
    assert not report.runnable
    assert any("GELU" in line and "no kernel" in line for line in report.messages())


def test_float_ops_of_layernorm_are_reported() -> None:
    graph = read_graph(layernorm_like_model())
    report = audit_graph(graph, load_board("nucleo_f746zg"))
    assert report.runnable
    assert report.float_ops == ("DEQUANTIZE", "RSQRT", "QUANTIZE")
    assert not graph.is_integer_only
    assert not is_float_model(graph)  # an INT8 model with a few float ops


def test_unaccelerated_ops_depend_on_the_kernel_library() -> None:
    graph = read_graph(MODELS / "kws_ref_model.tflite")
    board = load_board("esp32s3")
    assert audit_graph(graph, board).unaccelerated == ()
    assert audit_graph(graph, board, kernels="esp-nn").float_ops == ()
    ref = audit_graph(graph, board, kernels="reference")
    # RESHAPE costs nothing and is never listed.
    assert ref.unaccelerated == (
        "CONV_2D",
        "DEPTHWISE_CONV_2D",
        "AVERAGE_POOL_2D",
        "FULLY_CONNECTED",
        "SOFTMAX",
    )
    resnet = audit_graph(read_graph(MODELS / "pretrainedResnet_quant.tflite"), board)
    assert resnet.unaccelerated == ()
    ln = audit_graph(read_graph(layernorm_like_model()), board, kernels="cmsis-nn")
    assert ln.unaccelerated == ("DEQUANTIZE", "RSQRT", "QUANTIZE")
