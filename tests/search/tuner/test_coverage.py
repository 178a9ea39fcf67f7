"""The first population covers every top-level choice's values (front ends, families)."""

from __future__ import annotations

import random

import keras_tuner

from mcunas.search.tuner.coverage import cover, least_covered, top_choices


def _space() -> keras_tuner.HyperParameters:
    hp = keras_tuner.HyperParameters()
    hp.Choice("family", ["a", "b", "c"])
    hp.Boolean("pcan", default=False)
    hp.Choice("lr", [0.003, 0.001])
    hp.Choice("fixed", [1])  # one value: nothing to cover
    with hp.conditional_scope("family", ["b"]):
        hp.Choice("b_kernel", [3, 5])  # conditional: tried with its family
    return hp


def test_top_level_choices_are_the_unconditional_ones_of_two_values_or_more() -> None:
    names = [n for n, _ in top_choices(_space().space)]
    assert names == ["family", "pcan", "lr"]


def test_the_least_covered_choice_comes_first_then_the_cheapest_then_the_first() -> None:
    space = _space().space
    tried = [{"family": "a", "pcan": False, "lr": 0.003}]
    assert least_covered(space, tried) == ("pcan", [True])  # 2 values before 3
    tried.append({"family": "a", "pcan": True, "lr": 0.003})
    assert least_covered(space, tried) == ("lr", [0.001])
    tried.append({"family": "a", "pcan": True, "lr": 0.001})
    assert least_covered(space, tried) == ("family", ["b", "c"])
    tried += [{"family": "b", "b_kernel": 3}, {"family": "c"}]
    assert least_covered(space, tried) is None


def test_cover_changes_one_choice_and_fills_what_it_activates() -> None:
    space, rng = _space().space, random.Random(0)
    parent = {"family": "a", "pcan": True, "lr": 0.001, "fixed": 1}
    tried = [parent, {"family": "a", "pcan": False, "lr": 0.003, "fixed": 1}]
    child = cover(space, parent, tried, rng, lambda hp: hp.default)
    assert child["family"] in ("b", "c")
    assert {k: v for k, v in child.items() if k not in ("family", "b_kernel")} == {
        "pcan": True, "lr": 0.001, "fixed": 1
    }  # fmt: skip
    assert ("b_kernel" in child) == (child["family"] == "b")
    # a proposal that brings an untried value already is kept as it is
    fresh = {"family": "c", "pcan": True, "lr": 0.001, "fixed": 1}
    assert cover(space, fresh, tried, rng, lambda hp: hp.default) == fresh


def _frontend_oracle(tmp_path, families: tuple[str, ...]):  # noqa: ANN001, ANN202
    from mcunas.search.frontends.searched import declare_frontend
    from mcunas.search.tuner.oracles import make_oracle, start_with_reference
    from mcunas.space import McuSearchSpace
    from mcunas.space.rungs import reference_rungs

    shape = (49, 40, 1)
    space = McuSearchSpace(shape, 4, families)
    hp = keras_tuner.HyperParameters()
    declare_frontend(hp, (1000, 750, 500))
    space.declare_hyperparameters(hp)
    oracle = make_oracle("evolution", 8, seed=0, epochs=1)  # a population of 4
    oracle.max_trials = 40  # refused draws are drawn again (--max-draws)
    oracle._set_project_dir(str(tmp_path), "cover")
    oracle.hyperparameters = hp
    ladder = []
    for v in reference_rungs("kws-dscnn", shape):
        rung = hp.copy()
        rung.values.update(v)
        ladder.append(dict(rung.values))
    start_with_reference(oracle, ladder)
    return oracle


def _front_end(values: dict) -> tuple:
    return tuple(values.get(k) for k in ("frontend_window", "frontend_bands", "frontend_pcan"))


def _draw_trials(oracle, count: int, refused: int) -> list[dict]:  # noqa: ANN001
    """Draw until ``count`` trials trained, the first ``refused`` draws refused as infeasible."""
    trained: list[dict] = []
    for i in range(40):
        trial = oracle.create_trial(f"w{i}")
        ok = i >= refused
        metrics = {"score": 0.9 if ok else 0.0, "feasible": float(ok), "latency_ms": 5.0}
        oracle.update_trial(trial.trial_id, metrics)
        trial.status = "COMPLETED"
        oracle.end_trial(trial)
        if ok:
            trained.append(trial.hyperparameters.values)
        if len(trained) == count:
            return trained
    raise AssertionError("the oracle drew 40 trials")


def test_a_short_frontend_search_tries_several_front_ends_in_its_first_eight(tmp_path) -> None:
    # the reference's ladder steps down through three refused rungs first (they use up
    # the filling), so without coverage evolution mutates one of ~20 choices at a time
    oracle = _frontend_oracle(tmp_path, ("dsconv", "stages"))
    seen = _draw_trials(oracle, 8, refused=3)
    assert len({_front_end(v) for v in seen}) >= 3
    for name in ("frontend_window", "frontend_bands", "frontend_pcan", "frontend_duration_ms"):
        assert len({v[name] for v in seen}) >= 2, name
    assert {v["family"] for v in seen} == {"dsconv", "stages"}  # --families covered too
