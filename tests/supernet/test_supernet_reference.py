"""Stage 0 of the supernet search: the reference design's ladder, recorded and resumed."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from mcunas.figures import Figures
from mcunas.search.local import LocalJobs
from mcunas.search.report.result import choose_best
from mcunas.search.results.budgets import Budgets
from mcunas.search.results.store import TrialStatus, TrialStore
from mcunas.search.trial.pipeline import CheckResult, EvalResult, TrainResult, TrialPipeline
from mcunas.supernet.strategy import SupernetStrategy
from mcunas.supernet.work import SupernetWork

LADDER = [{"width": 1.0}, {"width": 0.75}, {"width": 0.5}]


def _figures(ms: float) -> Figures:
    return Figures("simulator:test", True, ms, 1000, 2000, 3000)


@dataclass
class FakeRunner:
    """Models are their values; a width's latency is 10 ms per unit; ``fail`` breaks training."""

    fail: bool = False
    trained: list[float] = field(default_factory=list)

    def build(self, hp: Any, seed: int) -> dict:
        return dict(hp.values)

    def check(self, model: dict) -> CheckResult:
        return CheckResult(_figures(10 * model["width"]), params=100, description=str(model))

    def train(self, model: dict, epochs: int) -> TrainResult:
        if self.fail:
            raise RuntimeError("no memory")
        self.trained.append(model["width"])
        return TrainResult(0.9, epochs)

    def convert(self, model: dict) -> bytes:
        return json.dumps(model).encode()

    def evaluate(self, model_bytes: bytes) -> EvalResult:
        return EvalResult(0.9, 0.3)

    def measure(self, model_bytes: bytes, promising: Any) -> Figures:
        return _figures(10 * json.loads(model_bytes)["width"])


class FakeProgress:
    def __init__(self, up_after: int = 99) -> None:
        self.notes: list[str] = []
        self.calls, self.up_after = 0, up_after

    def time_up(self) -> bool:
        self.calls += 1
        return self.calls > self.up_after

    def note(self, text: str) -> None:
        self.notes.append(text)


class FakeRun:
    """What the supernet's stage 0 uses of a search run, with fake candidates."""

    def __init__(self, out: Path, runner: FakeRunner, ladder: list[dict] | None) -> None:
        self.store, self.runner, self.out_dir = TrialStore.open(out), runner, out
        self.ladder = ladder
        self.space = SimpleNamespace(hyperparameters=lambda **v: SimpleNamespace(values=v))
        self.config = SimpleNamespace(seed=0, epochs=3, budgets=Budgets(8.0), objectives=())

    def components(self, families: tuple[str, ...]) -> tuple[Any, FakeRunner, Any]:
        return self.space, self.runner, lambda: None

    def pipeline(self, runner: FakeRunner) -> TrialPipeline:
        return TrialPipeline(runner, self.store, self.config.budgets, self.out_dir / "models")

    def reference_ladder(self, space: Any) -> list[dict[str, Any]]:
        return self.ladder or []


class Stages:
    """The supernet strategy at stage 0, its jobs done here by the real work."""

    def __init__(self, out: Path, runner: FakeRunner, ladder: list[dict] | None = LADDER) -> None:
        run = FakeRun(out, runner, ladder)
        self.store, self.runner = run.store, runner
        self.strategy = SupernetStrategy()
        self.strategy.run, self.strategy.space = run, run.space
        self.strategy.jobs = LocalJobs(SupernetWork(run, FakeProgress()))

    def reference(self, progress: FakeProgress) -> str | None:
        self.strategy.progress = progress
        return self.strategy.reference()


def test_the_largest_variant_inside_the_budgets_is_trained_and_kept(tmp_path: Path) -> None:
    stages = Stages(tmp_path, FakeRunner())
    assert stages.reference(FakeProgress()) is None
    rows = {r.trial_id: r for r in stages.store.trials()}
    assert [(t, r.status, r.origin) for t, r in sorted(rows.items())] == [
        ("r0", TrialStatus.INFEASIBLE, "seed"),  # 10 ms > 8 ms: refused before training
        ("r1", TrialStatus.OK, "seed"),
    ]
    assert stages.runner.trained == [0.75] and rows["r1"].epochs_run == 3
    assert (tmp_path / rows["r1"].model_path).is_file()
    assert choose_best(list(rows.values())).trial_id == "r1"


def test_a_resumed_search_keeps_finished_variants_and_redoes_one_cut_short(tmp_path) -> None:
    first = Stages(tmp_path, FakeRunner())
    first.store.start_trial("r0", {"width": 1.0}, origin="seed")
    first.store.finish_trial("r0", TrialStatus.INFEASIBLE, reason="too slow")
    first.store.start_trial("r1", {"width": 0.75}, origin="seed")  # running when killed
    first.store.close()
    again = Stages(tmp_path, FakeRunner())
    assert again.reference(FakeProgress()) is None
    assert again.runner.trained == [0.75]
    assert again.store.get("r0").reason == "too slow"
    assert again.store.get("r1").status == TrialStatus.OK
    done = Stages(tmp_path, FakeRunner())
    assert done.reference(FakeProgress()) is None and done.runner.trained == []


def test_a_failing_reference_is_a_failed_row_and_the_search_goes_on(tmp_path: Path) -> None:
    stages = Stages(tmp_path, FakeRunner(fail=True), ladder=[{"width": 0.5}, {"width": 0.25}])
    assert stages.reference(FakeProgress()) is None
    rows = stages.store.trials()
    assert [(r.trial_id, r.status) for r in rows] == [("r0", TrialStatus.FAILED)]
    assert rows[0].reason == "train failed: RuntimeError: no memory"


@pytest.mark.parametrize("ladder", [None, LADDER])
def test_no_reference_or_no_time_trains_nothing(tmp_path: Path, ladder) -> None:
    stages = Stages(tmp_path, FakeRunner(), ladder=ladder)
    stopped = stages.reference(FakeProgress(up_after=0))
    assert (stopped is None) == (ladder is None)
    assert stages.store.trials() == [] and stages.runner.trained == []
