"""The supernet's elastic layers (Keras 3): one set of weights serves every subnet.

Choices arrive as tensors, not Python values, so one traced graph serves every
subnet of a resolution:

- **kernel**: a one-hot over the stage's kernel sizes. The 7x7 depthwise kernel
  is the weight; a 5x5 is its centre passed through a learned 25x25 transform,
  a 3x3 the centre of that 5x5 through a 9x9 one (Once-for-All's elastic
  kernel; the transforms start as identities and are shared by the channels).
  The chosen kernel is zero-padded back to 7x7: with "same" padding that
  convolution equals the small kernel's, at any stride.
- **expansion**: the number of hidden channels; the block computes with the
  first ``e x C`` of each weight only (slices taken in the graph).
- **depth**: a 0/1 gate on a repeated block's residual branch; a gated-off
  block passes its input through, as if absent.

:class:`SuperBatchNorm` normalises with batch statistics in training (the
shared running statistics of a mix of subnets would describe none of them)
and keeps statistics that a subnet's recalibration sets exactly.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from keras import layers, ops

from mcunas.space.blocks import INIT

__all__ = ["ElasticDepthwise", "ElasticMB", "SuperBatchNorm"]

BN_EPSILON = 1e-3  # keras.layers.BatchNormalization's default: extracted subnets use it


def _channels(input_shape: tuple[int | None, ...]) -> int:
    """The channels of a layer's input (its last dimension, always known here)."""
    channels = input_shape[-1]
    if channels is None:
        raise ValueError("the input's channel dimension must be known")
    return int(channels)


class SuperBatchNorm(layers.Layer):
    """Batch normalisation with statistics a subnet can recalibrate exactly."""

    def build(self, input_shape: tuple[int | None, ...]) -> None:
        """gamma, beta and the moving statistics for the input's channels."""
        c = (_channels(input_shape),)
        self.gamma = self.add_weight(shape=c, initializer="ones", name="gamma")
        self.beta = self.add_weight(shape=c, initializer="zeros", name="beta")
        self.moving_mean = self.add_weight(
            shape=c, initializer="zeros", trainable=False, name="moving_mean"
        )
        self.moving_variance = self.add_weight(
            shape=c, initializer="ones", trainable=False, name="moving_variance"
        )

    def call(self, x: Any, training: bool = False, recalibrate: bool = False, n: Any = None) -> Any:
        """Normalise the first ``n`` channels (all by default).

        Training uses the batch's statistics and keeps none: every subnet is
        recalibrated before it is scored or extracted. Recalibrating sets the
        first ``n`` moving statistics to the batch's; otherwise they are used.
        """
        n = int(self.gamma.shape[0]) if n is None else n
        if training or recalibrate:
            mean, var = ops.moments(x, axes=[0, 1, 2])
            if recalibrate:
                for stat, new in ((self.moving_mean, mean), (self.moving_variance, var)):
                    stat.assign(ops.concatenate([new, stat[n:]], axis=0))
        else:
            mean, var = self.moving_mean[:n], self.moving_variance[:n]
        return (x - mean) * ops.rsqrt(var + BN_EPSILON) * self.gamma[:n] + self.beta[:n]

    def sliced(self, channels: int) -> list[np.ndarray]:
        """Keras BatchNormalization weights (gamma, beta, mean, variance) of the first channels."""
        return [
            w.numpy()[:channels]
            for w in (self.gamma, self.beta, self.moving_mean, self.moving_variance)
        ]


