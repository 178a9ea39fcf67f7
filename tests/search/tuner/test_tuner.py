"""The tuner loop with fake candidates: no training, no TensorFlow models."""

from __future__ import annotations

import io
import json
from pathlib import Path

import keras_tuner
import pytest

from mcunas.errors import CandidateError, FatalError
from mcunas.figures import Figures
from mcunas.search.results.budgets import Budgets
from mcunas.search.results.store import TrialStatus, TrialStore
from mcunas.search.settings.progress import Progress
from mcunas.search.tuner.oracles import AgingEvolutionOracle, make_oracle
from mcunas.search.tuner.tuner import (
    CheckResult,
    EvalResult,
    HardwareAwareTuner,
    SearchFatal,
    TrainResult,
)


class FakeSpace(keras_tuner.HyperModel):
    def build(self, hp):
        family = hp.Choice("family", ["dsconv", "mbconv"])
        width = hp.Int("width", 8, 64, step=8)
        with hp.conditional_scope("family", ["mbconv"]):
            if family == "mbconv":
                hp.Choice("expansion", [2, 4])
        return {"family": family, "width": width}


class FakeRunner:
    """Cost grows with width; accuracy too. Records which stages ran."""

    def __init__(self, fail_train_widths=(), fatal_on_call=None):
        self.trained: list[int] = []
        self.fits: list[tuple[int, int, int, int]] = []  # width, initial, epochs, done before
        self.loaded: list[str] = []
        self.built = 0
        self.fail_train_widths = set(fail_train_widths)
        self.fatal_on_call = fatal_on_call
        self.measured = 0
        self.bounds: list = []  # the rung test each training was given (None: none)

    def build(self, hp, seed):
        self.built += 1
        return {"width": hp.get("width")}

    def _cost(self, width):
        return Figures(
            latency_ms=width / 4,
            arena_bytes=width * 1000,
            peak_sram_bytes=width * 1500,
            flash_bytes=width * 2000,
            latency_error_pct=12.0,
            macs=width * 10_000,
            source="fake",
            estimated=True,
        )

    def check(self, model):
        return CheckResult(self._cost(model["width"]), params=model["width"] * 10)

    def train(self, model, epochs, initial_epoch=0, *, bound=None):
        self.bounds.append(bound)
        if model["width"] in self.fail_train_widths:
            raise RuntimeError("loss became NaN")
        self.trained.append(model["width"])
        self.fits.append((model["width"], initial_epoch, epochs, model.get("epochs_done", 0)))
        model["trained"] = True
        model["epochs_done"] = epochs
        return TrainResult(
            float_accuracy=0.5 + model["width"] / 200, epochs_run=epochs - initial_epoch
        )

    def save_weights(self, model, path):
        Path(path).write_text(json.dumps(model))

    def load_weights(self, model, path):
        saved = json.loads(Path(path).read_text())
        if saved["width"] != model["width"]:
            return False
        model.update(saved)
        self.loaded.append(Path(path).name)
        return True

    def convert(self, model):
        return b"TFL3" + bytes([model["width"]])

    def evaluate(self, model_bytes):
        return EvalResult(0.5 + model_bytes[-1] / 200, 1.0 - model_bytes[-1] / 200)

    def measure(self, model_bytes, promising):
        self.measured += 1
        if self.fatal_on_call is not None and self.measured == self.fatal_on_call:
            raise FatalError("board unplugged")
        return self._cost(model_bytes[-1])


def make_tuner(
    tmp_path: Path,
    runner,
    strategy="random",
    max_trials=8,
    budgets=None,
    time_budget=None,
    clock=None,
    epochs=3,
    **tuner_kwargs,
):
    store = TrialStore.open(tmp_path)
    kwargs = {} if clock is None else {"clock": clock}
    progress = Progress(max_trials, time_budget, stream=io.StringIO(), **kwargs)
    tuner = HardwareAwareTuner(
        make_oracle(strategy, max_trials, seed=1, epochs=epochs),
        FakeSpace(),
        runner=runner,
        store=store,
        budgets=budgets or Budgets(max_latency_ms=10.0),
        progress=progress,
        models_dir=tmp_path / "models",
        epochs=epochs,
        seed=1,
        directory=str(tmp_path),
        project_name="tuner",
        **tuner_kwargs,
    )
    return tuner, store


def test_infeasible_never_trained_and_recorded(tmp_path: Path) -> None:
    runner = FakeRunner()
    tuner, store = make_tuner(tmp_path, runner, max_trials=10)
    tuner.search()
    rows = store.trials()
    assert len([r for r in rows if r.train_s]) == 10  # --max-trials counts trained candidates
    infeasible = [r for r in rows if r.status == TrialStatus.INFEASIBLE]
    ok = [r for r in rows if r.status == TrialStatus.OK]
    assert infeasible and ok  # width > 40 breaks the 10 ms budget
    for r in infeasible:
        assert r.hyperparameters["width"] > 40
        assert "latency" in r.reason and "budget 10 ms" in r.reason
        assert r.train_s == 0.0 and r.int8_accuracy is None and r.model_path is None
    assert all(w <= 40 for w in runner.trained)
    assert len(runner.trained) == len(ok)
    for r in ok:
        assert r.score == pytest.approx(r.int8_accuracy)
        assert r.model_path == f"models/trial_{r.trial_id}.tflite"  # relative: folders move
        assert (tmp_path / r.model_path).is_file() and len(r.model_sha256) == 64
        assert r.estimated is True and r.source == "fake"
    assert "best" in tuner.progress.stream.getvalue()


