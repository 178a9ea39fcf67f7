"""Which trial is exported: always on the front; re-scored finalists chosen on their means."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest

from mcunas.search.finish.choice import choose_best, chosen_by, feasible_front
from mcunas.search.finish.finalists import (
    REFERENCE_Z,
    RESCORE_META,
    Plan,
    finalist_band,
    pick_finalists,
    plan_for,
    reference_trial,
    rescored_choice,
)
from mcunas.search.results.pareto import dominates, record_point
from mcunas.search.results.store import TrialRecord, TrialStatus, TrialStore
from tests.commands.test_search_cli import ExportableRunner, run
from tests.search.tuner.test_tuner import FakeSpace


def rec(tid: str, acc: float, lat: float, sram_kb: float, origin=None, **extra) -> TrialRecord:
    return TrialRecord(
        tid,
        status=extra.pop("status", TrialStatus.OK),
        score=acc,
        int8_accuracy=acc,
        latency_ms=lat,
        peak_sram_bytes=round(sram_kb * 1024),
        flash_bytes=extra.pop("flash", 50_000),
        model_path=f"models/{tid}.tflite",
        origin=origin,
        **extra,
    )


def test_the_demo_seed_design_dominated_by_trial_06_is_not_exported() -> None:
    # scripts/demo's trials 00 (the --seed-arch design) and 06: the same 99.2%, 06 cheaper
    seed = rec("00", 0.992, 3.45, 102.1, origin="seed", int8_loss=0.040)
    other = rec("06", 0.992, 2.61, 101.4, int8_loss=0.045)
    slow = rec("03", 0.975, 9.0, 90.0)
    rows = [seed, other, slow]
    best = choose_best(rows)
    assert best is other
    assert not any(dominates(record_point(r), record_point(best)) for r in rows)
    assert best in feasible_front(rows)
    assert chosen_by(rows, best).startswith("on the Pareto front")


def test_the_seed_design_is_kept_only_among_non_dominated_ties() -> None:
    seed = rec("00", 0.990, 3.45, 80.0, origin="seed")
    faster_bigger = rec("06", 0.993, 2.61, 101.4)
    rows = [seed, faster_bigger]
    assert choose_best(rows) is seed  # both on the front, within 0.5 points
    assert "--seed-arch design" in chosen_by(rows, seed)
    # on --objectives accuracy,latency the seed is dominated: it is not exported
    assert choose_best(rows, ("accuracy", "latency")) is faster_bigger


def test_the_choice_follows_the_chosen_objectives() -> None:
    a = rec("a", 0.99, 2.0, 100.0, flash=90_000)
    b = rec("b", 0.99, 2.0, 100.0, flash=40_000)
    both = [a, b]
    assert choose_best(both, ("accuracy", "latency", "flash")) is b
    assert chosen_by(both, b, ("accuracy", "latency", "flash")) == (
        "on the Pareto front; the most accurate"
    )


def test_a_random_set_of_trials_never_exports_a_dominated_one() -> None:
    rng = np.random.default_rng(3)
    for _ in range(200):
        rows = [
            rec(
                f"{i:02d}",
                float(rng.choice([0.97, 0.98, 0.985, 0.99])),
                float(rng.uniform(1, 5)),
                float(rng.uniform(50, 120)),
                origin="seed" if i == 0 else None,
                int8_loss=float(rng.uniform(0.01, 0.1)),
            )
            for i in range(8)
        ]
        best = choose_best(rows)
        assert not any(dominates(record_point(r), record_point(best)) for r in rows)


def test_plan_and_finalists() -> None:
    assert plan_for(1077) == Plan("kfold", 5) and plan_for(5000) == Plan("seeds", 3)
    assert Plan("kfold", 5).describe() == "5-fold cross-validation"
    rows = [
        rec("00", 0.992, 3.45, 102.1, origin="seed"),
        rec("06", 0.992, 2.61, 101.4),
        rec("03", 0.975, 1.0, 90.0),
        rec("04", 0.985, 2.0, 95.0),
        rec("05", 0.980, 9.0, 110.0),  # dominated: never a finalist
    ]
    assert [r.trial_id for r in pick_finalists(rows, ("accuracy", "latency", "sram"), 3)] == [
        "06",
        "04",
        "03",
    ]
    assert pick_finalists(rows, ("accuracy", "latency", "sram"), 0) == []


def test_finalists_are_the_scores_within_the_split_noise_front_or_not() -> None:
    # OSULeaf, 41 validation series: a small variant of the seed design scored one
    # series more than the full design and dominated it; cheaper trials far below
    # were the rest of the front.
    rows = [
        rec("00", 0.902, 17.0, 55.0, origin="seed"),  # dominated by 03 on this split
        rec("03", 0.927, 3.5, 53.2, origin="seed"),
        rec("13", 0.854, 2.3, 52.1),
        rec("09", 0.854, 2.0, 52.9),
        rec("05", 0.561, 1.6, 52.5),  # on the front, 37 points below: never a finalist
    ]
    objectives = ("accuracy", "latency", "sram")
    assert [r.trial_id for r in pick_finalists(rows, objectives, 3, val_samples=41)] == [
        "03",
        "00",
        "09",
    ]
    # without the split's size: the front's trials, as the choice sees them
    front = ["03", "09", "13", "05"]
    assert [r.trial_id for r in pick_finalists(rows, objectives, 4)] == front
    # the band narrows as the split grows: 11 points at 95% on 41 samples, 1.1 at 99.7% on 360
    assert finalist_band(0.951, 41) == pytest.approx(0.113, abs=0.001)
    assert finalist_band(0.997, 360) == pytest.approx(0.011, abs=0.001)
    assert finalist_band(1.0, 6) > finalist_band(1.0, 60) > 0  # a perfect score keeps its noise
    many = pick_finalists(rows, objectives, 9, val_samples=10_000)
    assert [r.trial_id for r in many] == ["03"]  # a huge split: nothing else is close


def test_the_seed_designs_largest_rung_is_a_finalist_unless_clearly_worse() -> None:
    # OSULeaf, 41 validation series: three cheaper trials topped the full seed design
    # (87.8%, 17.7 ms) and filled the three places; its /2 rung (seed) scored 95.1%.
    objectives = ("accuracy", "latency", "sram")
    full = rec("00", 0.878, 17.7, 55.0, origin="seed")
    rows = [
        full,
        rec("01", 0.951, 9.2, 54.0, origin="seed"),
        rec("13", 0.976, 5.0, 53.0),
        rec("10", 0.951, 8.2, 53.5),
        rec("15", 0.927, 7.0, 53.8),
        rec("02", 0.70, 30.0, 60.0, origin="seed", status=TrialStatus.INFEASIBLE),  # over budget
    ]
    assert reference_trial(rows) is full
    names = [r.trial_id for r in pick_finalists(rows, objectives, 3, val_samples=41)]
    assert names == ["13", "10", "00"]  # the reference takes the last place from 01
    assert finalist_band(0.976, 41) < 0.976 - 0.878 < finalist_band(0.976, 41, REFERENCE_Z)
    # clearly worse on a larger split, or no room: the finalists as before
    assert [r.trial_id for r in pick_finalists(rows, objectives, 3, val_samples=400)] == ["13"]
    assert [r.trial_id for r in pick_finalists(rows, objectives, 1, val_samples=41)] == ["13"]
    assert reference_trial([r for r in rows if r.origin != "seed"]) is None


def test_a_choice_off_the_split_front_names_the_finalist_it_overturned() -> None:
    lucky = rec("03", 0.927, 3.5, 53.2)
    full = rec("00", 0.902, 17.0, 55.0, origin="seed")
    state = _state({"03": [0.69, 0.87, 0.75], "00": [0.95, 0.97, 0.92]})
    best, rule, _ = rescored_choice([lucky, full], ("accuracy", "latency", "sram"), state)
    assert best is full
    assert rule.startswith("re-scored by 5-fold cross-validation: on the re-scored finalists'")
    assert "off the validation split's front, overturned by re-scoring: trial 03" in rule
    assert "92.7% there, re-scored 77.0%" in rule
    # as accurate on the split and cheaper: dominated too, and named
    twin = rec("04", 0.902, 2.0, 50.0)
    state = _state({"04": [0.80, 0.82, 0.78], "00": [0.95, 0.97, 0.92]})
    best, rule, _ = rescored_choice([twin, full], ("accuracy", "latency", "sram"), state)
    assert best is full and rule.endswith("trial 04 (90.2% there, re-scored 80.0%)")


def _state(runs: dict[str, list[float]], finalists=None) -> dict:
    return {
        "method": "kfold",
        "planned": 5,
        "seed": 0,
        "finalists": finalists or list(runs),
        "runs": {
            tid: {str(i): {"accuracy": a, "loss": 0.1, "seconds": 2.0} for i, a in enumerate(accs)}
            for tid, accs in runs.items()
        },
        "failed": {},
    }


def test_a_round_stopped_midway_compares_and_counts_the_runs_all_finalists_share() -> None:
    ahead, behind = rec("06", 0.99, 2.0, 100.0), rec("04", 0.985, 2.5, 90.0)
    # "06" has a third run (a fold "04" has not had yet), on which it scored far lower
    state = _state({"06": [0.97, 0.97, 0.10], "04": [0.96, 0.96]})
    _, _, summary = rescored_choice([ahead, behind], ("accuracy", "latency", "sram"), state)
    assert "(2 of 5 runs each)" in summary.text
    means = {s.trial_id: s.mean for s in summary.finalists}
    assert means == {"06": pytest.approx(0.97), "04": pytest.approx(0.96)}


def test_the_rescored_means_decide_and_are_printed() -> None:
    lucky = rec("06", 0.995, 2.0, 100.0)  # top on one split
    steady = rec("04", 0.985, 2.5, 90.0)
    rows = [lucky, steady]
    state = _state({"06": [0.96, 0.97, 0.95, 0.96, 0.96], "04": [0.98, 0.99, 0.98, 0.98, 0.99]})
    best, rule, summary = rescored_choice(rows, ("accuracy", "latency", "sram"), state)
    assert best is steady
    assert rule.startswith("re-scored by 5-fold cross-validation: on the Pareto front")
    assert "trial 04 98.4 +/- 0.2%" in summary.text and "in 20 s" in summary.text
    means = {f["trial_id"]: f["mean_accuracy"] for f in summary.to_dict()["finalists"]}
    assert means == {"06": pytest.approx(0.96), "04": pytest.approx(0.984)}
    assert summary.search_choice == "06" and summary.chosen == "04"
    assert summary.reference is None and "(reference)" not in summary.text


def test_the_reference_finalist_is_named_in_the_summary() -> None:
    # OSULeaf, all five folds: the 7.2 ms find against the seed design's full rung
    find = rec("13", 0.951, 7.2, 53.0)
    full = rec("00", 0.878, 17.7, 55.0, origin="seed")
    half = rec("01", 0.878, 9.2, 54.0, origin="seed")  # a smaller rung: not the reference
    state = _state({"13": [0.95, 0.90, 0.92, 0.90, 0.90], "01": [0.85] * 5, "00": [0.88] * 5})
    best, _, summary = rescored_choice([find, full, half], ("accuracy", "latency", "sram"), state)
    assert best is find and summary.reference == "00"
    assert "trial 00 (reference) 88.0 +/- 0.0%" in summary.text
    assert "trial 01 85.0" in summary.text
    # the reference not re-scored: nobody is named so
    del state["runs"]["00"]
    _, _, summary = rescored_choice([find, full, half], ("accuracy", "latency", "sram"), state)
    assert summary.reference is None and "(reference)" not in summary.text


def test_means_within_their_standard_error_tie_and_go_to_the_cheaper() -> None:
    fast = rec("06", 0.99, 1.0, 100.0)
    slow = rec("04", 0.99, 3.0, 60.0)
    # fast's mean is 1.6 points lower, but its runs scatter widely: within the error
    state = _state({"04": [0.97, 0.99, 0.95, 0.99, 0.97], "06": [0.90, 0.99, 0.93, 0.99, 0.97]})
    best, rule, _ = rescored_choice([fast, slow], ("accuracy", "latency", "sram"), state)
    assert best is fast and "tied with trial 04" in rule and "faster" in rule
    # no runs recorded: nothing to decide
    assert rescored_choice([fast, slow], ("accuracy", "latency"), {}) is None


def test_a_tied_cheaper_trial_the_loss_ruled_out_is_not_called_the_tie() -> None:
    # ArrowHead, re-scored: 14 is the most accurate; 17 is cheaper and within the
    # standard error, but its loss is far higher, so 14 is chosen: not "the cheapest"
    top = rec("14", 0.799, 14.01, 55.0, int8_loss=0.45)
    cheap = rec("17", 0.772, 4.04, 53.0, int8_loss=0.62)
    spread = {"14": 0.04, "17": 0.08}
    best = choose_best([top, cheap], ("accuracy", "latency", "sram"), spread)
    assert best is top
    rule = chosen_by([top, cheap], top, ("accuracy", "latency", "sram"), spread)
    assert rule == "on the Pareto front; the most accurate"
    even = rec("17", 0.772, 4.04, 53.0, int8_loss=0.46)  # as low a loss: the cheaper wins
    assert choose_best([top, even], ("accuracy", "latency", "sram"), spread) is even


class FoldRunner:
    """A fake runner whose INT8 accuracy depends on the trial's width and the data it got."""

    def __init__(self, data=None, seed=0, log=None):
        self.data, self.seed, self.log = data, seed, [] if log is None else log

    def for_data(self, data, seed):
        return FoldRunner(data, seed, self.log)

    def build(self, hp, seed):
        return {"width": hp.get("width")}

    def train(self, model, epochs):
        self.log.append((model["width"], len(self.data.y_train), self.seed))

    def convert(self, model):
        return bytes([model["width"]])

    def evaluate(self, model_bytes):
        from mcunas.search.tuner.tuner import EvalResult

        noise = (len(self.data.y_val) % 7) / 1000
        return EvalResult(0.9 + model_bytes[0] / 1000 + noise, 0.2)


