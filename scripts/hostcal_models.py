"""The host calibration's models: the suite, the calibration models, their ops alone.

:mod:`bench_hostcal` times them on the host's TFLite Micro reference kernels
(:mod:`hostcal_timing`) as the board "host-cpu" (:func:`host_board`).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from mcunas.tflite.reader import read_graph

CLOCK_HZ = 1_000_000_000  # a unit: host cycles = ms * 1e6
MODELS_DIR = Path(__file__).resolve().parent.parent / "mcunas" / "calibration" / "models"


@dataclass(frozen=True)
class HostModel:
    """A model to time: name, kind (single | block | real), bytes."""

    name: str
    kind: str
    model_bytes: bytes


def host_board() -> Any:
    """The esp32s3 profile renamed host-cpu: reference kernels, 1 GHz, no fitted tables."""
    from mcunas.boards.catalog import load_board

    return dataclasses.replace(
        load_board("esp32s3"), name="host-cpu", kernels="reference", clock_hz=CLOCK_HZ, latency={}
    )


def reshape_model() -> bytes:
    """A RESHAPE-only model: what one invoke costs with (almost) no kernel work."""
    from mcunas.tflite.writer import build_model

    act = {"dtype": "int8", "scale": 0.05, "zero_point": 0}
    tensors = [
        {"shape": [1, 8, 8], **act},
        {"shape": [2], "dtype": "int32", "data": np.array([1, 64], np.int32)},
        {"shape": [1, 64], **act},
    ]
    return build_model(
        [("RESHAPE", [0, 1], [2], "ReshapeOptions", {"newShape": [1, 64]})], tensors, [0], [2]
    )


def host_models(suite_size: str = "full") -> list[HostModel]:
    """The calibration suite (single-op and block models) and the 5 calibration models."""
    from mcunas.cost.fit.suite import build_suite

    out = []
    for m in build_suite(suite_size):
        kind = "single" if len(read_graph(m.model_bytes).ops) == 1 else "block"
        out.append(HostModel(m.name, kind, m.model_bytes))
    for path in sorted(MODELS_DIR.glob("*.tflite")):
        out.append(HostModel(path.stem, "real", path.read_bytes()))
    return out


def isolate_ops(model_bytes: bytes) -> list[bytes]:
    """One model per op of ``model_bytes``: the op alone, its non-constant inputs as inputs.

    The tensors, buffers and quantization are the original's, so each op runs
    the same kernel on the same shapes as inside the whole model.
    """
    import copy

    import flatbuffers
    from tflite_micro.tensorflow.lite.micro.python import schema_py_generated as fb

    model = fb.ModelT.InitFromPackedBuf(bytearray(model_bytes), 0)
    sub = model.subgraphs[0]
    const = {
        i
        for i, t in enumerate(sub.tensors)
        if t.buffer and model.buffers[t.buffer].data is not None
    }
    out = []
    for op in sub.operators:
        one, graph = copy.copy(model), copy.copy(sub)
        graph.operators, graph.outputs = [op], list(op.outputs)
        graph.inputs = [t for t in op.inputs if t >= 0 and t not in const]
        one.subgraphs = [graph]
        builder = flatbuffers.Builder(len(model_bytes) + 4096)
        builder.Finish(one.Pack(builder), file_identifier=b"TFL3")
        out.append(bytes(builder.Output()))
    return out


def op_models(models: list[HostModel]) -> list[HostModel]:
    """Each op of the real models on its own (kind ``op``, name ``model#index:OP``)."""
    out = []
    for m in models:
        if m.kind == "real":
            for i, data in enumerate(isolate_ops(m.model_bytes)):
                name = read_graph(data).ops[0].name
                out.append(HostModel(f"{m.name}#{i}:{name}", "op", data))
    return out
