"""Find a board's serial port by the USB VID:PID list of its profile (``hwids``).

Example::

    port = detect_port(load_board("esp32s3"))   # "/dev/ttyACM0"
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from mcunas.boards.catalog import BoardProfile
from mcunas.errors import FatalError

__all__ = [
    "NoPortFound",
    "check_port",
    "describe_port",
    "detect_port",
    "matching_ports",
    "port_hwid",
    "serial_ports",
]

Lister = Callable[[], Iterable[Any]]


class NoPortFound(FatalError):
    """Auto-detection found no port, or several, for the board."""


def serial_ports() -> list[Any]:
    """The machine's serial ports (pyserial's ``ListPortInfo``): what detection looks at."""
    from serial.tools import list_ports

    return list(list_ports.comports())


def port_hwid(port: Any) -> str | None:
    """``"VID:PID"`` (upper-case hex) of a ``ListPortInfo``, None for non-USB ports."""
    if getattr(port, "vid", None) is None or getattr(port, "pid", None) is None:
        return None
    return f"{port.vid:04X}:{port.pid:04X}"


def describe_port(port: Any) -> str:
    """One short description: ``/dev/ttyACM0 (303A:1001 USB JTAG/serial debug unit)``."""
    hwid = port_hwid(port) or "no USB id"
    text = getattr(port, "description", "") or ""
    text = "" if text in ("n/a", port.device) else f" {text}"
    return f"{port.device} ({hwid}{text})"


def matching_ports(board: BoardProfile, ports: Iterable[Any]) -> list[Any]:
    """The ports whose USB VID:PID is in the board profile's ``hwids``."""
    wanted = {h.upper() for h in board.hwids}
    return [p for p in ports if port_hwid(p) in wanted]


def detect_port(board: BoardProfile, *, lister: Lister | None = None) -> str:
    """The one port that matches the board's USB ids.

    Args:
        board: BoardProfile whose ``hwids`` are matched.
        lister: callable returning ``ListPortInfo``-like objects (default:
            ``serial.tools.list_ports.comports``).

    Raises:
        NoPortFound: zero or several ports match; the message lists what was found.
    """
    ports = list((lister or serial_ports)())
    found = matching_ports(board, ports)
    seen = ", ".join(describe_port(p) for p in ports) or "no serial ports at all"
    if not board.hwids:
        raise NoPortFound(
            f"board profile '{board.name}' lists no USB ids (hwids) to detect its port; "
            f"pass --port (found: {seen})"
        )
    if len(found) == 1:
        return str(found[0].device)
    if not found:
        raise NoPortFound(
            f"no serial port matches {board.name}'s USB ids ({', '.join(board.hwids)}); "
            f"found: {seen}. Plug the board in (data cable) or pass --port"
        )
    raise NoPortFound(
        f"several ports match {board.name}: {', '.join(describe_port(p) for p in found)}; "
        "pass --port to choose one"
    )


def check_port(port: str | None) -> None:
    """Refuse an explicit device path that does not exist, before any build or flash.

    ``auto``, empty and non-path names (``COM3``, ``socket://...``) pass through.

    Raises:
        UserError: the path does not exist.
    """
    from pathlib import Path

    from mcunas.errors import UserError

    if port and port != "auto" and port.startswith("/") and not Path(port).exists():
        raise UserError(
            f"serial port {port} does not exist: plug the board in (data cable), "
            "or see `mcunas rack list` for the boards attached"
        )