class ElasticDepthwise(layers.Layer):
    """A depthwise convolution whose kernel size is chosen per call (see the module).

    Args:
        kernels: tuple[int, ...], the sizes it offers (ascending).
        unit_axes: tuple[bool, bool], sides that are 1 (a series): kernels are 1 long there.
        stride: int, its stride on both sides.
    """

    def __init__(
        self, kernels: tuple[int, ...], unit_axes: tuple[bool, bool], stride: int, **kwargs: Any
    ) -> None:
        super().__init__(**kwargs)
        self.kernels = tuple(sorted(kernels))
        self.unit_axes, self.stride = unit_axes, stride

    def _shape(self, k: int) -> tuple[int, int]:
        return (1 if self.unit_axes[0] else k, 1 if self.unit_axes[1] else k)

    def build(self, input_shape: tuple[int | None, ...]) -> None:
        """The largest kernel and one transform per smaller size."""
        kh, kw = self._shape(self.kernels[-1])
        self.channels = _channels(input_shape)
        self.kernel = self.add_weight(
            shape=(kh, kw, self.channels, 1), initializer=INIT, name="kernel"
        )
        self.transforms = []
        for k in self.kernels[:-1]:
            taps = int(np.prod(self._shape(k)))
            self.transforms.append(
                self.add_weight(shape=(taps, taps), initializer="identity", name=f"transform_{k}")
            )

    def kernel_for(self, k: int) -> Any:
        """The ``k``-sized kernel: centre crops of the largest, each through its transform."""
        current = self.kernel
        for size in reversed(self.kernels[:-1]):
            if size < k:
                break
            current = self._shrink(current, size)
        return current

    def _shrink(self, bigger: Any, k: int) -> Any:
        kh, kw = self._shape(k)
        bh, bw = int(bigger.shape[0]), int(bigger.shape[1])
        top, left = (bh - kh) // 2, (bw - kw) // 2
        centre = bigger[top : top + kh, left : left + kw]
        flat = ops.reshape(ops.transpose(centre, (2, 3, 0, 1)), (self.channels, kh * kw))
        moved = ops.matmul(flat, self.transforms[self.kernels.index(k)])
        return ops.transpose(ops.reshape(moved, (self.channels, 1, kh, kw)), (2, 3, 0, 1))

    def call(self, x: Any, choice: Any, n: Any = None) -> Any:
        """Convolve the first ``n`` channels with the kernel ``choice`` (one-hot) selects."""
        kh, kw = self._shape(self.kernels[-1])
        chosen: Any = 0.0  # a tensor after the first kernel
        for j, k in enumerate(self.kernels):
            small = self.kernel_for(k)
            sh, sw = self._shape(k)
            pad = [((kh - sh) // 2,) * 2, ((kw - sw) // 2,) * 2, (0, 0), (0, 0)]
            chosen = chosen + choice[j] * ops.pad(small, pad)
        n = self.channels if n is None else n
        return ops.depthwise_conv(x, chosen[:, :, :n, :], strides=self.stride, padding="same")


class ElasticMB(layers.Layer):
    """An inverted-residual block with elastic kernel, expansion and (if repeated) depth.

    Args:
        width: int, output channels.
        max_expansion: int, the largest expansion ratio.
        kernels: tuple[int, ...], kernel sizes offered.
        unit_axes: tuple[bool, bool], sides that are 1.
        stride: int, the block's stride.
    """

    def __init__(
        self,
        width: int,
        max_expansion: int,
        kernels: tuple[int, ...],
        unit_axes: tuple[bool, bool],
        stride: int,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.width, self.max_expansion, self.stride = width, max_expansion, stride
        self.depthwise = ElasticDepthwise(kernels, unit_axes, stride)
        self.bns = [SuperBatchNorm() for _ in range(3)]

    def build(self, input_shape: tuple[int | None, ...]) -> None:
        """The 1x1 expansion and projection at the largest expansion."""
        self.in_channels = _channels(input_shape)
        self.residual = self.stride == 1 and self.in_channels == self.width
        hidden = self.in_channels * self.max_expansion
        self.expand = self.add_weight(
            shape=(1, 1, self.in_channels, hidden), initializer=INIT, name="expand"
        )
        self.project = self.add_weight(
            shape=(1, 1, hidden, self.width), initializer=INIT, name="project"
        )

    def call(self, x: Any, ctrl: dict[str, Any], training: bool = False, **kw: Any) -> Any:
        """``ctrl``: ``kernel`` one-hot, ``hidden`` channel count, ``gate`` 0 or 1.

        A gated-off block is not computed at all (a graph conditional), so shallow
        subnets train and score faster than the deepest.
        """
        kw["training"] = training
        if not self.residual:
            return self._branch(x, ctrl, kw)
        return ops.cond(ctrl["gate"] > 0, lambda: x + self._branch(x, ctrl, kw), lambda: x)

    def _branch(self, x: Any, ctrl: dict[str, Any], kw: dict[str, Any]) -> Any:
        n = ctrl["hidden"]
        h = ops.relu(self.bns[0](ops.conv(x, self.expand[..., :n]), n=n, **kw))
        h = ops.relu(self.bns[1](self.depthwise(h, ctrl["kernel"], n), n=n, **kw))
        return self.bns[2](ops.conv(h, self.project[:, :, :n, :]), **kw)

    def subnet_weights(self, kernel: int, expansion: int) -> list[np.ndarray]:
        """Keras weights of the standalone block (expand, BN, depthwise, BN, project, BN)."""
        hidden = self.in_channels * expansion
        dw = self.depthwise.kernel_for(kernel).numpy()
        return [
            self.expand.numpy()[..., :hidden],
            *self.bns[0].sliced(hidden),
            dw[:, :, :hidden, :],
            *self.bns[1].sliced(hidden),
            self.project.numpy()[:, :, :hidden, :],
            *self.bns[2].sliced(self.width),
        ]
