"""The one trial pipeline: every verdict recorded once, whichever strategy calls it."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from mcunas.errors import FatalError
from mcunas.figures import Figures
from mcunas.search.results.budgets import Budgets
from mcunas.search.results.store import TrialStatus, TrialStore
from mcunas.search.results.summary import chosen_text
from mcunas.search.trial.pipeline import CheckResult, EvalResult, TrainResult, TrialPipeline


def _figures(ms: float) -> Figures:
    return Figures("simulator:test", True, ms, 1000, 2000, 3000)


class Runner:
    """Models are dicts; the check says ``ms``, the measurement ``measured`` (default the same)."""

    def __init__(self, fail_at: str | None = None, measured: float | None = None) -> None:
        self.fail_at, self.measured = fail_at, measured

    def _maybe_fail(self, stage: str) -> None:
        if self.fail_at == stage:
            raise RuntimeError(f"{stage} broke")

    def check(self, model: dict) -> CheckResult:
        self._maybe_fail("check")
        return CheckResult(_figures(model["ms"]), params=10, description="d")

    def convert(self, model: dict) -> bytes:
        self._maybe_fail("convert")
        return json.dumps({"ms": model["ms"]}).encode()

    def evaluate(self, model_bytes: bytes) -> EvalResult:
        return EvalResult(0.8, 0.4)

    def measure(self, model_bytes: bytes, promising) -> Figures:
        self._maybe_fail("measure")
        ms = json.loads(model_bytes)["ms"]
        return _figures(self.measured if self.measured is not None else ms)


def fake_train(model: dict, check) -> TrainResult:
    """A training that ends at once at 90% (raises for a ``broken`` model), checking its row."""
    if check is not None:  # while it trains, its row shows the check done
        rec = model["store"].get("t1") if "store" in model else None
        assert rec is None or (rec.check_s and rec.params == 10 and rec.description == "d")
    if model.get("broken"):
        raise RuntimeError("no memory")
    return TrainResult(0.9, 3, 90)


def _run(tmp_path: Path, runner: Runner, model: dict, **options) -> tuple:
    store = TrialStore.open(tmp_path)
    pipeline = TrialPipeline(runner, store, Budgets(max_latency_ms=10.0), tmp_path / "models")
    pipeline.begin("t1", {"ms": model["ms"]}, family="stages", origin=None)
    outcome = pipeline.run("t1", lambda: {**model, "store": store}, fake_train, **options)
    return outcome, store.get("t1")


def test_a_candidate_inside_the_budgets_is_trained_scored_and_kept(tmp_path) -> None:
    outcome, rec = _run(tmp_path, Runner(), {"ms": 5.0}, keep=lambda m: "weights kept")
    assert outcome.status == rec.status == TrialStatus.OK and outcome.score == rec.score
    assert rec.int8_accuracy == 0.8 and rec.float_accuracy == 0.9 and rec.epochs_run == 3
    assert rec.steps == 90 and "trained 90 optimizer steps (3 epochs)" in chosen_text(rec, "b")
    assert rec.reason == "weights kept" and (tmp_path / rec.model_path).is_file()
    assert all(getattr(rec, k) is not None for k in ("build_s", "check_s", "train_s", "eval_s"))


def test_the_cost_check_refuses_before_training(tmp_path) -> None:
    outcome, rec = _run(tmp_path, Runner(), {"ms": 50.0})
    assert outcome.status == rec.status == TrialStatus.INFEASIBLE
    assert "latency" in rec.reason and not rec.train_s and rec.model_path is None


def test_a_measurement_over_budget_is_infeasible_after_training(tmp_path) -> None:
    outcome, rec = _run(tmp_path, Runner(measured=20.0), {"ms": 5.0})
    assert outcome.status == rec.status == TrialStatus.INFEASIBLE
    assert rec.train_s and rec.model_path is not None  # trained, kept, not ok


@pytest.mark.parametrize(
    ("runner", "model", "names", "reason"),
    [
        (Runner(fail_at="check"), {"ms": 5.0}, ("build", "train"), "check failed"),
        (Runner(), {"ms": 5.0, "broken": True}, ("extract", "fine-tune"), "fine-tune failed"),
        (Runner(fail_at="convert"), {"ms": 5.0}, ("build", "train"), "convert failed"),
        (Runner(fail_at="measure"), {"ms": 5.0}, ("build", "train"), "measure failed"),
    ],
)
def test_a_failure_is_a_failed_row_naming_its_stage(tmp_path, runner, model, names, reason):
    outcome, rec = _run(tmp_path, runner, model, names=names)
    assert outcome.status == rec.status == TrialStatus.FAILED
    assert rec.reason.startswith(reason) and "RuntimeError" in rec.reason


def test_a_broken_environment_and_the_callers_signals_pass_through(tmp_path) -> None:
    class Stop(Exception):
        pass

    def fatal(model, check):
        raise FatalError("board gone")

    def stop(model, check):
        raise Stop

    store = TrialStore.open(tmp_path)
    pipeline = TrialPipeline(Runner(), store, Budgets(), tmp_path / "models")
    pipeline.begin("t1", {}, family=None, origin=None)
    with pytest.raises(FatalError):
        pipeline.run("t1", lambda: {"ms": 1.0}, fatal)
    with pytest.raises(Stop):
        pipeline.run("t1", lambda: {"ms": 1.0}, stop, passes=(Stop,))
    assert store.get("t1").status == TrialStatus.RUNNING  # re-run by --resume


def test_without_the_check_a_model_is_not_checked_again(tmp_path) -> None:
    runner = Runner(fail_at="check")  # would fail if called
    outcome, rec = _run(tmp_path, runner, {"ms": 5.0}, check=False)
    assert outcome.status == TrialStatus.OK and not rec.check_s


def test_the_cost_check_is_one_function() -> None:
    pipeline = TrialPipeline(SimpleNamespace(), None, Budgets(max_latency_ms=10.0), Path("."))
    assert pipeline.cost_reasons(_figures(5.0)) is None
    assert "latency" in pipeline.cost_reasons(_figures(50.0))
