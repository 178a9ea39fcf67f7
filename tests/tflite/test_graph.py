"""Graph reader: MAC counts of the calibration models, op names, bad files; op registry."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcunas.errors import ModelError
from mcunas.tflite import kernels
from mcunas.tflite.reader import read_graph
from mcunas.tflite.runtime import runtime_has_op
from mcunas.tflite.writer import build_model
from tests.repo import REPO

MODELS = REPO / "mcunas" / "calibration" / "models"

# Published MAC counts (mcunas/calibration/README.md), in millions, to the digits given.
PUBLISHED_MMACS = {
    "kws_ref_model": (2.66, 0.005),
    "vww_96_int8": (7.49, 0.005),
    "pretrainedResnet_quant": (12.5, 0.05),
    "ad01_int8": (0.26, 0.005),
    "person_detect_int8": (7.16, 0.005),
}


@pytest.mark.parametrize("name", sorted(PUBLISHED_MMACS))
def test_calibration_models_match_published_macs(name: str) -> None:
    graph = read_graph(MODELS / f"{name}.tflite")
    expected, tol = PUBLISHED_MMACS[name]
    assert abs(graph.total_macs / 1e6 - expected) <= tol
    assert graph.is_integer_only
    assert graph.model_size_bytes == (MODELS / f"{name}.tflite").stat().st_size


def test_deprecated_opcodes_and_op_details() -> None:
    # kws_ref_model stores its codes only in deprecated_builtin_code (builtin_code = 0).
    graph = read_graph((MODELS / "kws_ref_model.tflite").read_bytes())
    assert graph.op_names() == [
        "CONV_2D",
        "DEPTHWISE_CONV_2D",
        "AVERAGE_POOL_2D",
        "RESHAPE",
        "FULLY_CONNECTED",
        "SOFTMAX",
    ]
    first = graph.ops[0]
    assert first.options["stride_h"] == 2 and first.options["padding"] == "SAME"
    assert first.options["fused_activation"] == "RELU"
    assert first.output_shape == (1, 25, 5, 64)
    # 10x4 filter over a 1-channel input, 25x5x64 outputs.
    assert first.macs == 25 * 5 * 64 * 10 * 4
    assert first.weight_bytes == 64 * 10 * 4 * 1 + 64 * 4  # int8 weights + int32 bias
    assert first.inputs[0].dtype == "int8" and first.inputs[0].scale is not None
    assert graph.inputs[0].shape == (1, 49, 10, 1)


def _fc_model(dtype: str) -> bytes:
    q = {"scale": 0.1, "zero_point": 0} if dtype == "int8" else {}
    size = 1 if dtype == "int8" else 4
    return build_model(
        [("FULLY_CONNECTED", [0, 1], [2])],
        [
            {"shape": [1, 8], "dtype": dtype, **q},
            {"shape": [4, 8], "dtype": dtype, "data": bytes(32 * size), **q},
            {"shape": [1, 4], "dtype": dtype, **q},
        ],
        [0],
        [2],
    )


def test_float_model_is_not_integer_only() -> None:
    graph = read_graph(_fc_model("float32"))
    assert not graph.is_integer_only
    assert graph.total_macs == 32
    assert graph.ops[0].weight_bytes == 128
    assert read_graph(_fc_model("int8")).is_integer_only


def test_missing_and_non_tflite_files(tmp_path: Path) -> None:
    with pytest.raises(ModelError, match="not found"):
        read_graph(tmp_path / "nope.tflite")
    junk = tmp_path / "junk.tflite"
    junk.write_bytes(b"hello, this is not a flatbuffer at all")
    with pytest.raises(ModelError, match="not a .tflite"):
        read_graph(junk)
    broken = tmp_path / "broken.tflite"
    broken.write_bytes(b"\x00\x00\x00\x00TFL3" + b"\xff" * 8)
    with pytest.raises(ModelError):
        read_graph(broken)


def test_tflm_ops_agree_with_the_runtime() -> None:
    # The checked-in list must match what the installed runtime registers.
    for op in ("GELU", "REDUCE_PROD"):
        assert op not in kernels.TFLM_OPS
        assert not runtime_has_op(op)
    for op in ("CONV_2D", "RSQRT"):
        assert op in kernels.TFLM_OPS
        assert runtime_has_op(op)


def test_is_accelerated_is_int8_only() -> None:
    int8 = read_graph(_fc_model("int8")).ops[0]
    flt = read_graph(_fc_model("float32")).ops[0]
    assert kernels.is_accelerated(int8, "cmsis-nn")
    assert kernels.is_accelerated(int8, "esp-nn")
    assert not kernels.is_accelerated(int8, "reference")
    assert not kernels.is_accelerated(flt, "cmsis-nn")
    assert "TRANSPOSE" in kernels.ACCELERATED["cmsis-nn"]
    assert "TRANSPOSE" not in kernels.ACCELERATED["esp-nn"]