def test_rescoring_runs_folds_once_and_resume_does_not_redo_them(
    tmp_path: Path, monkeypatch
) -> None:
    import mcunas.search.finish.rescore as rescore_mod
    from mcunas.data.datasets import load_dataset
    from mcunas.search.finish.rescore import fold_splits, rescore_finalists
    from mcunas.search.settings.config import SearchConfig
    from mcunas.search.settings.progress import Progress

    data = load_dataset(None, seed=0)
    folds = fold_splits(data, Plan("kfold", 5), seed=0)
    pooled = len(data.y_train) + len(data.y_val)
    assert all(len(f.y_train) + len(f.y_val) == pooled for f in folds)
    assert sum(len(f.y_val) for f in folds) == pooled  # every sample validates once
    assert all(set(np.unique(f.y_val)) == set(range(10)) for f in folds)  # stratified
    assert folds[0].x_test is data.x_test

    store = TrialStore.open(tmp_path)
    for tid, width, acc, lat in (
        ("00", 8, 0.95, 1.0),
        ("01", 16, 0.97, 2.0),
        ("02", 24, 0.98, 3.0),
    ):
        store.start_trial(tid, {"width": width})
        store.finish_trial(
            tid, TrialStatus.OK, score=acc, int8_accuracy=acc, latency_ms=lat,
            peak_sram_bytes=1000 * width, model_path=f"models/{tid}.tflite",
        )  # fmt: skip
    config = SearchConfig(board="esp32s3", finalists=2)
    runner, stream = FoldRunner(), io.StringIO()
    # out of time: two rounds still give every finalist a mean and a standard error
    monkeypatch.setattr(rescore_mod, "TIME_SHARE", 0.0)
    rescore_finalists(config, store, object(), runner, data, Progress(1, None, stream=stream))
    assert len(runner.log) == 4
    assert "stopped at its share, 0% of the search's time (0 s)" in stream.getvalue()
    _, _, summary = rescored_choice(store.trials(), config.objectives, store.get_meta("rescore"))
    assert "5-fold cross-validation (2 of 5 runs each)" in summary.text
    monkeypatch.undo()
    monkeypatch.setattr(store, "checkpoint_wall", lambda: 3600.0)  # an hour's search: time
    rescore_finalists(config, store, object(), runner, data, Progress(1, None, stream=stream))
    assert len(runner.log) == 10  # 2 finalists x 5 folds, the first 4 not redone
    assert {w for w, _, _ in runner.log} == {24, 16}
    state = store.get_meta(RESCORE_META)
    assert state["finalists"] == ["02", "01"] and len(state["runs"]["02"]) == 5
    assert "Re-scored trial 02, fold 5/5: INT8" in stream.getvalue()

    # a resumed search (or a second call) finds every run done
    runner.log.clear()
    rescore_finalists(config, store, object(), runner, data, Progress(1, None, stream=stream))
    assert runner.log == []
    best, rule, summary = rescored_choice(store.trials(), config.objectives, state)
    assert best.trial_id == "02" and summary.plan.describe() == "5-fold cross-validation"


