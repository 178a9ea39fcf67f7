"""Compile the signal kernels' test harness and run it: on the host, or on an emulated Cortex-M4F.

The harness (``firmware/signal_harness/``) runs front-end graphs over frames
with the kernels of ``firmware/src/signal/`` (see :mod:`.graph` for its input).
:func:`host_harness` builds it with ``g++``; :func:`arm_harness` with Debian's
``arm-none-eabi-g++`` (newlib with semihosting, ``--specs=rdimon.specs``) for a
Cortex-M4F, and :func:`run_harness` runs that under ``qemu-system-arm -M
mps2-an386``. Builds are cached by a hash of the sources and flags.

On the emulated core the harness also reports, per graph, the SysTick ticks
each op took over all frames; QEMU run with ``-icount shift=0`` advances its
clock one nanosecond per instruction and the board's SysTick runs at 25 MHz, so
a tick is 40 instructions (the harness prints a calibration loop to check it).
QEMU models no cycles: these are instructions retired, not time.

Example::

    exe = host_harness(tmp_path)
    features, report = run_harness(exe, harness_input([(fe, clips)]), tmp_path)
"""

from __future__ import annotations

import hashlib
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from mcunas.errors import UserError
from mcunas.paths import BUNDLED, package_path

__all__ = [
    "ARM_FLAGS",
    "ARM_INSTALL",
    "HarnessReport",
    "arm_harness",
    "arm_tools_missing",
    "host_harness",
    "library_sources",
    "run_harness",
]

ARM_INSTALL = (
    "apt-get install -y gcc-arm-none-eabi libnewlib-arm-none-eabi "
    "libstdc++-arm-none-eabi-newlib qemu-system-arm"
)
ARM_FLAGS = ("-mcpu=cortex-m4", "-mfpu=fpv4-sp-d16", "-mfloat-abi=hard", "-mthumb", "-O2")
CXX_FLAGS = ("-std=c++17", "-fno-exceptions", "-fno-rtti")
QEMU = ("qemu-system-arm", "-M", "mps2-an386", "-nographic", "-monitor", "none")
QEMU_SECONDS = 600


def library_sources() -> list[Path]:
    """The signal kernel library's ``.cc`` files (no TFLite Micro glue)."""
    folder = package_path(BUNDLED, "firmware", "src", "signal")
    return sorted(p for p in folder.glob("signal_*.cc"))


def _harness_sources() -> list[Path]:
    return sorted(package_path(BUNDLED, "firmware", "signal_harness").glob("*.cc"))


def _digest(paths: list[Path], flags: tuple[str, ...]) -> str:
    h = hashlib.sha256(" ".join(flags).encode())
    for p in [*paths, *package_path(BUNDLED, "firmware", "src", "signal").glob("*.h")]:
        h.update(p.name.encode() + p.read_bytes())
    for p in package_path(BUNDLED, "firmware", "signal_harness").glob("*"):
        h.update(p.name.encode() + p.read_bytes())
    return h.hexdigest()[:16]


def _compile(cmd: list[str]) -> None:
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise UserError(f"signal kernels: {cmd[0]} failed: {done.stderr.strip()[-400:]}")


def host_harness(cache_dir: Path, compiler: str = "g++") -> Path:
    """The harness built with the host's ``compiler`` (cached in ``cache_dir``)."""
    sources = [*library_sources(), *_harness_sources()]
    flags = ("-O2", "-Wall", "-Wextra", *CXX_FLAGS)
    exe = Path(cache_dir) / f"signal_harness_{_digest(sources, flags)}"
    if not exe.exists():
        exe.parent.mkdir(parents=True, exist_ok=True)
        tmp = exe.with_suffix(".part")
        _compile([compiler, *flags, "-o", str(tmp), *map(str, sources)])
        tmp.replace(exe)
    return exe


