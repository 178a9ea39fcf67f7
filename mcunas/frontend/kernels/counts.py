"""The signal kernels' cost on a Cortex-M4F, measured on the emulated core, stored as data.

``mcunas/calibration/signal_kernels_m4f.csv`` holds, for every front end of the
searched space, each op's instructions retired per frame on QEMU's Cortex-M4F
(mps2-an386, ``-icount shift=0``: SysTick counts instructions, 40 a tick),
averaged over the spoken-word dataset's frames; ``signal_kernels_m4f_footprint.csv``
the library's code size (``arm-none-eabi-size``), the soft-float maths it pulls
in (twiddle tables at Init), and its deepest stack (``-fstack-usage``). Both files
name the command that wrote them: ``python scripts/signal_counts.py``.

QEMU models no cycles: a cost model multiplies these instruction counts by a
cycles-per-instruction range per core (:mod:`mcunas.cost.frontend`).

Example::

    rows = load_counts()                  # CountRow(frame_ms, hop_ms, bands, pcan, op, ...)
    fp = load_footprint()                 # {"library": Part(...), ...}
"""

from __future__ import annotations

import csv
import re
import subprocess
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from mcunas.files import write_file
from mcunas.frontend.kernels.graph import CHAIN
from mcunas.paths import package_path

__all__ = [
    "COUNTS_FILE",
    "FOOTPRINT_FILE",
    "CountRow",
    "Part",
    "footprint_of",
    "object_sizes",
    "stack_frames",
    "load_counts",
    "load_footprint",
    "write_counts",
    "write_footprint",
]

COUNTS_FILE = "signal_kernels_m4f.csv"
FOOTPRINT_FILE = "signal_kernels_m4f_footprint.csv"
INSTRUCTIONS_PER_TICK = 40  # -icount shift=0 (1 ns an instruction), SysTick at 25 MHz
OP_NAMES = CHAIN  # the harness's op kinds, in its order (chain.h Kind)
# What the FFT's Init pulls in from newlib/libgcc (double cos/sin/floor, soft-float).
MATHS = re.compile(
    r"^(cos|sin|floor|scalbn|__kernel_\w+|__ieee754_\w+|__aeabi_[di]\w*|__\w+df\w*)$"
)


@dataclass(frozen=True)
class CountRow:
    """One op of one front end: instructions retired per frame on the Cortex-M4F."""

    frame_ms: float
    hop_ms: float
    bands: int
    pcan: bool
    op: str
    instructions: float


@dataclass(frozen=True)
class Part:
    """One part of the library's footprint on the Cortex-M4F."""

    name: str
    flash_bytes: int
    ram_bytes: int
    stack_bytes: int
    how: str


def _comment(path: Path) -> list[str]:
    return [line for line in path.read_text("utf-8").splitlines() if line.startswith("#")]


def _rows(path: Path) -> list[dict[str, str]]:
    lines = [line for line in path.read_text("utf-8").splitlines() if not line.startswith("#")]
    return list(csv.DictReader(lines))


@lru_cache(maxsize=1)
def load_counts() -> tuple[CountRow, ...]:
    """The stored instruction counts (empty when the file is missing)."""
    path = package_path("calibration", COUNTS_FILE)
    if not path.is_file():
        return ()
    return tuple(
        CountRow(
            float(r["frame_ms"]),
            float(r["hop_ms"]),
            int(r["bands"]),
            r["pcan"] == "1",
            r["op"],
            float(r["instructions_per_frame"]),
        )
        for r in _rows(path)
    )


@lru_cache(maxsize=1)
def load_footprint() -> dict[str, Part]:
    """The stored footprint, by part name (empty when the file is missing)."""
    path = package_path("calibration", FOOTPRINT_FILE)
    if not path.is_file():
        return {}
    return {
        r["part"]: Part(
            r["part"], int(r["flash_bytes"]), int(r["ram_bytes"]), int(r["stack_bytes"]), r["how"]
        )
        for r in _rows(path)
    }


def write_counts(path: Path, rows: list[CountRow], header: list[str]) -> Path:
    """Write the counts CSV with ``header`` as ``#`` comment lines."""
    lines = [*(f"# {h}" for h in header), "frame_ms,hop_ms,bands,pcan,op,instructions_per_frame"]
    lines += [
        f"{r.frame_ms:g},{r.hop_ms:g},{r.bands},{int(r.pcan)},{r.op},{r.instructions:.1f}"
        for r in rows
    ]
    return write_file(path, "\n".join(lines) + "\n")


def write_footprint(path: Path, parts: list[Part], header: list[str]) -> Path:
    """Write the footprint CSV with ``header`` as ``#`` comment lines."""
    lines = [*(f"# {h}" for h in header), "part,flash_bytes,ram_bytes,stack_bytes,how"]
    lines += [f"{p.name},{p.flash_bytes},{p.ram_bytes},{p.stack_bytes},{p.how}" for p in parts]
    return write_file(path, "\n".join(lines) + "\n")


def stack_frames(files: Iterable[Path]) -> dict[str, int]:
    """Stack bytes by function name from ``-fstack-usage`` files (``file:line:col:sig``, bytes)."""
    frames: dict[str, int] = {}
    for su in files:
        for line in Path(su).read_text().splitlines():
            where, size = line.split("\t")[:2]
            signature = re.sub(r"^.*?:\d+:\d+:", "", where)
            name = re.sub(r"\(.*", "", signature).split("::")[-1].split()[-1]
            frames[name] = max(frames.get(name, 0), int(size))
    return frames


def _stack(folder: Path, fft_length: int) -> int:
    """The deepest stack of one op's call: its kernel's frame, the FFT's recursion for Rfft."""
    frames = stack_frames(folder.glob("signal_*.su"))
    depth = max(1, (fft_length // 2).bit_length() // 2)  # radix-4 stages (+ one radix 2)
    rfft = frames.get("rfft", 0) + depth * frames.get("transform", 0)
    others = ("window", "filter_bank", "spectral_subtraction", "pcan", "filter_bank_log")
    return max(rfft, *(frames.get(n, 0) for n in others))


def object_sizes(objects: list[Path]) -> tuple[int, int]:
    """Flash (text + data) and RAM (data + bss) bytes of objects, by ``arm-none-eabi-size``."""
    size = subprocess.run(
        ["arm-none-eabi-size", *map(str, objects)], capture_output=True, text=True, check=True
    ).stdout.splitlines()[1:]
    text = sum(int(line.split()[0]) + int(line.split()[1]) for line in size)
    ram = sum(int(line.split()[1]) + int(line.split()[2]) for line in size)
    return text, ram


def footprint_of(elf: Path, fft_length: int) -> list[Part]:
    """The library's parts in the harness build beside ``elf`` (objects, ``.su`` files, maths)."""
    folder = elf.parent
    text, data = object_sizes(sorted(folder.glob("signal_*.o")))
    nm = subprocess.run(
        ["arm-none-eabi-nm", "-S", "--size-sort", str(elf)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    maths = sum(
        int(f[1], 16) for f in (line.split() for line in nm) if len(f) == 4 and MATHS.match(f[3])
    )
    stack = _stack(folder, fft_length)
    return [
        Part("library", text, data, stack, "arm-none-eabi-size of signal_*.o; -fstack-usage"),
        Part("maths", maths, 0, 0, "nm sizes of cos/sin/floor and soft-float helpers in the ELF"),
    ]