def test_a_schedule_with_rungs_gets_the_rung_test_unless_early_stop_is_off(tmp_path: Path) -> None:
    runner = FakeRunner()
    tuner, store = make_tuner(tmp_path / "on", runner, max_trials=3, epochs=9)
    tuner.search()
    bounds = [b for b in runner.bounds if b is not None]
    assert len(bounds) == len(runner.bounds) == 3
    assert all(b.epochs == 9 and b.cost.source == "fake" for b in bounds)
    off = FakeRunner()
    tuner, _ = make_tuner(tmp_path / "off", off, max_trials=3, epochs=9, early_stop=False)
    tuner.search()
    assert off.bounds == [None] * 3
    short = FakeRunner()
    tuner, _ = make_tuner(tmp_path / "short", short, max_trials=3)  # 3 epochs: no rung
    tuner.search()
    assert short.bounds == [None] * 3


def test_failed_candidate_recorded_and_search_goes_on(tmp_path: Path) -> None:
    runner = FakeRunner(fail_train_widths={8, 16, 24})
    tuner, store = make_tuner(tmp_path, runner, max_trials=8, budgets=Budgets())
    tuner.search()
    rows = store.trials()
    failed = [r for r in rows if r.status == TrialStatus.FAILED]
    assert len(rows) == 8 and failed
    assert all(r.reason.startswith("train failed: RuntimeError: loss became NaN") for r in failed)
    assert any(r.status == TrialStatus.OK for r in rows)


def test_candidate_error_in_convert_is_failed(tmp_path: Path) -> None:
    runner = FakeRunner()
    calls = {"n": 0}

    def bad_convert(model):
        calls["n"] += 1
        if calls["n"] == 1:
            raise CandidateError("converter: op GELU not supported")
        return b"TFL3" + bytes([model["width"]])

    runner.convert = bad_convert
    tuner, store = make_tuner(tmp_path, runner, max_trials=4, budgets=Budgets())
    tuner.search()
    first = store.trials()[0]
    assert first.status == TrialStatus.FAILED and first.reason == (
        "convert failed: converter: op GELU not supported"
    )
    assert sum(r.status == TrialStatus.OK for r in store.trials()) == 3


def test_fatal_stops_then_resume_finishes_without_redoing(tmp_path: Path) -> None:
    runner = FakeRunner(fatal_on_call=3)
    tuner, store = make_tuner(tmp_path, runner, max_trials=6, budgets=Budgets())
    with pytest.raises(SearchFatal, match="board unplugged"):
        tuner.search()
    rows = store.trials()
    assert [r.status for r in rows] == [TrialStatus.OK, TrialStatus.OK, TrialStatus.RUNNING]
    assert rows[2].reason.startswith("interrupted: ")
    done_ids = {r.trial_id: r.model_sha256 for r in rows[:2]}
    store.close()

    runner2 = FakeRunner()
    tuner2, store2 = make_tuner(tmp_path, runner2, max_trials=6, budgets=Budgets())
    tuner2.search()
    rows2 = store2.trials()
    assert len(rows2) == 6 and all(r.status == TrialStatus.OK for r in rows2)
    assert runner2.built == 4  # the interrupted trial again + 3 new ones, not the 2 finished
    for tid, sha in done_ids.items():
        assert store2.get(tid).model_sha256 == sha


@pytest.mark.parametrize("strategy", ["random", "bayesian", "hyperband", "evolution"])
def test_every_strategy_runs_and_respects_max_trials(tmp_path: Path, strategy: str) -> None:
    runner = FakeRunner()
    tuner, store = make_tuner(tmp_path, runner, strategy=strategy, max_trials=7)
    tuner.search()
    trained = [r for r in store.trials() if r.train_s]
    assert 1 <= len(trained) <= 7 and store.count() <= 70  # draws refused before training
    assert len(runner.trained) == len(trained)  # are drawn again, not trained
    assert any(r.status == TrialStatus.OK for r in store.trials())


