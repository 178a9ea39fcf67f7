"""A trial record as a row of the store's SQLite table, and back.

The table has one column per :class:`~mcunas.search.results.record.TrialRecord`
field, typed from its annotation (a float ``REAL``, an int or a bool ``INTEGER``,
anything else ``TEXT``); the hyperparameters are kept as JSON text.
"""

from __future__ import annotations

import enum
import json
from dataclasses import fields
from typing import Any

from mcunas.search.results.record import TrialRecord, TrialStatus

__all__ = ["COLUMNS", "SCHEMA", "column_sql", "record_of", "row_of", "to_sql"]

COLUMNS = [f.name for f in fields(TrialRecord)]
_SQL_TYPES = {"float": "REAL", "int": "INTEGER", "bool": "INTEGER"}


def column_sql(name: str, annotation: str) -> str:
    """The column of field ``name`` (its annotation as text) in ``CREATE TABLE``."""
    if name == "trial_id":
        return "trial_id TEXT PRIMARY KEY"
    base = annotation.split("|")[0].strip()
    return f"{name} {_SQL_TYPES.get(base, 'TEXT')}"


SCHEMA = "CREATE TABLE IF NOT EXISTS trials ({})".format(
    ", ".join(column_sql(f.name, str(f.type)) for f in fields(TrialRecord))
)


def to_sql(name: str, value: object) -> object:
    """A field's value as stored (JSON text, an enum's text, a bool as 0 or 1)."""
    if name == "hyperparameters":
        return json.dumps(value, sort_keys=True)
    if isinstance(value, enum.Enum):
        return str(value)
    if isinstance(value, bool):
        return int(value)
    return value


def row_of(rec: TrialRecord) -> tuple[object, ...]:
    """The record's row, in :data:`COLUMNS` order."""
    return tuple(to_sql(name, getattr(rec, name)) for name in COLUMNS)


def record_of(row: tuple[Any, ...]) -> TrialRecord:
    """Inverse of :func:`row_of`."""
    data = dict(zip(COLUMNS, row, strict=True))
    data["hyperparameters"] = json.loads(data["hyperparameters"] or "{}")
    data["status"] = TrialStatus(data["status"])
    if data["estimated"] is not None:
        data["estimated"] = bool(data["estimated"])
    for name in ("build_s", "check_s", "train_s", "convert_s", "eval_s", "measure_s"):
        data[name] = data[name] or 0.0
    return TrialRecord(**data)
