"""The stage-based family (MnasNet / MCUNet TinyNAS style): stem, up to six stages, pooled head.

Global knobs: the input resolution (a downsampling factor applied inside the
model, along time only for series and spectrograms) and a width multiplier.
The stem is a convolution of any rectangular kernel and stride. Each stage
repeats one block type 1-4 times; its first block takes the stage's stride:

- ``ds``: depthwise-separable (depthwise kxk + BN + ReLU, pointwise + BN + ReLU),
  as DS-CNN and MobileNetV1;
- ``mb``: inverted residual with expansion 1-6 (MobileNetV2), residual ADD
  when the shape is kept;
- ``res``: basic residual block (two kxk convs, identity or strided 1x1
  shortcut, ADD, ReLU), as ResNet-8.

The head is MLPerf Tiny's: average pooling over the whole feature map, a
Dense softmax and a reshape (AVERAGE_POOL_2D, FULLY_CONNECTED, SOFTMAX, RESHAPE),
so the MLPerf Tiny reference models are points of this space
(:mod:`mcunas.space.reference`); for series ``st_head`` "avgmax" concatenates
a global max pooling to it (MAX_POOL_2D, CONCATENATION), as time-series CNNs
do, and "ppv" clips the map to [0, 1] before the average (MINIMUM, RELU), so
each feature is the share of steps where it fires (the proportion of positive
values that random-convolution series classifiers pool).

For long series (one pixel wide) the space cuts the time axis early and
cheaply: average pooling of the input by 2 or 4 (``st_resolution``), a stem
of up to 10 steps with stride 1, 2 or 4, and dilated depthwise or residual
convolutions (``st_dilation_i`` 1, 2 or 4 in every stride-1 block of a
stage; TFLite Micro's CONV_2D and DEPTHWISE_CONV_2D take dilation factors),
which widen the receptive field at no cost in MACs. Which of these paid under
a small budget is measured in docs/benchmarks/series.md.

Every kernel is cut to the side it slides over (a 1-wide series gets kx1
kernels), and strides are equal on both sides (TensorFlow's depthwise kernel
needs that; a side of 1 is unchanged by it).
"""

from __future__ import annotations

from typing import Any

import keras
import keras_tuner as kt
from keras import layers

import mcunas.space.blocks as blocks

__all__ = [
    "BLOCKS",
    "MAX_STAGES",
    "RESOLUTIONS",
    "WIDTH_MULTS",
    "DILATIONS",
    "HEADS",
    "build_stages",
    "declare_stages",
    "describe_stages",
    "fitting_dilation",
    "pooled_head",
]

BLOCKS = ("ds", "mb", "res")
MAX_STAGES = 6
MAX_REPEATS = 4
MAX_WIDTH = 256
RESOLUTIONS = (1, 2, 4)  # input downsampling factor along the long side(s)
WIDTH_MULTS = (1.0, 0.5, 0.75, 0.25)
STEM_KERNELS_H = (3, 5, 7, 10)
STEM_KERNELS_W = (3, 1, 4, 5)
MIN_SIDE_TO_SHRINK = 16  # the resolution knob leaves sides shorter than this alone
MIN_SIDE_TO_HALVE = 4  # a stage stride is dropped on maps whose sides are all shorter
# Series only (images and spectrograms keep the first or only value):
STEM_STRIDES = (2, 1, 4)
DILATIONS = (1, 2, 4)  # the dilation of a stage's stride-1 blocks
# global average pooling; average and max pooling concatenated; or the average of the map
# clipped to [0, 1] (the share of steps where each feature fires)
HEADS = ("avg", "avgmax", "ppv")


