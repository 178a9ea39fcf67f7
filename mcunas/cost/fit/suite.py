"""The calibration suite: small INT8 models that cover the latency model's kernel variants.

Each model is one op (a 1x1 conv, a depthwise 3x3 stride 2, a softmax...) or
a small block of ops (depthwise-separable block, inverted residual, attention
core) at one of a spread of channel counts and spatial sizes, so that per-op
timings separate each variant's cost per unit of work from its fixed cost.
The models are written directly as TFLite flatbuffers (int8 activations,
per-channel int8 conv weights, int32 biases), the layout the TFLite converter
produces, without TensorFlow: building the full suite takes well under a
second. Generated suites are cached under ``$MCUNAS_HOME/calibration-suite``
keyed by :data:`SUITE_VERSION`.

Example::

    for m in load_suite("small"):
        m.name, m.variants, len(m.model_bytes)
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from mcunas.errors import UserError
from mcunas.files import READ_ERRORS, write_file
from mcunas.paths import user_path
from mcunas.tflite.flatnet import FlatNet

__all__ = [
    "QUICK_MODELS",
    "SUITE_SIZES",
    "SUITE_VERSION",
    "SuiteModel",
    "build_suite",
    "load_suite",
]

SUITE_VERSION = "suite-6"
SUITE_SIZES = ("small", "full", "quick")
# The few-shot suite (`mcunas calibrate --quick`): three chains of the small suite that
# between them run every variant the suite covers, most at two shapes, each op timed on
# its own: one of convolutions and pooling, one of depthwise convolutions and element-wise
# ops, one of matrix ops (attention, a dense head). Per-op times make one model of many
# ops worth as much to the fit as that many single-op models.
QUICK_MODELS = ("span_conv_32x3", "span_dw_24x16", "span_attn_32x64")


@dataclass(frozen=True)
class SuiteModel:
    """One calibration model: its name, the variants it exercises and its bytes."""

    name: str
    variants: tuple[str, ...]
    model_bytes: bytes


# -- the suite ----------------------------------------------------------------------------
Recipe = Callable[[FlatNet, int], int]  # (net, input tensor) -> output tensor


def _single(kind: str, **kw: int) -> Recipe:
    def build(n: FlatNet, x: int) -> int:
        if kind == "conv":
            return n.conv(x, kw["out"], kw["k"], kw.get("stride", 1))
        if kind == "dw":
            return n.dwconv(x, kw["k"], kw.get("stride", 1), kw.get("mult", 1))
        if kind in ("MAX_POOL_2D", "AVERAGE_POOL_2D"):
            return n.pool(x, kind, kw["k"], kw["stride"])
        if kind in ("ADD", "MUL", "SQUARED_DIFFERENCE"):
            return n.binary(kind, x, x)
        return {
            "fc": lambda: n.fc(x, kw["out"]),
            "mean": lambda: n.mean(x),
            "softmax": lambda: n.softmax(x),
            "transpose": lambda: n.transpose(x),
            "bmm": lambda: n.bmm(x, x),
        }[kind]()

    return build


def _ds_block(n: FlatNet, x: int) -> int:
    c = n.shape(x)[-1]
    return n.conv(n.dwconv(x, 3, 2), c * 2, 1)


def _mb_block(n: FlatNet, x: int) -> int:
    c = n.shape(x)[-1]
    y = n.conv(n.dwconv(n.conv(x, c * 3, 1), 5, 1), c, 1, relu=False)
    return n.binary("ADD", x, y)


def _attention(n: FlatNet, x: int) -> int:
    q = n.fc(x, n.shape(x)[-1])
    scores = n.softmax(n.bmm(q, x))
    return n.fc(n.bmm(scores, n.transpose(x)), n.shape(x)[-1])


def _head(n: FlatNet, x: int) -> int:
    c = n.shape(x)[-1]
    pooled = n.mean(x)
    flat = n.op("RESHAPE", [pooled, n.const_i32([1, c])], [1, c], "ReshapeOptions", newShape=[1, c])
    return n.softmax(n.fc(flat, 10))


# (name, input shape, recipe, variants, in the small suite)
RecipeRow = tuple[str, list[int], Recipe, tuple[str, ...], bool]


def _recipes() -> list[RecipeRow]:
    """Every suite model, by kind; the small suite keeps the rows marked True."""
    return [
        *_conv_recipes(),
        *_dw_recipes(),
        *_matrix_recipes(),
        *_elementwise_recipes(),
        *_pool_recipes(),
        *_block_recipes(),
        *_span_recipes(),
    ]


def _conv_recipes() -> list[RecipeRow]:
    r: list[RecipeRow] = []
    for hw, c, out, small in (
        (24, 16, 32, True),
        (12, 32, 64, True),
        (6, 64, 128, True),
        (48, 8, 16, False),
        (12, 96, 24, False),
    ):
        conv = _single("conv", out=out, k=1)
        r.append((f"conv1x1_{hw}x{c}to{out}", [1, hw, hw, c], conv, ("conv_1x1",), small))
    for hw, c, out, small in (
        (16, 16, 16, True),
        (8, 32, 32, True),
        (24, 8, 16, False),
        (6, 64, 64, False),
    ):
        conv = _single("conv", out=out, k=3)
        r.append((f"conv3x3_{hw}x{c}to{out}", [1, hw, hw, c], conv, ("conv_kxk",), small))
    for hw, c, out, st, small in ((48, 1, 8, 2, True), (32, 3, 16, 1, True), (64, 3, 8, 2, False)):
        stem = _single("conv", out=out, k=3, stride=st)
        r.append((f"stem3x3s{st}_{hw}x{c}to{out}", [1, hw, hw, c], stem, ("conv_shallow",), small))
    return r


def _dw_recipes() -> list[RecipeRow]:
    r: list[RecipeRow] = []
    for k, st, variant in (
        (3, 1, "dw_3x3_s1"),
        (3, 2, "dw_3x3_s2"),
        (5, 1, "dw_kxk"),
        (5, 2, "dw_kxk"),
    ):
        for hw, c, small in ((24, 16, True), (12, 64, True), (48, 8, False), (6, 128, False)):
            dw = _single("dw", k=k, stride=st)
            r.append((f"dw{k}x{k}s{st}_{hw}x{c}", [1, hw, hw, c], dw, (variant,), small))
    r.append(("dwmult2_12x16", [1, 12, 12, 16], _single("dw", k=3, mult=2), ("dw_mult",), True))
    r.append(("dwmult2_24x8", [1, 24, 24, 8], _single("dw", k=3, mult=2), ("dw_mult",), True))
    return r


def _matrix_recipes() -> list[RecipeRow]:
    r: list[RecipeRow] = []
    for i, o, small in ((64, 32, True), (256, 64, True), (640, 128, True), (32, 10, False)):
        r.append((f"fc_{i}to{o}", [1, i], _single("fc", out=o), ("fc",), small))
    for n_, k, small in ((16, 32, True), (32, 64, True), (24, 48, False)):
        r.append((f"bmm_{n_}x{k}", [1, n_, k], _single("bmm"), ("bmm",), small))
        r.append((f"transpose_{n_}x{k}", [1, n_, k], _single("transpose"), ("transpose",), small))
    for shape, small in (([1, 10], True), ([1, 16, 16], True), ([1, 32, 64], False)):
        tag = "x".join(map(str, shape[1:]))
        r.append((f"softmax_{tag}", shape, _single("softmax"), ("softmax",), small))
    return r


def _elementwise_recipes() -> list[RecipeRow]:
    r: list[RecipeRow] = []
    for kind, variant in (("ADD", "add"), ("MUL", "mul")):
        for hw, c, small in ((12, 16, True), (24, 32, True), (6, 64, False)):
            r.append((f"{variant}_{hw}x{c}", [1, hw, hw, c], _single(kind), (variant,), small))
    for n_, d, small in ((16, 32, True), (32, 64, True)):  # LayerNorm's variance, unaccelerated
        r.append((f"sqdiff_{n_}x{d}", [1, n_, d], _single("SQUARED_DIFFERENCE"), ("add",), small))
    for hw, c, small in ((12, 32, True), (24, 64, True), (6, 128, False)):
        r.append((f"mean_{hw}x{c}", [1, hw, hw, c], _single("mean"), ("mean",), small))
    return r


def _pool_recipes() -> list[RecipeRow]:
    r: list[RecipeRow] = []
    for kind, variant in (("MAX_POOL_2D", "pool_max"), ("AVERAGE_POOL_2D", "pool_avg")):
        for hw, c, k, st, small in (
            (24, 16, 2, 2, True),
            (12, 32, 3, 1, True),
            (6, 64, 6, 1, False),
        ):
            pool = _single(kind, k=k, stride=st)
            r.append((f"{variant}{k}s{st}_{hw}x{c}", [1, hw, hw, c], pool, (variant,), small))
    return r


def _block_recipes() -> list[RecipeRow]:
    attention = ("fc", "bmm", "softmax", "transpose")
    return [
        ("block_ds_24x16", [1, 24, 24, 16], _ds_block, ("dw_3x3_s2", "conv_1x1"), True),
        ("block_mb_12x16", [1, 12, 12, 16], _mb_block, ("conv_1x1", "dw_kxk", "add"), True),
        ("block_attn_16x32", [1, 16, 32], _attention, attention, True),
        ("block_head_6x64", [1, 6, 6, 64], _head, ("mean", "fc", "softmax"), True),
        ("block_ds_12x32", [1, 12, 12, 32], _ds_block, ("dw_3x3_s2", "conv_1x1"), False),
        ("block_mb_6x32", [1, 6, 6, 32], _mb_block, ("conv_1x1", "dw_kxk", "add"), False),
    ]


def _span_conv(n: FlatNet, x: int) -> int:
    """Stems (3 and 4 input channels), 3x3 and 1x1 convolutions, max and average pools."""
    x = n.conv(n.conv(x, 4, 3), 8, 3, 2)  # 32x32x3 -> 16x16x8, both shallow
    x = n.pool(n.conv(x, 16, 3), "MAX_POOL_2D", 2, 2)  # -> 8x8x16
    x = n.conv(n.conv(x, 32, 3), 64, 1)  # 3x3 at 8x8x16, 1x1 32 -> 64
    x = n.pool(x, "AVERAGE_POOL_2D", 3, 1)  # -> 6x6x64
    x = n.pool(n.conv(x, 32, 1), "MAX_POOL_2D", 3, 1)  # -> 4x4x32
    return n.pool(x, "AVERAGE_POOL_2D", 2, 2)


def _span_dw(n: FlatNet, x: int) -> int:
    """Depthwise 3x3 and 5x5, strided and not, a multiplier of 2, ADD, MUL and MEAN."""
    x = n.dwconv(n.dwconv(x, 3), 5)  # 24x24x16
    x = n.binary("ADD", x, x)
    x = n.dwconv(n.dwconv(x, 3, 2), 3, mult=2)  # -> 12x12x32
    x = n.binary("MUL", x, x)
    x = n.conv(n.dwconv(n.dwconv(x, 5, 2), 3), 64, 1)  # -> 6x6x64
    x = n.dwconv(n.dwconv(x, 5), 3, 2)  # -> 3x3x64
    return n.mean(n.binary("ADD", n.binary("MUL", x, x), x))


def _span_attn(n: FlatNet, x: int) -> int:
    """An attention block at 32 tokens x 64 and a dense head: FC, BATCH_MATMUL, SOFTMAX."""
    q = n.fc(x, 64)
    att = n.bmm(n.softmax(n.bmm(q, x)), n.transpose(x))
    y = n.binary("ADD", x, n.fc(att, 64))
    y = n.fc(n.binary("SQUARED_DIFFERENCE", y, y), 16)  # -> 32 x 16
    flat = n.op(
        "RESHAPE", [y, n.const_i32([1, 512])], [1, 512], "ReshapeOptions", newShape=[1, 512]
    )
    return n.softmax(n.fc(n.fc(flat, 64), 10))


def _span_recipes() -> list[RecipeRow]:
    return [
        (
            "span_conv_32x3",
            [1, 32, 32, 3],
            _span_conv,
            ("conv_shallow", "conv_kxk", "conv_1x1", "pool_max", "pool_avg"),
            True,
        ),
        (
            "span_dw_24x16",
            [1, 24, 24, 16],
            _span_dw,
            ("dw_3x3_s1", "dw_3x3_s2", "dw_kxk", "dw_mult", "add", "mul", "mean"),
            True,
        ),
        (
            "span_attn_32x64",
            [1, 32, 64],
            _span_attn,
            ("fc", "bmm", "softmax", "transpose", "add"),
            True,
        ),
    ]


def build_model(name: str, input_shape: list[int], recipe: Recipe) -> bytes:
    """One model: ``recipe`` applied to an int8 input of ``input_shape``."""
    net = FlatNet(name)
    x = net.tensor(input_shape)
    return net.finish([x], [recipe(net, x)], f"mcunas calibration {SUITE_VERSION}")


def build_suite(size: str = "small") -> list[SuiteModel]:
    """Build the ``small`` (about 45 models), ``full`` (about 70) or ``quick`` (3) suite."""
    if size not in SUITE_SIZES:
        raise UserError(f"unknown suite '{size}': choose one of {', '.join(SUITE_SIZES)}")
    return [
        SuiteModel(name, variants, build_model(name, shape, recipe))
        for name, shape, recipe, variants, small in _recipes()
        if (name in QUICK_MODELS if size == "quick" else small or size == "full")
    ]


def suite_dir(size: str) -> Path:
    """Cache folder of one suite: ``$MCUNAS_HOME/calibration-suite/<version>-<size>``."""
    return user_path("calibration-suite", f"{SUITE_VERSION}-{size}")


def load_suite(size: str = "small") -> list[SuiteModel]:
    """The suite from its cache folder, built and cached on first use."""
    folder = suite_dir(size)
    index = folder / "index.json"
    if index.is_file():
        try:
            entries = json.loads(index.read_text(encoding="utf-8"))
            return [
                SuiteModel(
                    e["name"], tuple(e["variants"]), (folder / f"{e['name']}.tflite").read_bytes()
                )
                for e in entries
            ]
        except READ_ERRORS:
            pass  # a damaged cache is rebuilt below
    suite = build_suite(size)
    folder.mkdir(parents=True, exist_ok=True)
    for m in suite:
        write_file(folder / f"{m.name}.tflite", m.model_bytes, "suite cache", inside=folder)
    entries = [{"name": m.name, "variants": list(m.variants)} for m in suite]
    write_file(index, json.dumps(entries, indent=1), "suite cache", inside=folder)
    return suite