class RescorableRunner(ExportableRunner):
    """The CLI tests' exportable fake runner, able to re-train on other folds."""

    def for_data(self, data, seed):
        return self


def test_summary_and_best_json_say_which_rule_chose(capsys, tmp_path: Path, monkeypatch) -> None:
    import json

    from mcunas.search.run import SearchRun

    runner = RescorableRunner()
    monkeypatch.setattr(
        SearchRun, "components", lambda self, families=None: (FakeSpace(), runner, lambda: None)
    )
    out = tmp_path / "run"
    args = ["--board", "esp32s3", "--out", str(out), "--max-trials", "5", "--strategy", "random"]
    code, stdout, err = run(capsys, *args, "--max-latency-ms", "10")
    assert code == 0, err
    assert "Finalists re-scored by 5-fold cross-validation in" in stdout and "+/-" in stdout
    assert "chosen: re-scored by 5-fold cross-validation: on the Pareto front" in stdout
    best = json.loads((out / "best" / "best.json").read_text())
    assert best["chosen_by"].startswith("re-scored by 5-fold")
    assert len(best["rescore"]["finalists"]) == 3
    assert best["trial"]["trial_id"] == best["rescore"]["chosen"]

    code, stdout, err = run(capsys, "--out", str(out), "--resume", "--no-rescore", "--json")
    assert code == 0, err
    summary = json.loads(stdout)
    assert summary["rescore"] is None and summary["chosen_by"].startswith("on the Pareto front")


