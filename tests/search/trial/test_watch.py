"""A candidate's training: one trace, an epoch per call, validation where looked at, rungs.

The speed-ups must not change a weight: the old per-step loop (the benchmarks'
``MCUNAS_PER_STEP_TRAINING=1``) and a rung test that never fires give the very
same model as the default training.
"""

from __future__ import annotations

import numpy as np
import pytest

from mcunas.data.datasets import Dataset
from mcunas.search.results.curves import curve_of, rung_epochs
from mcunas.search.training.recipe import PER_STEP_ENV, Recipe
from mcunas.search.trial.runner import KerasRunner

EPOCHS = 10  # rungs at epochs 2 and 4; early stopping watches epochs 6-10


def _data() -> Dataset:
    rng = np.random.default_rng(0)
    x = rng.random((64, 8, 8, 1), dtype=np.float32)
    y = (x.mean(axis=(1, 2, 3)) > 0.5).astype(np.int32)
    return Dataset("t", x, y, x[:24], y[:24], 2, (8, 8, 1), ("a", "b"), "test", kind="image")


def _runner() -> KerasRunner:
    recipe = Recipe(batch_size=16, repeats=1, augment="off", kind="image", steps_per_epoch=4)
    return KerasRunner(None, _data(), None, None, recipe=recipe)  # type: ignore[arg-type]


def _model():  # noqa: ANN202
    import keras

    keras.utils.set_random_seed(7)
    keras.backend.clear_session()
    inp = keras.Input((8, 8, 1))
    x = keras.layers.Conv2D(4, 3, activation="relu")(inp)
    x = keras.layers.BatchNormalization()(x)
    x = keras.layers.Dropout(0.2)(keras.layers.GlobalAveragePooling2D()(x))
    model = keras.Model(inp, keras.layers.Dense(2, activation="softmax")(x))
    model.compile(optimizer=keras.optimizers.Adam(0.01), loss="categorical_crossentropy")
    return model


class _Bound:
    """A rung test that stops on ``at`` (None: never)."""

    def __init__(self, at: int | None) -> None:
        self.at, self.asked = at, []

    def stop(self, rung: int, accuracy: float, samples: int) -> str | None:
        self.asked.append((rung, samples))
        return "stopped here" if rung == self.at else None


def _train(bound: _Bound | None = None):  # noqa: ANN202
    model = _model()
    result = _runner().train(model, EPOCHS, bound=bound)  # type: ignore[arg-type]
    return model.get_weights(), result


@pytest.mark.slow
def test_the_old_per_step_loop_gives_the_same_weights(monkeypatch: pytest.MonkeyPatch) -> None:
    fast, fast_result = _train()
    monkeypatch.setenv(PER_STEP_ENV, "1")
    slow, slow_result = _train()
    assert all(np.array_equal(a, b) for a, b in zip(fast, slow, strict=True))
    assert fast_result.float_accuracy == slow_result.float_accuracy
    ran = slow_result.epochs_run
    assert ran == fast_result.epochs_run
    assert curve_of_text(slow_result.curve).keys() == set(range(1, ran + 1))


def curve_of_text(text: str | None) -> dict[int, float]:
    """The curve of a stored curve text."""
    from mcunas.search.results.record import TrialRecord

    got = curve_of(TrialRecord("x", curve=text))
    assert got is not None and got[0] == EPOCHS
    return got[1]


def test_validation_only_on_rungs_and_the_second_half_and_a_silent_bound_changes_nothing() -> None:
    plain, result = _train()
    bound = _Bound(None)
    watched, watched_result = _train(bound)
    assert all(np.array_equal(a, b) for a, b in zip(plain, watched, strict=True))
    ran = result.epochs_run  # early stopping may end it from epoch 9
    assert ran >= 9 and watched_result.epochs_run == ran
    assert curve_of_text(result.curve).keys() == {*rung_epochs(EPOCHS), *range(6, ran + 1)}
    assert [r for r, _ in bound.asked] == list(rung_epochs(EPOCHS))
    assert {n for _, n in bound.asked} == {24}  # the validation split's size
    assert watched_result.stopped is None and watched_result.steps_saved is None
    assert result.steps == 4 * ran


def test_a_candidate_stopped_on_a_rung_keeps_the_steps_it_saved() -> None:
    _, result = _train(_Bound(rung_epochs(EPOCHS)[0]))
    first = rung_epochs(EPOCHS)[0]
    assert result.stopped == "stopped here" and result.epochs_run == first
    assert result.steps == 4 * first and result.steps_saved == 4 * (EPOCHS - first)
    assert curve_of_text(result.curve).keys() == {first}
