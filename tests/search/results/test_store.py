from __future__ import annotations

import errno
import os
import sqlite3
from contextlib import closing
from pathlib import Path

import pytest

from mcunas import files as files_mod
from mcunas.files import DiskFull, write_file
from mcunas.search.results.store import TrialOrigin, TrialStatus, TrialStore


def test_round_trip_and_status(tmp_path: Path) -> None:
    st = TrialStore.open(tmp_path)
    st.start_trial("0", {"family": "dsconv", "width": 16}, family="dsconv", started_at=1.0)
    st.update("0", build_s=0.5, check_s=1.25)
    st.finish_trial(
        "0",
        TrialStatus.OK,
        int8_accuracy=0.95,
        latency_ms=3.5,
        estimated=True,
        peak_sram_bytes=40_000,
        model_sha256="ab" * 32,
    )
    st.start_trial("1", {"family": "mbconv"}, family="mbconv", started_at=2.0)
    st.finish_trial("1", TrialStatus.INFEASIBLE, reason="peak SRAM 600 KB > budget 256 KB")
    st.close()

    again = TrialStore.open(tmp_path)
    rows = again.trials()
    assert [r.trial_id for r in rows] == ["0", "1"]
    ok = again.get("0")
    assert ok is not None and ok.status is TrialStatus.OK and ok.feasible
    assert ok.hyperparameters == {"family": "dsconv", "width": 16}
    assert ok.estimated is True and ok.total_s == pytest.approx(1.75)
    assert [r.trial_id for r in again.trials(TrialStatus.INFEASIBLE)] == ["1"]
    assert again.get("1").reason.startswith("peak SRAM")
    assert again.get("nope") is None
    assert again.count() == 2
    assert again.get_meta("schema_version") == 1


def test_restart_replaces_running_row(tmp_path: Path) -> None:
    st = TrialStore.open(tmp_path)
    st.start_trial("3", {"a": 1}, started_at=1.0)
    st.update("3", train_s=9.0)
    st.start_trial("3", {"a": 1}, started_at=5.0)  # re-run after a kill
    rec = st.get("3")
    assert rec.status is TrialStatus.RUNNING and rec.train_s == 0.0 and st.count() == 1


def test_a_store_from_before_a_column_was_added_still_opens(tmp_path: Path) -> None:
    import sqlite3

    db = sqlite3.connect(tmp_path / "trials.sqlite")
    db.execute("CREATE TABLE trials (trial_id TEXT PRIMARY KEY, status TEXT, int8_accuracy REAL)")
    db.execute("INSERT INTO trials VALUES ('00', 'ok', 0.9)")
    db.commit()
    db.close()
    st = TrialStore(tmp_path / "trials.sqlite")
    assert st.get("00").int8_accuracy == 0.9 and st.get("00").int8_loss is None
    st.update("00", int8_loss=0.3)
    assert st.get("00").int8_loss == 0.3


def test_meta_and_unknown_column(tmp_path: Path) -> None:
    st = TrialStore.open(tmp_path)
    st.set_meta("config", {"board": "esp32s3"})
    assert st.get_meta("config") == {"board": "esp32s3"}
    assert st.get_meta("missing", 7) == 7
    with pytest.raises(ValueError):
        st.update("0", bogus=1)


def test_wal_mode_and_exists(tmp_path: Path) -> None:
    assert not TrialStore.exists_in(tmp_path)
    st = TrialStore.open(tmp_path)
    assert st._db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert TrialStore.exists_in(tmp_path)


def test_write_file_disk_full_leaves_old_file(tmp_path: Path, monkeypatch) -> None:
    target = tmp_path / "pareto.json"
    write_file(target, "old")

    def full(*_a, **_k):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(files_mod.os, "fdopen", full)
    with pytest.raises(DiskFull, match="--resume"):
        write_file(target, "new")
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["pareto.json"]


def test_store_disk_full_is_fatal(tmp_path: Path) -> None:
    st = TrialStore.open(tmp_path)
    st.start_trial("0", {}, started_at=1.0)

    class FullDb:
        def execute(self, *_a):
            import sqlite3

            raise sqlite3.OperationalError("database or disk is full")

    real = st._db
    st._db = FullDb()
    with pytest.raises(DiskFull):
        st.update("0", train_s=1.0)
    st._db = real
    assert st.get("0").status is TrialStatus.RUNNING
    assert os.path.exists(tmp_path / "trials.sqlite")


def test_trial_origin_is_stored_as_its_old_text(tmp_path: Path) -> None:
    store = TrialStore(tmp_path / "trials.sqlite")
    store.start_trial("t1", {}, origin=TrialOrigin.SEED)
    store.start_trial("t2", {}, origin=TrialOrigin.SUPERNET)
    store.start_trial("t3", {})
    with closing(sqlite3.connect(tmp_path / "trials.sqlite")) as db:
        raw = dict(db.execute("SELECT trial_id, origin FROM trials").fetchall())
    assert raw == {"t1": "seed", "t2": "supernet", "t3": None}  # the values older stores hold
    origins = {r.trial_id: r.origin for r in TrialStore(tmp_path / "trials.sqlite").trials()}
    assert origins["t1"] == TrialOrigin.SEED and origins["t2"] == TrialOrigin.SUPERNET
