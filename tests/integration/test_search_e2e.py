"""Real searches: Keras training, INT8 conversion, TFLite Micro accuracy, the simulator.

Kept tiny (1-3 epochs, dsconv only, 2-3 trials) so the file runs in about two minutes.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mcunas.engine import run_search
from mcunas.search import SearchConfig
from mcunas.search.results.store import TrialStatus, TrialStore

pytestmark = pytest.mark.slow
REPO = Path(__file__).resolve().parents[2]


def _cli(*args: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "mcunas",
        "search",
        "--board",
        "esp32s3",
        "--families",
        "dsconv",
        *args,
    ]


def _env() -> dict[str, str]:
    return {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3", "PYTHONPATH": str(REPO)}


def test_real_search_with_injected_convert_failure(tmp_path: Path, monkeypatch) -> None:
    from mcunas.search.trial.runner import KerasRunner

    real = KerasRunner.convert
    calls = {"n": 0}

    def flaky(self, model):
        calls["n"] += 1
        if calls["n"] == 1:
            raise RuntimeError("injected converter failure")
        return real(self, model)

    monkeypatch.setattr(KerasRunner, "convert", flaky)
    cfg = SearchConfig(
        board="esp32s3",
        out=str(tmp_path / "o"),
        max_trials=3,
        epochs=1,
        families=("dsconv",),
        strategy="random",
        seed=3,
    )
    result = run_search(cfg, stream=None)
    statuses = [r.status for r in result.trials]
    assert statuses[0] == TrialStatus.FAILED and statuses.count(TrialStatus.OK) == 2
    assert result.trials[0].reason == "convert failed: RuntimeError: injected converter failure"
    best = result.best
    assert best is not None and 0.2 < best.int8_accuracy <= 1.0  # 1 epoch: above chance (0.1)
    assert best.estimated and best.source.startswith("simulator:")
    assert best.latency_ms > 0 and best.peak_sram_bytes > best.arena_bytes > 0
    assert best.check_s > 0 and best.train_s > 0 and best.model_sha256
    best_dir = Path(result.paths["best_dir"])
    ops = (best_dir / "model_ops.h").read_text()
    info = json.loads((best_dir / "best.json").read_text())
    assert info["ops"] and all(op in ops for op in info["ops"])
    assert (best_dir / "model.tflite").stat().st_size == info["model_bytes"]
    # the deployable project for the search's board (an ESP-IDF one for esp32s3)
    main_cpp = (best_dir / "project" / "main" / "main.cpp").read_text()
    assert f"estimated {best.arena_bytes} bytes" in main_cpp and "bool predict(" in main_cpp
    assert "project/" in info["files"] and "project_error" not in info
    assert f"Deploy: cd {best_dir / 'project'} && pio run -t upload" in result.text()


def series_search(tmp_path: Path, out: str) -> SearchConfig:
    """A one-trial search on two-channel sine series with a test split."""
    import numpy as np

    rng = np.random.default_rng(0)
    t = np.linspace(0, 1, 32, dtype=np.float32)

    def series(n: int) -> tuple[np.ndarray, np.ndarray]:
        y = rng.integers(0, 2, n)
        freq = np.where(y == 0, 3.0, 7.0)[:, None]
        x = np.sin(2 * np.pi * freq * t[None]) + 0.1 * rng.normal(size=(n, 32))
        return np.stack([x, -x], axis=-1).astype(np.float32), y  # (N, T, C)

    (x, y), (xt, yt) = series(60), series(40)
    data = tmp_path / "imu.npz"
    np.savez(data, x_train=x, y_train=y, x_test=xt, y_test=yt, kind="series")
    return SearchConfig(
        board="nano33ble",
        out=str(tmp_path / out),
        dataset=str(data),
        max_trials=1,
        epochs=1,
        families=("stages",),
        strategy="random",
        seed=1,
    )


def test_series_with_a_test_split_reports_it_and_a_seed_repeats_it(tmp_path: Path) -> None:
    result = run_search(series_search(tmp_path, "o"), stream=None)
    again = run_search(series_search(tmp_path, "b"), stream=None).best
    assert result.best is not None and again is not None
    first = result.best  # the same seed trains the same model
    assert (first.int8_accuracy, first.int8_loss) == (again.int8_accuracy, again.int8_loss)
    assert first.model_sha256 == again.model_sha256
    assert result.test["samples"] == 40 and 0.0 <= result.test["int8_accuracy"] <= 1.0
    assert "Test split (40 samples, never used for selection)" in result.text()
    info = json.loads((Path(result.paths["best_dir"]) / "best.json").read_text())
    assert info["test"] == result.test
    page = Path(result.paths["report_html"]).read_text()
    assert "layer by layer" in page and "live arena KB" in page
    assert result.layers and result.layers[-1]["output_shape"] == [1, 2]
    assert max(r["live_bytes"] for r in result.layers) <= result.best.arena_bytes


def test_budgets_nobody_meets(tmp_path: Path) -> None:
    proc = subprocess.run(
        _cli(
            "--max-trials",
            "2",
            "--max-draws",
            "4",
            "--max-latency-ms",
            "0.001",
            "--out",
            str(tmp_path / "o"),
        ),
        capture_output=True,
        text=True,
        env=_env(),
        timeout=300,
    )
    assert proc.returncode == 2
    assert "No candidate met the limits (latency <= 0.001 ms" in proc.stderr
    assert "of any design tried is" in proc.stderr  # the cheapest design against the budget
    rows = TrialStore.open(tmp_path / "o").trials()
    assert all(r.status == TrialStatus.INFEASIBLE and r.train_s == 0.0 for r in rows)


def _rows(db: Path) -> list[tuple]:
    if not db.exists():
        return []
    try:
        con = sqlite3.connect(db, timeout=1)
        rows = con.execute(
            "SELECT trial_id, status, check_s, model_sha256, finished_at "
            "FROM trials ORDER BY trial_id"
        ).fetchall()
        con.close()
        return rows
    except sqlite3.Error:
        return []


def _children(pid: int) -> list[int]:
    """Processes whose parent is ``pid`` (the search's TFLM worker among them)."""
    kids = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid and fields[0] != "Z":
            kids.append(int(stat.parent.name))
    return kids


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _until_training(proc: subprocess.Popen, db: Path, need_ok: bool) -> None:
    """Wait until a trial is past its cost check (training; after a finished one if
    ``need_ok``) and the search holds its TFLM worker."""
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline and proc.poll() is None:
        rows = _rows(db)
        ok = not need_ok or any(r[1] == "ok" for r in rows)
        if ok and any(r[1] == "running" and r[2] for r in rows) and _children(proc.pid):
            return
        time.sleep(0.2)
    proc.kill()
    _, err = proc.communicate(timeout=30)
    pytest.fail(f"the search never got to training: {(err or '')[-1500:]}")


def _stop(proc: subprocess.Popen, how: str) -> str:
    """Signal the search alone (not its process group); its children must die with it."""
    children = _children(proc.pid)
    assert children
    proc.send_signal(getattr(signal, how))
    _, err = proc.communicate(timeout=60)
    deadline = time.monotonic() + 10
    while any(_alive(c) for c in children) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not [c for c in children if _alive(c)], f"a child outlived the search ({how})"
    return err or ""


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc")
def test_stopped_and_killed_searches_resume_without_redoing_work(tmp_path: Path) -> None:
    out = tmp_path / "o"
    db = out / "trials.sqlite"
    start = _cli("--max-trials", "3", "--epochs", "2", "--strategy", "random", "--out", str(out))
    resume = [sys.executable, "-m", "mcunas", "search", "--out", str(out), "--resume"]
    pipes = {"stdout": subprocess.DEVNULL, "stderr": subprocess.PIPE, "text": True, "env": _env()}
    proc = subprocess.Popen(start, **pipes)
    _until_training(proc, db, need_ok=True)  # trial 0 done, trial 1 training
    err = _stop(proc, "SIGTERM")  # stopped like Ctrl-C: one resume line, exit 130
    assert proc.returncode == 130 and f"--out {out} --resume" in err, err[-3000:]
    assert "Traceback" not in err
    before = {r[0]: r for r in _rows(db) if r[1] != "running"}
    assert before

    proc = subprocess.Popen(resume, **pipes)
    _until_training(proc, db, need_ok=False)
    _stop(proc, "SIGKILL")  # no clean-up at all: the TFLM worker must still die

    done = subprocess.run(
        [*resume, "--json"], capture_output=True, text=True, env=_env(), timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    summary = json.loads(done.stdout)
    after = _rows(db)
    assert len(after) == 3 and all(r[1] != "running" for r in after)
    for tid, row in before.items():  # finished trials kept as they were, not redone
        assert next(r for r in after if r[0] == tid) == row
    assert summary["config"]["families"] == ["dsconv"] and summary["best"] is not None
