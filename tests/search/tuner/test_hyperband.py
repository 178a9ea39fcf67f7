"""Hyperband warm start: promoted trials continue from their parent's weights.

With ``--epochs 3`` keras-tuner's Hyperband (factor 3) runs bracket 1 (three
1-epoch trials, then the best promoted to epochs 1..3) and bracket 0 (two
3-epoch trials): six trials, one promoted.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from mcunas.errors import UserError
from mcunas.search.results.budgets import Budgets
from mcunas.search.results.store import TrialStatus
from mcunas.search.settings.config import SearchConfig
from mcunas.search.tuner.tuner import WARM_START_ENV, HardwareAwareTuner, SearchFatal
from tests.search.tuner.test_tuner import FakeRunner, make_tuner


def _promoted(store):
    rows = [r for r in store.trials() if "tuner/trial_id" in r.hyperparameters]
    assert len(rows) == 1
    return rows[0]


def _weights(tmp_path: Path) -> list[str]:
    return sorted(p.name for p in (tmp_path / "models").glob("*.weights.npz"))


def test_promoted_trial_loads_parent_and_trains_remaining_epochs(tmp_path: Path) -> None:
    runner = FakeRunner()
    tuner, store = make_tuner(tmp_path, runner, strategy="hyperband", budgets=Budgets())
    tuner.search()
    rows = store.trials()
    assert len(rows) == 6 and all(r.status == TrialStatus.OK for r in rows)
    child = _promoted(store)
    parent = child.hyperparameters["tuner/trial_id"]
    assert runner.loaded == [f"trial_{parent}.weights.npz"]
    width = child.hyperparameters["width"]
    # started at epoch 1 with the parent's 1 trained epoch, trained epochs 1..3 only
    assert (width, 1, 3, 1) in runner.fits
    assert child.epochs_run == 3  # cumulative: parent's 1 + 2 here
    assert f"warm start from trial {parent} at epoch 1" in child.description
    assert child.reason is None
    # only bracket 1's first-round trials can be promoted: only they keep weights
    first_round = [
        r.trial_id
        for r in rows
        if r.hyperparameters["tuner/bracket"] == 1 and r.hyperparameters["tuner/round"] == 0
    ]
    assert _weights(tmp_path) == sorted(f"trial_{t}.weights.npz" for t in first_round)
    # the other bracket trains from scratch for 3 epochs, as before
    assert sum(f[1:3] == (0, 3) for f in runner.fits) == 2


def test_missing_parent_weights_fall_back_to_scratch(tmp_path: Path) -> None:
    runner = FakeRunner(fatal_on_call=4)  # the promoted trial's measurement
    tuner, store = make_tuner(tmp_path, runner, strategy="hyperband", budgets=Budgets())
    with pytest.raises(SearchFatal):
        tuner.search()
    assert len(_weights(tmp_path)) == 3
    for path in (tmp_path / "models").glob("*.weights.npz"):
        path.unlink()
    store.close()

    runner2 = FakeRunner()
    tuner2, store2 = make_tuner(tmp_path, runner2, strategy="hyperband", budgets=Budgets())
    tuner2.search()
    child = _promoted(store2)
    parent = child.hyperparameters["tuner/trial_id"]
    assert child.status == TrialStatus.OK and runner2.loaded == []
    assert runner2.fits[0] == (child.hyperparameters["width"], 0, 3, 0)  # all 3 epochs
    assert child.epochs_run == 3
    note = f"trained from scratch: parent trial {parent} has no saved weights"
    assert child.reason == note and note in child.description


def test_resume_finds_parent_weights(tmp_path: Path) -> None:
    runner = FakeRunner(fatal_on_call=4)
    tuner, store = make_tuner(tmp_path, runner, strategy="hyperband", budgets=Budgets())
    with pytest.raises(SearchFatal):
        tuner.search()
    store.close()
    runner2 = FakeRunner()
    tuner2, store2 = make_tuner(tmp_path, runner2, strategy="hyperband", budgets=Budgets())
    tuner2.search()
    child = _promoted(store2)
    assert runner2.loaded == [f"trial_{child.hyperparameters['tuner/trial_id']}.weights.npz"]
    assert runner2.fits[0][1:] == (1, 3, 1) and child.reason is None


def test_weights_that_do_not_fit_fall_back(tmp_path: Path) -> None:
    class Mismatch(FakeRunner):
        def load_weights(self, model, path):
            return False

    tuner, store = make_tuner(tmp_path, Mismatch(), strategy="hyperband", budgets=Budgets())
    tuner.search()
    child = _promoted(store)
    assert child.status == TrialStatus.OK
    assert child.reason.endswith("weights do not fit this model") and child.epochs_run == 3


def test_unsaveable_weights_keep_the_trial_ok(tmp_path: Path) -> None:
    class ReadOnly(FakeRunner):
        def save_weights(self, model, path):
            raise PermissionError("read-only folder")

    tuner, store = make_tuner(tmp_path, ReadOnly(), strategy="hyperband", budgets=Budgets())
    tuner.search()
    rows = store.trials()
    assert all(r.status == TrialStatus.OK for r in rows) and _weights(tmp_path) == []
    assert any("weights not kept for Hyperband: PermissionError" in (r.reason or "") for r in rows)
    assert "has no saved weights" in _promoted(store).reason
    assert not list((tmp_path / "models").glob(".*"))  # no temporary file left


def test_weights_are_written_through_a_fresh_temporary_name_never_a_planted_link(
    tmp_path: Path,
) -> None:
    target = tmp_path / "elsewhere.txt"
    target.write_text("keep me")
    models = tmp_path / "models"
    models.mkdir()
    for tid in "0123":  # the names an older writer used
        (models / f".trial_{tid}.part.weights.npz").symlink_to(target)
    tuner, store = make_tuner(tmp_path, FakeRunner(), strategy="hyperband", budgets=Budgets())
    tuner.search()
    assert target.read_text() == "keep me" and _weights(tmp_path)
    left = {p.name for p in models.glob(".*")}
    assert left == {f".trial_{tid}.part.weights.npz" for tid in "0123"}


@pytest.mark.parametrize("strategy", ["random", "bayesian", "evolution"])
def test_other_strategies_write_no_weights(tmp_path: Path, strategy: str) -> None:
    runner = FakeRunner()
    tuner, store = make_tuner(tmp_path, runner, strategy=strategy, max_trials=5, budgets=Budgets())
    tuner.search()
    assert store.count() == 5 and _weights(tmp_path) == [] and runner.loaded == []
    assert all(f[1] == 0 for f in runner.fits)


def test_warm_start_off_trains_every_trial_from_scratch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(WARM_START_ENV, "0")  # the switch a config takes when not given
    warm = SearchConfig(board="esp32s3").warm_start
    assert warm is False and SearchConfig(board="esp32s3", warm_start=True).warm_start
    runner = FakeRunner()
    tuner, store = make_tuner(
        tmp_path, runner, strategy="hyperband", budgets=Budgets(), warm_start=warm
    )
    assert tuner.warm_start is False
    tuner.search()
    child = _promoted(store)
    assert _weights(tmp_path) == [] and runner.loaded == []
    assert (child.hyperparameters["width"], 0, 3, 0) in runner.fits
    assert child.reason is None and "warm start" not in (child.description or "")


def test_runner_without_weights_support_still_runs_hyperband(tmp_path: Path) -> None:
    class Legacy(FakeRunner):
        save_weights = load_weights = None

        def train(self, model, epochs):  # the protocol's old signature
            return super().train(model, epochs)

    runner = Legacy()
    tuner, store = make_tuner(tmp_path, runner, strategy="hyperband", budgets=Budgets())
    assert isinstance(tuner, HardwareAwareTuner)
    tuner.search()
    assert store.count() == 6 and all(r.status == TrialStatus.OK for r in store.trials())
    assert _weights(tmp_path) == [] and all(f[1] == 0 for f in runner.fits)


@pytest.mark.slow
def test_keras_runner_weights_round_trip(tmp_path: Path) -> None:
    import keras
    import numpy as np

    from mcunas.boards.catalog import load_board
    from mcunas.data.datasets import Dataset
    from mcunas.search.training.recipe import plan_recipe
    from mcunas.search.trial.runner import KerasRunner

    rng = np.random.default_rng(0)
    x = rng.normal(size=(96, 8, 8, 1)).astype("float32")
    y = (x.mean(axis=(1, 2, 3)) > 0).astype("int64")

    data = Dataset("d", x[:64], y[:64], x[64:], y[64:], 2, (8, 8, 1), ("a", "b"), "test")

    def model(width: int) -> keras.Model:
        keras.utils.set_random_seed(width)
        inp = keras.Input((8, 8, 1))
        h = keras.layers.Flatten()(keras.layers.Conv2D(width, 3)(inp))
        m = keras.Model(inp, keras.layers.Dense(2, activation="softmax")(h))
        m.compile("adam", "sparse_categorical_crossentropy")
        return m

    recipe = plan_recipe(data, batch_size=16)
    runner = KerasRunner(None, data, load_board("esp32s3"), worker=None, recipe=recipe)
    parent = model(4)
    assert runner.train(parent, 1).epochs_run == 1
    path = tmp_path / "trial_00.weights.npz"
    runner.save_weights(parent, path)
    child = model(4)
    assert runner.load_weights(child, path)
    assert all(
        np.array_equal(a, b) for a, b in zip(parent.get_weights(), child.get_weights(), strict=True)
    )
    assert runner.train(child, 3, initial_epoch=1).epochs_run == 2  # epochs 1..3 only
    other = model(6)
    before = other.get_weights()
    assert runner.load_weights(other, path) is False  # shapes differ: model unchanged
    assert all(np.array_equal(a, b) for a, b in zip(before, other.get_weights(), strict=True))
    junk = tmp_path / "junk.weights.npz"
    junk.write_bytes(b"not a zip")
    with pytest.raises(UserError, match="junk.weights.npz is not an .npz file"):
        runner.load_weights(model(4), junk)


def test_a_promoted_trial_counts_its_parents_steps_too() -> None:
    from mcunas.search.trial.pipeline import TrainResult
    from mcunas.search.tuner.accounting import cumulative_steps as _cumulative_steps

    assert _cumulative_steps(TrainResult(0.5, 2, 60), epochs_before=1) == 90
    assert _cumulative_steps(TrainResult(0.5, 2, None), epochs_before=1) is None
