"""A subnet's INT8 graph written directly, for its cost check in milliseconds.

The TFLite converter takes seconds per model, too slow for the thousands of
subnets an evolutionary search looks at. Costs (ops, shapes, tensor sizes,
arena, flash, latency) depend on the architecture alone, so the cost check
profiles the graph the converter would produce, written as a flatbuffer with
random weights: the same ops in the same order with the same shapes and
quantization layout (``tests/test_supernet.py`` compares the two). Accuracy
always comes from the real conversion of the trained weights.
"""

from __future__ import annotations

from mcunas.supernet.spec import SHRINK_FROM, Subnet, SupernetSpec
from mcunas.tflite.flatnet import FlatNet

__all__ = ["subnet_tflite"]


def subnet_tflite(spec: SupernetSpec, net: Subnet) -> bytes:
    """The ``.tflite`` bytes of ``net``'s INT8 graph (random weights, converter layout)."""
    g = FlatNet(net.key())
    x = inputs = g.tensor([1, *spec.input_shape])
    x = _downsample(g, x, net.resolution)
    x = g.conv(x, spec.stem_width, spec.stem_kernel, spec.stem_stride)
    unit = (spec.input_shape[0] == 1, spec.input_shape[1] == 1)
    for i, stage in enumerate(spec.stages):
        k = net.kernels[i]
        kernel = (1 if unit[0] else k, 1 if unit[1] else k)
        for r in range(net.depths[i]):
            x = _mb(g, x, stage.width, kernel, stage.stride if r == 0 else 1, net.expansions[i])
    _, h, w, c = g.shape(x)
    x = g.pool(x, "AVERAGE_POOL_2D", (h, w), (h, w))
    x = g.softmax(g.fc(x, spec.num_classes))
    shape = g.const_i32([1, spec.num_classes])
    out = g.op("RESHAPE", [x, shape], [1, spec.num_classes], "ReshapeOptions")
    return g.finish([inputs], [out], f"mcunas subnet {net.key()}")


def _downsample(g: FlatNet, x: int, factor: int) -> int:
    _, h, w, _ = g.shape(x)
    pool = (factor if h >= SHRINK_FROM else 1, factor if w >= SHRINK_FROM else 1)
    if factor == 1 or pool == (1, 1):
        return x
    return g.pool(x, "AVERAGE_POOL_2D", pool, pool, same=True)


def _mb(g: FlatNet, x: int, width: int, kernel: tuple[int, int], stride: int, e: int) -> int:
    """Expand 1x1 (ReLU), depthwise (ReLU), linear project 1x1, ADD when shapes match."""
    channels = g.shape(x)[-1]
    h = g.conv(x, channels * e, 1)
    h = g.dwconv(h, kernel, stride)
    h = g.conv(h, width, 1, relu=False)
    if stride == 1 and channels == width:
        h = g.binary("ADD", x, h)
    return h
