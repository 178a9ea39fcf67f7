"""Per-op features for the latency model: kernel variant and units of work.

Every op of a graph is put in one kernel *variant* (``conv_1x1``, ``dw_3x3_s2``,
``fc``, ``softmax``...) that a kernel library implements with one code path,
and given its work in that variant's unit: MACs for the multiply-accumulate
ops, elements (or element x window taps for pooling, bytes for copies) for the
rest. MAC ops also count their *requantized outputs*: each output element of
an int8 conv / depthwise / fully connected op pays a fixed requantization
cost (bias, 32-bit multiplier, shift, clamp) that dominates thin layers.

Example::

    from mcunas.tflite.reader import read_graph
    feats = op_features(read_graph("model.tflite"))
    [(f.op, f.variant, f.units) for f in feats]
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

__all__ = ["MAC_VARIANTS", "VARIANTS", "OpFeatures", "classify", "op_features"]

# variant -> unit of work its cycles-per-unit coefficient multiplies
VARIANTS: dict[str, str] = {
    "conv_1x1": "MAC",
    "conv_kxk": "MAC",
    "conv_shallow": "MAC",  # kxk conv over fewer than 8 input channels (RGB / mono stems)
    "dw_3x3_s1": "MAC",
    "dw_3x3_s2": "MAC",
    "dw_kxk": "MAC",  # other kernel sizes, depth multiplier 1
    "dw_mult": "MAC",  # depth multiplier > 1 (a slower generic path in every library)
    "fc": "MAC",
    "bmm": "MAC",
    "softmax": "element",
    "add": "element",  # ADD, SUB, SQUARED_DIFFERENCE, MAXIMUM, MINIMUM (rescale both inputs)
    "mul": "element",
    "activation": "element",
    "mean": "input element",
    "transpose": "element",
    "pool_max": "output x window tap",
    "pool_avg": "output x window tap",
    "copy": "byte",  # CONCATENATION, PAD, slices, GATHER, PACK...
    "quantize": "element",
    "float": "element",  # float math inside an int8 model (e.g. RSQRT of a LayerNorm)
    "free": "none",  # RESHAPE, SQUEEZE, EXPAND_DIMS: no data moved
    "other": "element",
}
MAC_VARIANTS = frozenset(v for v, unit in VARIANTS.items() if unit == "MAC")

_ADD = {"ADD", "SUB", "SQUARED_DIFFERENCE", "MAXIMUM", "MINIMUM", "ADD_N"}
_MUL = {"MUL", "DIV"}
_ACT = {
    "RELU",
    "RELU6",
    "RELU_N1_TO_1",
    "RELU_0_TO_1",
    "LEAKY_RELU",
    "PRELU",
    "HARD_SWISH",
    "LOGISTIC",
    "TANH",
    "ELU",
    "GELU",
}
_MEAN = {"MEAN", "SUM", "REDUCE_MAX", "REDUCE_MIN", "REDUCE_PROD"}
_COPY = {
    "CONCATENATION",
    "PAD",
    "PADV2",
    "MIRROR_PAD",
    "STRIDED_SLICE",
    "SLICE",
    "SPLIT",
    "SPLIT_V",
    "GATHER",
    "PACK",
    "UNPACK",
    "TILE",
    "RESIZE_NEAREST_NEIGHBOR",
    "RESIZE_BILINEAR",
    "BROADCAST_TO",
    "SPACE_TO_DEPTH",
    "DEPTH_TO_SPACE",
}
_FREE = {"RESHAPE", "SQUEEZE", "EXPAND_DIMS", "SHAPE"}
_QUANT = {"QUANTIZE", "DEQUANTIZE"}
_SHALLOW_CHANNELS = 8


@dataclass(frozen=True)
class OpFeatures:
    """What the latency model needs to know about one op.

    ``units`` is the work in the variant's unit (see :data:`VARIANTS`),
    ``outputs`` the requantized output elements of a MAC op (0 otherwise).
    """

    index: int
    op: str
    variant: str
    units: float
    outputs: int
    macs: int
    bytes_moved: int
    weight_bytes: int


def _elements(shape: tuple[int, ...] | None) -> int:
    return int(math.prod(max(int(d), 1) for d in shape)) if shape else 0


def _first(tensors: tuple[Any, ...]) -> Any:
    return next((t for t in tensors if t is not None), None)


def _out_elements(op: Any) -> int:
    return sum(_elements(t.shape) for t in op.outputs if t is not None)


def _is_float(op: Any) -> bool:
    out = _first(op.outputs)
    return out is not None and str(out.dtype).startswith("float") and op.name != "DEQUANTIZE"


def classify(op: Any) -> str:
    """Return the kernel variant of one :class:`mcunas.tflite.reader.Op`."""
    name = op.name
    opts = op.options or {}
    if name in {"CONV_2D", "TRANSPOSE_CONV", "CONV_3D"}:
        weights = op.inputs[1] if len(op.inputs) > 1 else None
        shape = tuple(weights.shape) if weights is not None else ()
        if len(shape) == 4 and shape[1] == 1 and shape[2] == 1:
            return "conv_1x1"
        in_ch = shape[-1] if shape else _SHALLOW_CHANNELS
        return "conv_shallow" if in_ch < _SHALLOW_CHANNELS else "conv_kxk"
    if name == "DEPTHWISE_CONV_2D":
        return _depthwise_variant(op, opts)
    if name == "FULLY_CONNECTED":
        return "fc"
    if name == "BATCH_MATMUL":
        return "bmm"
    if _is_float(op) and name not in _FREE:
        return "float"
    table = (
        ({"SOFTMAX", "LOG_SOFTMAX"}, "softmax"),
        (_ADD, "add"),
        (_MUL, "mul"),
        (_ACT, "activation"),
        (_MEAN, "mean"),
        ({"TRANSPOSE"}, "transpose"),
        ({"MAX_POOL_2D"}, "pool_max"),
        ({"AVERAGE_POOL_2D"}, "pool_avg"),
        (_COPY, "copy"),
        (_QUANT, "quantize"),
        (_FREE, "free"),
    )
    return next((variant for names, variant in table if name in names), "other")


def _depthwise_variant(op: Any, opts: dict[str, Any]) -> str:
    mult = int(opts.get("depth_multiplier") or 0)
    src, weights = op.inputs[0], op.inputs[1] if len(op.inputs) > 1 else None
    if mult <= 0 and src is not None and weights is not None and src.shape and weights.shape:
        mult = max(int(weights.shape[-1]) // max(int(src.shape[-1]), 1), 1)
    if mult > 1:
        return "dw_mult"
    fh, fw = (weights.shape[1], weights.shape[2]) if weights is not None else (3, 3)
    if (fh, fw) == (3, 3):
        stride = max(int(opts.get("stride_h", 1) or 1), int(opts.get("stride_w", 1) or 1))
        return "dw_3x3_s2" if stride > 1 else "dw_3x3_s1"
    return "dw_kxk"


def _units(op: Any, variant: str) -> float:
    if VARIANTS[variant] == "MAC":
        return float(op.macs)
    if variant == "free":
        return 0.0
    if variant in {"pool_max", "pool_avg"}:
        opts = op.options or {}
        taps = int(opts.get("filter_h", 1) or 1) * int(opts.get("filter_w", 1) or 1)
        return float(_out_elements(op) * taps)
    if variant == "mean":
        return float(_elements(getattr(_first(op.inputs), "shape", ())))
    if variant == "copy":
        return float(sum(t.nbytes for t in op.outputs if t is not None))
    return float(_out_elements(op))


def op_features(graph: Any) -> list[OpFeatures]:
    """Features of every op of a :class:`mcunas.tflite.reader.Graph`, in graph order."""
    feats = []
    for op in graph.ops:
        variant = classify(op)
        feats.append(
            OpFeatures(
                index=op.index,
                op=op.name,
                variant=variant,
                units=_units(op, variant),
                outputs=_out_elements(op) if variant in MAC_VARIANTS else 0,
                macs=int(op.macs),
                bytes_moved=int(op.bytes_moved),
                weight_bytes=int(op.weight_bytes),
            )
        )
    return feats
