"""The MCU search space as a Keras Tuner ``HyperModel``.

Five families. ``stages`` (:mod:`mcunas.space.stages`) is the stage-based
space that holds the MLPerf Tiny reference models; the other four share one
stem-blocks-head layout and a Dense softmax head after global average pooling:

- ``dsconv``: conv stem, 1-4 depthwise-separable blocks (width, stride per block;
  one kernel size);
- ``mbconv``: conv stem, 1-4 inverted residual blocks (width, kernel 3/5,
  expansion 1/2/4, stride per block; residual when shapes match);
- ``transformer``: tokens from the input's rows (8 tokens of 8 features for
  digits), Dense projection to ``d_model``, learned positions, 1-3 encoder blocks;
- ``hybrid``: conv stem and 0-2 depthwise-separable blocks, downsampled until at
  most 16 or 64 positions remain, 1x1 conv to ``d_model``, reshaped to tokens,
  then the transformer blocks.

Transformer hyperparameters (d_model, heads, FFN width, depth, normalization
none/batch/layer) are shared by ``transformer`` and ``hybrid``. Widths are
multiples of 8; activations are ReLU or ReLU6. Downsampling follows
:func:`~mcunas.space.blocks.plan_stride`: the stem uses stride 2 on inputs of
32 pixels or more, a searched stride-2 is dropped on maps whose sides are all
shorter than 4, and maps with a side longer than 24 are always halved (one
stride for both sides: a series, one pixel wide, keeps its width).
"""

from __future__ import annotations

import random
from typing import Any

import keras
import keras_tuner as kt
from keras import layers

import mcunas.space.blocks as blocks
from mcunas.errors import UserError
from mcunas.space.stages import build_stages, declare_stages, describe_stages

FAMILIES = ("dsconv", "mbconv", "transformer", "hybrid", "stages")
MAX_BLOCKS = 4
STEM_STRIDE_FROM = 32  # inputs with a side this long or longer get a stride-2 stem

__all__ = ["FAMILIES", "McuSearchSpace"]


