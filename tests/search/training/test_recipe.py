"""The training recipe: sizes from the data, class weights, augmentation by kind."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from mcunas.data.datasets import Dataset
from mcunas.search.training.recipe import auto_batch_size, plan_recipe, steps_per_epoch


def _data(n: int, shape=(8, 8, 1), kind="image", labels=None, noise=None) -> Dataset:
    rng = np.random.default_rng(0)
    x = rng.random((n, *shape), dtype=np.float32)
    y = np.asarray(labels if labels is not None else np.arange(n) % 2, dtype=np.int32)
    k = int(y.max()) + 1
    names = tuple(str(i) for i in range(k))
    return Dataset("t", x, y, x[:4], y[:4], k, shape, names, "test", kind=kind, noise=noise)


@pytest.mark.parametrize(("n", "batch"), [(40, 16), (1437, 32), (2600, 64), (85_000, 128)])
def test_batch_size_follows_the_dataset_size(n: int, batch: int) -> None:
    assert auto_batch_size(n) == batch


def test_a_small_set_is_repeated_to_a_useful_epoch() -> None:
    small = plan_recipe(_data(40))
    assert small.batch_size == 16 and steps_per_epoch(small, 40) >= 30
    big = plan_recipe(_data(1437))
    assert big.repeats == 1
    assert plan_recipe(_data(40), batch_size=8).batch_size == 8


def test_class_weights_only_for_imbalanced_labels() -> None:
    assert plan_recipe(_data(40)).class_weights is None
    labels = [0] * 30 + [1] * 10
    weights = plan_recipe(_data(40, labels=labels)).class_weights
    assert weights is not None and weights[1] == pytest.approx(3 * weights[0])
    assert "balanced class weights" in plan_recipe(_data(40, labels=labels)).describe()


def test_unknown_augment_mode_is_refused() -> None:
    with pytest.raises(ValueError, match="augment must be one of"):
        plan_recipe(_data(40), augment="mixup")


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["image", "audio", "series"])
def test_augmented_batches_keep_shape_and_change_values(kind: str) -> None:
    from mcunas.search.training.recipe import training_data

    shape = {"image": (16, 16, 3), "audio": (49, 40, 1), "series": (100, 1, 6)}[kind]
    noise = np.full((3, *shape), -2.0, np.float32) if kind == "audio" else None
    data = _data(64, shape, kind, noise=noise)
    plain = plan_recipe(data, augment="off")
    x0, y0, w0 = next(iter(training_data(data, plain, seed=0)))
    assert x0.shape == (plain.batch_size, *shape) and y0.shape == (plain.batch_size, 2)
    assert np.all(w0.numpy() == 1.0)
    # without augmentation every batch row is one of the training samples, unchanged
    rows = {r.tobytes() for r in data.x_train}
    assert all(r.tobytes() in rows for r in x0.numpy())
    augmented = plan_recipe(data)
    x1, _, _ = next(iter(training_data(data, augmented, seed=0)))
    assert x1.shape == x0.shape and np.all(np.isfinite(x1.numpy()))
    assert sum(r.tobytes() in rows for r in x1.numpy()) < len(x1) // 2


@pytest.mark.slow
def test_training_uses_smoothing_and_a_decaying_rate() -> None:
    import keras

    from mcunas.search.training.recipe import compile_for_training

    inp = keras.Input((4,))
    model = keras.Model(inp, keras.layers.Dense(2, activation="softmax")(inp))
    model.compile(keras.optimizers.Adam(0.01), "sparse_categorical_crossentropy")
    recipe = plan_recipe(_data(40))
    compile_for_training(model, recipe, steps=100)
    schedule = model.optimizer._learning_rate  # the schedule object itself
    assert float(schedule(0)) == pytest.approx(0.01)
    assert float(schedule(100)) == pytest.approx(0.01 * 0.05)
    assert model.loss.get_config()["label_smoothing"] == pytest.approx(0.1)
    compile_for_training(model, recipe, steps=10)  # a second training starts from 0.01 again
    assert float(model.optimizer._learning_rate(0)) == pytest.approx(0.01)
    assert type(model.optimizer).__name__ == "Adam" and recipe.weight_decay == 0
    decayed = dataclasses.replace(recipe, weight_decay=0.05)
    compile_for_training(model, decayed, steps=10)
    assert type(model.optimizer).__name__ == "AdamW"
    assert model.optimizer.weight_decay == pytest.approx(0.05)
    assert "weight decay 0.05" in decayed.describe()


@pytest.mark.slow  # trains a Keras model
def test_early_stopping_waits_for_the_second_half_of_the_schedule() -> None:
    import keras

    from mcunas.boards.catalog import load_board
    from mcunas.search.trial.runner import KerasRunner

    rng = np.random.default_rng(0)
    x = rng.normal(size=(96, 8, 8, 1)).astype("float32")
    y = (x.mean(axis=(1, 2, 3)) > 0).astype("int32")
    # validation labels follow the opposite rule: its loss rises as the model learns
    data = Dataset("t", x[:64], y[:64], x[64:], 1 - y[64:], 2, (8, 8, 1), ("a", "b"), "test")
    runner = KerasRunner(None, data, load_board("esp32s3"), worker=None, recipe=plan_recipe(data))

    def model() -> keras.Model:
        keras.utils.set_random_seed(0)
        inp = keras.Input((8, 8, 1))
        out = keras.layers.Dense(2, activation="softmax")(keras.layers.Flatten()(inp))
        m = keras.Model(inp, out)
        m.compile(keras.optimizers.Adam(0.05), "sparse_categorical_crossentropy")
        return m

    history = []
    for epochs, initial in ((8, 0), (8, 4)):
        trained = runner.train(model(), epochs, initial_epoch=initial)
        assert trained.steps == trained.epochs_run * runner.recipe.steps_per_epoch
        history.append(trained.epochs_run)
    assert history == [8, 4]  # watched from epoch 4 (6): no stop before the 3 epochs' patience
