"""Finishing a search: the pipeline's retraining entry, the stored records, the stage."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path
from types import SimpleNamespace

import pytest

from mcunas.errors import FatalError
from mcunas.figures import Figures
from mcunas.search.finish.records import Rescore, RescoreRun
from mcunas.search.finish.refit_records import Ensemble, Refit
from mcunas.search.results.budgets import Budgets
from mcunas.search.results.record import figure_columns
from mcunas.search.results.store import TrialStore
from mcunas.search.settings.config import SearchConfig
from mcunas.search.settings.progress import Progress
from mcunas.search.trial.pipeline import TrialPipeline
from mcunas.search.trial.retrain import Retraining
from tests.search.finish.test_choice import FoldRunner


class Breaks(FoldRunner):
    """FoldRunner whose training raises ``error``; measures 2 ms a model."""

    error: BaseException = ValueError("training diverged")

    def for_data(self, data, seed):  # noqa: ANN001, ANN201
        return Breaks(data, seed, self.log)

    def train(self, model, epochs):  # noqa: ANN001, ANN201
        raise self.error

    def measure(self, model_bytes, promising):  # noqa: ANN001, ANN201
        return Figures("simulator:test", True, 2.0, 500, 900, 2000)


def _pipeline(tmp_path: Path, runner: object, **budgets: float) -> TrialPipeline:
    store = TrialStore.open(tmp_path)
    limits = Budgets(**budgets)
    return TrialPipeline(runner, store, limits, tmp_path / "models")  # type: ignore[arg-type]


def _job() -> Retraining:
    from mcunas.data.datasets import load_dataset

    return Retraining(object(), {"width": 8}, load_dataset(None, seed=0), seed=3, epochs=2)


def test_a_retrained_design_is_trained_converted_and_scored_on_its_data(tmp_path: Path) -> None:
    runner = FoldRunner()
    done = _pipeline(tmp_path, runner).retrain(_job())
    assert done.ok and done.reason is None and done.stage is None
    assert done.model_bytes == bytes([8]) and done.evaluated.accuracy > 0.9
    assert runner.log == [(8, len(_job().data.y_train), 3)]  # its data and seed
    assert done.cost is None and done.seconds >= 0  # not measured unless asked
    assert TrialStore.open(tmp_path).trials() == []  # nothing recorded as a trial


def test_a_retraining_that_fails_says_where_and_why_and_a_fatal_error_leaves(
    tmp_path: Path,
) -> None:
    pipeline = _pipeline(tmp_path, Breaks())
    done = pipeline.retrain(_job())
    assert not done.ok and done.stage == "train"
    assert done.reason == "train failed: ValueError: training diverged"
    assert done.model is not None and done.model_bytes is None  # built, not converted
    Breaks.error = FatalError("disk gone")
    try:
        with pytest.raises(FatalError, match="disk gone"):
            pipeline.retrain(_job())
    finally:
        Breaks.error = ValueError("training diverged")


def test_an_assessed_model_is_measured_with_the_front_end_and_checked(tmp_path: Path) -> None:
    pipeline = _pipeline(tmp_path, Breaks(), max_latency_ms=3.0)
    pipeline.frontend = lambda cost: Figures("simulator:test", True, cost.latency_ms + 1.5, 1, 1, 1)
    done = pipeline.assess(FoldRunner(), lambda: {"width": 4}, evaluate=False)
    assert done.ok and done.model_bytes == bytes([4]) and done.evaluated is None
    assert done.cost.latency_ms == 3.5 and done.violations[0].startswith("estimated latency")


def test_old_rescore_meta_reads_and_writes_back_the_same() -> None:
    old = {  # runs without their sample count, as older stores kept them
        "method": "kfold", "planned": 5, "seed": 0, "finalists": ["02", "01"],
        "runs": {"02": {"0": {"accuracy": 0.9, "loss": 0.2, "seconds": 1.5}}, "01": {}},
        "failed": {"01": "trial 01, fold 1: ValueError: x"},
    }  # fmt: skip
    state = Rescore.from_dict(old)
    assert state is not None and state.to_dict() == old
    assert state.rescored("02").mean == 0.9 and state.rescored("01") is None
    assert state.done("01", 3) and not state.done("02", 1)
    more = state.with_run("02", 1, RescoreRun(0.8, None, 2.0, 40))
    assert more.rescored("02").accuracies == (0.9, 0.8) and state.rescored("02").accuracies == (
        0.9,
    )
    assert Rescore.from_dict({}) is None and Rescore.from_dict(None) is None


def test_a_refit_and_its_average_keep_their_stored_shape() -> None:
    older = {  # before ensembles and teachers
        "trial_id": "01", "seed": 7, "epochs": 3, "distill": False, "model_path": "m.tflite",
        "model_sha256": "ab", "samples": 60, "steps": 21, "seconds": 4.0,
    }  # fmt: skip
    refit = Refit.from_dict(older)
    assert refit.members_planned == 1 and refit.members == 1 and refit.figures is None
    assert refit.to_dict() == {**older, "members_planned": 1, "teacher": None}
    front = {"latency_ms": 1.0, "sram_bytes": 100, "flash_bytes": 50, "source": "estimate: mfcc"}
    own = Figures(  # measured on a board, the front end's share split out
        "board:/dev/x", False, 3.0, 500, 900, 2000, energy_uj=12.0, macs=10,
        details={"cost_split": {"frontend": {**front, "energy_uj": 0.5}}},
    )  # fmt: skip
    averaged = Refit.from_dict({**older, "members_planned": 3, "members": 2})
    averaged = Refit.from_dict({**averaged.to_dict(), "figures": figure_columns(own)})
    assert averaged.ensemble == Ensemble(2, averaged.figures) and averaged.members == 2
    assert averaged.to_dict()["figures"] == figure_columns(own)
    assert Refit.from_dict(averaged.to_dict()) == averaged


class Executor:
    """An executor whose place to retrain is counted; ``None``: a worker's."""

    def __init__(self, worker: bool = False) -> None:
        self.worker, self.opened, self.closed = worker, 0, 0

    def retraining(self, run, families):  # noqa: ANN001, ANN201
        if self.worker:
            return None

        @contextlib.contextmanager
        def place():  # noqa: ANN202
            self.opened += 1
            try:
                yield object(), FoldRunner()
            finally:
                self.closed += 1

        return place()


