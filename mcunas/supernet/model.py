"""The supernet as a Keras model, and a subnet's controls and standalone weights.

``Supernet(spec)(x, controls(spec, subnet), resolution=subnet.resolution)``
runs one subnet with the shared weights; :func:`standalone_weights` gives the
weights of that subnet's own Keras model (built by the stage family) in its
layer order, so extraction is ``model.set_weights(standalone_weights(...))``.
"""

from __future__ import annotations

from typing import Any

import keras
import numpy as np
from keras import layers, ops

from mcunas.space.blocks import INIT
from mcunas.supernet.layers import ElasticMB, SuperBatchNorm
from mcunas.supernet.spec import EXPANSIONS, SHRINK_FROM, Subnet, SupernetSpec

__all__ = ["Supernet", "controls", "standalone_weights"]


class Supernet(keras.Model):
    """Stem, four stages of elastic inverted-residual blocks, pooled Dense head (logits)."""

    def __init__(self, spec: SupernetSpec, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.spec = spec
        unit = (spec.input_shape[0] == 1, spec.input_shape[1] == 1)
        self.stem = layers.Conv2D(
            spec.stem_width,
            spec.stem_kernel,
            strides=spec.stem_stride,
            padding="same",
            use_bias=False,
            kernel_initializer=INIT,
        )
        self.stem_bn = SuperBatchNorm()
        top = max(EXPANSIONS)
        self.stage_blocks = [
            [
                ElasticMB(stage.width, top, stage.kernels, unit, stage.stride if r == 0 else 1)
                for r in range(spec.max_depth)
            ]
            for stage in spec.stages
        ]
        self.head = layers.Dense(spec.num_classes)

    def call(
        self,
        x: Any,
        ctrl: dict[str, Any],
        resolution: int = 1,
        training: bool = False,
        recalibrate: bool = False,
    ) -> Any:
        """The logits of the subnet ``ctrl`` describes, on inputs at ``resolution``."""
        kw = {"training": training, "recalibrate": recalibrate}
        x = _downsample(x, resolution)
        x = ops.relu(self.stem_bn(self.stem(x), **kw))
        for i, blocks in enumerate(self.stage_blocks):
            for r, block in enumerate(blocks):
                x = block(x, ctrl[f"s{i}b{r}"], **kw)
        return self.head(ops.mean(x, axis=(1, 2)))

    def build_all(self) -> None:
        """Create every weight (one call on zeros with the largest subnet)."""
        from mcunas.supernet.spec import largest

        net = largest(self.spec)
        self(np.zeros((1, *self.spec.input_shape), np.float32), controls(self.spec, net))


def _downsample(x: Any, factor: int) -> Any:
    """As the stage family: average-pool sides of at least 16 by ``factor``."""
    if factor == 1:
        return x
    pool = tuple(factor if int(side) >= SHRINK_FROM else 1 for side in x.shape[1:3])
    if pool == (1, 1):
        return x
    return ops.average_pool(x, pool, strides=pool, padding="same")


def controls(spec: SupernetSpec, net: Subnet) -> dict[str, dict[str, np.ndarray | np.generic]]:
    """Per block: its kernel one-hot, hidden-channel count and depth gate for ``net``."""
    ctrl: dict[str, dict[str, np.ndarray | np.generic]] = {}
    in_ch = spec.stem_width
    for i, stage in enumerate(spec.stages):
        onehot = np.array([float(k == net.kernels[i]) for k in stage.kernels], np.float32)
        for r in range(spec.max_depth):
            channels = in_ch if r == 0 else stage.width
            hidden = np.int32(channels * net.expansions[i])
            gate = np.float32(r < net.depths[i])
            ctrl[f"s{i}b{r}"] = {"kernel": onehot, "hidden": hidden, "gate": gate}
        in_ch = stage.width
    return ctrl


def standalone_weights(supernet: Supernet, net: Subnet) -> list[np.ndarray]:
    """The weights of ``net``'s stage-family model, in ``model.get_weights()`` order."""
    weights = [
        supernet.stem.kernel.numpy(),
        *supernet.stem_bn.sliced(supernet.spec.stem_width),
    ]
    for i, blocks in enumerate(supernet.stage_blocks):
        for block in blocks[: net.depths[i]]:
            weights += block.subnet_weights(net.kernels[i], net.expansions[i])
    weights += [
        supernet.head.kernel.numpy(),
        supernet.head.bias.numpy(),
    ]
    return weights