def declare_stages(hp: kt.HyperParameters, one_dimensional: bool) -> None:
    """Declare the family's hyperparameters (call inside its conditional scope)."""
    hp.Choice("st_resolution", list(RESOLUTIONS))
    hp.Choice("st_width_mult", list(WIDTH_MULTS))
    hp.Int("st_stem_width", 8, 64, step=8, default=16)
    hp.Choice("st_stem_kh", list(STEM_KERNELS_H))
    hp.Choice("st_stem_kw", [1] if one_dimensional else list(STEM_KERNELS_W))
    hp.Choice("st_stem_stride", list(STEM_STRIDES) if one_dimensional else [2, 1])
    hp.Choice("st_head", list(HEADS) if one_dimensional else [HEADS[0]])
    hp.Int("st_stages", 1, MAX_STAGES, default=3)
    for i in range(MAX_STAGES):
        with hp.conditional_scope("st_stages", list(range(i + 1, MAX_STAGES + 1))):
            block = hp.Choice(f"st_block_{i}", list(BLOCKS))
            hp.Int(f"st_repeats_{i}", 1, MAX_REPEATS, default=1)
            hp.Choice(f"st_kernel_{i}", [3, 5, 7])
            hp.Int(f"st_width_{i}", 8, MAX_WIDTH, step=8, default=min(MAX_WIDTH, 16 * 2**i))
            hp.Choice(f"st_stride_{i}", [2, 1] if i else [1, 2])
            hp.Choice(f"st_dilation_{i}", list(DILATIONS) if one_dimensional else [1])
            with hp.conditional_scope(f"st_block_{i}", ["mb"]):
                hp.Int(f"st_expansion_{i}", 1, 6, default=4 if block == "mb" else 1)


def _scaled(width: int, mult: float) -> int:
    return max(8, int(round(width * mult / 8)) * 8)


def _side_stride(size: tuple[int, int], stride: int) -> tuple[int, int]:
    return (stride, stride) if stride > 1 else (1, 1)


def _kernel(size: tuple[int, int], k: int | tuple[int, int]) -> tuple[int, int]:
    """A kernel no larger than the sides it slides over (a 1-wide map gets kx1)."""
    kh, kw = (k, k) if isinstance(k, int) else k
    return (max(1, min(kh, size[0])), max(1, min(kw, size[1])))


def _hw(x: keras.KerasTensor) -> tuple[int, int]:
    return int(x.shape[1]), int(x.shape[2])


def _downsample(inputs: keras.KerasTensor, factor: int) -> keras.KerasTensor:
    """Average-pool the long sides by ``factor`` (time only for series and spectrograms)."""
    pool = tuple(factor if side >= MIN_SIDE_TO_SHRINK else 1 for side in _hw(inputs))
    if pool == (1, 1):
        return inputs
    return layers.AveragePooling2D(pool_size=pool, strides=pool, padding="same")(inputs)


def fitting_dilation(size: tuple[int, int], kernel: tuple[int, int], want: int) -> tuple[int, int]:
    """The dilation per side: ``want`` where the dilated kernel still fits the side, else less."""

    def side(n: int, k: int) -> int:
        d = max(1, int(want))
        while d > 1 and (k - 1) * d + 1 > n:
            d //= 2
        return d if k > 1 else 1

    return side(size[0], kernel[0]), side(size[1], kernel[1])


def _conv(
    x: keras.KerasTensor, width: int, kernel: Any, stride: int, act: str | None, dilation: int = 1
) -> Any:
    k = _kernel(_hw(x), kernel)
    dil = fitting_dilation(_hw(x), k, dilation if stride == 1 else 1)
    return blocks.conv_bn(x, width, k, _side_stride(_hw(x), stride), act, dil)


def _res_block(
    x: keras.KerasTensor, width: int, kernel: int, stride: int, act: str, dilation: int = 1
) -> Any:
    """Basic residual block: kxk conv (stride) + BN + act, kxk conv + BN, shortcut, ADD, act."""
    shortcut = x
    h = _conv(x, width, kernel, stride, act, dilation)
    h = _conv(h, width, kernel, 1, None, dilation)
    if stride > 1 or int(x.shape[-1]) != width:
        shortcut = _conv(x, width, 1, stride, None)
    return blocks.activation(layers.Add()([h, shortcut]), act)