class McuSearchSpace(kt.HyperModel):
    """Search space of small INT8-friendly classifiers for microcontrollers.

    Example:
        >>> space = McuSearchSpace((8, 8, 1), 10, families=("dsconv",))
        >>> hp = space.hyperparameters(ds_blocks=3)
        >>> model = space.build(hp)      # compiled, free batch size
        >>> space.describe(hp)
        'dsconv: stem 16 | ds k3: 32/s2, 32/s1, 32/s1 | relu | lr 0.003'

    Args:
        input_shape: tuple[int, ...], one input's shape (H, W, C).
        num_classes: int, number of classes (>= 2).
        families: tuple[str, ...], families to search (default all four).
    """

    def __init__(
        self,
        input_shape: tuple[int, ...],
        num_classes: int,
        families: tuple[str, ...] | list[str] = FAMILIES,
        **kwargs: Any,
    ) -> None:
        super().__init__(name="mcunas_space", **kwargs)
        families = tuple(families)
        unknown = [f for f in families if f not in FAMILIES]
        if unknown or not families:
            raise UserError(f"Unknown model family {unknown or families}; choose from {FAMILIES}")
        if len(input_shape) != 3 or num_classes < 2:
            raise UserError(
                f"The search space needs an (H, W, C) input and >= 2 classes, "
                f"got {tuple(input_shape)} and {num_classes}"
            )
        self.input_shape = tuple(int(d) for d in input_shape)
        self.num_classes = int(num_classes)
        self.families = families

    # ----------------------------------------------------------------- space
    def declare_hyperparameters(self, hp: kt.HyperParameters) -> dict[str, Any]:
        """Declare every hyperparameter (conditional on the family) and return the active ones.

        Args:
            hp: keras_tuner.HyperParameters to declare into.

        Returns:
            dict of the active hyperparameters' names and values.
        """
        family = hp.Choice("family", list(self.families))
        hp.Choice("activation", list(blocks.ACTIVATIONS))
        hp.Choice("learning_rate", [0.003, 0.001])
        with hp.conditional_scope("family", ["dsconv"]):
            hp.Int("ds_stem_width", 8, 32, step=8, default=16)
            hp.Choice("ds_kernel", [3, 5])
            self._per_block(
                hp,
                "ds",
                lambda i: {
                    "width": hp.Int(f"ds_width_{i}", 8, 64, step=8, default=32),
                    "stride": hp.Choice(f"ds_stride_{i}", [2, 1] if i == 0 else [1, 2]),
                },
            )
        with hp.conditional_scope("family", ["mbconv"]):
            hp.Int("mb_stem_width", 8, 32, step=8, default=16)
            self._per_block(
                hp,
                "mb",
                lambda i: {
                    "width": hp.Int(f"mb_width_{i}", 8, 64, step=8, default=24),
                    "kernel": hp.Choice(f"mb_kernel_{i}", [3, 5]),
                    "expansion": hp.Choice(f"mb_expansion_{i}", [2, 1, 4]),
                    "stride": hp.Choice(f"mb_stride_{i}", [2, 1] if i == 0 else [1, 2]),
                },
            )
        with hp.conditional_scope("family", ["transformer", "hybrid"]):
            hp.Int("tf_d_model", 16, 64, step=8, default=32)
            hp.Choice("tf_heads", [2, 1, 4])
            hp.Int("tf_ffn", 16, 128, step=16, default=64)
            hp.Int("tf_depth", 1, 3, default=1)
            hp.Choice("tf_norm", ["batch", "none", "layer"])
        with hp.conditional_scope("family", ["stages"]):
            declare_stages(hp, one_dimensional=self.input_shape[1] == 1)
        with hp.conditional_scope("family", ["hybrid"]):
            hp.Int("hy_stem_width", 8, 32, step=8, default=16)
            hp.Choice("hy_kernel", [3, 5])
            hp.Int("hy_conv_blocks", 0, 2, default=1)
            hp.Choice("hy_max_tokens", [16, 64])
        active = {name: hp.get(name) for name in hp.values if hp.is_active(name)}
        active["family"] = family
        return active

    @staticmethod
    def _per_block(hp: kt.HyperParameters, prefix: str, declare: Any) -> None:
        hp.Int(f"{prefix}_blocks", 1, MAX_BLOCKS, default=2)
        for i in range(MAX_BLOCKS):
            with hp.conditional_scope(f"{prefix}_blocks", list(range(i + 1, MAX_BLOCKS + 1))):
                declare(i)

    def hyperparameters(self, **values: Any) -> kt.HyperParameters:
        """Hyperparameters at their defaults, with ``values`` overriding some of them.

        Args:
            **values: hyperparameter name -> value (e.g. family="mbconv", mb_blocks=3).

        Returns:
            A filled keras_tuner.HyperParameters.

        Raises:
            UserError: A name is not in the space or a value is out of range.
        """
        hp = kt.HyperParameters()
        self.declare_hyperparameters(hp)
        specs = {spec.name: spec for spec in hp.space}
        for name, value in values.items():
            if name not in specs:
                raise UserError(f"No hyperparameter {name!r} in the search space")
            allowed = getattr(specs[name], "values", None) or range(
                specs[name].min_value, specs[name].max_value + 1, specs[name].step or 1
            )
            if value not in allowed:
                raise UserError(f"Hyperparameter {name}={value!r} is not one of {list(allowed)}")
            hp.values[name] = value
        _fill(hp, lambda spec: spec.default)
        return hp

    def sample(self, seed: int) -> kt.HyperParameters:
        """A random point of the space, reproducible from ``seed``.

        Args:
            seed: int, random seed.

        Returns:
            keras_tuner.HyperParameters with every active hyperparameter sampled.
        """
        rng = random.Random(seed)
        hp = kt.HyperParameters()
        self.declare_hyperparameters(hp)
        hp.values.clear()
        _fill(hp, lambda spec: spec.random_sample(rng.randrange(2**31)))
        return hp

    # ----------------------------------------------------------------- build
    def build(self, hp: kt.HyperParameters) -> keras.Model:
        """Build and compile the model for ``hp`` (free batch size, for training).

        Args:
            hp: keras_tuner.HyperParameters of this space.

        Returns:
            A keras.Model compiled with Adam, sparse categorical crossentropy, accuracy.
        """
        v = self.declare_hyperparameters(hp)
        inputs = keras.Input(self.input_shape)
        x = getattr(self, f"_build_{v['family']}")(inputs, v)
        model = keras.Model(inputs, x, name=f"mcunas_{v['family']}")
        model.compile(
            optimizer=keras.optimizers.Adam(v["learning_rate"]),
            loss="sparse_categorical_crossentropy",
            metrics=["accuracy"],
            jit_compile=False,
        )
        return model

    def _stem(self, x: keras.KerasTensor, width: int, act: str) -> keras.KerasTensor:
        big = max(self.input_shape[:2]) >= STEM_STRIDE_FROM
        return blocks.conv_bn(x, width, 3, blocks.plan_stride(self.input_shape[:2], big), act)

    def _build_dsconv(self, inputs: keras.KerasTensor, v: dict[str, Any]) -> keras.KerasTensor:
        act = v["activation"]
        x = self._stem(inputs, v["ds_stem_width"], act)
        for i in range(v["ds_blocks"]):
            stride = blocks.plan_stride(_hw(x), v[f"ds_stride_{i}"] == 2)
            x = blocks.ds_block(x, v[f"ds_width_{i}"], v["ds_kernel"], stride, act)
        return blocks.head(x, self.num_classes)

    def _build_mbconv(self, inputs: keras.KerasTensor, v: dict[str, Any]) -> keras.KerasTensor:
        act = v["activation"]
        x = self._stem(inputs, v["mb_stem_width"], act)
        for i in range(v["mb_blocks"]):
            stride = blocks.plan_stride(_hw(x), v[f"mb_stride_{i}"] == 2)
            x = blocks.mb_block(
                x, v[f"mb_width_{i}"], v[f"mb_kernel_{i}"], stride, v[f"mb_expansion_{i}"], act
            )
        return blocks.head(x, self.num_classes)

    def _build_transformer(self, inputs: keras.KerasTensor, v: dict[str, Any]) -> keras.KerasTensor:
        rows, cols, channels = self.input_shape
        x = layers.Reshape((rows, cols * channels))(inputs)
        x = layers.Dense(v["tf_d_model"])(x)
        return self._encoder(x, v)

    def _build_hybrid(self, inputs: keras.KerasTensor, v: dict[str, Any]) -> keras.KerasTensor:
        act, limit = v["activation"], v["hy_max_tokens"]
        x = self._stem(inputs, v["hy_stem_width"], act)
        width, left = v["hy_stem_width"], v["hy_conv_blocks"]
        while left > 0 or _tokens(x) > limit:
            stride = blocks.plan_stride(_hw(x), _tokens(x) > limit)
            if stride == (1, 1) and left <= 0:
                break  # too few pixels to shrink further
            width = min(64, width * 2) if stride != (1, 1) else width
            x = blocks.ds_block(x, width, v["hy_kernel"], stride, act)
            left -= 1
        x = blocks.conv_bn(x, v["tf_d_model"], 1, act=act)
        x = layers.Reshape((_tokens(x), v["tf_d_model"]))(x)
        return self._encoder(x, v)

    def _build_stages(self, inputs: keras.KerasTensor, v: dict[str, Any]) -> keras.KerasTensor:
        return build_stages(inputs, v, self.num_classes)

    def _encoder(self, x: keras.KerasTensor, v: dict[str, Any]) -> keras.KerasTensor:
        x = blocks.PositionEmbedding()(x)
        for _ in range(v["tf_depth"]):
            x = blocks.transformer_block(
                x, v["tf_heads"], v["tf_ffn"], v["tf_norm"], v["activation"]
            )
        return blocks.head(x, self.num_classes, v["tf_norm"])

    # -------------------------------------------------------------- describe
    def describe(self, hp: kt.HyperParameters) -> str:
        """One line summarising the architecture ``hp`` selects.

        Args:
            hp: keras_tuner.HyperParameters of this space.

        Returns:
            e.g. ``"transformer: d64 h2 ffn128 x2 norm=batch | relu | lr 0.003"``.
        """
        v = self.declare_hyperparameters(hp)
        fam = v["family"]
        if fam == "stages":
            body = describe_stages(v)
        elif fam == "dsconv":
            body = f"stem {v['ds_stem_width']} | ds k{v['ds_kernel']}: " + ", ".join(
                f"{v[f'ds_width_{i}']}/s{v[f'ds_stride_{i}']}" for i in range(v["ds_blocks"])
            )
        elif fam == "mbconv":
            body = f"stem {v['mb_stem_width']} | mb: " + ", ".join(
                f"{v[f'mb_width_{i}']}/k{v[f'mb_kernel_{i}']}/e{v[f'mb_expansion_{i}']}"
                f"/s{v[f'mb_stride_{i}']}"
                for i in range(v["mb_blocks"])
            )
        else:
            body = (
                f"d{v['tf_d_model']} h{v['tf_heads']} ffn{v['tf_ffn']} x{v['tf_depth']} "
                f"norm={v['tf_norm']}"
            )
            if fam == "hybrid":
                body = (
                    f"stem {v['hy_stem_width']} k{v['hy_kernel']} +{v['hy_conv_blocks']} ds "
                    f"<= {v['hy_max_tokens']} tokens | {body}"
                )
        return f"{fam}: {body} | {v['activation']} | lr {v['learning_rate']:g}"


def _fill(hp: kt.HyperParameters, value: Any) -> None:
    """Give every active hyperparameter without a value ``value(spec)``, parents first."""
    for spec in hp.space:  # declared parents-first, so activity is known in order
        if spec.name not in hp.values and hp.is_active(spec):
            hp.values[spec.name] = value(spec)


def _hw(x: keras.KerasTensor) -> tuple[int, int]:
    return int(x.shape[1]), int(x.shape[2])


def _tokens(x: keras.KerasTensor) -> int:
    return int(x.shape[1]) * int(x.shape[2])
