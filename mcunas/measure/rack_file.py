"""The ``rack.toml`` file: which boards a rack has, and asking each if it is there.

``rack.toml`` lists the boards::

    [rack]                  # optional
    max_failures = 3        # failures in a row that take a board out of rotation

    [[board]]
    profile = "esp32s3"     # a board profile name or .toml path (relative: beside this file)
    port = "/dev/ttyACM0"
    name = "s3-left"        # optional; default "<profile>@<port>"
    power = "ppk2:/dev/ttyACM3"   # optional: the power meter in this board's supply

Example::

    rack = load_rack("rack.toml")
    for board, ready, error in probe_rack(rack): ...
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mcunas.boards.catalog import BoardProfile, load_board
from mcunas.errors import McunasError, UserError
from mcunas.inputs.formats import read_toml
from mcunas.measure.board import probe_board
from mcunas.measure.protocol import Ready

__all__ = [
    "DEFAULT_MAX_FAILURES",
    "Rack",
    "RackBoard",
    "RackError",
    "check_rack_frontend",
    "load_rack",
    "probe_rack",
]

# Failures in a row after which a board leaves the rotation.
DEFAULT_MAX_FAILURES = 3


class RackError(UserError):
    """A ``rack.toml`` that cannot be used."""


@dataclass(frozen=True)
class RackBoard:
    """One board of the rack."""

    name: str
    profile: BoardProfile
    port: str
    power: str | None = None  # a power meter spec (mcunas.measure.power.meter)


@dataclass(frozen=True)
class Rack:
    """The boards of a ``rack.toml``."""

    path: Path
    boards: tuple[RackBoard, ...]
    max_failures: int = DEFAULT_MAX_FAILURES

    def for_profile(self, name: str) -> tuple[RackBoard, ...]:
        """The rack's boards of one profile."""
        return tuple(b for b in self.boards if b.profile.name == name)


def load_rack(path: str | Path) -> Rack:
    """Read and check a ``rack.toml``.

    Raises:
        RackError: missing file, bad TOML, no boards, a board without profile or
            port, an unknown profile, or a port listed twice.
    """
    path = Path(path)
    if not path.exists():
        raise RackError(f"rack file not found: {path} (see `mcunas rack --help` for its format)")
    data = read_toml(path, "profile", "rack file", RackError)
    entries = data.get("board")
    if (
        not isinstance(entries, list)
        or not entries
        or not all(isinstance(e, dict) for e in entries)
    ):
        raise RackError(f"{path}: no [[board]] entries (each needs profile = and port =)")
    _refuse_unknown(data, ("rack", "board"), f"{path}: ")
    boards: list[RackBoard] = []
    for i, entry in enumerate(entries, 1):
        _refuse_unknown(entry, ("profile", "port", "name", "power"), f"{path}: board {i}: ")
        for key in ("profile", "port"):
            if not isinstance(entry.get(key), str) or not entry[key]:
                raise RackError(f"{path}: board {i}: '{key}' is missing or not a string")
        if entry["port"] == "auto":
            raise RackError(f"{path}: board {i}: give the port explicitly, not 'auto'")
        try:
            profile = load_board(_profile_ref(entry["profile"], path.parent))
        except UserError as exc:
            raise RackError(f"{path}: board {i}: {exc}") from exc
        name = str(entry.get("name") or f"{profile.name}@{entry['port']}")
        boards.append(
            RackBoard(name, profile, entry["port"], _power(entry, f"{path}: board {i}: "))
        )
    for attr in ("port", "name"):
        values = [getattr(b, attr) for b in boards]
        dup = sorted({v for v in values if values.count(v) > 1})
        if dup:
            raise RackError(f"{path}: {attr} listed more than once: {', '.join(dup)}")
    settings = data.get("rack", {})
    if not isinstance(settings, dict):
        raise RackError(f"{path}: [rack] must be a table (e.g. [rack] max_failures = 3)")
    _refuse_unknown(settings, ("max_failures",), f"{path}: [rack] ")
    max_failures = settings.get("max_failures", DEFAULT_MAX_FAILURES)
    if not isinstance(max_failures, int) or isinstance(max_failures, bool) or max_failures < 1:
        raise RackError(f"{path}: [rack] max_failures must be a positive integer")
    return Rack(path, tuple(boards), max_failures)


def check_rack_frontend(rack: Rack, board: BoardProfile) -> None:
    """Refuse a rack none of whose ``board`` boards can run a front-end graph.

    A search measures on the rack's boards of its own profile; when every one of
    them builds with a TFLM that has no signal ops (the Cortex-M Arduino library),
    each trial would train and then fail at measuring. A rack with no board of the
    profile is left to the measurer, which says so when it opens.

    Raises:
        RackError: no such board has the signal ops (one line naming them).
    """
    from mcunas.frontend.build import NO_SIGNAL_OPS, runs_signal_ops

    members = rack.for_profile(board.name)
    if not members or any(runs_signal_ops(rb.profile) for rb in members):
        return
    names = ", ".join(rb.name for rb in members)
    raise RackError(
        f"{rack.path}: no {board.name} board of the rack can run frontend.tflite ({names}): "
        f"{NO_SIGNAL_OPS}"
    )


def _power(entry: dict[str, Any], where: str) -> str | None:
    """The board's power meter spec, checked (not opened) here."""
    from mcunas.measure.power.meter import MeterError, parse_meter

    power = entry.get("power")
    if power is None:
        return None
    if not isinstance(power, str):
        raise RackError(f'{where}power must be a meter spec string, e.g. "ppk2:/dev/ttyACM3"')
    try:
        parse_meter(power)
    except MeterError as exc:
        raise RackError(f"{where}{exc}") from exc
    return power


def _refuse_unknown(table: dict[str, Any], known: tuple[str, ...], where: str) -> None:
    """A misspelt key (``prot``, ``max_failure``) is an error, not silently ignored."""
    unknown = sorted(set(table) - set(known))
    if unknown:
        raise RackError(f"{where}unknown key '{unknown[0]}' (known: {', '.join(known)})")


def _profile_ref(ref: str, rack_dir: Path) -> str:
    """A relative profile path is looked up beside the rack file first, then from here."""
    if ref.endswith(".toml") and not Path(ref).is_absolute() and (rack_dir / ref).is_file():
        return str(rack_dir / ref)
    return ref


def probe_rack(
    rack: Rack, timeout_s: float = 5.0, prober: Callable[..., Ready] = probe_board
) -> list[tuple[RackBoard, Ready | None, str | None]]:
    """Ask every board for ``ready`` in parallel: ``(board, ready or None, error or None)``."""

    def one(b: RackBoard) -> tuple[RackBoard, Ready | None, str | None]:
        try:
            return b, prober(b.port, b.profile.baud, timeout_s), None
        except McunasError as exc:
            return b, None, str(exc)

    with ThreadPoolExecutor(max_workers=len(rack.boards)) as pool:
        return list(pool.map(one, rack.boards))
