"""Read a ``.tflite`` flatbuffer into ops, tensors, MACs and bytes, without TensorFlow.

The one place that walks a model graph. It uses the flatbuffer schema bindings
shipped with the ``tflite-micro`` package (``schema_py_generated``), imported
lazily so that importing this module stays cheap.

Example::

    from mcunas.tflite.reader import read_graph
    graph = read_graph("model.tflite")
    print(graph.total_macs, graph.op_names())
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mcunas.errors import ModelError

__all__ = ["Graph", "Op", "Tensor", "load_model_bytes", "read_graph"]

TFLITE_IDENTIFIER = b"TFL3"  # flatbuffer file identifier at bytes 4..8 of every .tflite

_DTYPE_BYTES = {
    "float32": 4,
    "float16": 2,
    "int32": 4,
    "uint8": 1,
    "int64": 8,
    "bool": 1,
    "int16": 2,
    "complex64": 8,
    "int8": 1,
    "float64": 8,
    "complex128": 16,
    "uint64": 8,
    "uint32": 4,
    "uint16": 2,
    "int4": 0.5,
    "bfloat16": 2,
    "int2": 0.25,
}
_FLOAT_DTYPES = frozenset({"float32", "float16", "float64", "bfloat16"})
# Ops that only move or re-describe data: no arithmetic, zero MACs.
_DATA_MOVEMENT = frozenset(
    {
        "RESHAPE",
        "SQUEEZE",
        "EXPAND_DIMS",
        "TRANSPOSE",
        "CONCATENATION",
        "PACK",
        "UNPACK",
        "SPLIT",
        "SPLIT_V",
        "SLICE",
        "STRIDED_SLICE",
        "GATHER",
        "GATHER_ND",
        "PAD",
        "PADV2",
        "MIRROR_PAD",
        "SHAPE",
        "BROADCAST_TO",
        "BROADCAST_ARGS",
        "FILL",
        "ZEROS_LIKE",
        "DEPTH_TO_SPACE",
        "SPACE_TO_DEPTH",
        "BATCH_TO_SPACE_ND",
        "SPACE_TO_BATCH_ND",
        "REVERSE_V2",
        "EMBEDDING_LOOKUP",
        "CALL_ONCE",
        "VAR_HANDLE",
        "READ_VARIABLE",
        "ASSIGN_VARIABLE",
        "IF",
        "WHILE",
    }
)
# Ops that reduce a window or an axis: one operation per input element.
_WINDOW_INPUT = frozenset(
    {
        "MEAN",
        "SUM",
        "REDUCE_MAX",
        "REDUCE_MIN",
        "REDUCE_PROD",
        "REDUCE_ANY",
        "REDUCE_ALL",
        "ARG_MAX",
        "ARG_MIN",
        "L2_NORMALIZATION",
        "CUMSUM",
    }
)
_POOLS = frozenset({"AVERAGE_POOL_2D", "MAX_POOL_2D", "L2_POOL_2D"})
_PADDING = {0: "SAME", 1: "VALID"}
_ACTIVATION = {
    0: "NONE",
    1: "RELU",
    2: "RELU_N1_TO_1",
    3: "RELU6",
    4: "TANH",
    5: "SIGN_BIT",
    6: "SIGMOID",
}
# flatbuffer option field -> our option key
_OPTION_KEYS = {
    "strideH": "stride_h",
    "strideW": "stride_w",
    "filterHeight": "filter_h",
    "filterWidth": "filter_w",
    "dilationHFactor": "dilation_h",
    "dilationWFactor": "dilation_w",
    "depthMultiplier": "depth_multiplier",
    "fusedActivationFunction": "fused_activation",
    "padding": "padding",
    "adjX": "adj_x",
    "adjY": "adj_y",
    "keepDims": "keep_dims",
    "keepNumDims": "keep_num_dims",
    "axis": "axis",
    "beta": "beta",
}


@dataclass(frozen=True)
class Tensor:
    """One tensor of the graph: shape, dtype, size and quantization."""

    index: int
    name: str
    shape: tuple[int, ...]
    dtype: str
    nbytes: int
    scale: float | None
    zero_point: int | None
    is_constant: bool

    @property
    def elements(self) -> int:
        """Number of elements (1 for a scalar)."""
        return math.prod(self.shape) if self.shape else 1

    @property
    def is_float(self) -> bool:
        """True for float16/32/64 tensors."""
        return self.dtype in _FLOAT_DTYPES


@dataclass(frozen=True)
class Op:
    """One operator: its builtin name, tensors, options and cost."""

    index: int
    name: str
    inputs: tuple[Tensor | None, ...]
    outputs: tuple[Tensor, ...]
    options: dict[str, Any]
    macs: int
    weight_bytes: int
    bytes_moved: int

    @property
    def output_shape(self) -> tuple[int, ...]:
        """Shape of the first output (empty for an op without outputs)."""
        return self.outputs[0].shape if self.outputs else ()

    @property
    def dtype(self) -> str:
        """The op's compute type: the dtype of its first non-constant input, else output."""
        for t in self.inputs:
            if t is not None and not t.is_constant:
                return t.dtype
        return self.outputs[0].dtype if self.outputs else "unknown"


