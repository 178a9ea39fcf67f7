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
- **series**: a time shift of up to 10% of the steps (edge values repeated),
  an amplitude jitter of N(1, 0.1) per channel, and Gaussian noise of 2% of
  the series' standard deviation.

Sides shorter than :data:`MIN_SIDE` are never shifted or cropped.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["augmenter"]

MIN_SIDE = 4
SHIFT = 0.125  # image shift, share of the side
TIME_SHIFT = 0.1
NOISE_PROB = 0.8
NOISE_VOLUME = 0.1
JITTER = 0.1
SERIES_NOISE = 0.02


def _image(flip: bool) -> Any:
    import tensorflow as tf

    def fn(x: Any) -> Any:
        n, h, w = tf.shape(x)[0], int(x.shape[1]), int(x.shape[2])

        def uniform(lo: float, hi: float) -> Any:
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


def _time_shift(x: Any, fill: Any | None) -> Any:
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


def _audio(noise: np.ndarray | None) -> Any:
    import tensorflow as tf

    bank = None if noise is None or not len(noise) else tf.constant(noise, tf.float32)

    def fn(x: Any) -> Any:
        x = _time_shift(x, tf.reduce_min(x, axis=[1, 2, 3], keepdims=True))
        if bank is None:
            return x
        n = tf.shape(x)[0]
        picked = tf.gather(bank, tf.random.uniform([n], 0, int(bank.shape[0]), dtype=tf.int32))
        volume = tf.random.uniform([n, 1, 1, 1], 0.0, NOISE_VOLUME)
        mixed = tf.math.log(tf.exp(x) + volume * volume * tf.exp(picked))
        return tf.where(tf.random.uniform([n, 1, 1, 1]) < NOISE_PROB, mixed, x)

    return fn


def _series() -> Any:
    import tensorflow as tf

    def fn(x: Any) -> Any:
        x = _time_shift(x, None)
        n, channels = tf.shape(x)[0], int(x.shape[-1])
        x = x * tf.random.normal([n, 1, 1, channels], 1.0, JITTER)
        scale = tf.math.reduce_std(x, axis=[1, 2, 3], keepdims=True) * SERIES_NOISE
        return x + tf.random.normal(tf.shape(x)) * scale

    return fn


def augmenter(kind: str, mode: str, noise: np.ndarray | None = None) -> Any | None:
    """The batch map for ``kind`` under ``mode`` ("auto", "flip", "off"); None for none.

    The map takes a batch (B, H, W, C) and draws every random choice per sample.
    """
    if mode == "off":
        return None
    if kind == "audio":
        return _audio(noise)
    if kind == "series":
        return _series()
    return _image(flip=mode == "flip")
