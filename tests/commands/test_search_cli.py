"""`mcunas search` end to end with fake candidates (no training): CLI, files, faults."""

from __future__ import annotations

import errno
import json
from pathlib import Path

import numpy as np
import pytest

import mcunas
from mcunas import files as files_mod
from mcunas.commands.cli import main
from mcunas.search.results.store import TrialStatus, TrialStore
from mcunas.search.run import SearchRun
from mcunas.search.tuner.tuner import EvalResult
from tests.search.tuner.test_tuner import FakeRunner, FakeSpace

MODEL = Path(mcunas.__file__).parent / "calibration" / "models" / "ad01_int8.tflite"


class ExportableRunner(FakeRunner):
    """Fake costs and accuracies, but a real INT8 .tflite so best/ can be exported."""

    def convert(self, model):
        self.last = model["width"]
        return MODEL.read_bytes()

    def evaluate(self, model_bytes):
        return EvalResult(0.5 + self.last / 200, 1.0 - self.last / 200)

    def measure(self, model_bytes, promising):
        return self._cost(self.last)


def fake_runner_fixture(monkeypatch: pytest.MonkeyPatch) -> ExportableRunner:
    """Searches in this test use fake candidates that export a real model."""
    runner = ExportableRunner()
    monkeypatch.setattr(
        SearchRun, "components", lambda self, families=None: (FakeSpace(), runner, lambda: None)
    )
    return runner


fake_runner = pytest.fixture(fake_runner_fixture)