def arm_tools_missing() -> str | None:
    """None when the Arm compiler and QEMU are here, else the line that installs them."""
    tools = ("arm-none-eabi-g++", "arm-none-eabi-size", "qemu-system-arm")
    missing = [t for t in tools if shutil.which(t) is None]
    if not missing:  # newlib's semihosting start-up, a package of its own
        found = subprocess.run(
            ["arm-none-eabi-gcc", "-print-file-name=rdimon.specs"],
            capture_output=True,
            text=True,
            check=False,
        ).stdout.strip()
        missing = [] if Path(found).is_file() else ["newlib (rdimon.specs)"]
    return f"missing {', '.join(missing)}: {ARM_INSTALL}" if missing else None


def arm_harness(cache_dir: Path) -> Path:
    """The harness's ELF for the Cortex-M4F on QEMU's mps2-an386 (cached in ``cache_dir``).

    Beside it: the library's objects with their ``.su`` stack-use files
    (``-fstack-usage``), which :func:`mcunas.frontend.kernels.counts.library_footprint` reads.
    """
    sources = [*library_sources(), *_harness_sources()]
    folder = Path(cache_dir) / f"signal_arm_{_digest(sources, ARM_FLAGS)}"
    elf = folder / "harness.elf"
    if elf.exists():
        return elf
    folder.mkdir(parents=True, exist_ok=True)
    harness = package_path(BUNDLED, "firmware", "signal_harness")
    objects = []
    for src in sources:
        obj = folder / f"{src.stem}.o"
        extra = ["-fstack-usage", "-ffunction-sections"] if src in library_sources() else []
        _compile(
            ["arm-none-eabi-g++", *ARM_FLAGS, *CXX_FLAGS, *extra, "-c", str(src), "-o", str(obj)]
        )
        objects.append(obj)
    startup = folder / "startup.o"
    _compile(
        ["arm-none-eabi-gcc", *ARM_FLAGS, "-c", str(harness / "startup.c"), "-o", str(startup)]
    )
    link = ["arm-none-eabi-g++", *ARM_FLAGS, "--specs=rdimon.specs"]
    link += ["-T", str(harness / "mps2_an386.ld"), *map(str, objects), str(startup)]
    _compile([*link, "-o", str(elf.with_suffix(".part")), "-lm"])
    elf.with_suffix(".part").replace(elf)
    return elf


@dataclass(frozen=True)
class HarnessReport:
    """What the harness printed: frames run, and on the Arm core the ops' ticks per graph."""

    frames: int
    ops: tuple[tuple[int, ...], ...]
    ticks: tuple[tuple[int, ...], ...]
    instructions_per_tick: float | None


def _report(stdout: str) -> HarnessReport:
    frames = re.search(r"^ok (\d+)$", stdout, re.M)
    if frames is None:
        raise UserError(f"signal kernels: the harness failed: {stdout.strip()[-300:]}")
    calib = re.search(r"^calibration (\d+) instructions (\d+) ticks$", stdout, re.M)
    per_tick = int(calib.group(1)) / int(calib.group(2)) if calib and int(calib.group(2)) else None

    def rows(tag: str) -> tuple[tuple[int, ...], ...]:
        found = re.findall(rf"^{tag} ([\d ]+)$", stdout, re.M)
        return tuple(tuple(int(v) for v in line.split()) for line in found)

    return HarnessReport(int(frames.group(1)), rows("ops"), rows("ticks"), per_tick)


def run_harness(exe: Path, blob: bytes, work_dir: Path) -> tuple[np.ndarray, HarnessReport]:
    """Run the harness (an ELF: under QEMU) on ``blob``; the int16 features and its report.

    Raises:
        UserError: the harness refused its input or failed.
    """
    work = Path(work_dir)
    work.mkdir(parents=True, exist_ok=True)
    src, out = work / "harness_in.bin", work / "harness_out.bin"
    src.write_bytes(blob)
    out.unlink(missing_ok=True)
    if exe.suffix == ".elf":
        semi = f"enable=on,target=native,arg=harness,arg={src},arg={out}"
        cmd = [*QEMU, "-serial", "none", "-icount", "shift=0", "-semihosting-config", semi]
        cmd += ["-kernel", str(exe)]
    else:
        cmd = [str(exe), str(src), str(out)]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=QEMU_SECONDS, check=False)
    report = _report(done.stdout + done.stderr)
    return np.fromfile(out, "<i2"), report