def test_runs_made_for_finalists_no_longer_picked_are_dropped(tmp_path: Path) -> None:
    from mcunas.data.datasets import load_dataset
    from mcunas.search.finish.rescore import rescore_finalists
    from mcunas.search.settings.config import SearchConfig
    from mcunas.search.settings.progress import Progress

    store = TrialStore.open(tmp_path)
    for tid, acc in (("00", 0.99), ("01", 0.60)):  # 01 is far below: one finalist only
        store.start_trial(tid, {"width": 8})
        store.finish_trial(
            tid, TrialStatus.OK, score=acc, int8_accuracy=acc, latency_ms=1.0 if acc < 0.9 else 2.0,
            peak_sram_bytes=1000, model_path=f"models/{tid}.tflite",
        )  # fmt: skip
    store.set_meta(RESCORE_META, _state({"00": [0.9, 0.9], "01": [0.95, 0.95]}))
    config, runner = SearchConfig(board="esp32s3"), FoldRunner()
    progress = Progress(1, None, stream=io.StringIO())
    rescore_finalists(config, store, object(), runner, load_dataset(None, seed=0), progress)
    assert runner.log == [] and store.get_meta(RESCORE_META) == {}
    assert rescored_choice(store.trials(), config.objectives, store.get_meta(RESCORE_META)) is None


def test_rescored_ties_do_not_go_to_the_seed_design_by_default() -> None:
    # the same folds measured every finalist, the reference too: a tie goes to the
    # lower re-scored loss (then the cheaper), not to the seed design
    seed = rec("00", 1.0, 17.4, 50.0, origin="seed")
    find = rec("07", 1.0, 8.9, 57.0)  # both on the split's front (the seed: less SRAM)
    state = _state({"00": [0.93, 0.96, 0.94, 0.96, 0.95], "07": [0.95, 0.96, 0.95, 0.95, 0.96]})
    for tid, loss in (("00", 0.30), ("07", 0.20)):
        for stored in state["runs"][tid].values():
            stored["loss"] = loss
    best, rule, _ = rescored_choice([seed, find], ("accuracy", "latency", "sram"), state)
    assert best is find and "--seed-arch" not in rule
    # on the split alone the seed design keeps the tie
    assert choose_best([seed, find], ("accuracy", "latency", "sram")) is seed
