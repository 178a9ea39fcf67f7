"""The stage space's choices for long series: stride-4 stem, dilated blocks, average+max head.

Each converts to INT8, runs on the host TFLite Micro runtime and is costed by
the profile; the INT8 outputs follow the float model's, and not those of the
same weights without dilation (so the runtime really dilates).
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

SHAPE = (427, 1, 1)  # OSULeaf's length, one channel
CLASSES = 6


def _values(**change: object) -> dict:
    base = {
        "family": "stages",
        "activation": "relu",
        "st_resolution": 2,
        "st_width_mult": 1.0,
        "st_stem_width": 16,
        "st_stem_kh": 10,
        "st_stem_kw": 1,
        "st_stem_stride": 4,
        "st_head": "avgmax",
        "st_stages": 3,
        "st_block_0": "ds",
        "st_width_0": 24,
        "st_repeats_0": 1,
        "st_kernel_0": 7,
        "st_stride_0": 1,
        "st_dilation_0": 4,
        "st_block_1": "res",
        "st_width_1": 16,
        "st_repeats_1": 1,
        "st_kernel_1": 3,
        "st_stride_1": 1,
        "st_dilation_1": 2,
        "st_block_2": "mb",
        "st_width_2": 16,
        "st_repeats_2": 1,
        "st_kernel_2": 5,
        "st_stride_2": 1,
        "st_dilation_2": 2,
        "st_expansion_2": 2,
    }
    return base | change


def _model(values: dict):  # noqa: ANN202
    from mcunas.space import McuSearchSpace
    from mcunas.tflite.convert import to_inference_model

    space = McuSearchSpace(SHAPE, CLASSES, families=("stages",))
    hp = space.hyperparameters(**values)
    return space, hp, to_inference_model(space.build(hp))


def test_series_choices_are_declared_for_series_only() -> None:
    from mcunas.space import McuSearchSpace

    series = McuSearchSpace(SHAPE, CLASSES, families=("stages",)).hyperparameters()
    image = McuSearchSpace((32, 32, 3), CLASSES, families=("stages",)).hyperparameters()
    assert series.values["st_head"] == "avg" and image.values["st_head"] == "avg"

    def choices(hps, name: str) -> list:  # noqa: ANN001
        return next(hp for hp in hps.space if hp.name == name).values

    assert [4, 2, 1] == sorted(choices(series, "st_stem_stride"), reverse=True)
    assert sorted(choices(series, "st_dilation_0")) == [1, 2, 4]
    assert choices(image, "st_dilation_0") == [1]  # images: the space as before
    assert choices(image, "st_head") == ["avg"]
    assert choices(image, "st_stem_stride") == [2, 1]


@pytest.mark.slow
def test_dilated_blocks_and_avgmax_head_run_on_tflite_micro() -> None:
    from mcunas.boards.catalog import load_board
    from mcunas.cost.profile import profile_model
    from mcunas.tflite.convert import convert_int8
    from mcunas.tflite.evaluate import int8_outputs
    from mcunas.tflite.reader import read_graph

    space, hp, model = _model(_values())
    assert "d4" in space.describe(hp) and "avg+max head" in space.describe(hp)
    x = np.random.default_rng(0).standard_normal((16, *SHAPE)).astype(np.float32)
    tflite = convert_int8(model, x)
    graph = read_graph(tflite)
    kinds = Counter(o.name for o in graph.ops)
    assert kinds["MAX_POOL_2D"] == 1 and kinds["CONCATENATION"] == 1
    dilated = Counter(o.name for o in graph.ops if (o.options or {}).get("dilation_h", 1) > 1)
    assert dilated["DEPTHWISE_CONV_2D"] == 2 and dilated["CONV_2D"] == 2  # ds, mb; res's two
    assert not {"SPACE_TO_BATCH_ND", "BATCH_TO_SPACE_ND"} & set(kinds)

    profile = profile_model(tflite, load_board("nano33ble"))
    assert profile.fits, profile.reasons
    assert len(profile.latency.ops) == len(graph.ops) and profile.latency.ms > 0

    int8 = int8_outputs(tflite, x)
    floats = model.predict(x, verbose=0)
    undilated = _model(_values(st_dilation_0=1, st_dilation_1=1, st_dilation_2=1))[2]
    undilated.set_weights(model.get_weights())  # same weights, read without the gaps
    other = undilated.predict(x, verbose=0)
    assert np.abs(int8 - floats).mean() < 0.5 * np.abs(other - floats).mean()


def test_dilation_shrinks_to_fit_a_short_map() -> None:
    from mcunas.space.stages import fitting_dilation

    assert fitting_dilation((100, 1), (7, 1), 4) == (4, 1)
    assert fitting_dilation((12, 1), (7, 1), 4) == (1, 1)  # (7-1)*2+1 = 13 > 12
    assert fitting_dilation((14, 1), (7, 1), 4) == (2, 1)
    assert fitting_dilation((3, 3), (1, 1), 4) == (1, 1)


@pytest.mark.slow
def test_the_ppv_head_clips_the_map_before_the_average_on_tflite_micro() -> None:
    import keras

    from mcunas.tflite.convert import convert_int8
    from mcunas.tflite.evaluate import int8_outputs
    from mcunas.tflite.reader import read_graph

    values = _values(st_head="ppv", st_dilation_0=1, st_dilation_1=1, st_dilation_2=1)
    space, hp, model = _model(values)
    assert "| ppv head |" in space.describe(hp)
    x = np.random.default_rng(0).standard_normal((16, *SHAPE)).astype(np.float32)
    tflite = convert_int8(model, x)
    names = [o.name for o in read_graph(tflite).ops]
    pool = len(names) - 1 - names[::-1].index("AVERAGE_POOL_2D")  # the head's, not the input's
    assert names[pool - 2 : pool] == ["MINIMUM", "RELU"]  # the clip to [0, 1], then the mean
    pooled = model.get_layer(index=-4).output  # the clipped map the average reads
    shares = keras.Model(model.inputs, pooled).predict(x, verbose=0)
    assert shares.min() >= 0.0 and shares.max() <= 1.0
    assert np.abs(int8_outputs(tflite, x) - model.predict(x, verbose=0)).mean() < 0.05
