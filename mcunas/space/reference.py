"""Known-good designs as points of the stage space: the MLPerf Tiny reference models.

Each reference is the stage family's hyperparameters for one MLPerf Tiny v1.x
reference model. Built and converted to INT8, it has the same op kinds in the
same counts and the same MACs as the reference ``.tflite`` in
``mcunas/calibration/models`` (checked by ``tests/space/test_reference.py``), except
``series-s4``, mcunas's own design for long series (no model file):

- ``kws-dscnn``: DS-CNN keyword spotting, 49x10x1 log-mel, 12 classes
  (``kws_ref_model.tflite``): 10x4 stride-2 stem of 64, four 64-wide
  depthwise-separable blocks;
- ``vww-mobilenet``: MobileNetV1 x0.25 visual wake words, 96x96x3, 2 classes
  (``vww_96_int8.tflite``): 13 depthwise-separable blocks, 16 to 256 wide;
- ``ic-resnet8``: ResNet-8 image classification, 32x32x3, 10 classes
  (``pretrainedResnet_quant.tflite``): three residual stages of 16, 32, 64;
- ``series-s4``: a long one-channel series (hundreds of steps): a 10-step
  stem of 16 with stride 4 on the full-resolution series, then
  depthwise-separable blocks of 24 (stride 2), 32 and 48 (stride 2), kernels
  5, 5 and 3, and the "ppv" head (the map clipped to [0, 1], then averaged:
  the share of steps where each feature fires). It fits a Cortex-M4's 20 ms
  where the DS-CNN must first pool the input away; how it compares is in
  docs/benchmarks/series.md.

:func:`reference_hyperparameters` scales one to another input shape and
class count (``mcunas search --seed-arch``, ``mcunas space reference``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mcunas.errors import UserError

__all__ = [
    "REFERENCES",
    "Reference",
    "get_reference",
    "reference_hyperparameters",
    "reference_ladder",
]


def _stages(*spec: tuple[str, int, int, int]) -> dict[str, Any]:
    """Stage hyperparameters from (block, width, repeats, stride) per stage, kernel 3."""
    values: dict[str, Any] = {"st_stages": len(spec)}
    for i, (block, width, repeats, stride) in enumerate(spec):
        values |= {
            f"st_block_{i}": block,
            f"st_width_{i}": width,
            f"st_repeats_{i}": repeats,
            f"st_kernel_{i}": 3,
            f"st_stride_{i}": stride,
        }
    return values


_COMMON = {"family": "stages", "st_resolution": 1, "st_width_mult": 1.0, "activation": "relu"}


@dataclass(frozen=True)
class Reference:
    """One reference design: its input, classes, hyperparameters and model file."""

    name: str
    input_shape: tuple[int, int, int]
    num_classes: int
    values: dict[str, Any]
    model_file: str | None  # the MLPerf Tiny .tflite it matches (None: mcunas's own design)
    title: str


REFERENCES: dict[str, Reference] = {
    "kws-dscnn": Reference(
        "kws-dscnn",
        (49, 10, 1),
        12,
        {
            **_COMMON,
            **{"st_stem_width": 64, "st_stem_kh": 10, "st_stem_kw": 4, "st_stem_stride": 2},
            **_stages(("ds", 64, 4, 1)),
        },
        "kws_ref_model.tflite",
        "MLPerf Tiny keyword spotting, DS-CNN",
    ),
    "vww-mobilenet": Reference(
        "vww-mobilenet",
        (96, 96, 3),
        2,
        {
            **_COMMON,
            **{"st_stem_width": 8, "st_stem_kh": 3, "st_stem_kw": 3, "st_stem_stride": 2},
            **_stages(
                ("ds", 16, 1, 1),
                ("ds", 32, 2, 2),
                ("ds", 64, 2, 2),
                ("ds", 128, 4, 2),
                ("ds", 128, 2, 1),
                ("ds", 256, 2, 2),
            ),
        },
        "vww_96_int8.tflite",
        "MLPerf Tiny visual wake words, MobileNetV1 x0.25",
    ),
    "ic-resnet8": Reference(
        "ic-resnet8",
        (32, 32, 3),
        10,
        {
            **_COMMON,
            **{"st_stem_width": 16, "st_stem_kh": 3, "st_stem_kw": 3, "st_stem_stride": 1},
            **_stages(("res", 16, 1, 1), ("res", 32, 1, 2), ("res", 64, 1, 2)),
        },
        "pretrainedResnet_quant.tflite",
        "MLPerf Tiny image classification, ResNet-8",
    ),
    "series-s4": Reference(
        "series-s4",
        (427, 1, 1),
        6,
        {
            **_COMMON,
            **{"st_stem_width": 16, "st_stem_kh": 10, "st_stem_kw": 1, "st_stem_stride": 4},
            **_stages(("ds", 24, 1, 2), ("ds", 32, 1, 1), ("ds", 48, 1, 2)),
            **{"st_kernel_0": 5, "st_kernel_1": 5, "st_head": "ppv"},
        },
        None,
        "long series: a stride-4 stem and three separable blocks (mcunas)",
    ),
}


AUTO, NONE = "auto", "none"  # --seed-arch: pick one by the input's kind / start from none
LARGE_IMAGE_SIDE = 64  # images this large get the VWW MobileNet, smaller ones ResNet-8
# One-channel series this long get series-s4, shorter ones (and multichannel) the DS-CNN:
# the threshold lies between the lengths where series-s4 won and where it was level
# (docs/benchmarks/series.md).
LONG_SERIES_STEPS = 256


def auto_reference(kind: str, input_shape: tuple[int, ...]) -> str:
    """The reference ``--seed-arch auto`` starts from for a dataset of ``kind``.

    One-channel series of :data:`LONG_SERIES_STEPS` steps or more: series-s4;
    other series and audio: kws-dscnn; images with a side of 64 or more:
    vww-mobilenet; smaller images: ic-resnet8.
    """
    return auto_choice(kind, input_shape)[0]


def auto_choice(kind: str, input_shape: tuple[int, ...]) -> tuple[str, str]:
    """:func:`auto_reference`'s name and why it was picked, in a few words."""
    shape = tuple(int(s) for s in input_shape)
    if kind == "series":
        steps, channels = shape[0], (shape[1] * shape[2] if len(shape) == 3 else 1)
        if channels == 1 and steps >= LONG_SERIES_STEPS:
            why = f"a one-channel series of {steps} steps ({LONG_SERIES_STEPS} or more)"
            return "series-s4", why
        if channels != 1:
            return "kws-dscnn", f"a series of {channels} channels"
        return "kws-dscnn", f"a series of {steps} steps (under {LONG_SERIES_STEPS})"
    if kind == "audio":
        return "kws-dscnn", "audio features"
    side = max(shape[:2])
    if side >= LARGE_IMAGE_SIDE:
        return "vww-mobilenet", f"an image of side {side} ({LARGE_IMAGE_SIDE} px or more)"
    return "ic-resnet8", f"an image of side {side} (under {LARGE_IMAGE_SIDE} px)"


