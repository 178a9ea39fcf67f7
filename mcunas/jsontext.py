"""JSON text that every JSON reader accepts: no ``NaN`` or ``Infinity``.

Python's :func:`json.dumps` writes ``NaN`` and ``Infinity`` for non-finite
floats, which is not JSON (``jq``, browsers and most languages refuse it).
Every ``--json`` output and every JSON file mcunas writes goes through
:func:`dumps`, which writes them as ``null`` (a figure that is not a number
is unknown).
"""

from __future__ import annotations

import json
import math
from typing import Any

__all__ = ["JsonObject", "dumps"]

# A JSON object as mcunas reads and writes it (best.json, a store's meta, a record's
# to_dict): string keys, JSON values. Only for data that is JSON; a value with a
# shape of its own gets a type of its own.
JsonObject = dict[str, Any]


def _finite(value: Any) -> Any:
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


def dumps(value: Any, indent: int | None = 2) -> str:
    """``value`` as standard JSON; non-finite floats become ``null``, other objects ``str``.

    Args:
        value: Any, JSON-like data (dicts, lists, numbers, strings; paths and the like
            are written as strings).
        indent: int | None, indentation (default 2; None for one line).
    """
    return json.dumps(_finite(value), indent=indent, default=str, allow_nan=False)
