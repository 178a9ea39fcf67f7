"""A real search refits its chosen design on every training sample and exports that model."""

from __future__ import annotations

import dataclasses
import io
import json
from pathlib import Path

import pytest

from mcunas.engine import run_search
from mcunas.search.finish.refit import REFIT_META, same_graph
from mcunas.search.results.store import TrialStore
from mcunas.search.settings.config import SearchConfig
from tests.integration.test_search_e2e import series_search

pytestmark = pytest.mark.slow


def test_the_exported_model_is_the_refit_and_a_resume_keeps_it(tmp_path: Path) -> None:
    # 60 training series: --refit auto refits; --distill adds the teacher; resumed with
    # --ensemble 2 (and no teacher) the refit is redone as an average of two
    config = dataclasses.replace(series_search(tmp_path, "r"), distill=True)
    stream = io.StringIO()
    result = run_search(config, stream=stream)
    assert result.best is not None and result.refit is not None
    out = Path(result.paths["best_dir"])
    trial = (Path(config.out) / result.best.model_path).read_bytes()
    exported = (out / "model.tflite").read_bytes()
    assert exported == (Path(config.out) / result.refit.model_path).read_bytes()
    assert exported != trial and same_graph(trial, exported) is None
    assert result.refit.samples == 60 and result.refit.steps > 0
    assert result.refit.teacher == "kws-dscnn"  # a series' reference, at full size
    info = json.loads((out / "best.json").read_text())
    assert (
        info["refit"] == result.refit.to_dict()
        and info["model_sha256"] == result.refit.model_sha256
    )
    text = result.text()
    assert "exported model: the same design refitted on all 60 training samples" in text
    assert "taught by kws-dscnn" in text
    assert f"Refitting trial {result.best.trial_id}'s design on all 60" in stream.getvalue()
    assert result.test is not None and result.test["samples"] == 40  # the refit, on test
    page = Path(result.paths["report_html"]).read_text()
    assert "<b>Exported model:</b> the same design refitted on all 60" in page

    again = io.StringIO()
    resumed = run_search(dataclasses.replace(config, resume=True), stream=again)
    assert resumed.refit == result.refit and "Refitting" not in again.getvalue()
    _average_of_two(dataclasses.replace(config, resume=True, ensemble="2", distill=False))


def _average_of_two(config: SearchConfig) -> None:
    """Resumed with ``--ensemble 2``: an average of two refits, measured, with its own figures."""
    from mcunas.tflite.reader import read_graph

    stream = io.StringIO()
    result = run_search(config, stream=stream)
    assert result.best is not None and result.refit is not None
    assert result.refit.members == 2 and result.refit.members_planned == 2
    out = Path(result.paths["best_dir"])
    trial = read_graph((Path(config.out) / result.best.model_path).read_bytes())
    ops = [op.name for op in read_graph((out / "model.tflite").read_bytes()).ops]
    assert len(ops) == 2 * len(trial.ops) + 2 and ops[-2:] == ["ADD", "MUL"]
    own = result.refit.to_dict()["figures"]
    assert own["estimated"] is True and own["latency_ms"] > 1.5 * result.best.latency_ms
    assert "Member 2 of 2 trained" in stream.getvalue()
    assert "exported model: an average of 2 members of the same design" in result.text()
    info = json.loads((out / "best.json").read_text())
    assert info["refit"]["figures"] == own
    main = (out / "project" / "src" / "main.cpp").read_text()
    assert f"estimated {own['arena_bytes']} bytes" in main  # the average's arena, not the trial's
    assert result.test is not None and result.test["samples"] == 40


def test_refit_off_exports_the_trials_own_model(tmp_path: Path) -> None:
    config = dataclasses.replace(series_search(tmp_path, "n"), refit="off", distill=False)
    result = run_search(config, stream=None)
    assert result.best is not None and result.refit is None
    exported = (Path(result.paths["best_dir"]) / "model.tflite").read_bytes()
    assert exported == (Path(config.out) / result.best.model_path).read_bytes()
    store = TrialStore.open(Path(config.out))
    assert store.get_meta(REFIT_META) is None
    store.close()
