"""A virtual board on a pseudo-terminal that speaks ``MCUNAS/1``, for tests and demos.

The board answers ``hello`` with ``ready`` and ``run`` with a ``result`` whose
figures come from a *figures provider* (by default the simulator's estimate
for the model and board), after sleeping the time the real runs would take
divided by ``time_scale``. Fault modes imitate what real boards do wrong:

- ``silence``: never prints anything;
- ``garbage``: boot noise and random bytes around every protocol line (still works);
- ``reset``: the first result is cut mid-line by a reset (boot banner, ``ready``);
- ``crc``: the result carries the CRC of another model;
- ``error``: an ``error`` event (``arena_too_small``) instead of a result;
- ``disconnect``: the port disappears in the middle of a run;
- ``crash``: a Guru Meditation panic during the run.

With ``figures=truth_figures(seed)`` (``--truth SEED``) the board reports a
hidden ground truth that differs from the simulator, for checking that
``mcunas calibrate`` recovers real costs (:mod:`mcunas.testing.virtual_board.truth`).

Demo::

    python -m mcunas.testing.virtual_board --board esp32s3 --model m.tflite [--fault reset]
    # prints the pty path; then: mcunas bench m.tflite --board esp32s3 --port PATH --no-flash
"""

from __future__ import annotations

import fcntl
import os
import pty
import random
import select
import threading
import time
import tty
from typing import Any

from mcunas.boards.catalog import BoardProfile
from mcunas.measure.protocol import encode_line
from mcunas.measure.setup_report import firmware_setup
from mcunas.testing.virtual_board.figures import (
    FiguresProvider,
    FirmwareFigures,
    FrontendFigures,
    frontend_figures,
    simulator_figures,
)
from mcunas.testing.virtual_board.power import PowerTimeline
from mcunas.tflite.csource import model_crc32

__all__ = ["FAULTS", "VirtualBoard", "board_at"]

FAULTS = ("silence", "garbage", "reset", "crc", "error", "disconnect", "crash")
FIRMWARE_VERSION = "0.1.0-virtual"
# The runtime the virtual board says it was built with (its `ready` line's setup).
VIRTUAL_RUNTIME = "virtual (mcunas simulator)"
# Invokes besides the timed runs, as the firmware does: warm-up before, per-op profiler after.
WARMUP_INVOKES = 3
PROFILE_INVOKES = 3


_REGISTRY: dict[str, VirtualBoard] = {}
_REGISTRY_LOCK = threading.Lock()


def board_at(port: str) -> VirtualBoard | None:
    """The running virtual board whose pty is ``port``, if any (for virtual uploads)."""
    with _REGISTRY_LOCK:
        return _REGISTRY.get(port)