def get_reference(name: str) -> Reference:
    """The reference called ``name``.

    Raises:
        UserError: no such reference (the known ones are listed).
    """
    if name not in REFERENCES:
        raise UserError(f"Unknown reference architecture '{name}'; known: {', '.join(REFERENCES)}")
    return REFERENCES[name]


def reference_hyperparameters(name: str, input_shape: tuple[int, ...]) -> dict[str, Any]:
    """The reference's hyperparameters for a dataset of ``input_shape``.

    The network keeps its stages; only what the input cannot take changes: a
    series (one pixel wide) gets a kx1 stem. Kernels longer than a side are cut
    to it when the model is built, and the class count comes from the dataset.

    Raises:
        UserError: no such reference.
    """
    values = dict(get_reference(name).values)
    if len(input_shape) == 3 and int(input_shape[1]) == 1:
        values["st_stem_kw"] = 1
    return values


# (resolution, width multiplier) rungs a seed steps down while it misses the budgets:
# each roughly halves the MACs of the one before.
LADDER = ((1, 1.0), (1, 0.75), (1, 0.5), (2, 0.5), (1, 0.25), (2, 0.25), (4, 0.25))


def reference_ladder(name: str, input_shape: tuple[int, ...]) -> list[dict[str, Any]]:
    """The reference scaled to ``input_shape``, then ever smaller variants of it.

    The first entry is :func:`reference_hyperparameters`; each next one lowers
    the width multiplier or the input resolution (:data:`LADDER`), so a search
    whose budgets the full design misses starts from the largest one that fits.
    Rungs that would build the same model (no side long enough to downsample)
    are left out.

    Raises:
        UserError: no such reference.
    """
    from mcunas.space.stages import MIN_SIDE_TO_SHRINK

    base = reference_hyperparameters(name, input_shape)
    can_shrink = max(int(s) for s in input_shape[:2]) >= MIN_SIDE_TO_SHRINK
    rungs = [(r, m) for r, m in LADDER if r == 1 or can_shrink]
    return [base | {"st_resolution": r, "st_width_mult": m} for r, m in rungs]
