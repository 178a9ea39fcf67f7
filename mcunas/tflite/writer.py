"""Write a small ``.tflite`` flatbuffer from ops and tensors, without TensorFlow.

Uses the flatbuffer schema bindings shipped with the ``tflite-micro`` package
(``schema_py_generated``), imported lazily. Used to probe the runtime
(:func:`mcunas.tflite.runtime.runtime_has_op`), by :class:`mcunas.tflite.flatnet.FlatNet`
and to build test models.

Example::

    q = {"shape": [1, 4], "dtype": "int8", "scale": 0.1, "zero_point": 0}
    model_bytes = build_model([("RELU", [0], [1])], [q, dict(q)], [0], [1])
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["build_model", "one_op_model"]


def _operator_code(fb: Any, name: str) -> Any:
    code = fb.OperatorCodeT()
    if not hasattr(fb.BuiltinOperator, name):  # a custom op (TFLM's signal ops: SignalRfft)
        code.builtinCode = code.deprecatedBuiltinCode = fb.BuiltinOperator.CUSTOM
        code.customCode, code.version = name.encode(), 1
        return code
    code.builtinCode = getattr(fb.BuiltinOperator, name)
    code.deprecatedBuiltinCode = min(code.builtinCode, 127)
    code.version = 1
    return code


def _tensor(fb: Any, model: Any, index: int, spec: dict[str, Any]) -> Any:
    """One tensor of :func:`build_model`; a constant's data goes into a new model buffer."""
    t = fb.TensorT()
    t.shape = list(spec["shape"])
    t.type = getattr(fb.TensorType, spec["dtype"].upper())
    t.name = spec.get("name", f"t{index}").encode()
    t.buffer = 0
    if spec.get("data") is not None:
        buf = fb.BufferT()
        data = spec["data"]
        raw = data.tobytes() if isinstance(data, np.ndarray | np.generic) else bytes(data)
        buf.data = np.frombuffer(raw, np.uint8)  # packed as one vector, not byte by byte
        model.buffers.append(buf)
        t.buffer = len(model.buffers) - 1
    if spec.get("scale") is not None:
        t.quantization = _quantization(fb, spec)
    return t


def build_model(
    ops: list[tuple[Any, ...]],
    tensors: list[dict[str, Any]],
    inputs: list[int],
    outputs: list[int],
    description: str = "",
) -> bytes:
    """Build a small ``.tflite`` flatbuffer (no TensorFlow needed).

    Args:
        ops: ``(builtin op name, input indices, output indices)``, optionally
            followed by the builtin options' table name (e.g. ``"Conv2DOptions"``)
            and a dict of its fields. A name that is no builtin op is a custom
            op (e.g. ``"SignalRfft"``); its options are ``"custom"`` followed by
            the flexbuffer bytes.
        tensors: dicts with ``shape``, ``dtype`` ("int8", "float32", ...), and
            optionally ``data`` (bytes or an array: a constant), ``scale`` and
            ``zero_point`` (scalars, or lists for per-channel quantization) and
            ``qdim`` (the quantized dimension).
        inputs: graph input tensor indices.
        outputs: graph output tensor indices.
        description: the model's description string.

    Returns:
        The model bytes. Used to probe the runtime, for the calibration suite
        and to build test models.
    """
    import flatbuffers
    from tflite_micro.tensorflow.lite.micro.python import schema_py_generated as fb

    model = fb.ModelT()
    model.version, model.description = 3, description.encode()
    names = list(dict.fromkeys(op[0] for op in ops))
    model.operatorCodes = [_operator_code(fb, name) for name in names]
    model.buffers = [fb.BufferT()]
    sub = fb.SubGraphT()
    sub.tensors = [_tensor(fb, model, i, spec) for i, spec in enumerate(tensors)]
    sub.inputs, sub.outputs = list(inputs), list(outputs)
    sub.operators = [_operator(fb, op, names) for op in ops]
    model.subgraphs = [sub]
    builder = flatbuffers.Builder(4096)
    builder.Finish(model.Pack(builder), file_identifier=b"TFL3")
    return bytes(builder.Output())


def _as_list(value: Any) -> list[Any]:
    return list(value) if isinstance(value, list | tuple) else [value]


def _quantization(fb: Any, spec: dict[str, Any]) -> Any:
    q = fb.QuantizationParametersT()  # numpy vectors: packed whole, not element by element
    q.scale = np.asarray(_as_list(spec["scale"]), np.float32)
    zero = spec.get("zero_point")
    q.zeroPoint = (
        np.zeros(len(q.scale), np.int64) if zero is None else np.asarray(_as_list(zero), np.int64)
    )
    q.quantizedDimension = int(spec.get("qdim", 0))
    return q


def _operator(fb: Any, spec: tuple[Any, ...], names: list[str]) -> Any:
    name, ins, outs, *rest = spec
    op = fb.OperatorT()
    op.opcodeIndex, op.inputs, op.outputs = names.index(name), list(ins), list(outs)
    if rest and rest[0] == "custom":
        op.customOptions = np.frombuffer(bytes(rest[1]), np.uint8)
        op.customOptionsFormat = fb.CustomOptionsFormat.FLEXBUFFERS
    elif rest and rest[0]:
        opt_name, fields = rest[0], rest[1] if len(rest) > 1 else {}
        options = getattr(fb, opt_name + "T")()
        for key, value in fields.items():
            setattr(options, key, value)
        op.builtinOptionsType = getattr(fb.BuiltinOptions, opt_name)
        op.builtinOptions = options
    return op


def one_op_model(op_name: str) -> bytes:
    """A model of one int8 ``op_name`` on a [1, 4] tensor: enough for the runtime to look it up."""
    q = {"shape": [1, 4], "dtype": "int8", "scale": 0.1, "zero_point": 0}
    return build_model([(op_name, [0], [1])], [dict(q), dict(q)], [0], [1])