def test_evolution_children_mutate_one_parameter(tmp_path: Path) -> None:
    oracle = AgingEvolutionOracle(
        keras_tuner.Objective("score", "max"),
        max_trials=12,
        population_size=4,
        sample_size=2,
        seed=3,
        max_consecutive_failed_trials=100,
    )
    runner = FakeRunner()
    store = TrialStore.open(tmp_path)
    tuner = HardwareAwareTuner(
        oracle,
        FakeSpace(),
        runner=runner,
        store=store,
        budgets=Budgets(),
        progress=Progress(12, stream=None),
        models_dir=tmp_path / "m",
        epochs=1,
        directory=str(tmp_path),
        project_name="t",
    )
    tuner.search()
    trials = [oracle.trials[t] for t in oracle.start_order]
    assert len(trials) == 12
    previous = [t.hyperparameters.values for t in trials[:4]]
    for child in trials[4:]:
        values = child.hyperparameters.values
        # each child differs from some earlier trial in exactly one searched choice
        # (a changed family brings or drops its conditional "expansion")
        assert min(_diff(values, p) for p in previous) == 1
        previous.append(values)


def _diff(a: dict, b: dict) -> int:
    n = sum(a.get(k) != b.get(k) for k in ("family", "width"))
    if a.get("family") == b.get("family"):
        n += a.get("expansion") != b.get("expansion")
    return n


def test_time_budget_stops_after_current_trial(tmp_path: Path) -> None:
    now = {"t": 0.0}

    def clock():
        now["t"] += 10.0  # every reading advances 10 s
        return now["t"]

    tuner, store = make_tuner(
        tmp_path, FakeRunner(), max_trials=20, budgets=Budgets(), time_budget=25, clock=clock
    )
    tuner.search()
    assert 1 <= store.count() < 20
    assert tuner.stopped_reason == "time budget reached"
    assert all(r.status != TrialStatus.RUNNING for r in store.trials())


def test_failure_streak_stops_search(tmp_path: Path) -> None:
    runner = FakeRunner()

    def broken(model, epochs, initial_epoch=0):
        raise RuntimeError("no GPU memory")

    runner.train = broken
    tuner, store = make_tuner(tmp_path, runner, max_trials=12, budgets=Budgets())
    with pytest.raises(SearchFatal, match="5 candidates in a row failed"):
        tuner.search()
    assert store.count() == 5


def test_hybrid_measures_board_only_when_promising() -> None:
    import numpy as np

    from mcunas.boards.catalog import load_board
    from mcunas.figures import Figures
    from mcunas.search.trial.runner import KerasRunner

    class Data:
        frontend = None  # no front end: the board measures the model alone

        def representative(self, n, seed):
            return np.zeros((n, 8, 8, 1), np.float32)

    class Worker:
        def simulate(self, model_bytes):
            return Figures("simulator:x", True, 12.0, 1000, 5000, 9000, latency_error_pct=14.0)

    class Board:
        calls = 0

        def measure(self, model_bytes, frontend=None):
            Board.calls += 1
            return Figures("board:/dev/ttyUSB0", False, 10.0, 1100, 5200, 9100)

    runner = KerasRunner(None, Data(), load_board("esp32s3"), Worker(), Board(), hybrid=True)
    sim = runner.measure(b"m", lambda cost: False)
    assert sim.estimated and sim.latency_ms == 12.0 and Board.calls == 0
    real = runner.measure(b"m", lambda cost: cost.latency_ms == 12.0)
    assert Board.calls == 1 and not real.estimated and real.source == "board:/dev/ttyUSB0"
    assert real.latency_ms == 10.0 and real.sim_latency_ms == 12.0
    assert real.latency_error_pct == pytest.approx(20.0)  # simulator 20% above the board
    board_only = KerasRunner(None, Data(), load_board("esp32s3"), Worker(), Board())
    assert board_only.measure(b"m", lambda cost: False).source.startswith("board:")


def test_refused_draws_are_drawn_again_up_to_the_cap(tmp_path: Path) -> None:
    runner = FakeRunner()
    tuner, store = make_tuner(
        tmp_path, runner, max_trials=6, budgets=Budgets(max_latency_ms=0.001), max_draws=9
    )
    tuner.search()
    rows = store.trials()
    assert len(rows) == 9 and not runner.trained  # nothing fits: every draw is refused
    assert all(r.status == TrialStatus.INFEASIBLE and not r.train_s for r in rows)
    assert tuner.stopped_reason.startswith("draw cap reached: 9 candidates drawn")


def test_infeasible_candidates_complete_with_score_zero(tmp_path: Path) -> None:
    tuner, _ = make_tuner(tmp_path, FakeRunner(), strategy="bayesian", max_trials=6)
    tuner.search()
    trials = tuner.oracle.trials.values()
    infeasible = [t for t in trials if t.metrics.get_last_value("feasible") == 0.0]
    assert infeasible and all(t.status == "COMPLETED" and t.score == 0.0 for t in infeasible)


def test_trials_drawing_the_seed_design_are_marked(tmp_path: Path) -> None:
    from mcunas.search.tuner.oracles import start_with_reference

    seed = {"family": "dsconv", "width": 16}
    tuner, store = make_tuner(tmp_path, FakeRunner(), max_trials=3, references=[seed])
    start_with_reference(tuner.oracle, [seed])
    tuner.search()
    rows = store.trials()
    assert rows[0].hyperparameters == seed and rows[0].origin == "seed"
    assert all(r.origin is None for r in rows[1:] if r.hyperparameters != seed)