@dataclass(frozen=True)
class Graph:
    """The main subgraph of a model, in execution order."""

    ops: tuple[Op, ...]
    tensors: tuple[Tensor, ...]
    inputs: tuple[Tensor, ...]
    outputs: tuple[Tensor, ...]
    model_size_bytes: int
    total_macs: int
    subgraph_count: int = 1
    extra: dict[str, Any] = field(default_factory=dict)

    def op_names(self) -> list[str]:
        """Distinct op names in first-seen order."""
        return list(dict.fromkeys(op.name for op in self.ops))

    @property
    def is_integer_only(self) -> bool:
        """True if no op reads or writes a float tensor (weights included)."""
        for op in self.ops:
            for t in (*op.inputs, *op.outputs):
                if t is not None and t.is_float:
                    return False
        return True

    @property
    def weight_bytes(self) -> int:
        """Bytes of all constant tensors the ops read."""
        return sum(op.weight_bytes for op in self.ops)


def load_model_bytes(source: bytes | str | os.PathLike) -> bytes:
    """The bytes of a model given as bytes or a path; ModelError if unreadable."""
    if isinstance(source, (bytes, bytearray, memoryview)):
        return bytes(source)
    path = Path(source)
    shown = str(path) if len(str(path)) <= 200 else f"{str(path)[:120]}...{str(path)[-40:]}"
    try:
        found = path.exists()
    except OSError as exc:  # a name too long for the file system
        raise ModelError(f"Cannot read model file {shown}: {exc.strerror}") from None
    if not found:
        raise ModelError(f"Model file not found: {shown}")
    from mcunas.inputs.formats import read_model

    return read_model(path, "model file", ModelError)


def read_graph(source: bytes | str | os.PathLike, name: str | None = None) -> Graph:
    """Read a ``.tflite`` model (bytes or a path) into a :class:`Graph`.

    Args:
        source: bytes of the model, or the path of a ``.tflite`` file.
        name: what to call the model in error messages (default: its path, or "model").

    Returns:
        The main subgraph's ops in execution order, with MACs and bytes.

    Raises:
        ModelError: the file is missing, unreadable, or not a TFLite flatbuffer.
    """
    data = load_model_bytes(source)
    where = name or (str(source) if isinstance(source, (str, os.PathLike)) else "model")
    if len(data) < 8 or data[4:8] != TFLITE_IDENTIFIER:
        raise ModelError(f"{where} is not a .tflite model (no TFL3 flatbuffer identifier)")
    from tflite_micro.tensorflow.lite.micro.python import schema_py_generated as fb

    try:
        model = fb.ModelT.InitFromObj(fb.Model.GetRootAsModel(data, 0))
    except Exception as exc:  # noqa: BLE001 - any decoding failure means a corrupt file
        raise ModelError(
            f"{where} is a truncated or corrupt .tflite model (its flatbuffer does not decode: "
            f"{' '.join(str(exc).split())[:120]})"
        ) from exc
    if not model.subgraphs:
        raise ModelError(f"{where} has no subgraph: not a usable .tflite model")
    try:
        return _build_graph(model, fb, len(data))
    except (IndexError, KeyError, ValueError, TypeError, AttributeError, OverflowError) as exc:
        raise ModelError(
            f"{where} is a corrupt .tflite model (its tensors or ops point nowhere: "
            f"{type(exc).__name__})"
        ) from None


def _enum_names(enum_cls: type) -> dict[int, str]:
    return {v: k for k, v in vars(enum_cls).items() if not k.startswith("_")}


