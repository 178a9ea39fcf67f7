"""A SQLite store of latency measurements: whole-model and per-op.

Each measurement is keyed by the model's hash (the model bytes are kept, so a
fit never depends on files that moved), the board profile name, its
kernel library and clock, and says where it came from (``board:/dev/ttyUSB0``,
``published:<citation>``, ``virtual:...``).

Example::

    store = RecordStore()                       # $MCUNAS_HOME/predictor.sqlite
    store.import_csv(Path("measurements.csv"))  # published whole-model figures
    rows = store.model_rows(board="esp32s3")
"""

from __future__ import annotations

import hashlib
import json
import math
import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mcunas.cost.fit.scale import CalibrationRow, load_calibration
from mcunas.errors import UserError
from mcunas.files import output_path, write_file
from mcunas.paths import predictor_store_path

__all__ = ["OpRecord", "RecordStore", "model_hash"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS models (hash TEXT PRIMARY KEY, name TEXT, bytes BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS measurements (
    id INTEGER PRIMARY KEY, model_hash TEXT NOT NULL REFERENCES models(hash),
    board TEXT NOT NULL, core TEXT NOT NULL, kernels TEXT NOT NULL, clock_hz INTEGER NOT NULL,
    source TEXT NOT NULL, op_index INTEGER, op_name TEXT, latency_ms REAL NOT NULL,
    label TEXT, UNIQUE (model_hash, board, kernels, clock_hz, source, op_index, label)
);
CREATE TABLE IF NOT EXISTS setups (
    board TEXT NOT NULL, source TEXT NOT NULL, setup TEXT NOT NULL, PRIMARY KEY (board, source)
);
"""
# The table's UNIQUE treats NULLs as distinct, so whole-model rows (op_index NULL)
# were stored again on each re-import: drop such repeats (keep the newest), then
# key on the NULL-safe expressions so INSERT OR REPLACE replaces them.
_KEY = "model_hash, board, kernels, clock_hz, source, IFNULL(op_index, -1), IFNULL(label, '')"
_DEDUPE = f"""
DELETE FROM measurements WHERE id NOT IN (SELECT MAX(id) FROM measurements GROUP BY {_KEY});
CREATE UNIQUE INDEX IF NOT EXISTS measurements_key ON measurements ({_KEY});
"""


def model_hash(model_bytes: bytes) -> str:
    """Content hash that keys a model in the store."""
    return hashlib.sha256(model_bytes).hexdigest()[:16]


@dataclass(frozen=True)
class OpRecord:
    """One measured op of one model on one board."""

    model_hash: str
    board: str
    kernels: str
    clock_hz: int
    op_index: int
    op_name: str
    latency_ms: float
    source: str


# Tables a measurements store has; a database holding other tables is another kind.
_STORE_TABLES = {"models", "measurements", "setups"}


def _refuse_other_kind(db: sqlite3.Connection, path: Path) -> None:
    """Raise before anything is written if ``path`` is a database of another kind."""
    names = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    other = {n for n in names if not n.startswith("sqlite_")} - _STORE_TABLES
    if other:
        db.close()
        raise UserError(
            f"{path} is not an mcunas measurements store (it holds {', '.join(sorted(other))}; "
            "a search's trials.sqlite?). Give --store a measurements store, or omit --store."
        )


class RecordStore:
    """The measurements database (stdlib sqlite3)."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = Path(path) if path else predictor_store_path()
        output_path(self.path, "measurements store")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(self.path)
            _refuse_other_kind(self._db, self.path)
            self._db.executescript(_SCHEMA)
            if not self._db.execute(
                "SELECT 1 FROM sqlite_master WHERE name='measurements_key'"
            ).fetchone():
                self._db.executescript(_DEDUPE)
        except (OSError, sqlite3.DatabaseError) as exc:
            raise UserError(f"Cannot open the measurements store {self.path}: {exc}") from None
        self._models_dir = self.path.parent / "predictor-models"

    def close(self) -> None:
        """Close the database."""
        self._db.close()

    def add_model(self, model_bytes: bytes, name: str = "") -> str:
        """Store a model's bytes; return its hash."""
        key = model_hash(model_bytes)
        with self._db:
            self._db.execute(
                "INSERT OR IGNORE INTO models VALUES (?, ?, ?)", (key, name, model_bytes)
            )
        return key

    def add_measurement(
        self,
        model_bytes: bytes,
        board: str,
        core: str,
        kernels: str,
        clock_hz: int,
        latency_ms: float,
        source: str,
        label: str = "",
        ops: Iterable[tuple[int, str, float]] = (),
    ) -> str:
        """Store a whole-model latency and, optionally, per-op times (index, op, ms)."""
        if not (math.isfinite(latency_ms) and latency_ms > 0):
            raise UserError(f"latency must be a positive number, got {latency_ms} ms")
        key = self.add_model(model_bytes, label)
        rows = [(None, None, latency_ms)] + [(i, name, ms) for i, name, ms in ops]
        with self._db:
            self._db.executemany(
                "INSERT OR REPLACE INTO measurements (model_hash, board, core, kernels, clock_hz,"
                " source, op_index, op_name, latency_ms, label) VALUES (?,?,?,?,?,?,?,?,?,?)",
                [
                    (key, board, core, kernels, clock_hz, source, i, n, ms, label)
                    for i, n, ms in rows
                ],
            )
        return key

    def add_setup(self, board: str, source: str, setup: dict[str, Any]) -> None:
        """Store the build setup the firmware reported for ``board``'s rows from ``source``."""
        with self._db:
            self._db.execute(
                "INSERT OR REPLACE INTO setups VALUES (?, ?, ?)",
                (board, source, json.dumps(setup, sort_keys=True)),
            )

    def setups(self, board: str) -> dict[str, dict[str, Any]]:
        """``source -> reported setup`` of every run of ``board`` that reported one."""
        rows = self._db.execute("SELECT source, setup FROM setups WHERE board = ?", (board,))
        return {source: json.loads(text) for source, text in rows}

    def import_csv(self, csv_path: Path) -> int:
        """Import whole-model rows in the form of ``calibration/measurements.csv``."""
        rows = load_calibration(Path(csv_path))
        _check_rows(rows, csv_path)  # before anything is stored: a bad file adds nothing
        count = 0
        for row in rows:
            board = board_for_row(row)
            source = f"published:{row.source}" if row.source else f"csv:{csv_path}"
            self.add_measurement(
                row.model_bytes(),
                board,
                row.core,
                row.kernels,
                row.clock_hz,
                row.latency_ms,
                source,
                label=row.id,
            )
            count += 1
        return count

    def _model_file(self, key: str) -> Path:
        path = self._models_dir / f"{key}.tflite"
        if not path.is_file():
            blob = self._db.execute("SELECT bytes FROM models WHERE hash=?", (key,)).fetchone()
            self._models_dir.mkdir(parents=True, exist_ok=True)
            write_file(path, blob[0], "model cache", inside=self._models_dir)
        return path

    def model_rows(self, board: str | None = None) -> list[CalibrationRow]:
        """Whole-model measurements, as rows the fit and leave-one-out take."""
        sql = (
            "SELECT model_hash, board, core, kernels, clock_hz, latency_ms, source, label, id "
            "FROM measurements WHERE op_index IS NULL"
        )
        args: tuple = ()
        if board:
            sql, args = sql + " AND board=?", (board,)
        out = []
        for key, brd, core, kernels, clock, ms, source, label, rid in self._db.execute(sql, args):
            out.append(
                CalibrationRow(
                    id=label or f"m{rid}",
                    model=self._model_file(key),
                    board=brd,
                    core=core,
                    clock_hz=clock,
                    kernels=kernels,
                    latency_ms=ms,
                    source=source,
                )
            )
        return out

    def op_records(self, board: str | None = None) -> list[OpRecord]:
        """Per-op measurements."""
        sql = (
            "SELECT model_hash, board, kernels, clock_hz, op_index, op_name, latency_ms, source"
            " FROM measurements WHERE op_index IS NOT NULL"
        )
        args: tuple = ()
        if board:
            sql, args = sql + " AND board=?", (board,)
        return [OpRecord(*r) for r in self._db.execute(sql, args)]

    def model_path(self, key: str) -> Path:
        """A file holding the stored model's bytes."""
        return self._model_file(key)

    def boards(self) -> list[str]:
        """Board names with at least one measurement."""
        return [r[0] for r in self._db.execute("SELECT DISTINCT board FROM measurements")]

    def summary(self) -> list[tuple[str, str, str, int, int]]:
        """(board, kernels, source, whole-model measurements, per-op measurements) groups."""
        sql = (
            "SELECT board, kernels, source, SUM(op_index IS NULL), SUM(op_index IS NOT NULL)"
            " FROM measurements GROUP BY board, kernels, source"
            " ORDER BY board, kernels, source"
        )
        return [tuple(r) for r in self._db.execute(sql)]

    def forget(self, board: str, source: str | None = None) -> int:
        """Delete a board's measurements (only those of ``source`` if given); return the count.

        Models no measurement refers to any more are dropped too.
        """
        sql, args = "DELETE FROM measurements WHERE board=?", (board,)
        if source is not None:
            sql, args = sql + " AND source=?", (board, source)
        with self._db:
            count = self._db.execute(sql, args).rowcount
            self._db.execute(
                "DELETE FROM models WHERE hash NOT IN (SELECT model_hash FROM measurements)"
            )
        return count


def _check_rows(rows: list[CalibrationRow], csv_path: Path) -> None:
    """Refuse values the CSV parser lets through: one line naming the CSV line."""
    from mcunas.boards.catalog import core_family

    seen: dict[str, int] = {}
    for line, row in enumerate(rows, start=2):  # one row per CSV line after the header
        where = f"{csv_path}:{line}"
        if row.kernels == "esp-nn" and core_family(row.core) == "cortex-m":
            raise UserError(
                f"{where}: kernels esp-nn (Espressif's library) cannot run on "
                f"{row.core}; use cmsis-nn or reference"
            )
        if row.id in seen:
            raise UserError(
                f"{where}: id {row.id!r} is used again (first on line {seen[row.id]}); "
                "give each measurement its own id"
            )
        seen[row.id] = line


def board_for_row(row: CalibrationRow) -> str:
    """The board profile a published row belongs to: by name, else by core and clock.

    When several profiles share the core and clock (a user's ``esp32s3-virtual``
    beside ``esp32s3``), the one named like a built-in profile wins: a copy must
    not take the published rows away from the board they were measured on. A
    malformed user profile is skipped here (``mcunas boards`` reports it).
    """
    from mcunas.boards.catalog import list_boards
    from mcunas.paths import builtin_boards_dir

    boards = list_boards(errors=[])
    for board in boards:
        if row.board in (board.name, board.title):
            return board.name
    same = [b.name for b in boards if b.core == row.core and b.clock_hz == row.clock_hz]
    if len(same) > 1:
        builtin = {p.stem for p in builtin_boards_dir().glob("*.toml")}
        same = [name for name in same if name in builtin]
    return same[0] if len(same) == 1 else row.board or f"{row.core}@{row.clock_hz // 1_000_000}MHz"
