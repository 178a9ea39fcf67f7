"""Build and flash the measurement firmware with PlatformIO, as explicit stages.

``generate`` copies the firmware template (``platformio.ini`` + ``firmware/``)
into a work folder and writes the model sources and ``mcunas_config.h``;
``build`` runs ``pio run`` and reads static RAM and flash from the ELF;
``upload`` flashes the board. Every failure is a clear error saying what to
do next: :class:`FatalError` for a broken setup (no PlatformIO, platforms not
installable), :class:`CandidateError` when the model itself is the cause (does
not fit, op missing from the runtime), :class:`MeasurementError` otherwise,
with the log tail and the log file's path. Reading the cause out of
PlatformIO's output is :mod:`mcunas.measure.pio_output`'s part.

Example::

    project = PioProject(load_board("nucleo_f746zg"), Path("build/fw"))
    project.generate(model_bytes)
    info = project.build()
    project.upload("/dev/ttyACM0")
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from mcunas.boards.catalog import BoardProfile
from mcunas.errors import BoardProfileError, CandidateError, FatalError, MeasurementError
from mcunas.files import managed_folder, open_managed, write_file
from mcunas.measure.elfsize import ElfSizes, read_elf_sizes
from mcunas.measure.pio_output import build_error, log_tail, upload_hint
from mcunas.measure.setup_report import runtime_label
from mcunas.paths import firmware_template_dir
from mcunas.tflite.csource import model_crc32

__all__ = [
    "BUILD_TIMEOUT_S",
    "template_files",
    "UPLOAD_TIMEOUT_S",
    "BuildInfo",
    "PioProject",
]

# A first ESP-IDF build installs the toolchain and compiles the IDF: 10-20 min.
BUILD_TIMEOUT_S = 1800
# Flashing a 2 MB image over a UART bootloader at 115200 baud takes ~3 min.
UPLOAD_TIMEOUT_S = 300
# Measurement defaults written into mcunas_config.h.
DEFAULT_RUNS = 20
DEFAULT_WARMUP_RUNS = 3
DEFAULT_PROFILE_RUNS = 3
# Names the generated model sources must define (mcunas.tflite.csource.write_model_sources).
_REQUIRED_SYMBOLS = {
    "model_data.h": ("MCUNAS_MODEL_CRC32_U32", "g_model_data"),
    "model_ops.h": ("McunasRegisterOps", "McunasOpResolver"),
}
# PlatformIO writes sdkconfig.<env> beside its build; sdkconfig.defaults* are sources.
_TEMPLATE_IGNORE = ("generated", ".pio", "sdkconfig", "sdkconfig.esp32*", "__pycache__")


@dataclass(frozen=True)
class BuildInfo:
    """What a successful build produced: the ELF and its memory figures (bytes)."""

    elf_path: Path
    static_ram_bytes: int
    flash_bytes: int
    sections: dict[str, int] = field(default_factory=dict)
    log_path: Path | None = None


class PioProject:
    """One board's firmware project in ``work_dir``, driven through the ``pio`` CLI.

    Args:
        board: BoardProfile, whose ``pio_env`` names the platformio.ini environment.
        work_dir: Path, the project folder (created; one per concurrent build).
        pio: str, the PlatformIO executable, default ``"pio"``.
        runs: int, timed invokes per measurement, default 20.
        warmup_runs: int, untimed invokes first, default 3.
        profile_runs: int, invokes with the per-op profiler, default 3.
        template_dir: Path | None, where platformio.ini and firmware/ are.
    """

    def __init__(
        self,
        board: BoardProfile,
        work_dir: Path,
        pio: str = "pio",
        *,
        runs: int = DEFAULT_RUNS,
        warmup_runs: int = DEFAULT_WARMUP_RUNS,
        profile_runs: int = DEFAULT_PROFILE_RUNS,
        template_dir: Path | None = None,
    ) -> None:
        if not board.pio_env:
            raise BoardProfileError(
                f"Board profile '{board.name}' has no [platformio] env: add one naming an "
                "environment of platformio.ini, or measure with --measure simulator."
            )
        self.board = board
        self.work_dir = Path(work_dir)
        self.pio = pio
        self.runs, self.warmup_runs, self.profile_runs = runs, warmup_runs, profile_runs
        self.template_dir = Path(template_dir) if template_dir else firmware_template_dir()
        self.model_crc32 = ""
        self.frontend_defines: dict[str, str] = {}

    @property
    def env(self) -> str:
        """The PlatformIO environment name."""
        return self.board.pio_env

    @property
    def generated_dir(self) -> Path:
        """Where the model sources and mcunas_config.h go."""
        return self.work_dir / "firmware" / "src" / "generated"

    @property
    def elf_path(self) -> Path:
        """The ELF that ``pio run`` links."""
        return self.work_dir / ".pio" / "build" / self.env / "firmware.elf"

    # -- stage 1: generate -------------------------------------------------
    def generate(
        self, model_bytes: bytes, op_names: list[str] | None = None, frontend: bytes | None = None
    ) -> Path:
        """Write the project for this model into ``work_dir`` and return it.

        With ``frontend`` (``frontend.tflite``) the firmware runs it on a raw audio
        window, then the model on its features, and reports both.

        Raises:
            CandidateError: the model alone is larger than the board's flash budget,
                or uses an op TFLite Micro cannot register.
            FatalError: the firmware template is missing.
            MeasurementError: the generated sources miss names the firmware uses.
        """
        budget = self.board.model_flash_budget_bytes
        if budget > 0 and len(model_bytes) > budget:
            raise CandidateError(
                f"Model is {len(model_bytes)} bytes, over {self.board.name}'s flash budget "
                f"for the model ({budget} bytes): not built."
            )
        self._copy_template()
        from mcunas.tflite.csource import write_model_sources

        managed_folder(self.work_dir, self.generated_dir)  # a planted link: refused, not emptied
        shutil.rmtree(self.generated_dir)
        write_model_sources(model_bytes, self.generated_dir, op_names)
        self._check_generated(model_bytes)
        self.frontend_defines = {}
        if frontend is not None:
            from mcunas.frontend.build import check_signal_ops, write_frontend_build

            check_signal_ops(self.board, frontend)
            self.frontend_defines = write_frontend_build(frontend, model_bytes, self.generated_dir)
        header, root = self.config_header(), self.work_dir
        write_file(self.generated_dir / "mcunas_config.h", header, "firmware header", inside=root)
        self.model_crc32 = model_crc32(model_bytes)
        return self.work_dir

    def config_header(self) -> str:
        """Text of ``mcunas_config.h`` for this board and measurement settings."""
        b = self.board
        fe = self.frontend_defines
        fe_arena = int(fe.get("MCUNAS_FRONTEND_ARENA_BYTES", "0").rstrip("u"))
        values = {
            "MCUNAS_BOARD_NAME": f'"{b.name}"',
            "MCUNAS_CLOCK_HZ": f"{b.clock_hz}u",
            "MCUNAS_BAUD": str(b.baud),
            "MCUNAS_ARENA_BYTES": f"{max(b.model_sram_budget_bytes - fe_arena, 1024)}u",
            "MCUNAS_STACK_BYTES": str(max(b.firmware_stack_bytes, 16384)),
            "MCUNAS_RUNS": str(self.runs),
            "MCUNAS_WARMUP_RUNS": str(self.warmup_runs),
            "MCUNAS_PROFILE_RUNS": str(self.profile_runs),
            "MCUNAS_MARKER_PIN": str(_marker_pin(b)),
            **fe,  # the front end's arena comes out of the model SRAM budget
        }
        runtime = runtime_label(self.template_dir, b)
        if runtime:  # the firmware reports it in its `ready` line's setup
            values["MCUNAS_RUNTIME"] = '"' + runtime.replace('"', "'") + '"'
        lines = [
            f"// Generated by mcunas for board {b.name} (env {self.env}). Do not edit.",
            "// Arena = the profile's model SRAM budget; runs/warm-up from PioProject.",
            "#ifndef MCUNAS_GENERATED_CONFIG_H_",
            "#define MCUNAS_GENERATED_CONFIG_H_",
            *(f"#define {k} {v}" for k, v in values.items()),
            "#endif  // MCUNAS_GENERATED_CONFIG_H_",
            "",
        ]
        return "\n".join(lines)

    def _copy_template(self) -> None:
        ini = self.template_dir / "platformio.ini"
        firmware = self.template_dir / "firmware"
        if not ini.is_file() or not (firmware / "src").is_dir():
            raise FatalError(
                f"Firmware template not found in {self.template_dir} (platformio.ini and "
                "firmware/): reinstall mcunas (its package ships them) or point "
                "MCUNAS_FIRMWARE_DIR at a folder holding both."
            )
        # copied file by file into the project folder, following no link there
        copies = [(ini, Path("platformio.ini"))]
        copies += [(f, "firmware" / f.relative_to(firmware)) for f in template_files(firmware)]
        if self.board.pio_platform.startswith("espressif32"):
            # ESP-IDF builds need the root CMakeLists.txt beside platformio.ini.
            copies.append((firmware / "esp-idf" / "CMakeLists.txt", Path("CMakeLists.txt")))
        root = self.work_dir
        for source, name in copies:
            write_file(root / name, source.read_bytes(), "firmware project", inside=root)

    def _check_generated(self, model_bytes: bytes) -> None:
        for name, symbols in _REQUIRED_SYMBOLS.items():
            path = self.generated_dir / name
            text = path.read_text("utf-8") if path.is_file() else ""
            missing = [s for s in symbols if s not in text]
            if missing:
                raise MeasurementError(
                    f"Generated {path} lacks {', '.join(missing)}: mcunas.tflite.convert and the "
                    "firmware disagree; update both from the same mcunas version."
                )
        crc = re.search(
            r"MCUNAS_MODEL_CRC32_U32\s+0x([0-9a-fA-F]{8})",
            (self.generated_dir / "model_data.h").read_text("utf-8"),
        )
        expected = model_crc32(model_bytes)
        if crc is None or crc.group(1).lower() != expected:
            raise MeasurementError(
                f"Generated model_data.h does not carry the model's CRC-32 {expected}."
            )

    # -- stage 2: build ----------------------------------------------------
    def build(self) -> BuildInfo:
        """Run ``pio run -e ENV -d DIR`` and read the ELF's memory figures.

        Raises:
            FatalError: PlatformIO missing, or it cannot install the platform/libraries.
            CandidateError: the model makes the firmware overflow RAM/flash, or uses an
                op this board's TFLite Micro lacks.
            MeasurementError: any other build failure or timeout (log tail + log path).
        """
        log_path = self.work_dir / "logs" / "build.log"
        cmd = [self._pio(), "run", "-e", self.env, "-d", str(self.work_dir)]
        rc, log = self._run(cmd, log_path, BUILD_TIMEOUT_S, "build")
        if rc != 0:
            raise build_error(log, log_path, self.env, self.work_dir, self.board.name)
        if not self.elf_path.is_file():
            raise MeasurementError(
                f"`pio run` succeeded but left no ELF at {self.elf_path}; see {log_path}."
            )
        sizes: ElfSizes = read_elf_sizes(self.elf_path, self.board.family)
        return BuildInfo(
            self.elf_path, sizes.static_ram_bytes, sizes.flash_bytes, dict(sizes.sections), log_path
        )

    # -- stage 3: upload ---------------------------------------------------
    def upload(self, port: str) -> None:
        """Flash the built firmware: ``pio run -e ENV -d DIR -t upload --upload-port PORT``.

        Raises:
            FatalError: PlatformIO missing.
            MeasurementError: the upload failed or timed out, with a hint on what to check.
        """
        log_path = self.work_dir / "logs" / "upload.log"
        cmd = [
            self._pio(),
            "run",
            "-e",
            self.env,
            "-d",
            str(self.work_dir),
            "-t",
            "upload",
            "--upload-port",
            port,
        ]
        rc, log = self._run(cmd, log_path, UPLOAD_TIMEOUT_S, "upload")
        if rc != 0:
            raise MeasurementError(
                f"Upload to {port} failed ({self.board.name}): {upload_hint(log)}. "
                f"Log: {log_path}\n{log_tail(log)}"
            )

    # -- helpers -------------------------------------------------------------
    def _pio(self) -> str:
        # platformio is a dependency: its `pio` sits beside this Python even when
        # the virtual environment is not activated (`.venv/bin/mcunas ...`)
        beside = str(Path(sys.executable).parent)
        found = shutil.which(self.pio) or shutil.which(self.pio, path=beside)
        if found is None:
            raise FatalError(
                f"PlatformIO (`{self.pio}`) not found: install it with `pip install platformio` "
                "or pass the path of its `pio` executable."
            )
        return found

    def _run(self, cmd: list[str], log_path: Path, timeout_s: float, stage: str) -> tuple[int, str]:
        # a new file: whatever was planted at the log's name is removed, never written
        fd = open_managed(self.work_dir, log_path, os.O_WRONLY, "build log", fresh=True)
        env = dict(os.environ, PLATFORMIO_DISABLE_PROGRESSBAR="true")
        with open(fd, "w", encoding="utf-8", errors="replace") as log:
            log.write("$ " + " ".join(cmd) + "\n")
            log.flush()
            try:
                proc = subprocess.run(
                    cmd,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    timeout=timeout_s,
                    env=env,
                    check=False,
                )
            except subprocess.TimeoutExpired:
                text = log_path.read_text("utf-8", errors="replace")
                raise MeasurementError(
                    f"PlatformIO {stage} timed out after {timeout_s:.0f} s for env '{self.env}'. "
                    f"Log: {log_path}\n{log_tail(text)}"
                ) from None
            except OSError as exc:
                raise FatalError(f"Cannot run PlatformIO ({cmd[0]}): {exc}") from exc
        return proc.returncode, log_path.read_text("utf-8", errors="replace")


def _marker_pin(board: BoardProfile) -> int:
    """The profile's energy marker GPIO, -1 for none."""
    pin = board.power.get("marker_pin")
    return -1 if pin is None else int(pin)


def template_files(folder: Path) -> list[Path]:
    """The firmware template's files, without build output and generated sources."""
    from fnmatch import fnmatch

    def kept(name: str) -> bool:
        return not any(fnmatch(name, pattern) for pattern in _TEMPLATE_IGNORE)

    found = []
    for here, dirs, names in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if kept(d))
        found += [Path(here) / n for n in sorted(names) if kept(n)]
    return found