def _block(x: keras.KerasTensor, v: dict[str, Any], i: int, stride: int) -> keras.KerasTensor:
    kind, act = v[f"st_block_{i}"], v["activation"]
    width = _scaled(v[f"st_width_{i}"], v["st_width_mult"])
    kernel = _kernel(_hw(x), v[f"st_kernel_{i}"])
    strides = _side_stride(_hw(x), stride)
    want = int(v.get(f"st_dilation_{i}", 1)) if strides == (1, 1) else 1
    dilation = fitting_dilation(_hw(x), kernel, want)
    if kind == "ds":
        return blocks.ds_block(x, width, kernel, strides, act, dilation)
    if kind == "mb":
        return blocks.mb_block(x, width, kernel, strides, v[f"st_expansion_{i}"], act, dilation)
    return _res_block(x, width, v[f"st_kernel_{i}"], stride, act, want)


def build_stages(inputs: keras.KerasTensor, v: dict[str, Any], num_classes: int) -> Any:
    """The family's network on ``inputs`` for the active hyperparameters ``v``."""
    x = _downsample(inputs, v["st_resolution"])
    stem = _scaled(v["st_stem_width"], v["st_width_mult"])
    x = _conv(x, stem, (v["st_stem_kh"], v["st_stem_kw"]), v["st_stem_stride"], v["activation"])
    for i in range(v["st_stages"]):
        for r in range(v[f"st_repeats_{i}"]):
            stride = v[f"st_stride_{i}"] if r == 0 else 1
            if stride > 1 and max(_hw(x)) < MIN_SIDE_TO_HALVE:
                stride = 1  # keep a map of at least 2x2 for the head to pool
            x = _block(x, v, i, stride)
    return pooled_head(x, num_classes, v.get("st_head", HEADS[0]))


def pooled_head(x: keras.KerasTensor, num_classes: int, pool: str = "avg") -> keras.KerasTensor:
    """MLPerf Tiny's head: AVERAGE_POOL_2D over the map, FULLY_CONNECTED, SOFTMAX, RESHAPE.

    The classifier runs on the pooled (1, 1, C) map and its softmax output is
    reshaped to (K,). The converter keeps that RESHAPE (one before the classifier
    is folded into it), so the op kinds and counts match the reference models'.
    ``pool`` "avgmax" adds a MAX_POOL_2D over the map, concatenated to the
    average (CONCATENATION): 2C features for the classifier. ``pool`` "ppv"
    clips the map to [0, 1] before averaging (MINIMUM, RELU): each feature
    becomes the share of steps where it fires, a soft proportion of positive
    values, which the batch norm before it scales.
    """
    if pool not in HEADS:
        raise ValueError(f"st_head must be one of {HEADS}, got {pool!r}")
    if pool == "ppv":
        x = layers.ReLU(max_value=1.0)(x)
    pooled = layers.AveragePooling2D(pool_size=_hw(x))(x)
    if pool == "avgmax":
        top = layers.MaxPooling2D(pool_size=_hw(x))(x)
        pooled = layers.Concatenate(axis=-1)([pooled, top])
    x = layers.Dense(num_classes, activation="softmax")(pooled)
    return layers.Reshape((num_classes,))(x)


def describe_stages(v: dict[str, Any]) -> str:
    """e.g. ``res x1.0 stem 16 3x3/s1 | res16x1 k3 s1, res32x1 k3 s2, res64x1 k3 s2``."""
    parts = []
    for i in range(v["st_stages"]):
        kind = v[f"st_block_{i}"]
        exp = f" e{v[f'st_expansion_{i}']}" if kind == "mb" else ""
        dil = int(v.get(f"st_dilation_{i}", 1))
        parts.append(
            f"{kind}{v[f'st_width_{i}']}x{v[f'st_repeats_{i}']} k{v[f'st_kernel_{i}']}"
            f"{f' d{dil}' if dil > 1 else ''}{exp} s{v[f'st_stride_{i}']}"
        )
    res = f"/{v['st_resolution']} " if v["st_resolution"] > 1 else ""
    head = {"avgmax": " | avg+max head", "ppv": " | ppv head"}.get(v.get("st_head", HEADS[0]), "")
    return (
        f"{res}x{v['st_width_mult']:g} stem {v['st_stem_width']} "
        f"{v['st_stem_kh']}x{v['st_stem_kw']}/s{v['st_stem_stride']} | " + ", ".join(parts) + head
    )
