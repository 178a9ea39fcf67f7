"""What a worker sends, checked before the chief acts on it.

A chief on loopback needs no token, so any local process may call it; off
loopback, any token holder. Everything a worker sends is input: a trial id is
one the chief handed out and has a strict shape (the chief makes a file name of
it); a worker's name too (it goes into the chief's lines); column values have
the type of their column and a bounded size; models and checkpoints a bounded
size. A value that fails raises :class:`~mcunas.errors.McunasError`, which the
chief answers as a refusal (``ok: false``) and the search goes on.

Example::

    tid = trial_id(payload["tid"])          # "../x" is refused
    columns = client_columns(payload["values"])
"""

from __future__ import annotations

import base64
import binascii
import math
import re
from dataclasses import fields
from typing import Any

from mcunas.errors import McunasError
from mcunas.search.results.record import TrialRecord, TrialStatus

__all__ = [
    "MAX_CHECKPOINT_BYTES",
    "MAX_MODEL_BYTES",
    "MAX_TEXT_CHARS",
    "client_columns",
    "decoded",
    "finite",
    "hyperparameters",
    "trial_id",
    "worker_name",
]

# Keras Tuner's ids ("007"), the supernet's ("s0001", "r2"): letters, digits, '_' and '-'.
_TRIAL_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")
# A host name and a pid ("node-3-4711"), or a name given with --name.
_WORKER = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.@-]{0,63}")
MAX_MODEL_BYTES = 32 * 1024 * 1024  # a microcontroller's model: flash is a few MB at most
MAX_CHECKPOINT_BYTES = 48 * 1024 * 1024  # base64 of it fits the chief's 64 MiB request ceiling
MAX_TEXT_CHARS = 10_000  # a column's text (a failed trial's reason, a description)
MAX_HYPERPARAMETERS = 500
# Columns the chief fills itself: a worker never sets them.
_CHIEF_COLUMNS = frozenset({"trial_id", "worker", "model_path", "model_sha256", "hyperparameters"})
_TYPES = {f.name: str(f.type).split("|")[0].strip() for f in fields(TrialRecord)}


def _refuse(what: str, value: object) -> McunasError:
    return McunasError(f"refused {what} {repr(value)[:60]}")


def trial_id(value: object) -> str:
    """``value`` if it has a trial id's shape (letters, digits, '_', '-'; at most 64)."""
    if not isinstance(value, str) or not _TRIAL_ID.fullmatch(value):
        raise _refuse("trial id", value)
    return value


def worker_name(value: object) -> str:
    """``value`` if it has a worker name's shape (a host name, a pid, '.', '@', '_', '-')."""
    if not isinstance(value, str) or not _WORKER.fullmatch(value):
        raise _refuse("worker name", value)
    return value


def finite(value: object, what: str, low: float = 0.0, high: float = 1e12) -> float:
    """``value`` as a finite number in ``[low, high]`` (a bool is no number)."""
    ok = isinstance(value, int | float) and not isinstance(value, bool)
    if not ok or not math.isfinite(float(value)) or not low <= float(value) <= high:  # type: ignore[arg-type]
        raise _refuse(what, value)
    return float(value)  # type: ignore[arg-type]


def _column(name: str, value: object) -> object:
    """One column's value, of its column's type (None stays None)."""
    kind = _TYPES[name]
    if value is None and name != "status":
        return None
    if name == "status":
        if not isinstance(value, str) or value not in set(TrialStatus):
            raise _refuse("status", value)
        return TrialStatus(value)
    if kind == "bool":
        if not isinstance(value, bool):
            raise _refuse(f"{name} (not true or false)", value)
        return value
    if kind in ("int", "float"):
        number = finite(value, name, -1e15, 1e15)
        if kind == "float":
            return number
        if not number.is_integer():
            raise _refuse(f"{name} (not a whole number)", value)
        return int(number)
    if not isinstance(value, str) or len(value) > MAX_TEXT_CHARS:
        raise _refuse(f"{name} (not text of at most {MAX_TEXT_CHARS} characters)", value)
    return value


def client_columns(values: object) -> dict[str, Any]:
    """A worker's column values, each of its column's type; the chief's own columns refused."""
    if not isinstance(values, dict):
        raise _refuse("column values (not an object)", values)
    unknown = [k for k in values if k not in _TYPES or k in _CHIEF_COLUMNS]
    if unknown:
        raise _refuse("columns", sorted(map(str, unknown))[:5])
    return {name: _column(name, value) for name, value in values.items()}


def hyperparameters(values: object) -> dict[str, Any]:
    """A trial's hyperparameters: at most 500 names, each a short text, plain values."""
    if values is None:
        return {}
    if not isinstance(values, dict) or len(values) > MAX_HYPERPARAMETERS:
        raise _refuse("hyperparameters", type(values).__name__)
    for key, value in values.items():
        plain = value is None or isinstance(value, bool | int | float | str)
        if len(key) > 200 or not plain or (isinstance(value, str) and len(value) > 1000):
            raise _refuse(f"hyperparameter {key[:60]!r}", value)
        if isinstance(value, float) and not math.isfinite(value):
            raise _refuse(f"hyperparameter {key[:60]!r}", value)
    return dict(values)


def decoded(text: object, what: str, limit: int) -> bytes:
    """The bytes of base64 ``text``, at most ``limit`` of them."""
    if not isinstance(text, str) or len(text) > (limit + 2) // 3 * 4:
        raise McunasError(f"refused {what}: not base64 text of at most {limit} bytes")
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise McunasError(f"refused {what}: not base64 text") from None
