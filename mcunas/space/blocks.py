"""Building blocks of the search space, each made of layers TFLite Micro runs in INT8.

Every block uses ReLU-family activations only (GELU has no TFLite Micro kernel),
BatchNormalization where a conv precedes it (it folds into the conv weights at
conversion) and ``padding="same"`` so any input size works. Functions take and
return Keras tensors of a functional model.
"""

from __future__ import annotations

import keras
from keras import layers

ACTIVATIONS = ("relu", "relu6")
NORMS = ("none", "batch", "layer")
MIN_SIDE_FOR_STRIDE = 4  # never downsample a side below 2
FORCE_STRIDE_ABOVE = 24  # sides longer than this are always downsampled
# He init keeps activations from shrinking layer after layer in ReLU stacks: an untrained
# candidate's logits would otherwise collapse below TFLite Micro's softmax input scale floor
# (2**-26), and the pre-training cost check could not load it.
INIT = "he_normal"
BN_MOMENTUM = 0.9  # short NAS trainings: moving statistics must settle within a few epochs

__all__ = [
    "ACTIVATIONS",
    "NORMS",
    "PositionEmbedding",
    "activation",
    "conv_bn",
    "ds_block",
    "head",
    "mb_block",
    "plan_stride",
    "transformer_block",
]


@keras.saving.register_keras_serializable(package="mcunas")
class PositionEmbedding(layers.Layer):
    """Adds a learned position vector to each token: one constant ADD after conversion."""

    def build(self, input_shape: tuple[int | None, ...]) -> None:
        """Create the (1, tokens, features) table."""
        self.table = self.add_weight(
            name="table",
            shape=(1, int(input_shape[1]), int(input_shape[2])),
            initializer=keras.initializers.RandomNormal(stddev=0.02),
        )

    def call(self, x: keras.KerasTensor) -> keras.KerasTensor:
        """Add the table to the tokens."""
        return x + self.table


def plan_stride(size: tuple[int, int], wanted: bool) -> tuple[int, int]:
    """The stride of a downsampling step that suits small inputs.

    The map is halved when downsampling is wanted and a side is at least 4
    long, or always when a side is longer than 24 (large inputs must shrink for
    MCU memory). Both sides get the same stride: TensorFlow's depthwise kernel
    needs equal strides, and with "same" padding a side of 1 (a series) stays 1.

    Args:
        size: tuple[int, int], current (height, width).
        wanted: bool, whether the search asked for a stride of 2 here.

    Returns:
        (stride_h, stride_w), each 1 or 2.
    """
    halve = any(
        side > FORCE_STRIDE_ABOVE or (wanted and side >= MIN_SIDE_FOR_STRIDE) for side in size
    )
    return (2, 2) if halve else (1, 1)


def activation(x: keras.KerasTensor, name: str) -> keras.KerasTensor:
    """A ReLU-family activation layer (GELU and friends have no TFLite Micro kernel)."""
    if name not in ACTIVATIONS:
        raise ValueError(f"activation must be one of {ACTIVATIONS}, got {name!r}")
    return layers.Activation(name)(x)


def conv_bn(
    x: keras.KerasTensor,
    filters: int,
    kernel: int | tuple[int, int],
    stride: tuple[int, int] = (1, 1),
    act: str | None = "relu",
    dilation: tuple[int, int] = (1, 1),
) -> keras.KerasTensor:
    """Conv2D (no bias) + BatchNormalization (+ activation); dilation only at stride 1."""
    x = layers.Conv2D(
        filters,
        kernel,
        strides=stride,
        padding="same",
        dilation_rate=dilation,
        use_bias=False,
        kernel_initializer=INIT,
    )(x)
    x = layers.BatchNormalization(momentum=BN_MOMENTUM)(x)
    return activation(x, act) if act else x


def _dw_bn(
    x: keras.KerasTensor,
    kernel: int | tuple[int, int],
    stride: tuple[int, int],
    act: str,
    dilation: tuple[int, int] = (1, 1),
) -> keras.KerasTensor:
    x = layers.DepthwiseConv2D(
        kernel,
        strides=stride,
        padding="same",
        dilation_rate=dilation,
        use_bias=False,
        depthwise_initializer=INIT,
    )(x)
    x = layers.BatchNormalization(momentum=BN_MOMENTUM)(x)
    return activation(x, act)


def ds_block(
    x: keras.KerasTensor,
    width: int,
    kernel: int | tuple[int, int],
    stride: tuple[int, int],
    act: str,
    dilation: tuple[int, int] = (1, 1),
) -> keras.KerasTensor:
    """Depthwise-separable block: depthwise kxk + BN + act, pointwise 1x1 + BN + act."""
    x = _dw_bn(x, kernel, stride, act, dilation)
    return conv_bn(x, width, 1, act=act)


def mb_block(
    x: keras.KerasTensor,
    width: int,
    kernel: int | tuple[int, int],
    stride: tuple[int, int],
    expansion: int,
    act: str,
    dilation: tuple[int, int] = (1, 1),
) -> keras.KerasTensor:
    """Inverted residual (MobileNetV2): expand 1x1, depthwise kxk, linear project 1x1.

    The residual ADD is used when the stride is 1 and the width is unchanged.
    """
    inputs = x
    channels = int(x.shape[-1])
    if expansion > 1:
        x = conv_bn(x, channels * expansion, 1, act=act)
    x = _dw_bn(x, kernel, stride, act, dilation)
    x = conv_bn(x, width, 1, act=None)
    if stride == (1, 1) and channels == width:
        x = layers.Add()([inputs, x])
    return x


def _norm(x: keras.KerasTensor, norm: str) -> keras.KerasTensor:
    if norm == "batch":
        return layers.BatchNormalization(momentum=BN_MOMENTUM)(x)
    if norm == "layer":
        return layers.LayerNormalization(epsilon=1e-5)(x)
    if norm == "none":
        return x
    raise ValueError(f"norm must be one of {NORMS}, got {norm!r}")


def transformer_block(
    x: keras.KerasTensor, heads: int, ffn: int, norm: str, act: str
) -> keras.KerasTensor:
    """Pre-norm encoder block: x + MHA(norm(x)), then x + FFN(norm(x)).

    ``norm`` is "none", "batch" (folds into MUL/ADD, stays integer-only) or
    "layer" (MEAN/RSQRT/...: the converted model gets float ops).
    """
    d_model = int(x.shape[-1])
    h = _norm(x, norm)
    h = layers.MultiHeadAttention(num_heads=heads, key_dim=d_model // heads)(h, h)
    x = layers.Add()([x, h])
    h = _norm(x, norm)
    h = layers.Dense(ffn, activation=act)(h)
    h = layers.Dense(d_model)(h)
    return layers.Add()([x, h])


def head(x: keras.KerasTensor, num_classes: int, norm: str = "none") -> keras.KerasTensor:
    """(Final token norm +) global average pooling + Dense softmax classifier."""
    if len(x.shape) == 3:
        x = _norm(x, norm)
        x = layers.GlobalAveragePooling1D()(x)
    else:
        x = layers.GlobalAveragePooling2D()(x)
    return layers.Dense(num_classes, activation="softmax")(x)