def run(capsys, *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as info:
        main(["search", *args])
    out, err = capsys.readouterr()
    return info.value.code, out, err


def test_help_has_examples(capsys) -> None:
    code, out, _ = run(capsys, "--help")
    assert code == 0 and "Examples:" in out and "--resume" in out and "--max-latency-ms" in out


def test_unknown_board_one_line(capsys, tmp_path: Path) -> None:
    code, _, err = run(capsys, "--board", "nope", "--out", str(tmp_path / "o"))
    assert code == 2 and "Unknown board 'nope'" in err and "Traceback" not in err


def test_board_or_resume_needed(capsys) -> None:
    code, _, err = run(capsys, "--max-trials", "2")
    assert code == 2 and "--board" in err


def test_resume_without_search(capsys, tmp_path: Path) -> None:
    code, _, err = run(capsys, "--board", "esp32s3", "--out", str(tmp_path / "x"), "--resume")
    assert code == 2 and "Nothing to resume" in err


def test_unreadable_dataset(capsys, tmp_path: Path) -> None:
    bad = tmp_path / "bad.npz"
    bad.write_bytes(b"this is not a zip file")
    code, _, err = run(
        capsys, "--board", "esp32s3", "--dataset", str(bad), "--out", str(tmp_path / "o")
    )
    assert code == 2 and "is not an .npz file" in err


def test_mislabelled_dataset(capsys, tmp_path: Path) -> None:
    bad = tmp_path / "mislabelled.npz"
    np.savez(bad, x_train=np.zeros((20, 8, 8), np.float32), y_train=np.arange(15))
    code, _, err = run(
        capsys, "--board", "esp32s3", "--dataset", str(bad), "--out", str(tmp_path / "o")
    )
    assert code == 2 and "x_train has 20 samples but y_train has 15" in err


def test_full_search_json_report_export(capsys, tmp_path: Path, fake_runner) -> None:
    out = tmp_path / "run"
    code, stdout, err = run(
        capsys,
        "--board",
        "esp32s3",
        "--out",
        str(out),
        "--max-trials",
        "6",
        "--max-latency-ms",
        "10",
        "--strategy",
        "random",
        "--json",
    )
    assert code == 0, err
    summary = json.loads(stdout)
    assert summary["counts"]["ok"] + summary["counts"].get("infeasible", 0) >= 6
    assert summary["draws"]["trained"] == 6 and summary["draws"]["cap"] == 60
    assert summary["draws"]["drawn"] == sum(summary["counts"].values())
    assert summary["best"]["status"] == "ok" and summary["best"]["latency_ms"] <= 10
    assert summary["infeasible_train_s"] == 0.0
    assert 0 < summary["hypervolume"]["normalized"] <= 1
    assert "[6/6] trial" in err and "best" in err  # progress lines on stderr
    assert "validation samples of (8, 8, 1) (image), 10 classes. Training: batch 32" in err
    for name in ("pareto.json", "pareto.png", "report.html", "trials.sqlite"):
        assert (out / name).is_file()
    page = (out / "report.html").read_text()
    assert "data:image/png;base64," in page and "simulator estimate" in page
    error = summary["best"]["latency_error_pct"]
    assert error and "stated latency error +/-" in page  # per model (op kinds), not per board
    assert f"{error:.0f}" in page.split("stated latency error +/-")[1].split("by model")[0]
    best = out / "best"
    for name in ("model.tflite", "model_data.cc", "model_data.h", "model_ops.h", "best.json"):
        assert (best / name).is_file()
    assert (best / "model.tflite").read_bytes() == MODEL.read_bytes()
    assert (
        json.loads((best / "best.json").read_text())["trial"]["trial_id"]
        == (summary["best"]["trial_id"])
    )
    front = json.loads((out / "pareto.json").read_text())["front"]
    assert summary["best"]["trial_id"] in {r["trial_id"] for r in front}

    # the same folder again without --resume: refused
    code, _, err = run(capsys, "--board", "esp32s3", "--out", str(out))
    assert code == 2 and "--resume" in err and "new --out" in err

    # --resume with more trials continues without redoing finished ones
    before = {r.trial_id: r.finished_at for r in TrialStore.open(out).trials()}
    code, stdout, err = run(capsys, "--out", str(out), "--resume", "--max-trials", "8", "--json")
    assert code == 0, err
    rows = TrialStore.open(out).trials()
    assert json.loads(stdout)["draws"]["trained"] == 8
    assert all(r.finished_at == before[r.trial_id] for r in rows if r.trial_id in before)
    assert json.loads(stdout)["config"]["max_latency_ms"] == 10  # kept from the first run


def test_resume_with_other_settings_refused(capsys, tmp_path: Path, fake_runner) -> None:
    out = tmp_path / "run"
    assert run(capsys, "--board", "esp32s3", "--out", str(out), "--max-trials", "2")[0] == 0
    code, _, err = run(capsys, "--board", "esp32", "--out", str(out), "--resume")
    assert code == 2 and "same search settings" in err


def test_no_feasible_candidate_says_what_smallest_needs(
    capsys, tmp_path: Path, fake_runner
) -> None:
    code, _, err = run(
        capsys,
        "--board",
        "esp32s3",
        "--out",
        str(tmp_path / "o"),
        "--max-trials",
        "4",
        "--max-latency-ms",
        "1",
    )
    assert code == 2
    assert "No candidate met the limits (latency <= 1 ms" in err
    assert "the smallest latency of any design tried is 2.0 ms" in err
    assert fake_runner.trained == []  # none was trained
    assert (tmp_path / "o" / "report.html").is_file()


def test_failing_candidate_recorded_search_goes_on(capsys, tmp_path: Path, fake_runner) -> None:
    calls = {"n": 0}
    real = fake_runner.convert

    def flaky(model):
        calls["n"] += 1
        if calls["n"] == 2:
            raise RuntimeError("converter crashed")
        return real(model)

    fake_runner.convert = flaky
    out = tmp_path / "o"
    code, _, err = run(capsys, "--board", "esp32s3", "--out", str(out), "--max-trials", "4")
    assert code == 0, err
    rows = TrialStore.open(out).trials()
    assert [r.status for r in rows].count(TrialStatus.FAILED) == 1
    failed = next(r for r in rows if r.status == TrialStatus.FAILED)
    assert failed.reason == "convert failed: RuntimeError: converter crashed"
    assert sum(r.status == TrialStatus.OK for r in rows) == 3


def test_disk_full_stops_cleanly_and_resume_finishes(
    capsys, tmp_path: Path, fake_runner, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_fdopen = files_mod.os.fdopen
    writes = {"n": 0}

    def fdopen(*args, **kwargs):
        writes["n"] += 1
        if writes["n"] == 3:  # the third model file
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_fdopen(*args, **kwargs)

    monkeypatch.setattr(files_mod.os, "fdopen", fdopen)
    out = tmp_path / "o"
    code, _, err = run(capsys, "--board", "esp32s3", "--out", str(out), "--max-trials", "5")
    assert code == 2 and "Disk full while writing" in err and "--resume" in err
    rows = TrialStore.open(out).trials()
    assert [r.status for r in rows] == [TrialStatus.OK, TrialStatus.OK, TrialStatus.RUNNING]
    kept = {r.trial_id: r.model_sha256 for r in rows[:2]}

    monkeypatch.setattr(files_mod.os, "fdopen", real_fdopen)
    code, _, err = run(capsys, "--out", str(out), "--resume")
    assert code == 0, err
    rows = TrialStore.open(out).trials()
    assert len(rows) == 5 and all(r.status == TrialStatus.OK for r in rows)
    assert all(TrialStore.open(out).get(t).model_sha256 == s for t, s in kept.items())


def test_time_budget_stops_and_reports(capsys, tmp_path: Path, fake_runner) -> None:
    code, stdout, _ = run(
        capsys,
        "--board",
        "esp32s3",
        "--out",
        str(tmp_path / "o"),
        "--max-trials",
        "20",
        "--time-budget",
        "0.0001",
        "--json",
    )
    assert code == 0
    summary = json.loads(stdout)
    assert summary["stopped_reason"] == "time budget reached"
    assert sum(summary["counts"].values()) == 1
