"""The one class that owns a board's serial port: :class:`SerialLink`.

A measurement over the link is ``hello`` -> ``ready`` -> ``run`` -> ``result``
(see :mod:`mcunas.measure.protocol`). Every wait has a deadline and fails
with the unread tail of the port (and the trace file, if any) in the error.

Example::

    with SerialLink("/dev/ttyACM0", trace_path="serial.log") as link:
        ready = link.wait_ready(timeout_s=10)
        result = link.run(timeout_s=60)
"""

from __future__ import annotations

import errno
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

import serial

from mcunas.errors import CandidateError, MeasurementError, UserError
from mcunas.files import output_path
from mcunas.measure.protocol import (
    BoardError,
    Crash,
    Event,
    Malformed,
    Mark,
    Ready,
    Result,
    parse_line,
)

__all__ = [
    "HELLO_INTERVAL_S",
    "READY_TIMEOUT_S",
    "RESULT_TIMEOUT_S",
    "BoardCrashed",
    "BoardRejectedModel",
    "LinkError",
    "PortBusy",
    "PortNotFound",
    "PortVanished",
    "SerialLink",
]

# Boot after an upload (ESP32 ROM + IDF start-up takes ~1-2 s) until the `ready` line.
READY_TIMEOUT_S = 10.0
# Warm-up plus N timed invokes of a slow model on a 64 MHz core can take this long.
RESULT_TIMEOUT_S = 60.0
# A board that booted before the port was opened printed `ready` unseen: ask again this often.
HELLO_INTERVAL_S = 2.0
# Granularity of reads; every wait checks its deadline at least this often.
READ_POLL_S = 0.05
# How much of the unread output goes into a timeout error.
TAIL_CHARS = 300
# A "line" longer than this without a newline is garbage; it is dropped, not buffered.
MAX_LINE_BYTES = 64 * 1024
# How often a reset while running (a `ready` after `run`) leads to sending `run` again.
MAX_RERUNS = 2


class LinkError(MeasurementError):
    """The link to the board failed (port, silence, crash): the board's fault, not the model's."""


class PortNotFound(LinkError):
    """Nothing at the given port path."""


class PortBusy(LinkError):
    """Another program holds the port."""


class PortVanished(LinkError):
    """The port disappeared while it was open (cable pulled, board reset into a new device)."""


class BoardCrashed(LinkError):
    """The firmware printed crash text (panic, HardFault...)."""


class BoardRejectedModel(CandidateError):
    """The firmware sent an ``error`` event: this model cannot run on this board."""


SerialFactory = Callable[..., Any]


