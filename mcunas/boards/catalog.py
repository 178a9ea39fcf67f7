"""Board profiles: data files in ``boards/`` (and a user folder searched first).

A profile is a TOML file. A user's own profile needs only ``name``, ``core``,
``clock_hz``, ``sram_bytes``, ``flash_bytes`` and ``kernels``; everything else
(firmware baseline, peak MACs per cycle, latency coefficients) then comes from
the defaults for that core family and kernel library. This module reads and
checks the files; the profile itself, :class:`BoardProfile`, is in
:mod:`mcunas.boards.profile` (its names are re-exported here).

Example::

    from mcunas.boards.catalog import load_board
    board = load_board("esp32s3")
    board.model_sram_budget_bytes
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any

from mcunas.boards.checks import (
    BOARD_NAME,
    HWID,
    KERNEL_LIBRARIES,
    MEMORY_PLACES,
    REQUIRED_KEYS,
    TABLE_KEYS,
    TOP_KEYS,
    check_keys,
    check_latency,
    check_power,
    check_power_consistency,
    check_setup,
    optional_int,
    positive_int,
)
from mcunas.boards.profile import (
    CORES,
    BoardProfile,
    check_choice,
    check_kernels_fit_core,
    core_family,
)
from mcunas.errors import BoardProfileError, UnknownBoard
from mcunas.inputs.formats import read_toml
from mcunas.limits import MAX_PEAK_MACS_PER_CYCLE
from mcunas.paths import builtin_boards_dir, user_boards_dir

__all__ = [
    "CORES",
    "KERNEL_LIBRARIES",
    "BoardProfile",
    "core_family",
    "list_boards",
    "load_board",
]


# Firmware baseline when a profile gives none: (static RAM, stack, flash) of the
# measurement firmware without the model, the arena and the op kernels.
# Rough figures for a TFLM harness; built-in profiles carry their own.
_FAMILY_FIRMWARE = {
    "cortex-m": (12 * 1024, 4 * 1024, 48 * 1024),
    "xtensa": (40 * 1024, 8 * 1024, 220 * 1024),
    "riscv32": (36 * 1024, 8 * 1024, 200 * 1024),
}
# Peak int8 multiply-accumulates per cycle of the core's best kernel path,
# the basis of the latency lower bound; the reason for each value is beside it.
_PEAK_MACS_PER_CYCLE = {
    "cortex-m0plus": 0.25,  # no DSP extension: ~4 cycles per MAC at best
    "cortex-m4": 2.0,  # SMLAD: two 16-bit MACs per cycle
    "cortex-m4f": 2.0,
    "cortex-m7": 2.0,  # SMLAD, single MAC pipeline
    "cortex-m33": 2.0,  # DSP extension like M4
    "cortex-m55": 8.0,  # Helium, dual-beat: 8 int8 MACs per cycle
    "cortex-m85": 16.0,  # Helium, quad-beat
    "xtensa-lx6": 1.0,  # MAC16 unit
    "xtensa-lx7": 16.0,  # ESP32-S3 PIE: 128-bit vector MAC
    "riscv32": 0.5,  # RV32IMC, no packed SIMD
}


def _profile_files() -> dict[str, tuple[Path, bool]]:
    found: dict[str, tuple[Path, bool]] = {}
    for folder, builtin in ((builtin_boards_dir(), True), (user_boards_dir(), False)):
        if folder.is_dir():
            for path in sorted(folder.glob("*.toml")):
                found[path.stem] = (path, builtin)  # user folder overrides
    return found


def list_boards(errors: list[str] | None = None) -> list[BoardProfile]:
    """Every profile, user ones overriding built-in ones of the same name.

    Args:
        errors: list | None; if given, a malformed profile is skipped and its
            one-line error appended here instead of raised.
    """
    boards = []
    for path, builtin in _profile_files().values():
        try:
            boards.append(_load_file(path, builtin))
        except BoardProfileError as exc:
            if errors is None:
                raise
            errors.append(str(exc))
    return boards


def load_board(name_or_path: str) -> BoardProfile:
    """Load a profile by name (user folder first) or by a ``.toml`` path.

    Raises:
        UnknownBoard: no such name or file.
        BoardProfileError: the file is malformed or misses required keys.
    """
    candidate = Path(name_or_path)
    if name_or_path.endswith(".toml") or os.sep in name_or_path:
        if not candidate.is_file():
            raise BoardProfileError(f"Board profile file not found: {name_or_path}")
        return _load_file(candidate, builtin=False)
    files = _profile_files()
    if name_or_path not in files:
        raise UnknownBoard(name_or_path, sorted(files))
    path, builtin = files[name_or_path]
    return _load_file(path, builtin)


def _table(data: dict[str, Any], key: str, where: str) -> dict[str, Any]:
    value = data.get(key, {})
    if not isinstance(value, dict):
        raise BoardProfileError(f"{where}: {key} must be a table ([{key}]), got {value!r}")
    return dict(value)


def _load_file(path: Path, builtin: bool) -> BoardProfile:
    where = str(path)
    data = _read_toml(path)
    _check_required(data, where)
    sizes = {k: positive_int(data, k, where) for k in ("clock_hz", "sram_bytes", "flash_bytes")}
    tables = ("firmware", "platformio", "serial", "latency", "power", "sources")
    fw, pio, serial, latency, power, sources = (_table(data, key, where) for key in tables)
    check_keys(data, TOP_KEYS, where)
    check_latency(latency, where)
    check_power(power, where)
    check_power_consistency(power, sizes["clock_hz"], where)
    for table, values in (("firmware", fw), ("platformio", pio), ("serial", serial)):
        check_keys(values, TABLE_KEYS[table], where, f"[{table}] ")
    try:
        board = BoardProfile(
            name=data["name"],
            core=data["core"],
            kernels=data["kernels"],
            title=str(data.get("title", data["name"])),
            mcu=str(data.get("mcu", "")),
            **_usable_sizes(data, sizes, where),
            **_firmware_baseline(fw, data["core"], where),
            peak_macs_per_cycle=_peak_macs(data, where),
            max_arena_bytes=optional_int(data, "max_arena_bytes", 0, where),
            memory=_memory(data, where),
            setup=check_setup(data, where),
            multicore_kernels=_flag(data, "multicore_kernels", where),
            pio_env=str(pio.get("env", "")),
            pio_board=str(pio.get("board", "")),
            pio_platform=str(pio.get("platform", "")),
            baud=optional_int(serial, "baud", 115200, where, label="[serial] baud"),
            hwids=_hwids(serial, where),
            latency=latency,
            power=power,
            power_clock_hz=sizes["clock_hz"],
            sources={str(k): str(v) for k, v in sources.items()},
            path=where,
            builtin=builtin,
            **sizes,
        )
    except (TypeError, ValueError) as exc:
        raise BoardProfileError(f"{where}: malformed value ({exc})") from exc
    _check_model_room(board, where)
    return board


def _flag(data: dict[str, Any], key: str, where: str) -> bool:
    value = data.get(key, False)
    if not isinstance(value, bool):
        raise BoardProfileError(f"{where}: {key} must be true or false, got {value!r}")
    return value


def _memory(data: dict[str, Any], where: str) -> str:
    memory = data.get("memory", "sram")
    check_choice("memory", memory, MEMORY_PLACES, where)
    return str(memory)


def _read_toml(path: Path) -> dict[str, Any]:
    """A profile's table, through the guarded opener (regular file, ``profile`` bound)."""
    return read_toml(path, "profile", "board profile", BoardProfileError)


