"""The ``MCUNAS/1`` serial protocol: one JSON object per line after a fixed prefix.

Only parsing and encoding live here (no port, no timing): the transport is
:mod:`mcunas.measure.serial_link`. Every line that is not a protocol line is
ignored, except that crash text (an ESP-IDF panic, a Cortex-M HardFault...)
is recognised and reported as a :class:`Crash`.

Example::

    event = parse_line('MCUNAS/1 {"event":"ready","board":"esp32s3","fw":"0.1.0"}')
    assert isinstance(event, Ready)
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, overload

from mcunas.errors import MeasurementError

__all__ = [
    "PROTOCOL_VERSION",
    "BoardError",
    "Crash",
    "FrontendResult",
    "Malformed",
    "Mark",
    "OpTime",
    "ProtocolError",
    "Ready",
    "Result",
    "encode_line",
    "parse_line",
]

PROTOCOL_VERSION = 1
# The longest protocol line the firmware writes is a result with a few hundred per-op
# times (~40 characters each); anything far longer is noise or a fault.
MAX_LINE_CHARS = 64 * 1024

# MCUNAS/1 {"event":"result","model_crc32":"8c2f61a0","runs":20,"latency_us":{"min":51210,
#           "median":51300,"max":51544},"arena_bytes":84312,"stack_bytes":2804, ...}
# The prefix may follow noise on the same line (a boot log without a newline), so the
# regex searches for the last prefix and takes everything after it as the JSON text.
PROTOCOL_LINE_RE = re.compile(r"MCUNAS/(?P<version>\d+) (?P<json>\{.*)$")

# Text that firmware prints when it dies: ESP-IDF panics, newlib abort(), Cortex-M
# fault handlers, Zephyr/mbed "panic", brown-out resets, FreeRTOS stack checks.
CRASH_RE = re.compile(
    r"(?P<signature>Guru Meditation Error|abort\(\) was called|HardFault|[Pp]anic"
    r"|Brownout detector was triggered|[Ss]tack overflow|assert(?:ion)? failed)"
)
CRC_RE = re.compile(r"^[0-9a-f]{8}$")


class ProtocolError(MeasurementError):
    """The board sent a protocol line the host cannot use."""


@dataclass(frozen=True)
class Ready:
    """``ready``: the firmware booted (or answered ``hello``)."""

    board: str
    fw: str
    clock_hz: int | None
    raw: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class OpTime:
    """Time of one op invoke, as the firmware's profiler measured it."""

    op: str
    us: float


@dataclass(frozen=True)
class FrontendResult:
    """``result.frontend``: the audio front end's figures, one inference window per run.

    MCUNAS/1 {"event":"result",...,"frontend":{"crc32":"496e040c","frames":49,
              "frame_samples":480,"hop_samples":320,"latency_us":{"min":4100,"median":4120,
              "max":4180},"arena_bytes":5208,"arena_capacity_bytes":10240,"model_bytes":9120}}
    """

    crc32: str
    frames: int
    latency_min_us: float
    latency_median_us: float
    latency_max_us: float
    arena_bytes: int
    raw: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Result:
    """``result``: figures of N timed invokes of the model the firmware was built with."""

    model_crc32: str
    runs: int
    latency_min_us: float
    latency_median_us: float
    latency_max_us: float
    arena_bytes: int
    stack_bytes: int
    static_ram_bytes: int | None = None
    flash_bytes: int | None = None
    ops: tuple[OpTime, ...] = ()
    raw: dict[str, Any] = field(default_factory=dict)
    frontend: FrontendResult | None = None  # a firmware built with frontend.tflite


@dataclass(frozen=True)
class Mark:
    """``mark``: the timed invokes start (``edge`` "start") or have ended ("end").

    The firmware prints it outside the timed region, right after raising (start) or
    lowering (end) the energy marker GPIO; a power meter without the marker wired
    integrates between the host's arrival times of the two marks.
    """

    edge: str
    raw: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class BoardError:
    """``error``: the firmware could not run the model (e.g. ``arena_too_small``)."""

    code: str
    message: str
    raw: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Crash:
    """A plain line that shows the firmware crashed (panic, HardFault...)."""

    signature: str
    line: str


@dataclass(frozen=True)
class Malformed:
    """A protocol line that could not be decoded (cut by a reset, corrupted)."""

    line: str
    reason: str


Event = Ready | Result | BoardError | Mark | Crash | Malformed


def encode_line(payload: dict[str, Any]) -> str:
    """One protocol line (newline included) for ``payload``, as the firmware prints it."""
    return f"MCUNAS/{PROTOCOL_VERSION} " + json.dumps(payload, separators=(",", ":")) + "\n"