def _build_graph(model: Any, fb: Any, size: int) -> Graph:
    op_names = _enum_names(fb.BuiltinOperator)
    type_names = {k: v.lower() for k, v in _enum_names(fb.TensorType).items()}
    sub = model.subgraphs[0]
    buffers = model.buffers or []
    tensors = tuple(_tensor(i, t, type_names, buffers) for i, t in enumerate(sub.tensors or []))
    ops = []
    for index, raw in enumerate(sub.operators or []):
        code = model.operatorCodes[raw.opcodeIndex]
        # Schema v3a: codes > 127 live in builtin_code; older files only fill the
        # deprecated int8 field. The larger of the two is the real code.
        builtin = max(code.builtinCode, code.deprecatedBuiltinCode)
        name = op_names.get(builtin, f"BUILTIN_{builtin}")
        if name == "CUSTOM":
            custom = code.customCode.decode() if code.customCode else "?"
            name = f"CUSTOM:{custom}"
        ins = tuple(tensors[i] if i >= 0 else None for i in _ints(raw.inputs))
        outs = tuple(tensors[i] for i in _ints(raw.outputs) if i >= 0)
        options = _options(raw.builtinOptions)
        macs = count_macs(name, ins, outs, options)
        weight = sum(t.nbytes for t in ins if t is not None and t.is_constant)
        moved = sum(t.nbytes for t in (*ins, *outs) if t is not None)
        ops.append(Op(index, name, ins, outs, options, macs, weight, moved))
    return Graph(
        ops=tuple(ops),
        tensors=tensors,
        inputs=tuple(tensors[i] for i in _ints(sub.inputs)),
        outputs=tuple(tensors[i] for i in _ints(sub.outputs)),
        model_size_bytes=size,
        total_macs=sum(op.macs for op in ops),
        subgraph_count=len(model.subgraphs),
    )


def _ints(values: Any) -> list[int]:
    return [] if values is None else [int(v) for v in values]


def _tensor(index: int, raw: Any, type_names: dict[int, str], buffers: list[Any]) -> Tensor:
    shape = tuple(int(d) for d in (raw.shape if raw.shape is not None else ()))
    dtype = type_names.get(raw.type, f"type{raw.type}")
    elements = math.prod(shape) if shape else 1
    nbytes = math.ceil(elements * _DTYPE_BYTES.get(dtype, 4))
    buf = buffers[raw.buffer] if 0 < raw.buffer < len(buffers) else None
    constant = buf is not None and (
        (buf.data is not None and len(buf.data) > 0) or (buf.offset or 0) > 1
    )
    scale = zero_point = None
    q = raw.quantization
    if q is not None and q.scale is not None and len(q.scale) > 0:
        scale = float(q.scale[0])
        zero_point = int(q.zeroPoint[0]) if q.zeroPoint is not None and len(q.zeroPoint) else 0
    name = raw.name.decode(errors="replace") if raw.name else f"tensor_{index}"
    return Tensor(index, name, shape, dtype, nbytes, scale, zero_point, constant)


def _options(raw: Any) -> dict[str, Any]:
    import numpy as np  # the schema bindings' scalars and vectors are numpy's

    if raw is None:
        return {}
    out: dict[str, Any] = {}
    for key, value in vars(raw).items():
        if key not in _OPTION_KEYS or isinstance(value, (list, tuple)) or value is None:
            continue
        name = _OPTION_KEYS[key]
        if name == "padding":
            value = _PADDING.get(value, str(value))
        elif name == "fused_activation":
            value = _ACTIVATION.get(value, str(value))
        out[name] = value.item() if isinstance(value, np.generic | np.ndarray) else value
    return out


def count_macs(
    name: str, ins: tuple[Tensor | None, ...], outs: tuple[Tensor, ...], options: dict[str, Any]
) -> int:
    """Multiply-accumulates (or elementary operations) of one op.

    Convolutions and matrix products count MACs; pools and reductions count one
    operation per window element; elementwise ops count one per output element;
    pure data movement counts zero.
    """
    if not outs:
        return 0
    out_elems = outs[0].elements
    present = [t for t in ins if t is not None]
    if name == "CONV_2D" and len(present) >= 2:
        _, kh, kw, cin = (*(1,) * (4 - len(present[1].shape)), *present[1].shape)
        return out_elems * kh * kw * cin
    if name == "DEPTHWISE_CONV_2D" and len(present) >= 2:
        kh, kw = present[1].shape[1:3] if len(present[1].shape) == 4 else (1, 1)
        return out_elems * kh * kw
    if name == "FULLY_CONNECTED" and len(present) >= 2:
        return out_elems * present[1].shape[-1]
    if name == "BATCH_MATMUL" and present:
        lhs = present[0].shape
        depth = lhs[-2] if options.get("adj_x") else lhs[-1]
        return out_elems * depth
    if name == "TRANSPOSE_CONV" and len(present) >= 3:
        weights, data = present[1], present[2]
        _, kh, kw, _ = weights.shape
        return data.elements * kh * kw * weights.shape[0]
    if name in _POOLS:
        return out_elems * options.get("filter_h", 1) * options.get("filter_w", 1)
    if name in _WINDOW_INPUT:
        return present[0].elements if present else out_elems
    if name in _DATA_MOVEMENT:
        return 0
    return out_elems
