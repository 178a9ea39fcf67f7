"""Series augmentation (window slicing, time warp, mixup) and the recipe's stated steps."""

from __future__ import annotations

import numpy as np
import pytest

from mcunas.search.training import recipe as recipe_mod
from mcunas.search.training.recipe import plan_recipe
from tests.search.training.test_recipe import _data


def test_recipe_states_its_optimizer_steps() -> None:
    r = plan_recipe(_data(200, (8, 8, 1)))
    # 200 images at batch 16, repeated 3 times: 38 steps an epoch
    assert r.steps_per_epoch == 38 and r.steps(30) == 1140
    assert "38 steps/epoch (1140 optimizer steps at 30 epochs)" in r.describe(30)
    assert "38 steps/epoch" in r.describe()


def test_small_series_sets_train_four_times_the_steps() -> None:
    small = plan_recipe(_data(200, (100, 1, 3), "series"))
    assert small.steps_per_epoch >= recipe_mod.SMALL_SERIES_STEPS_PER_EPOCH == 120
    image = plan_recipe(_data(200, (8, 8, 1)))
    assert 30 <= image.steps_per_epoch < 60
    big = plan_recipe(_data(recipe_mod.SMALL_SERIES, (100, 1, 3), "series"))
    assert big.steps_per_epoch < 60  # from SMALL_SERIES samples on, the common minimum


def test_series_ops_and_mixup_follow_the_module_defaults(monkeypatch) -> None:
    monkeypatch.setattr(recipe_mod, "SERIES_OPS", ("slice", "warp"))
    monkeypatch.setattr(recipe_mod, "MIXUP_ALPHA", 0.2)
    series = plan_recipe(_data(40, (50, 1, 2), "series"))
    assert series.series_ops == ("slice", "warp") and series.mixup == 0.2
    assert "(slice, warp, mixup)" in series.describe()
    assert plan_recipe(_data(40, (50, 1, 2), "series"), augment="off").mixup == 0.0
    assert plan_recipe(_data(40)).mixup == 0.0  # images: no mixup


def test_unknown_series_op_is_refused() -> None:
    from mcunas.search.training.augment import augmenter

    with pytest.raises(ValueError, match="unknown series augmentation"):
        augmenter("series", "auto", None, ("stretch",))


@pytest.mark.slow
def test_slice_and_warp_resample_a_ramp_monotonically() -> None:
    import tensorflow as tf

    from mcunas.search.training.augment import augmenter

    ramp = np.tile(np.linspace(0, 1, 64, dtype=np.float32)[None, :, None, None], (8, 1, 1, 2))
    for ops in (("slice",), ("warp",)):
        out = augmenter("series", "auto", None, ops)(tf.constant(ramp)).numpy()
        assert out.shape == ramp.shape
        steps = np.diff(out[:, :, 0, 0], axis=1)
        assert np.all(steps >= -1e-6), ops  # still increasing: time moved, not shuffled
        assert not np.allclose(out, ramp), ops
    warped = augmenter("series", "auto", None, ("warp",))(tf.constant(ramp)).numpy()
    np.testing.assert_allclose(warped[:, [0, -1], 0, 0], ramp[:, [0, -1], 0, 0], atol=1e-5)
    sliced = augmenter("series", "auto", None, ("slice",))(tf.constant(ramp)).numpy()
    span = sliced[:, -1, 0, 0] - sliced[:, 0, 0, 0]
    np.testing.assert_allclose(span, 0.9, atol=1e-4)  # 90% of the steps, stretched


@pytest.mark.slow
def test_mixup_mixes_inputs_labels_and_weights_alike() -> None:
    import tensorflow as tf

    from mcunas.search.training.augment import mixup

    tf.random.set_seed(0)  # a worker that ran a trial first has op determinism on
    x = tf.constant(np.repeat(np.arange(16, dtype=np.float32), 4).reshape(16, 4, 1, 1))
    y = tf.one_hot(tf.range(16) % 2, 2)
    w = tf.ones([16])
    mx, my, mw = (t.numpy() for t in mixup(0.4)(x, y, w))
    np.testing.assert_allclose(my.sum(axis=1), 1.0, atol=1e-6)
    assert np.all(my.max(axis=1) >= 0.5 - 1e-6)  # the sample's own label keeps the larger share
    np.testing.assert_allclose(mw, 1.0, atol=1e-6)
    assert mx.shape == (16, 4, 1, 1) and not np.allclose(mx, x.numpy())


def test_common_steps_undoes_the_small_series_minimum() -> None:
    from mcunas.search.training.recipe import common_steps

    small = plan_recipe(_data(200, (100, 1, 3), "series"))
    common = common_steps(small, 200)
    assert common.steps_per_epoch == 38 and common.repeats == 3  # as an image set of 200
    assert common.batch_size == small.batch_size and common.series_ops == small.series_ops