def _finished(tmp_path: Path, executor: Executor, finalists: int = 2) -> SimpleNamespace:
    from mcunas.data.datasets import load_dataset
    from tests.search.finish.test_rescore_here import store_of_finished_trials

    store = store_of_finished_trials(tmp_path)
    config = SearchConfig(board="esp32s3", finalists=finalists, refit="off")
    dataset = load_dataset(None, seed=0)
    return SimpleNamespace(
        config=config, store=store, dataset=dataset, executor=executor, families=None
    )


def test_the_stage_retrains_where_the_executor_says_once(tmp_path: Path) -> None:
    from mcunas.search.finish.stage import FinishStage

    executor = Executor()
    run = _finished(tmp_path, executor)
    FinishStage().run(run, Progress(1, None, stream=(stream := io.StringIO())))
    assert (executor.opened, executor.closed) == (1, 1)
    assert "Re-scoring 2 finalists" in stream.getvalue()
    assert run.store.get_meta("rescore")["finalists"] == ["02", "01"]


@pytest.mark.parametrize("case", ["worker", "no finalists", "out of time"])
def test_the_stage_opens_no_place_with_nothing_to_retrain(tmp_path: Path, case: str) -> None:
    from mcunas.search.finish.stage import FinishStage

    executor = Executor(worker=case == "worker")
    run = _finished(tmp_path, executor, finalists=0 if case == "no finalists" else 2)
    progress = Progress(1, 0.0 if case == "out of time" else None, stream=io.StringIO())
    FinishStage().run(run, progress)
    assert executor.opened == 0 and run.store.get_meta("rescore") is None


def test_where_retraining_runs_is_the_executors_to_say(tmp_path: Path, monkeypatch) -> None:
    from mcunas.boards.catalog import load_board
    from mcunas.distributed.chief_executor import ChiefExecutor
    from mcunas.distributed.worker_executor import WorkerExecutor
    from mcunas.search.local import LocalExecutor
    from mcunas.search.run import SearchRun

    built: list = []

    def components(self, families=None, measure=True):  # noqa: ANN001, ANN202
        built.append((families, measure))
        return "space", "runner", lambda: built.append("closed")

    monkeypatch.setattr(SearchRun, "components", components)
    store = TrialStore.open(tmp_path)
    board = load_board("esp32s3")
    config, strategy = SearchConfig(board="esp32s3"), None
    run = SearchRun(config, board, tmp_path, store, strategy, LocalExecutor())  # type: ignore[arg-type]
    with LocalExecutor().retraining(run, ("stages",)) as parts:  # no trials ran here
        assert parts == ("space", "runner")
    assert built == [(("stages",), False), "closed"]  # built here, no board, closed
    built.clear()
    with run._open:
        assert run.trial_components() == ("space", "runner")  # the trials' (board included)
        with LocalExecutor().retraining(run, None) as parts:
            assert parts == ("space", "runner")
        with ChiefExecutor().retraining(run, None):  # the chief's own cores, no board
            pass
        assert built == [(None, True), (None, False), "closed"]
    assert built[-1] == "closed"  # the trials' runner, closed when the run ends
    assert WorkerExecutor().retraining(run, None) is None
