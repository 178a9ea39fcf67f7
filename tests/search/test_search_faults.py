"""A search's folder under faults: one writer, moved folders, changed data, dead parents."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from mcunas.errors import ImplausibleFigure
from mcunas.figures import Figures
from mcunas.files import FolderLock
from mcunas.search.results.store import TrialStatus, TrialStore
from tests.commands.test_search_cli import fake_runner_fixture, run

fake_runner = pytest.fixture(fake_runner_fixture)


def _digits_like(path: Path, shift: float = 0.0) -> Path:
    rng = np.random.default_rng(0)
    x = rng.random((60, 8, 8, 1), dtype=np.float32) + shift
    np.savez(path, x_train=x, y_train=np.arange(60) % 3)
    return path


def test_a_busy_folder_is_refused_naming_the_holder(capsys, tmp_path, fake_runner) -> None:
    out = tmp_path / "run"
    out.mkdir()
    with FolderLock(out, "mcunas search"):
        code, _, err = run(capsys, "--board", "esp32s3", "--out", str(out), "--max-trials", "2")
    assert code == 2 and f"pid {os.getpid()}" in err and "Traceback" not in err
    assert not TrialStore.exists_in(out)  # the refused run wrote nothing
    code, _, _ = run(capsys, "--board", "esp32s3", "--out", str(out), "--max-trials", "2")
    assert code == 0  # the lock went with its holder


def test_lock_is_released_when_the_holder_is_killed(tmp_path: Path) -> None:
    code = f"from mcunas.files import FolderLock; FolderLock({str(tmp_path)!r}, 'x').__enter__()"
    holder = subprocess.Popen(
        [sys.executable, "-c", code + "; print('held', flush=True); import time; time.sleep(60)"],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdout.readline().strip() == "held"
    with pytest.raises(Exception, match=f"pid {holder.pid}"), FolderLock(tmp_path, "x"):
        pass
    holder.kill()
    holder.wait(10)
    with FolderLock(tmp_path, "x"):  # no stale lock after kill -9
        pass


def test_trials_need_resume_or_overwrite(capsys, tmp_path, fake_runner) -> None:
    out = str(tmp_path / "run")
    assert run(capsys, "--board", "esp32s3", "--out", out, "--max-trials", "3")[0] == 0
    code, _, err = run(capsys, "--board", "esp32s3", "--out", out, "--max-trials", "3")
    assert code == 2 and "--overwrite" in err
    code, _, err = run(capsys, "--board", "esp32s3", "--out", out, "--resume", "--overwrite")
    assert code == 2 and "give one of them" in err
    code, _, _ = run(capsys, "--board", "esp32s3", "--out", out, "--max-trials", "2", "--overwrite")
    assert code == 0 and TrialStore.open(Path(out)).count() == 2


def test_a_moved_folder_resumes_and_exports(capsys, tmp_path, fake_runner) -> None:
    first = tmp_path / "first"
    assert run(capsys, "--board", "esp32s3", "--out", str(first), "--max-trials", "4")[0] == 0
    moved = tmp_path / "elsewhere" / "moved"
    moved.parent.mkdir()
    first.rename(moved)
    code, _, err = run(capsys, "--out", str(moved), "--resume", "--max-trials", "5")
    assert code == 0, err
    assert (moved / "best" / "model.tflite").is_file()
    rows = TrialStore.open(moved).trials(TrialStatus.OK)
    assert rows and all(not Path(r.model_path).is_absolute() for r in rows)


def test_resume_refuses_changed_data(capsys, tmp_path, fake_runner) -> None:
    data = _digits_like(tmp_path / "data.npz")
    out = str(tmp_path / "run")
    args = ("--board", "esp32s3", "--dataset", str(data), "--out", out, "--max-trials", "2")
    assert run(capsys, *args)[0] == 0
    _digits_like(data, shift=1.0)  # same name, same shape, other content
    code, _, err = run(capsys, "--out", out, "--resume", "--max-trials", "3")
    assert code == 2 and "dataset" in err and "changed" in err


def test_a_store_of_another_kind_is_refused_untouched(capsys, tmp_path, fake_runner) -> None:
    out = tmp_path / "run"
    out.mkdir()
    db = sqlite3.connect(out / "trials.sqlite")
    db.execute("CREATE TABLE measurements (id TEXT)")
    db.commit()
    db.close()
    code, _, err = run(capsys, "--board", "esp32s3", "--out", str(out))
    assert code == 2 and "not an mcunas trial store" in err
    tables = sqlite3.connect(out / "trials.sqlite").execute("SELECT name FROM sqlite_master")
    assert {name for (name,) in tables} == {"measurements"}


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("latency_ms", float("inf")),
        ("latency_ms", float("nan")),
        ("arena_bytes", 10**30),
        ("flash_bytes", -1),
        ("peak_sram_bytes", 1.5),
        ("latency_error_pct", float("nan")),
    ],
)
def test_implausible_figures_are_refused(field: str, value: object) -> None:
    good = {"latency_ms": 3.0, "arena_bytes": 1000, "peak_sram_bytes": 2000, "flash_bytes": 9}
    with pytest.raises(ImplausibleFigure, match=field):
        Figures("board:/dev/ttyACM0", False, **{**good, field: value})


def test_an_absurd_measurement_is_a_failed_trial(capsys, tmp_path, fake_runner) -> None:
    def absurd(model_bytes, promising):
        return Figures("board:x", False, 1.0, 10**30, 10, 10)

    fake_runner.measure = absurd
    out = tmp_path / "run"
    code, _, err = run(capsys, "--board", "esp32s3", "--out", str(out), "--max-trials", "3")
    assert code == 2 and "Traceback" not in err  # nothing feasible: one line
    failed = TrialStore.open(out).trials(TrialStatus.FAILED)
    assert failed and all("implausible arena_bytes" in (r.reason or "") for r in failed)


def test_sigterm_stops_like_ctrl_c() -> None:
    from mcunas.commands.search import sigterm_as_interrupt

    with pytest.raises(KeyboardInterrupt), sigterm_as_interrupt():
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(5)
    assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL


CHILD = """
import os, sys, time
from mcunas.boards.catalog import load_board
from mcunas.search.trial.isolate import TflmWorker
worker = TflmWorker(load_board("esp32s3"))
print(worker._submit("testing", os.getpid), flush=True)
time.sleep(120)
"""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as fh:  # a zombie is dead, only not yet reaped
        return fh.read().split(")")[-1].split()[0] != "Z"


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="needs /proc")
def test_the_tflm_worker_dies_with_a_killed_search() -> None:
    parent = subprocess.Popen([sys.executable, "-c", CHILD], stdout=subprocess.PIPE, text=True)
    worker_pid = int(parent.stdout.readline())
    assert _alive(worker_pid)
    parent.kill()  # kill -9: no clean-up code runs in the parent
    parent.wait(10)
    deadline = time.monotonic() + 10
    while _alive(worker_pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _alive(worker_pid)


def test_a_corrupted_store_is_one_line(capsys, tmp_path, fake_runner) -> None:
    out = tmp_path / "run"
    assert run(capsys, "--board", "esp32s3", "--out", str(out), "--max-trials", "2")[0] == 0
    db = out / "trials.sqlite"
    raw = bytearray(db.read_bytes())
    raw[100:4096] = b"\xa5" * (4096 - 100)  # the first page past the header: the schema
    db.write_bytes(bytes(raw))
    for name in ("trials.sqlite-wal", "trials.sqlite-shm"):
        (out / name).unlink(missing_ok=True)
    code, _, err = run(capsys, "--out", str(out), "--resume", "--max-trials", "3")
    assert code == 2 and "Traceback" not in err and str(db) in err
    assert len(err.strip().splitlines()) == 1


def test_storage_errors_name_the_path_and_what_to_do(tmp_path: Path) -> None:
    from mcunas.errors import UserError
    from mcunas.files import DiskFull, storage_errors

    with pytest.raises(UserError, match="read-only file system"), storage_errors(tmp_path):
        raise OSError(30, "Read-only file system")  # EROFS
    with pytest.raises(UserError, match="locked by another"), storage_errors(tmp_path):
        raise sqlite3.OperationalError("database is locked")
    with pytest.raises(DiskFull), storage_errors(tmp_path):
        raise sqlite3.OperationalError("database or disk is full")
    with pytest.raises(KeyError), storage_errors(tmp_path):
        raise KeyError("not a storage fault: passes through")