def _check_required(data: dict[str, Any], where: str) -> None:
    """The required keys are there, the name is a name, core and kernels are known and fit."""
    missing = [key for key in REQUIRED_KEYS if key not in data]
    if missing:
        raise BoardProfileError(f"{where}: missing required key(s): {', '.join(missing)}")
    name = data["name"]
    if not isinstance(name, str) or not BOARD_NAME.fullmatch(name):
        raise BoardProfileError(
            f"{where}: name must be a string of letters, digits, '_', '-' and '.', got {name!r}"
        )
    check_choice("core", data["core"], CORES, where)
    check_choice("kernels", data["kernels"], KERNEL_LIBRARIES, where)
    check_kernels_fit_core(data["kernels"], data["core"], where)


def _hwids(serial: dict[str, Any], where: str) -> tuple[str, ...]:
    hwids = serial.get("hwids", [])
    if not isinstance(hwids, list):
        raise BoardProfileError(f'{where}: serial.hwids must be a list, e.g. ["303A:1001"]')
    hwids = [str(h).upper() for h in hwids]
    bad_ids = [h for h in hwids if not HWID.fullmatch(h)]
    if bad_ids:
        raise BoardProfileError(
            f'{where}: serial.hwids entry {bad_ids[0]!r} is not a USB "VID:PID" in hex, '
            'e.g. "303A:1001"'
        )
    return tuple(hwids)


def _usable_sizes(data: dict[str, Any], sizes: dict[str, int], where: str) -> dict[str, int]:
    usable = {
        f"usable_{m}_bytes": optional_int(data, f"usable_{m}_bytes", sizes[f"{m}_bytes"], where)
        for m in ("sram", "flash")
    }
    for m in ("sram", "flash"):
        if usable[f"usable_{m}_bytes"] > sizes[f"{m}_bytes"]:
            raise BoardProfileError(
                f"{where}: usable_{m}_bytes ({usable[f'usable_{m}_bytes']}) is more than "
                f"{m}_bytes ({sizes[f'{m}_bytes']})"
            )
    return usable


def _firmware_baseline(fw: dict[str, Any], core: str, where: str) -> dict[str, int]:
    fam_ram, fam_stack, fam_flash = _FAMILY_FIRMWARE[core_family(core)]
    return {
        f"firmware_{k}": optional_int(fw, k, d, where, minimum=0, label=f"[firmware] {k}")
        for k, d in (("ram_bytes", fam_ram), ("stack_bytes", fam_stack), ("flash_bytes", fam_flash))
    }


def _peak_macs(data: dict[str, Any], where: str) -> float:
    peak = data.get("peak_macs_per_cycle", _PEAK_MACS_PER_CYCLE[data["core"]])
    if (
        not isinstance(peak, (int, float))
        or isinstance(peak, bool)
        or not math.isfinite(peak)
        or not 0 < peak <= MAX_PEAK_MACS_PER_CYCLE
    ):
        raise BoardProfileError(
            f"{where}: peak_macs_per_cycle must be a positive number up to "
            f"{MAX_PEAK_MACS_PER_CYCLE:g}, got {peak!r}"
        )
    return float(peak)


def _check_model_room(board: BoardProfile, where: str) -> None:
    for what, left in (
        ("SRAM", board.model_sram_budget_bytes),
        ("flash", board.model_flash_budget_bytes),
    ):
        if left <= 0:
            raise BoardProfileError(
                f"{where}: no {what} left to the model ({left} B) after the firmware "
                "baseline; check the sizes or give [firmware] figures"
            )