class SerialLink:
    """Owns one serial port: opens it exclusively, reads lines, traces bytes.

    Args:
        port: str, the port path (``/dev/ttyACM0``, a pty path, ``COM3``).
        baud: int, default 115200.
        trace_path: str | Path | None, append raw bytes with timings to this file.
        serial_factory: callable building the ``serial.Serial`` (tests inject one).
    """

    def __init__(
        self,
        port: str,
        baud: int = 115200,
        *,
        trace_path: str | Path | None = None,
        serial_factory: SerialFactory = serial.Serial,
    ) -> None:
        self.port = port
        self.baud = baud
        self.trace_path = Path(trace_path) if trace_path else None
        self._factory = serial_factory
        self._ser: Any = None
        self._trace: IO[str] | None = None
        self._t0 = time.monotonic()
        self._buffer = b""
        self._tail = ""
        self.ignored_lines: list[str] = []
        # (edge, host monotonic time) of the last run's `mark` events, as they arrived
        self.marks: list[tuple[str, float]] = []

    # -- opening and closing -------------------------------------------------
    def open(self) -> SerialLink:
        """Open the port exclusively and drop whatever it had buffered."""
        if self.trace_path:
            self.trace_path = output_path(self.trace_path, "serial trace")
            try:
                self._trace = self.trace_path.open("a", encoding="utf-8")
            except OSError as exc:
                raise UserError(
                    f"cannot write the serial trace {self.trace_path}: {exc.strerror or exc}"
                ) from None
            self._log("OPEN", f"{self.port} @ {self.baud}")
        try:
            self._ser = self._factory(self.port, self.baud, timeout=READ_POLL_S, exclusive=True)
            self._ser.reset_input_buffer()
        except (serial.SerialException, OSError) as exc:
            self.close()
            raise _open_error(self.port, exc) from exc
        return self

    def close(self) -> None:
        """Close the port and the trace file (safe to call twice)."""
        if self._ser is not None:
            try:
                self._ser.close()
            except (serial.SerialException, OSError):
                pass
            self._ser = None
        if self._trace is not None:
            self._log("CLOSE", self.port)
            self._trace.close()
            self._trace = None

    def __enter__(self) -> SerialLink:
        return self.open()

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- the protocol --------------------------------------------------------
    def send(self, command: str) -> None:
        """Write one command line (``run``, ``hello``)."""
        data = (command + "\n").encode()
        self._log("TX", repr(data))
        try:
            self._ser.write(data)
            self._ser.flush()
        except (serial.SerialException, OSError) as exc:
            raise PortVanished(f"{self.port}: write failed ({exc}); check the cable") from exc

    def wait_ready(self, timeout_s: float = READY_TIMEOUT_S) -> Ready:
        """Ask with ``hello`` until the board prints ``ready``.

        Raises:
            LinkError: no ``ready`` within ``timeout_s`` (the error has the unread tail),
                the port vanished, or the board crashed.
        """
        deadline = time.monotonic() + timeout_s
        next_hello = 0.0
        while True:
            now = time.monotonic()
            if now >= next_hello:
                self.send("hello")
                next_hello = now + HELLO_INTERVAL_S
            event = self.read_event(min(deadline, next_hello))
            if isinstance(event, Ready):
                return event
            if isinstance(event, BoardError):
                raise BoardRejectedModel(f"board on {self.port}: {event.code}: {event.message}")
            if time.monotonic() >= deadline:
                raise self._timeout(f"never printed 'ready' within {timeout_s:g} s", press=True)

    def run(self, timeout_s: float = RESULT_TIMEOUT_S) -> Result:
        """Send ``run`` and return the ``result``; re-send after a reset.

        Raises:
            BoardRejectedModel: the firmware sent an ``error`` event.
            LinkError: timeout, vanished port, crash, or repeated resets.
        """
        deadline = time.monotonic() + timeout_s
        self.send("run")
        self.marks = []
        reruns = 0
        while True:
            event = self.read_event(deadline)
            if isinstance(event, Result):
                return event
            if isinstance(event, Mark):
                self.marks.append((event.edge, time.monotonic()))
            if isinstance(event, BoardError):
                raise BoardRejectedModel(f"board on {self.port}: {event.code}: {event.message}")
            if isinstance(event, Ready):  # the board reset while running
                reruns += 1
                if reruns > MAX_RERUNS:
                    raise self._error(LinkError, f"reset {reruns} times while running the model")
                self.marks = []
                self.send("run")
            if time.monotonic() >= deadline:
                raise self._timeout(f"sent no result within {timeout_s:g} s")

    def read_event(self, deadline: float) -> Event | None:
        """Read until one protocol event arrives or ``deadline`` (monotonic) passes.

        Plain lines are kept in ``ignored_lines``; crash text raises
        :class:`BoardCrashed`; damaged protocol lines are skipped.
        """
        while True:
            line = self._read_line(deadline)
            if line is None:
                return None
            event = parse_line(line)
            if isinstance(event, Crash):
                raise self._error(BoardCrashed, f"crashed ({event.signature}): {event.line[:200]}")
            if event is None or isinstance(event, Malformed):
                self.ignored_lines.append(line)
                continue
            return event

    # -- bytes ---------------------------------------------------------------
    def _read_line(self, deadline: float) -> str | None:
        saved = self._ser.timeout
        try:
            while b"\n" not in self._buffer:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return None
                poll_s = min(READ_POLL_S, remaining)
                if self._ser.timeout != poll_s:  # a change reconfigures the port: only if needed
                    self._ser.timeout = poll_s
                chunk = self._read_chunk()
                if chunk:
                    self._log("RX", repr(chunk))
                    self._buffer += chunk
                    self._tail = (self._tail + chunk.decode("utf-8", "replace"))[-TAIL_CHARS:]
                    if len(self._buffer) > MAX_LINE_BYTES and b"\n" not in self._buffer:
                        self._buffer = b""
        finally:
            self._restore_timeout(saved)
        raw, _, self._buffer = self._buffer.partition(b"\n")
        return raw.decode("utf-8", "replace")

    def _restore_timeout(self, saved: float | None) -> None:
        if self._ser is None or self._ser.timeout == saved:
            return
        try:
            self._ser.timeout = saved
        except (serial.SerialException, OSError):
            pass  # the port is gone; the read error says so

    def _read_chunk(self) -> bytes:
        try:
            waiting = self._ser.in_waiting
            return self._ser.read(max(1, min(waiting, 4096)))
        except (serial.SerialException, OSError) as exc:
            raise self._error(PortVanished, f"port vanished while reading ({exc})") from exc

    def _log(self, what: str, text: str) -> None:
        if self._trace is not None:
            self._trace.write(f"{time.monotonic() - self._t0:10.4f}s {what:<5} {text}\n")
            self._trace.flush()

    def _error(self, cls: type[LinkError], what: str) -> LinkError:
        trace = f"; raw bytes logged to {self.trace_path}" if self.trace_path else ""
        return cls(f"board on {self.port} {what}{trace}")

    def _timeout(self, what: str, *, press: bool = False) -> LinkError:
        tail = self._tail.strip()
        shown = f"unread tail: {tail[-TAIL_CHARS:]!r}" if tail else "nothing was received"
        hint = "; check --board and --port, press reset, or rerun with --trace LOG" if press else ""
        return self._error(LinkError, f"{what} ({shown}){hint}")


def _open_error(port: str, exc: BaseException) -> LinkError:
    text = str(exc)
    code = getattr(exc, "errno", None)
    if code == errno.ENOENT or "No such file" in text or "FileNotFoundError" in text:
        return PortNotFound(
            f"no board on {port}: the port does not exist; check the cable or --port"
        )
    if code in (errno.EBUSY, errno.EAGAIN) or "exclusively lock" in text or "busy" in text.lower():
        return PortBusy(
            f"port {port} is busy: another program (a serial monitor?) holds it; close it and retry"
        )
    if code == errno.EACCES or "Permission denied" in text:
        return PortBusy(f"no permission to open {port}: add yourself to the dialout group")
    return LinkError(f"cannot open {port}: {text}")
