"""A small TFLite flatbuffer graph builder, without TensorFlow.

Int8 activations, per-channel int8 conv weights and int32 biases with random
values: the layout the TFLite converter produces, so the runtime plans,
sizes and dispatches these models as it does converted ones. Used by the
calibration suite (:mod:`mcunas.cost.fit.suite`) and the supernet's cost check
(:mod:`mcunas.supernet.costgraph`).
"""

from __future__ import annotations

import zlib

import numpy as np

__all__ = ["ACT_SCALE", "FlatNet"]

ACT_SCALE = 0.05  # activation scale of every int8 tensor (softmax output excepted)
Pair = int | tuple[int, int]


def _pair(value: Pair) -> tuple[int, int]:
    return (value, value) if isinstance(value, int) else (int(value[0]), int(value[1]))


class FlatNet:
    """A tiny flatbuffer graph builder: int8 activations, constant weights, builtin options."""

    def __init__(self, name: str) -> None:
        self.rng = np.random.default_rng(zlib.crc32(name.encode()))
        self.tensors: list[dict] = []
        self.ops: list[tuple[str, list[int], list[int], str | None, dict]] = []

    def tensor(
        self,
        shape: list[int],
        dtype: str = "int8",
        data: np.ndarray | None = None,
        scale: list[float] | None = None,
        zero_point: list[int] | None = None,
        qdim: int = 0,
    ) -> int:
        """Add a tensor (a constant when ``data`` is given); return its index."""
        self.tensors.append(
            dict(
                shape=list(shape),
                dtype=dtype,
                data=data,
                qdim=qdim,
                scale=[ACT_SCALE] if scale is None and dtype == "int8" else scale,
                zero_point=zero_point,
            )
        )
        return len(self.tensors) - 1

    def shape(self, t: int) -> list[int]:
        """The shape of tensor ``t``."""
        return self.tensors[t]["shape"]

    def op(
        self,
        name: str,
        ins: list[int],
        out_shape: list[int],
        options: str | None = None,
        out: int | None = None,
        **fields: object,
    ) -> int:
        """Add an op writing a new tensor of ``out_shape`` (or ``out``); return it."""
        out = self.tensor(out_shape) if out is None else out
        self.ops.append((name, ins, [out], options, fields))
        return out

    def _weights(self, shape: list[int], channels: int, qdim: int) -> tuple[int, int]:
        w = self.rng.integers(-127, 128, size=shape, dtype=np.int8)
        w_scale = list(self.rng.uniform(0.002, 0.02, size=channels))
        wt = self.tensor(shape, data=w, scale=w_scale, zero_point=[0] * channels, qdim=qdim)
        bias = self.rng.integers(-2000, 2000, size=channels, dtype=np.int32)
        bt = self.tensor(
            [channels], "int32", bias, [ACT_SCALE * s for s in w_scale], [0] * channels
        )
        return wt, bt

    # -- layers ---------------------------------------------------------------------
    def conv(self, x: int, out_ch: int, k: Pair, stride: int = 1, relu: bool = True) -> int:
        """CONV_2D, "same" padding, fused ReLU unless ``relu`` is False."""
        _, h, w, c = self.shape(x)
        kh, kw = _pair(k)
        wt, bt = self._weights([out_ch, kh, kw, c], out_ch, 0)
        oh, ow = -(-h // stride), -(-w // stride)
        return self.op(
            "CONV_2D",
            [x, wt, bt],
            [1, oh, ow, out_ch],
            "Conv2DOptions",
            padding=0,
            strideW=stride,
            strideH=stride,
            fusedActivationFunction=3 if relu else 0,
        )

    def dwconv(self, x: int, k: Pair, stride: int = 1, mult: int = 1) -> int:
        """DEPTHWISE_CONV_2D, "same" padding, fused ReLU."""
        _, h, w, c = self.shape(x)
        kh, kw = _pair(k)
        wt, bt = self._weights([1, kh, kw, c * mult], c * mult, 3)
        oh, ow = -(-h // stride), -(-w // stride)
        return self.op(
            "DEPTHWISE_CONV_2D",
            [x, wt, bt],
            [1, oh, ow, c * mult],
            "DepthwiseConv2DOptions",
            padding=0,
            strideW=stride,
            strideH=stride,
            depthMultiplier=mult,
            fusedActivationFunction=3,
        )

    def fc(self, x: int, units: int) -> int:
        """FULLY_CONNECTED (keeping the input's leading dimensions)."""
        shape = self.shape(x)
        wt, bt = self._weights([units, shape[-1]], 1, 0)
        self.tensors[bt]["shape"] = [units]
        self.tensors[bt]["data"] = self.rng.integers(-2000, 2000, size=units, dtype=np.int32)
        out_shape = [*shape[:-1], units] if len(shape) > 2 else [1, units]
        return self.op(
            "FULLY_CONNECTED",
            [x, wt, bt],
            out_shape,
            "FullyConnectedOptions",
            keepNumDims=len(shape) > 2,
        )

    def pool(self, x: int, kind: str, k: Pair, stride: Pair, same: bool = False) -> int:
        """A 2-D pooling op ("valid" padding unless ``same``)."""
        _, h, w, c = self.shape(x)
        (kh, kw), (sh, sw) = _pair(k), _pair(stride)
        if same:
            oh, ow = -(-h // sh), -(-w // sw)
        else:
            oh, ow = (h - kh) // sh + 1, (w - kw) // sw + 1
        return self.op(
            kind,
            [x],
            [1, oh, ow, c],
            "Pool2DOptions",
            padding=0 if same else 1,
            strideW=sw,
            strideH=sh,
            filterWidth=kw,
            filterHeight=kh,
        )

    def const_i32(self, values: list[int]) -> int:
        """A constant int32 vector."""
        return self.tensor([len(values)], "int32", np.array(values, np.int32), None)

    def mean(self, x: int) -> int:
        """MEAN over height and width, dimensions kept."""
        _, _, _, c = self.shape(x)
        return self.op(
            "MEAN", [x, self.const_i32([1, 2])], [1, 1, 1, c], "ReducerOptions", keepDims=True
        )

    def transpose(self, x: int) -> int:
        """TRANSPOSE of the last two dimensions."""
        b, n, k = self.shape(x)
        return self.op("TRANSPOSE", [x, self.const_i32([0, 2, 1])], [b, k, n])

    def bmm(self, a: int, b: int) -> int:
        """BATCH_MATMUL of ``a`` with ``b`` transposed."""
        sa, sb = self.shape(a), self.shape(b)
        return self.op(
            "BATCH_MATMUL", [a, b], [sa[0], sa[1], sb[1]], "BatchMatMulOptions", adjY=True
        )

    def softmax(self, x: int) -> int:
        """SOFTMAX with the converter's output quantization (1/256, -128)."""
        out = self.tensor(self.shape(x), scale=[1 / 256], zero_point=[-128])
        return self.op("SOFTMAX", [x], [], "SoftmaxOptions", out=out, beta=1.0)

    def binary(self, kind: str, a: int, b: int) -> int:
        """An element-wise op of two tensors (ADD, MUL, SQUARED_DIFFERENCE)."""
        opts = {"ADD": "AddOptions", "MUL": "MulOptions"}.get(kind, "SquaredDifferenceOptions")
        return self.op(kind, [a, b], self.shape(a), opts)

    def finish(self, inputs: list[int], outputs: list[int], description: str = "") -> bytes:
        """The model's ``.tflite`` bytes with these graph inputs and outputs."""
        from mcunas.tflite.writer import build_model

        return build_model(list(self.ops), list(self.tensors), inputs, outputs, description)
