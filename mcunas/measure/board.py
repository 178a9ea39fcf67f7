"""Measure a model on a real board: generate, build, upload (PlatformIO), then read serial.

Registered as ``"board"`` in :data:`mcunas.measure.base.MEASURERS`.

Example::

    measurer = BoardMeasurer(load_board("esp32s3"), port="auto")
    m = measurer.measure(Path("model.tflite").read_bytes())
    m.source  # "board:/dev/ttyACM0"
"""

from __future__ import annotations

import contextlib
import dataclasses
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mcunas.boards.catalog import BoardProfile
from mcunas.cost.energy import board_power, with_energy, with_frontend_energy
from mcunas.errors import CandidateError, FatalError, MeasurementError
from mcunas.figures import Figures, OpTiming
from mcunas.measure.base import MeasureOptions
from mcunas.measure.ports import Lister, detect_port
from mcunas.measure.protocol import FrontendResult, Ready, Result
from mcunas.measure.serial_link import READY_TIMEOUT_S, LinkError, SerialLink
from mcunas.measure.setup_report import reported_setup
from mcunas.paths import user_path
from mcunas.tflite.csource import model_crc32

__all__ = [
    "DEFAULT_TIMEOUT_S",
    "BoardMeasurer",
    "BuildFailed",
    "ModelMismatch",
    "ModelTooLarge",
    "UploadFailed",
    "WrongFirmware",
    "probe_board",
]

# The read stage as a whole (boot to `ready`, then warm-up + N invokes to `result`).
DEFAULT_TIMEOUT_S = 60.0

ProjectFactory = Callable[..., Any]


class ModelTooLarge(CandidateError):
    """The model alone exceeds the flash the board leaves to it."""


class BuildFailed(CandidateError):
    """Generating or building the firmware for this model failed."""


class UploadFailed(LinkError):
    """Uploading the firmware to the board failed."""


class ModelMismatch(LinkError):
    """The board ran another model than the one asked for (CRC-32 differs)."""


class WrongFirmware(LinkError):
    """The port's firmware was built for another board profile."""


def _pio_project(board: BoardProfile, work_dir: Path, pio: str = "pio") -> Any:
    from mcunas.measure.pio import PioProject  # imported when flashing: it needs PlatformIO

    return PioProject(board, work_dir, pio=pio)


def _default_work_dir(board: BoardProfile, port: str) -> Path:
    from mcunas.files import plain_name  # a profile's name, from a file: one plain name

    name = plain_name(board.name, "board name")
    return user_path("build") / f"{name}-{re.sub(r'[^A-Za-z0-9]+', '_', port).strip('_')}"


def probe_board(
    port: str, baud: int = 115200, timeout_s: float = READY_TIMEOUT_S, trace: str | None = None
) -> Ready:
    """Open ``port`` and return its ``ready`` event; :class:`LinkError` if it does not answer."""
    with SerialLink(port, baud, trace_path=trace) as link:
        return link.wait_ready(timeout_s)