class VirtualBoard:
    """A board on a pty master, served by a thread; the host opens :attr:`port`.

    Args:
        board: BoardProfile it pretends to be.
        model_bytes: bytes | None, the model it was "flashed" with; None: no firmware (silent).
        figures: FiguresProvider, default :func:`simulator_figures`.
        fault: str | None, one of :data:`FAULTS`.
        runs: int, timed invokes per ``run`` (default 20).
        time_scale: float, divide the simulated run time by this (default 1: real time).
    """

    def __init__(
        self,
        board: BoardProfile,
        model_bytes: bytes | None = None,
        *,
        figures: FiguresProvider = simulator_figures,
        fault: str | None = None,
        runs: int = 20,
        time_scale: float = 1.0,
    ) -> None:
        if fault is not None and fault not in FAULTS:
            raise ValueError(f"unknown fault {fault!r}; one of {', '.join(FAULTS)}")
        self.board = board
        self.fault = fault
        self.runs = runs
        self.time_scale = time_scale
        self._provider = figures
        self._model: bytes | None = None
        self._figures: FirmwareFigures | None = None
        self._frontend: bytes | None = None
        self._fe_figures: FrontendFigures | None = None
        self._fe_error: tuple[str, str] | None = None
        self._lock = threading.RLock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._master = self._slave = -1
        self.port = ""
        self.runs_served = 0
        self._resets_done = 0
        self._rng = random.Random(0)
        self.power = PowerTimeline(board, time_scale)
        if model_bytes is not None:
            self._load(model_bytes)

    # -- life cycle ------------------------------------------------------------
    def start(self) -> str:
        """Open the pty, boot, serve in a thread; return the port path."""
        self._master, self._slave = pty.openpty()
        tty.setraw(self._slave)
        fl = fcntl.fcntl(self._master, fcntl.F_GETFL)
        fcntl.fcntl(self._master, fcntl.F_SETFL, fl | os.O_NONBLOCK)
        self.port = os.ttyname(self._slave)
        with _REGISTRY_LOCK:
            _REGISTRY[self.port] = self
        self._boot()
        self._thread = threading.Thread(target=self._serve, name=f"vboard-{self.port}", daemon=True)
        self._thread.start()
        return self.port

    def stop(self) -> None:
        """Stop serving and close the pty (the port path disappears)."""
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=2)
        self._close_fds()

    def __enter__(self) -> VirtualBoard:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def flash(self, model_bytes: bytes, frontend: bytes | None = None) -> None:
        """Load a new model (and the front end run before it), as an upload does, and reboot."""
        with self._lock:
            self._load(model_bytes, frontend)
            self._boot()

    # -- firmware behaviour ----------------------------------------------------
    def _load(self, model_bytes: bytes, frontend: bytes | None = None) -> None:
        """Take the model; with a front end, run a window through both graphs as the firmware."""
        from mcunas.errors import McunasError

        self._model = model_bytes
        self._figures = self._provider(model_bytes, self.board)
        self._frontend, self._fe_figures, self._fe_error = frontend, None, None
        if frontend is not None:
            try:
                self._fe_figures = frontend_figures(frontend, model_bytes, self.board)
            except McunasError as exc:  # the firmware's set-up error, reported on `run`
                self._fe_error = ("frontend_shape", str(exc))

    def _boot(self) -> None:
        if self._model is None or self.fault == "silence":
            return
        self._write(self._boot_banner())
        if self.fault == "garbage":
            self._write(self._garbage())
        self._write(self.ready_line())

    def _serve(self) -> None:
        pending = b""
        while not self._stop.is_set():
            try:
                ready, _, _ = select.select([self._master], [], [], 0.05)
                data = os.read(self._master, 1024) if ready else b""
            except (OSError, ValueError):
                return  # pty closed (disconnect fault or stop)
            pending += data
            while b"\n" in pending:
                line, _, pending = pending.partition(b"\n")
                self._command(line.decode("utf-8", "replace").strip())

    def _command(self, command: str) -> None:
        if self._model is None or self.fault == "silence":
            return
        if command == "hello":
            with self._lock:
                self._write(self.ready_line())
        elif command == "run":
            self._run()
        elif command:
            self._write(f"I mcunas: unknown command '{command}'\r\n")

    def _run(self) -> None:
        figures = self._figures
        assert figures is not None
        if figures.error is None and not self._invoke_all(figures.latency_ms):
            return
        with self._lock:
            self.runs_served += 1
            self._run_output(figures)

    def _invoke_all(self, latency_ms: float) -> bool:
        """Warm-up, timed and profiled invokes in (scaled) time, with marks and power.

        The power timeline keeps the nominal times, so its energy is exact whatever
        the sleeps' jitter; the mark lines go out when the sleeps end, as on a board.
        Returns False if the board was stopped meanwhile.
        """
        one = latency_ms / 1000.0 / self.time_scale
        start = time.monotonic()
        timed_start = start + WARMUP_INVOKES * one
        timed_end = timed_start + self.runs * one
        end = timed_end + PROFILE_INVOKES * one
        self.power.record_run(start, timed_start, timed_end, end)
        for until, edge in ((timed_start, "start"), (timed_end, "end")):
            if self._stop.wait(max(0.0, until - time.monotonic())):
                return False
            if self.fault is None:
                self._write(encode_line({"event": "mark", "edge": edge}))
        return not self._stop.wait(max(0.0, end - time.monotonic()))

    def _run_output(self, figures: FirmwareFigures) -> None:
        fault = self.fault
        if fault == "error" or figures.error is not None or self._fe_error is not None:
            default = self._fe_error or ("arena_too_small", "AllocateTensors failed")
            code, message = figures.error or default
            self._write(encode_line({"event": "error", "code": code, "message": message}))
            return
        line = self.result_line(figures)
        if fault == "reset" and self._resets_done == 0:
            self._resets_done += 1
            self._write(line[: len(line) // 2])
            self._boot_after_reset()
        elif fault == "disconnect":
            self._write(line[: len(line) // 3])
            self._close_fds()
            self._stop.set()
        elif fault == "crash":
            self._write(
                "Guru Meditation Error: Core  1 panic'ed (LoadProhibited). "
                "Exception was unhandled.\r\nBacktrace: 0x42003a1c:0x3fc9a0e0\r\n"
            )
            self._boot_after_reset()
        else:
            if fault == "garbage":
                self._write(self._garbage())
            self._write(line)

    def _boot_after_reset(self) -> None:
        self._write(self._boot_banner())
        self._write(self.ready_line())

    # -- lines -------------------------------------------------------------------
    def ready_line(self) -> str:
        """The ``ready`` event line the device sends (replace it to act as other firmware)."""
        return encode_line(
            {
                "event": "ready",
                "board": self.board.name,
                "fw": FIRMWARE_VERSION,
                "clock_hz": self.board.clock_hz,
                "model_crc32": self._crc(),
                "virtual": True,
                "setup": firmware_setup(self.board, VIRTUAL_RUNTIME)[0],
                **({"frontend_crc32": model_crc32(self._frontend)} if self._frontend else {}),
            }
        )

    def result_line(self, f: FirmwareFigures) -> str:
        """The ``result`` event line for figures ``f`` (replace it to act as other firmware)."""
        assert self._model is not None
        crc = self._crc()
        median = round(f.latency_ms * 1000)
        arena = firmware_setup(self.board)[1]
        return encode_line(
            {
                "event": "result",
                "model_crc32": crc,
                "runs": self.runs,
                "latency_us": {
                    "min": round(median * 0.995),
                    "median": median,
                    "max": round(median * (1.01 + 0.02 * self._rng.random())),
                },
                "arena_bytes": f.arena_bytes,
                "stack_bytes": f.stack_bytes,
                "static_ram_bytes": f.static_ram_bytes,
                "flash_bytes": f.flash_bytes,
                "ops": [{"op": op, "us": round(ms * 1000, 1)} for op, ms in f.ops],
                "virtual": True,
                **({"arena_addr": arena} if arena else {}),
                **self._frontend_field(),
            }
        )

    def _frontend_field(self) -> dict[str, Any]:
        """The result's ``frontend`` object, as the firmware prints it (empty without one)."""
        fe = self._fe_figures
        if fe is None:
            return {}
        median = round(fe.latency_ms * 1000)
        latency = {"min": round(median * 0.995), "median": median, "max": round(median * 1.01)}
        return {
            "frontend": {
                "crc32": fe.crc32,
                "frames": fe.frames,
                "frame_samples": fe.frame_samples,
                "hop_samples": fe.hop_samples,
                "latency_us": latency,
                "arena_bytes": fe.arena_bytes,
                "arena_capacity_bytes": fe.arena_bytes,
                "model_bytes": fe.model_bytes,
            }
        }

    def _crc(self) -> str:
        assert self._model is not None
        return model_crc32(self._model + b"other" if self.fault == "crc" else self._model)

    def _boot_banner(self) -> str:
        if self.board.family in ("xtensa", "riscv32"):
            return (
                f"ESP-ROM:{self.board.name}-20210327\r\nBuild:Mar 27 2021\r\n"
                "rst:0xc (RTC_SW_CPU_RST),boot:0x8 (SPI_FAST_FLASH_BOOT)\r\n"
                "I (312) cpu_start: Starting scheduler on PRO CPU.\r\n"
                f"I (330) mcunas: measurement firmware {FIRMWARE_VERSION}\r\n"
            )
        return f"\r\nmcunas measurement firmware {FIRMWARE_VERSION} ({self.board.mcu})\r\n"

    def _garbage(self) -> bytes:
        noise = bytes(self._rng.randrange(256) for _ in range(96)).replace(b"\n", b"")
        return noise + b'\r\nE (1021) wifi: noise\r\nMCUNAS/1 {"event":"res\r\n\xff\xfe\x00\r\n'

    def _write(self, data: str | bytes) -> None:
        raw = data.encode() if isinstance(data, str) else data
        while raw and not self._stop.is_set() and self._master >= 0:
            try:
                raw = raw[os.write(self._master, raw) :]
            except BlockingIOError:
                time.sleep(0.005)  # the host is not reading: wait for room
            except OSError:
                return

    def _close_fds(self) -> None:
        with _REGISTRY_LOCK:
            if _REGISTRY.get(self.port) is self:
                del _REGISTRY[self.port]
        for name in ("_master", "_slave"):
            fd = getattr(self, name)
            if fd >= 0:
                setattr(self, name, -1)
                try:
                    os.close(fd)
                except OSError:
                    pass
