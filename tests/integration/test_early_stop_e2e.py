"""Stopping candidates early changes nothing else: ``--no-early-stop`` is the search without it.

Three tiny real searches of one seed (a 9-epoch schedule: rungs at epochs 1
and 3): with ``--no-early-stop``; with the rule on but never firing, which
must train the same trials into the same models and choose the same one, bit
for bit; and with a rule that stops every candidate on its first rung, which
must differ and say so in the summary.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from mcunas.engine import run_search
from mcunas.search import SearchConfig
from mcunas.search.report.result import SearchResult
from mcunas.search.results.curves import CurveBound

pytestmark = pytest.mark.slow


def _dataset(path: Path) -> Path:
    rng = np.random.default_rng(0)
    x = rng.random((160, 8, 8), dtype=np.float32)
    y = (x[:, :4].mean(axis=(1, 2)) > x[:, 4:].mean(axis=(1, 2))).astype(np.int64)
    np.savez(path, x_train=x, y_train=y, kind="image")
    return path


def _search(out: Path, data: Path, early_stop: bool) -> SearchResult:
    cfg = SearchConfig(
        board="esp32s3",
        out=str(out),
        dataset=str(data),
        max_trials=2,
        epochs=9,
        families=("dsconv",),
        strategy="random",
        seed=5,
        finalists=0,
        refit="off",
        ensemble="off",
        early_stop=early_stop,
    )
    return run_search(cfg, stream=None)


def _trials(result: SearchResult) -> list[tuple]:
    return [
        (r.trial_id, r.hyperparameters, r.model_sha256, r.int8_accuracy, r.steps)
        for r in result.trials
    ]


def test_no_early_stop_is_the_search_without_the_rule(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = _dataset(tmp_path / "d.npz")
    off = _search(tmp_path / "off", data, early_stop=False)
    assert "Early stop: off" in off.text()
    monkeypatch.setattr(CurveBound, "stop", lambda self, rung, accuracy, samples: None)
    silent = _search(tmp_path / "silent", data, early_stop=True)
    assert _trials(silent) == _trials(off)
    assert silent.best is not None and off.best is not None
    assert silent.best.trial_id == off.best.trial_id
    assert "none of 2 candidates stopped" in silent.text()

    def first_rung(self, rung, accuracy, samples):  # noqa: ANN001, ANN202
        return "stopped by the test" if rung == 1 else None

    monkeypatch.setattr(CurveBound, "stop", first_rung)
    eager = _search(tmp_path / "eager", data, early_stop=True)
    stopped = [r for r in eager.trials if r.steps_saved]
    assert stopped and all(r.epochs_run == 1 and "stopped by the test" in r.reason for r in stopped)
    assert _trials(eager) != _trials(off)
    assert eager.early_stop()["steps_saved"] == sum(r.steps_saved for r in stopped)