class BoardMeasurer:
    """Flash and measure models on one board over serial.

    Args:
        board: BoardProfile of the board.
        port: str, the serial port, or ``"auto"`` (match the profile's USB ids).
        flash: bool, build and upload each model (default True); False only reads
            from a board that already runs it.
        timeout_s: float, deadline of the read stage (default 60 s).
        project_factory: ``(board, work_dir, pio=...) -> project`` with ``generate``,
            ``build`` and ``upload`` (default: ``mcunas.measure.pio.PioProject``).
        work_dir: Path | None, build folder (default ``$MCUNAS_HOME/build/<board>-<port>``).
        pio: str, the PlatformIO executable.
        trace: str | None, log raw serial bytes with timings to this file.
        lister: callable listing serial ports (for ``port="auto"``; tests inject one).
        power: str | None, a power meter spec (:mod:`mcunas.measure.power.meter`): the
            energy of each measurement is then measured, not estimated.
        calibration_source: str, the stable name a calibration stores these figures
            under (the figures' ``calibration_source``; empty: their ``source``).
    """

    name = "board"

    @classmethod
    def open(
        cls, board: BoardProfile, options: MeasureOptions, stack: contextlib.ExitStack
    ) -> BoardMeasurer:
        """One board on ``options.port`` (registered as ``board``).

        Raises:
            UserError: a port named that does not exist.
        """
        from mcunas.measure.ports import check_port

        check_port(options.port)
        return cls(
            board,
            port=options.port,
            flash=options.flash,
            timeout_s=options.timeout_s or DEFAULT_TIMEOUT_S,
            project_factory=options.project_factory,
            pio=options.pio,
            trace=options.trace,
            power=options.power,
            work_dir=options.work_dir,
        )

    def __init__(
        self,
        board: BoardProfile,
        port: str = "auto",
        flash: bool = True,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        project_factory: ProjectFactory | None = None,
        *,
        work_dir: str | Path | None = None,
        pio: str = "pio",
        trace: str | None = None,
        lister: Lister | None = None,
        power: str | None = None,
        calibration_source: str = "",
    ) -> None:
        self.board = board
        self.flash = flash
        self.timeout_s = float(timeout_s)
        self.trace = trace
        self._requested_port = port
        self._port: str | None = None if port in ("auto", "", None) else port
        self._factory = project_factory or _pio_project
        self._work_dir = Path(work_dir) if work_dir else None
        self._pio = pio
        self._lister = lister
        self.power = power
        self.calibration_source = calibration_source
        self._meter: Any = None
        self._meter_stack = contextlib.ExitStack()

    @property
    def port(self) -> str:
        """The serial port, detected from the profile's USB ids on first use if ``auto``."""
        if self._port is None:
            self._port = detect_port(self.board, lister=self._lister)
        return self._port

    def close(self) -> None:
        """Release the power meter; the serial port is opened per measurement."""
        self._meter_stack.close()
        self._meter = None

    def power_meter(self) -> Any:
        """The power meter, opened on first use (None without ``power``)."""
        if self.power and self._meter is None:
            from mcunas.measure.power.meter import open_meter

            supply_v = board_power(self.board).supply_v
            self._meter = self._meter_stack.enter_context(
                open_meter(self.power, board_port=self.port, supply_v=supply_v)
            )
        return self._meter

    def __enter__(self) -> BoardMeasurer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def test_connection(self) -> None:
        """Check the port opens (and, without flashing, that the firmware answers).

        Raises:
            FatalError: the port is missing or busy, or the firmware does not answer.
        """
        try:
            with SerialLink(self.port, self.board.baud, trace_path=self.trace) as link:
                if not self.flash:
                    self._check_ready(link.wait_ready(min(READY_TIMEOUT_S, self.timeout_s)))
        except LinkError as exc:
            raise FatalError(str(exc)) from exc

    def measure(self, model_bytes: bytes, frontend: bytes | None = None) -> Figures:
        """Flash (unless ``flash=False``) and measure one model (after ``frontend``, if given).

        With ``frontend`` (a ``frontend.tflite``) the firmware runs it on a raw audio
        window and the model on its features; its figures are in ``details["frontend"]``
        and its arena is counted in the peak SRAM.

        Raises:
            CandidateError: the model cannot run here (too large, build failed,
                the firmware's ``error`` event).
            LinkError: the board failed (port busy or gone, silence, crash, wrong CRC).
            FatalError: the setup is broken (no port found, PlatformIO missing).
        """
        port = self.port
        stages: dict[str, float] = {}
        build = self._flash(model_bytes, port, stages, frontend) if self.flash else None
        start = time.monotonic()
        expected = model_crc32(model_bytes)
        with SerialLink(port, self.board.baud, trace_path=self.trace) as link:
            ready = link.wait_ready(min(READY_TIMEOUT_S, self.timeout_s))
            self._check_ready(ready)
            # The firmware names its model in `ready` too: fail before running the wrong one.
            self._check_crc(port, str(ready.raw.get("model_crc32", expected)), expected)
            remaining = self.timeout_s - (time.monotonic() - start)
            meter = self.power_meter()
            if meter is not None:
                meter.start()
            result = link.run(max(remaining, 0.1))
            trace = meter.stop() if meter is not None else None
        stages["read_s"] = round(time.monotonic() - start, 3)
        self._check_crc(port, result.model_crc32, expected)
        self._check_frontend(port, result, frontend)
        figures = self._measurement(model_bytes, port, ready, result, build, stages)
        if trace is not None:
            figures = self._metered(figures, trace, link.marks, result.runs)
        # the front end runs outside the meter's window: its share is added as an estimate
        return with_frontend_energy(with_energy(figures, self.board), self.board)

    def _metered(self, figures: Figures, trace: Any, marks: list, runs: int) -> Figures:
        """``figures`` with the meter's energy per inference."""
        from mcunas.measure.power.meter import run_energy

        uj, method = run_energy(trace, marks, runs, self._meter.name)
        details = {**figures.details, "energy_window": method, "meter_samples": len(trace.t_s)}
        return dataclasses.replace(
            figures,
            energy_uj=uj,
            energy_error_pct=None,
            energy_source=f"meter:{self._meter.name} ({method})",
            details=details,
        )

    def _check_crc(self, port: str, got: str, expected: str) -> None:
        if got != expected:
            action = "the upload did not take" if self.flash else "flash it (drop --no-flash)"
            raise ModelMismatch(
                f"board on {port} runs model {got}, not this model ({expected}): {action}"
            )

    def _check_frontend(self, port: str, result: Result, frontend: bytes | None) -> None:
        if frontend is None:
            return
        expected = model_crc32(frontend)
        got = result.frontend.crc32 if result.frontend else "none"
        if got != expected:
            raise ModelMismatch(
                f"board on {port} runs front end {got}, not this one ({expected}): "
                + ("the upload did not take" if self.flash else "flash it (drop --no-flash)")
            )

    # -- stages --------------------------------------------------------------------
    def _flash(
        self, model_bytes: bytes, port: str, stages: dict[str, float], frontend: bytes | None
    ) -> Any:
        budget = self.board.model_flash_budget_bytes
        if len(model_bytes) > budget:
            raise ModelTooLarge(
                f"model is {len(model_bytes)} bytes but {self.board.name} leaves {budget} bytes "
                "of flash to the model: choose a smaller model"
            )
        work_dir = self._work_dir or _default_work_dir(self.board, port)
        project = self._factory(self.board, work_dir, pio=self._pio)
        t = time.monotonic()
        try:
            if frontend is None:  # project doubles of older tests take the model alone
                project.generate(model_bytes)
            else:
                project.generate(model_bytes, frontend=frontend)
            stages["generate_s"] = round(time.monotonic() - t, 3)
            build = project.build()
            stages["build_s"] = round(time.monotonic() - t - stages["generate_s"], 3)
        except (FatalError, CandidateError):
            raise
        except MeasurementError as exc:
            raise BuildFailed(f"build failed: {exc}") from exc
        t = time.monotonic()
        try:
            project.upload(port)
        except (FatalError, CandidateError):
            raise
        except MeasurementError as exc:
            raise UploadFailed(f"upload to {port} failed: {exc}") from exc
        stages["upload_s"] = round(time.monotonic() - t, 3)
        return build

    def _check_ready(self, ready: Ready) -> None:
        if ready.board != self.board.name:
            raise WrongFirmware(
                f"the firmware on {self.port} was built for '{ready.board}', not "
                f"'{self.board.name}': check --board and --port, or flash it"
            )

    def _measurement(
        self,
        model_bytes: bytes,
        port: str,
        ready: Ready,
        result: Result,
        build: Any,
        stages: dict[str, float],
    ) -> Figures:
        static_ram: int | None
        flash: int | None
        if build is not None:
            static_ram, ram_from = int(build.static_ram_bytes), "elf"
            flash, flash_from = int(build.flash_bytes), "elf"
        else:
            static_ram, ram_from = result.static_ram_bytes, "firmware"
            if static_ram is None:
                static_ram, ram_from = self.board.firmware_ram_bytes, "profile estimate"
            flash, flash_from = result.flash_bytes, "firmware"
            if flash is None:
                flash = self.board.firmware_flash_bytes + len(model_bytes)
                flash_from = "profile estimate (no ELF with --no-flash)"
        virtual = bool(ready.raw.get("virtual") or result.raw.get("virtual"))
        details = {
            "board": self.board.name,
            "virtual": virtual,
            "port": port,
            "fw": ready.fw,
            "flashed": build is not None,
            "runs": result.runs,
            "latency_min_ms": result.latency_min_us / 1000.0,
            "stack_bytes": result.stack_bytes,
            "static_ram_bytes": static_ram,
            "static_ram_source": ram_from,
            "flash_source": flash_from,
            "elf_path": str(getattr(build, "elf_path", "") or "") or None,
            "stage_s": stages,
            "ready": ready.raw,
            "result": result.raw,
            "setup": reported_setup(ready.raw, result.raw),
        }
        fe_arena = result.frontend.arena_bytes if result.frontend else 0
        if result.frontend is not None:
            details["frontend"] = frontend_details(result.frontend)
        return Figures(
            # a virtual board reports the simulator's figures: say so in the source too
            source=f"{'virtual-board' if virtual else 'board'}:{port}",
            estimated=virtual,  # a virtual board reports the simulator's figures
            latency_ms=result.latency_median_us / 1000.0,
            latency_max_ms=result.latency_max_us / 1000.0,
            arena_bytes=result.arena_bytes,
            peak_sram_bytes=result.arena_bytes + fe_arena + static_ram + result.stack_bytes,
            flash_bytes=flash,
            model_crc32=result.model_crc32,
            ops=tuple(OpTiming(i, o.op, o.us / 1000.0) for i, o in enumerate(result.ops)),
            calibration_source=self.calibration_source,
            details=details,
        )


def frontend_details(fe: FrontendResult) -> dict[str, Any]:
    """The front end's figures as a measurement's ``details["frontend"]`` (ms, bytes)."""
    return {
        "crc32": fe.crc32,
        "frames": fe.frames,
        "latency_ms": fe.latency_median_us / 1000.0,
        "latency_min_ms": fe.latency_min_us / 1000.0,
        "latency_max_ms": fe.latency_max_us / 1000.0,
        "arena_bytes": fe.arena_bytes,
    }
