"""Re-scoring where the trials were not trained by a runner here: supernet and chief."""

from __future__ import annotations

import io
from types import SimpleNamespace

import pytest

from mcunas.search.results.store import TrialStatus, TrialStore
from mcunas.search.settings.config import SearchConfig
from mcunas.search.settings.progress import Progress
from tests.search.finish.test_choice import FoldRunner


def store_of_finished_trials(path, rows: int = 3) -> TrialStore:  # noqa: ANN001
    """A store of ``rows`` finished trials, each wider, more accurate and slower than the last."""
    store = TrialStore.open(path)
    for i in range(rows):
        tid, width = f"0{i}", 8 * (i + 1)
        store.start_trial(tid, {"width": width})
        store.finish_trial(
            tid, TrialStatus.OK, score=0.9 + i / 100, int8_accuracy=0.9 + i / 100,
            latency_ms=1.0 + i, peak_sram_bytes=1000 * width, model_path=f"models/{tid}.tflite",
        )  # fmt: skip
    return store


def _run(tmp_path, finalists: int, rows: int = 3):  # noqa: ANN001, ANN202
    from mcunas.data.datasets import load_dataset

    store = store_of_finished_trials(tmp_path, rows)
    built, closed = [], []

    def components(families=None, measure=True):  # noqa: ANN001, ANN202
        assert measure is False  # re-scoring connects no board
        built.append(families)
        return object(), FoldRunner(), lambda: closed.append(True)

    run = SimpleNamespace(
        config=SearchConfig(board="esp32s3", finalists=finalists),
        store=store,
        dataset=load_dataset(None, seed=0),
        components=components,
    )
    return run, built, closed


def test_finalists_are_rescored_with_a_runner_built_here_and_closed(tmp_path) -> None:
    from mcunas.search.finish.rescore import rescore_here

    run, built, closed = _run(tmp_path, finalists=2)
    stream = io.StringIO()
    rescore_here(run, Progress(1, None, stream=stream), ("stages",))
    assert built == [("stages",)] and closed == [True]
    state = run.store.get_meta("rescore")
    assert state["finalists"] == ["02", "01"] and all(state["runs"][t] for t in ("02", "01"))
    assert "Re-scoring 2 finalists" in stream.getvalue()


@pytest.mark.parametrize(("finalists", "rows"), [(0, 3), (3, 1)])
def test_nothing_is_built_without_two_finalists(tmp_path, finalists: int, rows: int) -> None:
    from mcunas.search.finish.rescore import rescore_here

    run, built, _ = _run(tmp_path, finalists=finalists, rows=rows)
    rescore_here(run, Progress(1, None, stream=io.StringIO()))
    assert built == [] and run.store.get_meta("rescore") is None