def parse_line(line: str) -> Event | None:
    """Decode one line of board output.

    Args:
        line: str, one line without its newline (a trailing CR is stripped here).

    Returns:
        The event, a :class:`Crash` for crash text, a :class:`Malformed` for a
        damaged protocol line, or None for any other line (boot logs).

    Raises:
        ProtocolError: a protocol line of another version, or an event whose
            fields are missing or of the wrong type.
    """
    line = line.strip("\r\n\x00")
    start = line.rfind("MCUNAS/")
    match = PROTOCOL_LINE_RE.match(line, start) if start >= 0 else None
    if match is None:
        crash = CRASH_RE.search(line)
        return Crash(crash["signature"], line.strip()) if crash else None
    version = int(match["version"])
    if version != PROTOCOL_VERSION:
        raise ProtocolError(
            f"the board speaks MCUNAS/{version}, this mcunas speaks MCUNAS/{PROTOCOL_VERSION}: "
            "reflash the board with this version's firmware"
        )
    if len(line) > MAX_LINE_CHARS:
        return Malformed(line[:200], f"line of {len(line)} characters, over {MAX_LINE_CHARS}")
    try:
        payload = json.loads(match["json"])
    except json.JSONDecodeError as exc:
        return Malformed(line, f"not JSON ({exc.msg})")
    except RecursionError:
        return Malformed(line[:200], "JSON nested too deeply")
    if not isinstance(payload, dict):
        return Malformed(line, "not a JSON object")
    return _decode(payload)


def _decode(payload: dict[str, Any]) -> Event | None:
    kind = payload.get("event")
    if kind == "ready":
        return Ready(
            board=_get(payload, "board", str),
            fw=str(payload.get("fw", "?")),
            clock_hz=_get(payload, "clock_hz", int, required=False),
            raw=payload,
        )
    if kind == "result":
        return _decode_result(payload)
    if kind == "mark":
        edge = _get(payload, "edge", str)
        if edge not in ("start", "end"):
            raise ProtocolError(f"mark: edge must be 'start' or 'end', got {edge!r}")
        return Mark(edge=edge, raw=payload)
    if kind == "error":
        return BoardError(
            code=_get(payload, "code", str),
            message=str(payload.get("message", "")),
            raw=payload,
        )
    return None  # unknown events are ignored so the protocol can grow


def _crc(payload: dict[str, Any], key: str) -> str:
    crc = _get(payload, key, str)
    if not CRC_RE.match(crc):
        raise ProtocolError(f"result: {key} {crc!r} is not 8 lowercase hex digits")
    return crc


def _latency(payload: dict[str, Any], where: str = "") -> tuple[float, float, float]:
    latency = _get(payload, "latency_us", dict)
    lo, med, hi = (_number(latency, k, f"{where}latency_us.") for k in ("min", "median", "max"))
    if not lo <= med <= hi:
        raise ProtocolError(f"result: {where}latency_us min {lo} <= median {med} <= max {hi} fails")
    return lo, med, hi


def _decode_frontend(payload: dict[str, Any]) -> FrontendResult | None:
    """The optional ``frontend`` object of a result (None when the build had none)."""
    fe = _get(payload, "frontend", dict, required=False)
    if fe is None:
        return None
    lo, med, hi = _latency(fe, "frontend.")
    return FrontendResult(
        crc32=_crc(fe, "crc32"),
        frames=_size(fe, "frames"),
        latency_min_us=lo,
        latency_median_us=med,
        latency_max_us=hi,
        arena_bytes=_size(fe, "arena_bytes"),
        raw=fe,
    )


def _decode_result(payload: dict[str, Any]) -> Result:
    crc = _crc(payload, "model_crc32")
    lo, med, hi = _latency(payload)
    runs = _get(payload, "runs", int)
    if runs <= 0:
        raise ProtocolError(f"result: runs must be positive, got {runs}")
    ops = []
    for i, item in enumerate(_get(payload, "ops", list, required=False) or []):
        if not isinstance(item, dict):
            raise ProtocolError(f"result: ops[{i}] is not an object")
        ops.append(OpTime(op=_get(item, "op", str), us=_number(item, "us", f"ops[{i}].")))
    return Result(
        model_crc32=crc,
        runs=runs,
        latency_min_us=lo,
        latency_median_us=med,
        latency_max_us=hi,
        arena_bytes=_size(payload, "arena_bytes"),
        stack_bytes=_size(payload, "stack_bytes"),
        static_ram_bytes=_size(payload, "static_ram_bytes", required=False),
        flash_bytes=_size(payload, "flash_bytes", required=False),
        ops=tuple(ops),
        raw=payload,
        frontend=_decode_frontend(payload),
    )


def _get(payload: dict[str, Any], key: str, kind: type, *, required: bool = True) -> Any:
    value = payload.get(key)
    if value is None:
        if required:
            event = payload.get("event", "?")
            raise ProtocolError(f"{event}: required field '{key}' is missing")
        return None
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise ProtocolError(f"field '{key}' should be {kind.__name__}, got {value!r}")
    return value


def _number(payload: dict[str, Any], key: str, where: str = "") -> float:
    value = payload.get(key)
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        raise ProtocolError(f"result: {where}{key} should be a number >= 0, got {value!r}")
    return float(value)


@overload
def _size(payload: dict[str, Any], key: str) -> int: ...
@overload
def _size(payload: dict[str, Any], key: str, *, required: bool) -> int | None: ...
def _size(payload: dict[str, Any], key: str, *, required: bool = True) -> int | None:
    """A non-negative integer field (``required``: never None)."""
    value = _get(payload, key, int, required=required)
    if value is not None and value < 0:
        raise ProtocolError(f"result: {key} must be >= 0, got {value}")
    return value
