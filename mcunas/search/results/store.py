"""The trial store: one SQLite file per search, one row per trial.

The store is the source of the Pareto front, of the report and of
``--resume``. It uses the standard library's :mod:`sqlite3` in WAL mode and
commits after every write, so a search killed at any point keeps every
finished trial (a row is a :class:`~mcunas.search.results.record.TrialRecord`,
whose names are re-exported here). A disk that fills up while writing raises
:class:`mcunas.files.DiskFull` (a :class:`~mcunas.errors.FatalError`) with what
to do next.

Example::

    store = TrialStore.open(Path("runs/demo"))
    store.start_trial("03", {"family": "dsconv"}, family="dsconv")
    store.finish_trial("03", TrialStatus.OK, int8_accuracy=0.96, latency_ms=4.2)
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import time
from dataclasses import fields
from pathlib import Path
from typing import Any

from mcunas.errors import UserError
from mcunas.figures import Figures
from mcunas.files import output_path, plain_name, refuse_links, storage_errors, write_file
from mcunas.inputs.opener import check_input
from mcunas.search.results.record import (
    HpValues,
    TrialOrigin,
    TrialRecord,
    TrialStatus,
    figure_columns,
    record_from_dict,
)
from mcunas.search.results.rows import COLUMNS, SCHEMA, column_sql, record_of, row_of, to_sql

__all__ = [
    "TrialOrigin",
    "TrialRecord",
    "TrialStatus",
    "TrialStore",
    "figure_columns",
    "record_from_dict",
]

STORE_NAME = "trials.sqlite"
SCHEMA_VERSION = 1
# Seconds to wait on a locked database before giving up (another process).
LOCK_TIMEOUT_S = 10.0


class TrialStore:
    """SQLite store of one search's trials (and its settings, as ``meta``)."""

    def __init__(self, path: Path, *, threads: bool = False) -> None:
        """Open (creating if needed) the store at ``path``.

        ``threads``: the connection may be used from several threads (the caller
        serialises them, as a distributed search's chief does).
        """
        self.path = Path(path)
        name = self.path.name  # SQLite follows links: none is planted at its files' names
        refuse_links(self.path.parent, [name], "trial store", linked_ok=True)
        sidecars = [f"{name}-wal", f"{name}-shm", f"{name}-journal"]  # rewritten whole
        refuse_links(self.path.parent, sidecars, "trial store")
        output_path(self.path, "trial store")
        if self.path.exists():  # a regular file within the store's bound
            check_input(self.path, "store", "trial store")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with storage_errors(self.path):
            self._db = sqlite3.connect(
                self.path,
                timeout=LOCK_TIMEOUT_S,
                isolation_level=None,
                check_same_thread=not threads,
            )
            try:
                self._refuse_other_kind()
                self._db.execute("PRAGMA journal_mode=WAL")
                self._db.execute("PRAGMA synchronous=NORMAL")
                self._db.execute(SCHEMA)
                self._add_missing_columns()
                self._db.execute(
                    "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT)"
                )
            except sqlite3.DatabaseError as exc:
                self._db.close()
                if isinstance(exc, sqlite3.OperationalError):  # locked, disk full: not ours
                    raise
                raise UserError(f"{self.path} is not an mcunas trial store ({exc})") from None
        self._set_meta_default("schema_version", SCHEMA_VERSION)
        self._resume_start: float | None = None
        self._wall_before = 0.0

    def _add_missing_columns(self) -> None:
        """Give a store written by an older mcunas the columns added since (empty)."""
        have = {row[1] for row in self._db.execute("PRAGMA table_info(trials)")}
        for f in fields(TrialRecord):
            if f.name not in have:
                column = column_sql(f.name, str(f.type))
                self._db.execute(f"ALTER TABLE trials ADD COLUMN {column}")

    def _refuse_other_kind(self) -> None:
        """Raise before any write if the file is a database of another kind."""
        names = {r[0] for r in self._db.execute("SELECT name FROM sqlite_master")}
        tables = {n for n in names if not n.startswith("sqlite_")}
        if tables and "trials" not in tables:
            raise sqlite3.DatabaseError(
                f"it holds other tables ({', '.join(sorted(tables))}), not a search's trials"
            )

    @classmethod
    def open(cls, out_dir: Path, *, threads: bool = False) -> TrialStore:
        """Open the store inside a search's output folder."""
        return cls(Path(out_dir) / STORE_NAME, threads=threads)

    @staticmethod
    def exists_in(out_dir: Path) -> bool:
        """True if ``out_dir`` holds a store."""
        return (Path(out_dir) / STORE_NAME).is_file()

    def close(self) -> None:
        """Close the connection."""
        self._db.close()

    def _write(self, sql: str, args: tuple[object, ...] = ()) -> None:
        with storage_errors(self.path):
            self._db.execute(sql, args)

    def _query(self, sql: str, args: tuple[object, ...] = ()) -> list[tuple[Any, ...]]:
        with storage_errors(self.path):
            return self._db.execute(sql, args).fetchall()

    # --- meta -----------------------------------------------------------
    def _set_meta_default(self, key: str, value: object) -> None:
        self._write("INSERT OR IGNORE INTO meta VALUES (?, ?)", (key, json.dumps(value)))

    def set_meta(self, key: str, value: object) -> None:
        """Store one JSON value under ``key``."""
        self._write("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, json.dumps(value)))

    def get_meta(self, key: str, default: Any = None) -> Any:
        """The JSON value stored under ``key``, or ``default``."""
        rows = self._query("SELECT value FROM meta WHERE key = ?", (key,))
        return default if not rows else json.loads(rows[0][0])

    # --- wall time over resumes (the first run counts as one) ----------
    def begin_resume(self) -> None:
        """Start this resume's clock; its time is added to the search's ``wall_s`` meta.

        A resume is one stretch of running: the first run is the first resume.

        The total is written after every finished trial (and by :meth:`checkpoint_wall`),
        so a search killed with ``kill -9`` loses at most the time since its last trial.
        """
        self._wall_before = float(self.get_meta("wall_s", 0.0) or 0.0)
        self._resume_start = time.monotonic()
        # the meta key keeps its first name, so that older stores resume
        self.set_meta("sessions", int(self.get_meta("sessions", 0) or 0) + 1)

    @property
    def earlier_wall_s(self) -> float:
        """Wall time of the earlier resumes, as read by :meth:`begin_resume`."""
        return self._wall_before

    @property
    def resume_wall_s(self) -> float:
        """Seconds since :meth:`begin_resume` (0 before it)."""
        return 0.0 if self._resume_start is None else time.monotonic() - self._resume_start

    @property
    def wall_s(self) -> float:
        """Wall time of every resume of this search, this one up to now."""
        if self._resume_start is None:
            return float(self.get_meta("wall_s", 0.0) or 0.0)
        return self._wall_before + self.resume_wall_s

    @property
    def resumes(self) -> int:
        """How many resumes (the first run counted) this search has had."""
        return int(self.get_meta("sessions", 0) or 0)

    def checkpoint_wall(self) -> float:
        """Write the run's total wall time so far into the ``wall_s`` meta; return it."""
        total = self.wall_s
        if self._resume_start is not None:
            self.set_meta("wall_s", total)
        return total

    # --- trials ---------------------------------------------------------
    def start_trial(self, trial_id: str, hyperparameters: HpValues, **values: Any) -> None:
        """Insert (or restart) a trial as ``running``."""
        rec = TrialRecord(trial_id=trial_id, hyperparameters=hyperparameters, **values)
        names = ", ".join(COLUMNS)
        marks = ", ".join("?" for _ in COLUMNS)
        self._write(f"INSERT OR REPLACE INTO trials ({names}) VALUES ({marks})", row_of(rec))

    def begin(self, trial_id: str) -> None:
        """A trial taken up again (a screened subnet's fine-tuning): nothing to do here."""

    def update(self, trial_id: str, **values: Any) -> None:
        """Set some columns of one trial."""
        if not values:
            return
        unknown = set(values) - set(COLUMNS)
        if unknown:
            raise ValueError(f"unknown trial columns: {sorted(unknown)}")
        sets = ", ".join(f"{k} = ?" for k in values)
        args = tuple(to_sql(k, v) for k, v in values.items())
        self._write(f"UPDATE trials SET {sets} WHERE trial_id = ?", (*args, trial_id))

    def record_figures(
        self, trial_id: str, figures: Figures, *, before_training: bool = False
    ) -> None:
        """Record one trial's cost figures: the check's estimate, or the final measurement.

        Args:
            trial_id: str, the trial.
            figures: Figures, from the cost check or the measurer.
            before_training: bool, True for the check's estimate, which is also kept as
                the trial's simulated latency (default False).
        """
        self.update(trial_id, **figure_columns(figures, before_training=before_training))

    def record_model(
        self,
        trial_id: str,
        models_dir: Path,
        model_bytes: bytes,
        figures: Figures | None = None,
        **values: Any,
    ) -> Path:
        """Keep a trained trial's ``.tflite`` in ``models_dir`` with its figures and hash.

        The model path is stored relative to the store's folder (the folder may move);
        ``values`` are further columns (accuracies, timings; a remote worker's figure
        columns when ``figures`` is None). Returns the file's path.
        """
        name = f"trial_{plain_name(trial_id, 'trial id')}.tflite"
        path = Path(models_dir) / name  # models/ is the store's: no link in it is followed
        write_file(path, model_bytes, "trial model", inside=Path(models_dir).parent)
        if figures is not None:
            self.record_figures(trial_id, figures)
        self.update(
            trial_id,
            model_path=os.path.relpath(path, self.path.parent),
            model_sha256=hashlib.sha256(model_bytes).hexdigest(),
            **values,
        )
        return path

    def finish_trial(self, trial_id: str, status: TrialStatus, **values: Any) -> None:
        """Record a trial's final status and figures (and the run's wall time so far)."""
        self.update(trial_id, status=status, **values)
        self.checkpoint_wall()

    def get(self, trial_id: str) -> TrialRecord | None:
        """One trial, or None."""
        rows = self._query(
            f"SELECT {', '.join(COLUMNS)} FROM trials WHERE trial_id = ?", (trial_id,)
        )
        return None if not rows else record_of(rows[0])

    def trials(self, status: TrialStatus | None = None) -> list[TrialRecord]:
        """Every trial (or those with ``status``), oldest first."""
        sql = f"SELECT {', '.join(COLUMNS)} FROM trials"
        args: tuple[object, ...] = ()
        if status is not None:
            sql += " WHERE status = ?"
            args = (str(status),)
        rows = self._query(sql + " ORDER BY started_at, trial_id", args)
        return [record_of(r) for r in rows]

    def count(self) -> int:
        """Number of trials recorded."""
        return int(self._query("SELECT COUNT(*) FROM trials")[0][0])
