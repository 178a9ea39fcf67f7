"""Training-time augmentation by input kind, as ``tf.data`` maps over whole batches.

- **image**: a random crop of 80-100% of the area, placed with a shift of up to
  1/8 of each side (the uncovered border reads zero), resized back; with
  ``--augment flip`` also a random horizontal flip (off by default: digits
  and text are not mirror-symmetric).
- **audio** (log-mel spectrograms): a time shift of up to 10% of the frames
  (the uncovered frames read as the clip's quietest value), and, when the
  dataset has background-noise windows, a noise window mixed in at a random
  volume up to 0.1 of its amplitude with probability 0.8. Mixing happens in
  the power domain: ``ln(exp(x) + v^2 * exp(n))``.
- **series**: by default a time shift of up to 10% of the steps (edge values
  repeated), an amplitude jitter of N(1, 0.1) per channel, and Gaussian noise
  of 2% of the series' standard deviation (``shift``, ``jitter``, ``noise``).
  Two more can be chosen (:data:`SERIES_OPS`): ``slice``, window slicing (a
  random window of 90% of the steps stretched back to the full length, Le
  Guennec et al. 2016), and ``warp``, a smooth time warp (the local speed
  drawn at :data:`WARP_KNOTS` knots from N(1, 0.2), interpolated, and the
  series resampled along its integral; Um et al. 2017). Both resample
  linearly between steps.

Sides shorter than :data:`MIN_SIDE` are never shifted or cropped.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import tensorflow as tf

__all__ = ["DEFAULT_SERIES_OPS", "SERIES_OPS", "BatchMap", "SampleMap", "augmenter", "mixup"]

# A map over a batch of inputs (B, H, W, C), as ``tf.data`` calls it.
BatchMap = Callable[["tf.Tensor"], "tf.Tensor"]
# A map over a batch of (inputs, one-hot labels, sample weights).
SampleMap = Callable[
    ["tf.Tensor", "tf.Tensor", "tf.Tensor"], tuple["tf.Tensor", "tf.Tensor", "tf.Tensor"]
]

MIN_SIDE = 4
SHIFT = 0.125  # image shift, share of the side
TIME_SHIFT = 0.1
NOISE_PROB = 0.8
NOISE_VOLUME = 0.1
JITTER = 0.1
SERIES_NOISE = 0.02
SLICE = 0.9  # window slicing keeps this share of the steps
WARP_KNOTS = 4
WARP_SPEED_SD = 0.2
SERIES_OPS = ("shift", "jitter", "noise", "slice", "warp")
DEFAULT_SERIES_OPS = ("shift", "jitter", "noise")


def _image(flip: bool) -> BatchMap:
    import tensorflow as tf

    def fn(x: tf.Tensor) -> tf.Tensor:
        n, h, w = tf.shape(x)[0], int(x.shape[1]), int(x.shape[2])

        def uniform(lo: float, hi: float) -> tf.Tensor:
            return tf.random.uniform([n], lo, hi)

        side = tf.sqrt(uniform(0.8, 1.0))
        sy = side if h >= MIN_SIDE else tf.ones([n])
        sx = side if w >= MIN_SIDE else tf.ones([n])
        y0 = uniform(0.0, 1.0) * (1.0 - sy) + (uniform(-SHIFT, SHIFT) if h >= MIN_SIDE else 0.0)
        x0 = uniform(0.0, 1.0) * (1.0 - sx) + (uniform(-SHIFT, SHIFT) if w >= MIN_SIDE else 0.0)
        boxes = tf.stack([y0, x0, y0 + sy, x0 + sx], axis=1)
        out = tf.image.crop_and_resize(x, boxes, tf.range(n), [h, w], extrapolation_value=0.0)
        if not flip:
            return out
        mirror = tf.reshape(uniform(0.0, 1.0) < 0.5, [-1, 1, 1, 1])
        return tf.where(mirror, tf.reverse(out, axis=[2]), out)

    return fn


def _time_shift(x: tf.Tensor, fill: tf.Tensor | None) -> tf.Tensor:
    """Shift each sample along time (axis 1) by up to TIME_SHIFT of its length.

    Uncovered steps read ``fill`` (one value per sample, shape (B, 1, 1, 1)), or
    repeat the edge value when ``fill`` is None.
    """
    import tensorflow as tf

    steps = int(x.shape[1])
    most = int(steps * TIME_SHIFT)
    if most < 1:
        return x
    shift = tf.random.uniform([tf.shape(x)[0], 1], -most, most + 1, dtype=tf.int32)
    source = tf.range(steps)[None, :] - shift  # (B, T): the step each output step reads
    out = tf.gather(x, tf.clip_by_value(source, 0, steps - 1), batch_dims=1)
    if fill is None:
        return out
    outside = tf.logical_or(source < 0, source >= steps)[:, :, None, None]
    return tf.where(outside, fill, out)


def _audio(noise: np.ndarray | None) -> BatchMap:
    import tensorflow as tf

    bank = None if noise is None or not len(noise) else tf.constant(noise, tf.float32)

    def fn(x: tf.Tensor) -> tf.Tensor:
        x = _time_shift(x, tf.reduce_min(x, axis=[1, 2, 3], keepdims=True))
        if bank is None:
            return x
        n = tf.shape(x)[0]
        picked = tf.gather(bank, tf.random.uniform([n], 0, int(bank.shape[0]), dtype=tf.int32))
        volume = tf.random.uniform([n, 1, 1, 1], 0.0, NOISE_VOLUME)
        mixed = tf.math.log(tf.exp(x) + volume * volume * tf.exp(picked))
        return tf.where(tf.random.uniform([n, 1, 1, 1]) < NOISE_PROB, mixed, x)

    return fn


def _resample(x: tf.Tensor, positions: tf.Tensor) -> tf.Tensor:
    """``x`` (B, T, W, C) read at fractional time ``positions`` (B, T), linearly interpolated."""
    import tensorflow as tf

    steps = int(x.shape[1])
    positions = tf.clip_by_value(positions, 0.0, float(steps - 1))
    lo = tf.cast(tf.floor(positions), tf.int32)
    hi = tf.minimum(lo + 1, steps - 1)
    frac = (positions - tf.cast(lo, positions.dtype))[:, :, None, None]
    a, b = tf.gather(x, lo, batch_dims=1), tf.gather(x, hi, batch_dims=1)
    return a + (b - a) * frac


def _window_slice(x: tf.Tensor) -> tf.Tensor:
    """A random window of SLICE of the steps, stretched back to the full length."""
    import tensorflow as tf

    steps = int(x.shape[1])
    span = SLICE * (steps - 1)
    start = tf.random.uniform([tf.shape(x)[0], 1], 0.0, (steps - 1) - span)
    return _resample(x, start + tf.linspace(0.0, span, steps)[None, :])


def _time_warp(x: tf.Tensor) -> tf.Tensor:
    """Resample along the integral of a smooth random speed (WARP_KNOTS knots)."""
    import tensorflow as tf

    steps, n = int(x.shape[1]), tf.shape(x)[0]
    knots = tf.maximum(tf.random.normal([n, WARP_KNOTS, 1, 1], 1.0, WARP_SPEED_SD), 0.2)
    speed = tf.image.resize(knots, [steps, 1], method="bilinear")[:, :, 0, 0]
    walked = tf.cumsum(speed, axis=1) - speed[:, :1]
    return _resample(x, walked / walked[:, -1:] * float(steps - 1))


def _series(ops: tuple[str, ...] = DEFAULT_SERIES_OPS) -> BatchMap:
    import tensorflow as tf

    def fn(x: tf.Tensor) -> tf.Tensor:
        long_enough = int(x.shape[1]) >= MIN_SIDE
        if long_enough and "warp" in ops:
            x = _time_warp(x)
        if long_enough and "slice" in ops:
            x = _window_slice(x)
        if "shift" in ops:
            x = _time_shift(x, None)
        n, channels = tf.shape(x)[0], int(x.shape[-1])
        if "jitter" in ops:
            x = x * tf.random.normal([n, 1, 1, channels], 1.0, JITTER)
        if "noise" in ops:
            scale = tf.math.reduce_std(x, axis=[1, 2, 3], keepdims=True) * SERIES_NOISE
            x = x + tf.random.normal(tf.shape(x)) * scale
        return x

    return fn


def mixup(alpha: float) -> SampleMap:
    """A batch map over (x, one-hot y, weight) mixing each sample with another of the batch.

    The share of the other sample is min(l, 1 - l) for l ~ Beta(alpha, alpha)
    (Zhang et al. 2018), the same for input, label and sample weight.
    """
    import tensorflow as tf

    def fn(x: tf.Tensor, y: tf.Tensor, w: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor, tf.Tensor]:
        n = tf.shape(x)[0]
        a = tf.random.gamma([n], alpha)
        b = tf.random.gamma([n], alpha)
        share = a / (a + b + 1e-12)
        share = tf.minimum(share, 1.0 - share)
        other = tf.random.shuffle(tf.range(n))
        sx = tf.reshape(share, [-1] + [1] * (len(x.shape) - 1))
        mixed_x = x * (1.0 - sx) + tf.gather(x, other) * sx
        mixed_y = y * (1.0 - share[:, None]) + tf.gather(y, other) * share[:, None]
        mixed_w = w * (1.0 - share) + tf.gather(w, other) * share
        return mixed_x, mixed_y, mixed_w

    return fn


def augmenter(
    kind: str,
    mode: str,
    noise: np.ndarray | None = None,
    series_ops: tuple[str, ...] = DEFAULT_SERIES_OPS,
) -> BatchMap | None:
    """The batch map for ``kind`` under ``mode`` ("auto", "flip", "off"); None for none.

    The map takes a batch (B, H, W, C) and draws every random choice per sample.
    ``series_ops`` (a subset of :data:`SERIES_OPS`) are the series' operations.
    """
    if mode == "off":
        return None
    if kind == "audio":
        return _audio(noise)
    if kind == "series":
        unknown = set(series_ops) - set(SERIES_OPS)
        if unknown:
            raise ValueError(f"unknown series augmentation {sorted(unknown)}; know {SERIES_OPS}")
        return _series(tuple(series_ops))
    return _image(flip=mode == "flip")
