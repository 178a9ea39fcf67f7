"""Files mcunas wrote earlier, damaged: every reader fails in one line naming the file."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from mcunas.errors import UserError
from mcunas.files import unreadable
from tests.commands.test_search_cli import fake_runner_fixture, run

fake_runner = pytest.fixture(fake_runner_fixture)

DAMAGES = ("random bytes", "cut to half", "a text file", "empty")


def damage(path: Path, how: str) -> None:
    """Damage ``path`` in one of the ways a disk, a copy or a person does."""
    raw = path.read_bytes() if path.exists() else b"x" * 4096
    if how == "random bytes":
        noise = np.random.default_rng(0).integers(0, 256, 2048, dtype=np.uint8).tobytes()
        mid = len(raw) // 3
        path.write_bytes(raw[:mid] + noise + raw[mid + len(noise) :])
    elif how == "cut to half":
        path.write_bytes(raw[: len(raw) // 2])
    elif how == "a text file":
        path.write_text("epoch,loss\n1,0.5\n")
    else:
        path.write_bytes(b"")


def _one_line(err: str, path: Path) -> None:
    errors = [line for line in err.splitlines() if line.startswith("Error")]
    assert "Traceback" not in err and len(errors) == 1, err
    assert str(path) in err, err
    assert "allow_pickle" not in err and "pickle" not in err, err


@pytest.mark.parametrize("how", DAMAGES)
def test_a_damaged_supernet_checkpoint_is_one_line(tmp_path: Path, how: str) -> None:
    from mcunas.supernet.train import checkpoint_epochs, read_checkpoint

    path = tmp_path / "checkpoint.npz"
    np.savez(path, meta=np.array(json.dumps({"done": 3, "weights": 1, "optimizer": 0})), w0=[1.0])
    assert checkpoint_epochs(path) == 3
    damage(path, how)
    with pytest.raises(UserError) as exc:
        read_checkpoint(path)
    _one_line(f"Error: {exc.value}", path)
    assert "delete it" in str(exc.value)
    assert checkpoint_epochs(path) == 0


@pytest.mark.parametrize("how", DAMAGES)
def test_a_damaged_store_is_one_line_on_resume(capsys, tmp_path, fake_runner, how) -> None:
    out = tmp_path / "run"
    assert run(capsys, "--board", "esp32s3", "--out", str(out), "--max-trials", "2")[0] == 0
    db = out / "trials.sqlite"
    damage(db, how)
    for name in ("trials.sqlite-wal", "trials.sqlite-shm"):
        (out / name).unlink(missing_ok=True)
    code, _, err = run(capsys, "--out", str(out), "--resume", "--max-trials", "3")
    assert code == 2, err
    _one_line(err, db)


@pytest.mark.parametrize("how", DAMAGES)
def test_a_damaged_trial_model_is_one_line(capsys, tmp_path, fake_runner, how) -> None:
    out = tmp_path / "run"
    assert run(capsys, "--board", "esp32s3", "--out", str(out), "--max-trials", "2")[0] == 0
    best = json.loads((out / "best" / "best.json").read_text())["trial"]
    model = out / best["model_path"]
    damage(model, how)
    code, _, err = run(capsys, "--out", str(out), "--resume", "--max-trials", "2")
    assert code == 2, err
    _one_line(err, model)
    assert "--overwrite" in err


@pytest.mark.parametrize("how", DAMAGES)
def test_damaged_search_state_files_are_one_line(capsys, tmp_path, fake_runner, how) -> None:
    out = tmp_path / "run"
    assert run(capsys, "--board", "esp32s3", "--out", str(out), "--max-trials", "2")[0] == 0
    states = sorted(p for p in out.rglob("*.json") if "best" not in p.parts)
    assert states, list(out.rglob("*"))
    for path in states:
        damage(path, how)
    code, _, err = run(capsys, "--out", str(out), "--resume", "--max-trials", "3")
    assert "Traceback" not in err, err
    if code != 0:
        assert code == 2, err
        _one_line(err, out)


def test_the_suite_cache_is_rebuilt_when_damaged(tmp_path, monkeypatch) -> None:
    from mcunas.cost.fit import suite

    first = suite.load_suite("small")
    folder = suite.suite_dir("small")
    for how in ("a text file", "cut to half"):
        damage(folder / "index.json", how)
        assert [m.name for m in suite.load_suite("small")] == [m.name for m in first]
    (folder / "index.json").write_text("5")
    assert len(suite.load_suite("small")) == len(first)


def test_unreadable_names_the_file_and_the_fix(tmp_path: Path) -> None:
    import zipfile

    exc = unreadable(tmp_path / "x.npz", "checkpoint", "delete it", zipfile.BadZipFile("bad"))
    assert str(tmp_path / "x.npz") in str(exc) and "delete it" in str(exc)
    advice = ValueError("load it unsafely using allow_pickle=True")
    assert "allow_pickle" not in str(unreadable(tmp_path, "checkpoint", "delete it", advice))


@pytest.mark.parametrize("how", DAMAGES)
def test_a_damaged_measurements_store_is_one_line(capsys, tmp_path: Path, how: str) -> None:
    from mcunas.commands.cli import main
    from mcunas.cost.fit.records import RecordStore

    path = tmp_path / "lab.sqlite"
    RecordStore(path).close()
    damage(path, how)
    with pytest.raises(SystemExit) as exc:
        main(["latency-model", "list", "--store", str(path)])
    err = capsys.readouterr().err
    if exc.value.code != 0:  # an empty file is an empty store, and lists nothing
        assert exc.value.code == 2
        _one_line(err, path)


@pytest.mark.parametrize("how", DAMAGES)
def test_a_damaged_fitted_board_profile_is_one_line(capsys, tmp_path: Path, how: str) -> None:
    from mcunas.commands.cli import main

    path = tmp_path / "mine.toml"
    path.write_text(
        'name = "mine"\ncore = "cortex-m4"\nclock_hz = 64000000\n'
        'sram_bytes = 262144\nflash_bytes = 1048576\nkernels = "cmsis-nn"\n'
    )
    damage(path, how)
    with pytest.raises(SystemExit) as exc:
        main(["boards", "show", str(path)])
    assert exc.value.code == 2
    _one_line(capsys.readouterr().err, path)


def test_resume_on_a_full_disk_says_the_disk_is_full(capsys, tmp_path, fake_runner, monkeypatch):
    import os
    import sqlite3

    out = tmp_path / "run"
    assert run(capsys, "--board", "esp32s3", "--out", str(out), "--max-trials", "2")[0] == 0
    real_connect, real_statvfs = sqlite3.connect, os.statvfs

    def no_room(*args, **kwargs):  # SQLite's word for a WAL write that found no space
        raise sqlite3.OperationalError("disk I/O error")

    def full(path):
        st = real_statvfs(path)
        return os.statvfs_result((st.f_bsize, st.f_frsize, st.f_blocks, 0, 0, *st[5:]))

    monkeypatch.setattr(sqlite3, "connect", no_room)
    monkeypatch.setattr(os, "statvfs", full)
    code, _, err = run(capsys, "--out", str(out), "--resume", "--max-trials", "3")
    assert code == 2 and "Disk full" in err and "--resume" in err and "damaged" not in err
    _one_line(err, out / "trials.sqlite")
    monkeypatch.setattr(os, "statvfs", real_statvfs)  # room on the disk: an I/O fault, not damage
    code, _, err = run(capsys, "--out", str(out), "--resume", "--max-trials", "3")
    assert code == 2 and "could not be read or written" in err and "intact" in err
    monkeypatch.setattr(sqlite3, "connect", real_connect)
    assert run(capsys, "--out", str(out), "--resume", "--max-trials", "3")[0] == 0
