"""Aging evolution's choices: local steps, a seeded start, a tournament along the front."""

from __future__ import annotations

import random

import keras_tuner

from mcunas.search.tuner import evolution
from mcunas.search.tuner.evolution import step_choice
from mcunas.search.tuner.oracles import make_oracle, start_with_reference


def test_numeric_mutations_step_to_a_neighbour_most_of_the_time() -> None:
    rng = random.Random(0)
    choices = [8, 16, 24, 32, 48, 64]
    moves = [step_choice(choices, 24, rng) for _ in range(400)]
    assert all(m != 24 and m in choices for m in moves)
    near = sum(m in (16, 32) for m in moves) / len(moves)
    assert 0.75 <= near <= 0.9  # three in four local, plus the far draws that land near
    assert {step_choice(choices, 8, rng) for _ in range(50)} >= {16}  # an end steps inwards
    assert {step_choice(["relu", "relu6"], "relu", rng) for _ in range(5)} == {"relu6"}


class _Metrics:
    def __init__(self, latency: float | None) -> None:
        self.latency = latency

    def exists(self, name: str) -> bool:
        return name == "latency_ms" and self.latency is not None

    def get_last_value(self, name: str) -> float | None:
        return self.latency


class _Trial:
    def __init__(self, score: float, latency: float | None) -> None:
        self.score, self.metrics = score, _Metrics(latency)


def test_front_membership_by_accuracy_and_latency() -> None:
    fast, slow_good, dominated = _Trial(0.9, 2.0), _Trial(0.95, 8.0), _Trial(0.85, 3.0)
    assert evolution.trial_dominates(fast, dominated)
    assert not evolution.trial_dominates(fast, slow_good)
    assert not evolution.trial_dominates(slow_good, fast)
    assert not evolution.trial_dominates(fast, fast)
    assert evolution.trial_dominates(fast, _Trial(0.9, None))  # no latency: slowest


def _space_oracle(tmp_path, max_trials: int = 30):  # noqa: ANN001, ANN202
    from mcunas.space import McuSearchSpace
    from mcunas.space.rungs import reference_rungs

    space = McuSearchSpace((128, 1, 3), 4)
    oracle = make_oracle("evolution", max_trials, seed=0, epochs=1)
    oracle._set_project_dir(str(tmp_path), "evo")
    hp = keras_tuner.HyperParameters()
    space.declare_hyperparameters(hp)
    oracle.hyperparameters = hp
    ladder = [space.hyperparameters(**v).values for v in reference_rungs("kws-dscnn", (128, 1, 3))]
    start_with_reference(oracle, ladder)
    return oracle, ladder


def _finish(oracle, trial, score: float) -> None:  # noqa: ANN001
    metrics = {"score": score, "feasible": 1.0, "latency_ms": 10.0 * score}
    oracle.update_trial(trial.trial_id, metrics)
    trial.status = "COMPLETED"
    oracle.end_trial(trial)


def _differences(a: dict, b: dict) -> int:
    return sum(a.get(k) != b.get(k) for k in set(a) | set(b))


def test_a_seeded_population_fills_with_children_of_the_seeds(tmp_path) -> None:
    oracle, ladder = _space_oracle(tmp_path)
    assert oracle.population_size == 10
    seen = []
    for i in range(12):
        trial = oracle.create_trial(f"w{i}")
        seen.append(trial.hyperparameters.values)
        _finish(oracle, trial, 0.9)
    seeded = [v for v in seen if any(v.items() <= r.items() for r in ladder)]
    assert len(seeded) == 6  # x1 at /1, /2 and /4 all fit here, then narrower at /4
    assert [v["st_width_mult"] for v in seen[:6]] == [1.0] * 3 + [0.75, 0.5, 0.25]
    children = [v for v in seen[6:] if min(_differences(v, s) for s in seen[:6]) <= 2]
    assert len(children) >= 3  # two in three of the filling mutate a seed (or its child)


def test_an_unseeded_population_fills_at_random(tmp_path) -> None:
    oracle, _ = _space_oracle(tmp_path)
    oracle.references = []
    oracle.populate_space = evolution.AgingEvolutionOracle.populate_space.__get__(oracle)
    seen = []
    for i in range(6):
        trial = oracle.create_trial(f"w{i}")
        seen.append(trial.hyperparameters.values)
        _finish(oracle, trial, 0.9)
    assert all(min(_differences(v, s) for s in seen[:i]) > 2 for i, v in enumerate(seen) if i)


def test_the_widest_rungs_stay_parents_in_a_short_search(tmp_path) -> None:
    # 12 trials: a window of 4, after six rungs; the two widest rungs score best
    oracle, ladder = _space_oracle(tmp_path, max_trials=12)
    assert oracle.population_size == 4
    seen = []
    for i in range(12):
        trial = oracle.create_trial(f"w{i}")
        values = trial.hyperparameters.values
        seen.append(values)
        _finish(oracle, trial, 0.99 if i < 2 else 0.8)
    rungs = seen[:6]
    assert all(any(v.items() <= r.items() for r in ladder) for v in rungs)

    def shape(v: dict) -> tuple:
        return v.get("st_resolution"), v.get("st_width_mult")

    widest = {shape(rungs[0]), shape(rungs[1])}  # full width at the full and half input
    # without the rungs kept in the pool, every child descends from the four /4 rungs
    assert sum(shape(v) in widest for v in seen[6:]) >= 2
