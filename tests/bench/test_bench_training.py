"""scripts/bench_training.py: recipe knobs set and restored, the table loop (no training)."""

from __future__ import annotations

import argparse
import json
import sys
import types

import numpy as np
import pytest

from mcunas.search.training import recipe
from tests.script_helpers import loaded_script


@pytest.fixture(scope="module")
def bt():
    yield from loaded_script("bench_training")


def _knobs() -> tuple:
    return (
        recipe.MIN_STEPS_PER_EPOCH,
        recipe.SMALL_SERIES_STEPS_PER_EPOCH,
        recipe.SERIES_OPS,
        recipe.MIXUP_ALPHA,
        recipe.SERIES_WEIGHT_DECAY,
    )


def test_a_recipe_is_in_force_in_its_block_only_even_when_the_run_fails(bt) -> None:
    before = _knobs()
    settings = {"min_steps": 77, "ops": ("shift",), "mixup": 0.2, "wd": 0.05}
    with pytest.raises(RuntimeError), bt.recipe_applied(settings):
        assert _knobs() == (77, 77, ("shift",), 0.2, 0.05)
        raise RuntimeError("the search failed")
    assert _knobs() == before
    with bt.recipe_applied({"min_steps": 5, "ops": (), "mixup": 0.0}):
        assert recipe.SERIES_WEIGHT_DECAY == before[4]  # no "wd": left as it was
    assert _knobs() == before


def _series_npz(path) -> None:
    rng = np.random.default_rng(0)
    x = rng.normal(size=(40, 32, 1)).astype("float32")
    y = np.arange(40) % 2
    np.savez(path, x_train=x, y_train=y, x_test=x[:8], y_test=y[:8], kind="series")


def test_every_case_of_every_task_is_a_row_printed_and_saved(bt, tmp_path, monkeypatch, capsys):
    written = []

    def write(task, out):
        out.mkdir(parents=True, exist_ok=True)
        path = out / f"{task}.npz"
        _series_npz(path)
        written.append(task)
        return path

    datasets = types.SimpleNamespace(write=write, task_arrays=lambda task: task)
    tasks = types.SimpleNamespace(minirocket=lambda arrays, seed: {"test": 0.5})
    monkeypatch.setitem(sys.modules, "bench_datasets", datasets)
    monkeypatch.setitem(sys.modules, "bench_tasks", tasks)
    seen = []

    def run_case(npz, where, case):
        seen.append((where.name, recipe.MIN_STEPS_PER_EPOCH))  # run outside recipe_applied
        return {"wall_s": 3.0, "test": 0.625, "latency_ms": 1.25, "description": "a model"}

    args = argparse.Namespace(tasks="a,b", seed=0, budget="nano33ble", epochs=2, out=tmp_path)
    cases = [
        bt.Case({"design": "d", "recipe": "short"}, {"min_steps": 1}),
        bt.Case({"design": "d", "recipe": "long"}, {"min_steps": 100}),
    ]
    columns = [bt.label("task", 6), bt.label("recipe", 7), bt.accuracy_column(6)]
    columns += [bt.minirocket_column(7), bt.STEPS, bt.LATENCY]
    rows = bt.train_table(args, columns, cases, run_case)

    assert written == ["a", "b"]
    assert [name for name, _ in seen] == ["a-d-short", "a-d-long", "b-d-short", "b-d-long"]
    assert [r["recipe"] for r in rows] == ["short", "long", "short", "long"]
    steps = [r["planned_steps"] for r in rows]
    assert steps[1] > steps[0] and steps[1] == 200  # 100 steps an epoch x 2 epochs
    assert json.loads((tmp_path / "results.json").read_text()) == json.loads(
        json.dumps(rows, default=str)
    )
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "task  recipe   test MiniR.  steps     ms  model"
    assert lines[2] == f"a     long     62.5   50.0{steps[1]:>7}    1.2  a model"
    assert len(lines) == 5
