"""The build setup a board's firmware reports, in the profile's setup keys.

The measurement firmware adds a ``setup`` object to its ``ready`` line (and the
arena's address to its ``result`` line): the addresses of the model's weights and
of the tensor arena, the core's CPUID and CCR registers on Cortex-M (which core,
whether its instruction and data caches are on), the core clock the firmware runs
at (CMSIS ``SystemCoreClock``), the TFLite Micro build it was linked with and the
compiler's optimisation. :func:`reported_setup` turns those raw facts into the keys
a board profile states (``weights``, ``arena``, ``cache``, ``runtime``, ``opt``) plus
``clock_hz`` and ``core``, so a measured row carries the setup it was measured with.
Firmware older than this reports no ``setup``: the result is then empty.

Addresses are placed by the Cortex-M architectural memory map, which every vendor
follows: the code region (below 0x20000000) is flash, except the instruction TCM
of a Cortex-M7 at its bottom; the SRAM region (0x20000000-0x3FFFFFFF) is on-chip
RAM, its first 64 KB the data TCM on a Cortex-M7 (STM32F7/H7, i.MX RT); 0x90000000
is a memory-mapped QSPI/OSPI flash on STM32 parts, and the rest of 0x60000000-
0xDFFFFFFF external memory (SDRAM, PSRAM on the FMC). Other cores keep the raw
addresses only.

Example::

    reported_setup({"setup": {"model_addr": "08012340", "cpuid": "411fc271",
                              "ccr": "00070200"}}, {"arena_addr": "20010000"})
    # {'core': 'cortex-m7', 'weights': 'flash', 'arena': 'sram', 'cache': True}
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from mcunas.inputs.opener import read_input_text

__all__ = [
    "CPUID_PARTS",
    "describe_setup",
    "firmware_setup",
    "reported_setup",
    "runtime_label",
    "setup_differences",
]

# CPUID PartNo (bits 15:4) of the Cortex-M cores mcunas knows.
CPUID_PARTS = {
    0xC60: "cortex-m0plus",
    0xC24: "cortex-m4",
    0xC27: "cortex-m7",
    0xD21: "cortex-m33",
    0xD22: "cortex-m55",
    0xD23: "cortex-m85",
}
_CACHED_CORES = {"cortex-m7", "cortex-m55", "cortex-m85"}  # CCR.IC / CCR.DC are real bits
_CCR_IC, _CCR_DC = 1 << 17, 1 << 16
_M7_ITCM_END = 0x0010_0000  # ITCM RAM sits at 0 (16-512 KB); flash's ITCM alias above
_M7_DTCM = (0x2000_0000, 0x2001_0000)  # every M7 part's DTCM starts here, >= 64 KB
_OPT = {"speed": "O2", "size": "Os"}  # what -O2/-O3 and -Os leave in GCC's macros


# An address in each place, as a Cortex-M firmware would print it (the virtual board).
_ADDRESSES = {
    "flash": 0x0802_0000,
    "sram": 0x2002_0000,
    "tcm": 0x2000_0400,
    "sdram": 0xC000_0000,
    "psram": 0x6000_0000,
}


def firmware_setup(board: Any, runtime: str = "") -> tuple[dict[str, Any], str | None]:
    """The ``setup`` object a firmware built for ``board`` prints, and its arena address.

    What the virtual board reports: the profile's stated placement, caches and
    clock (its baseline where it states none), encoded as the raw registers and
    addresses the firmware prints, so the host decodes it as it would a board's.
    """
    setup = dict(getattr(board, "setup", {}) or {})
    raw: dict[str, Any] = {"opt": {"Os": "size"}.get(setup.get("opt", "O2"), "speed")}
    if runtime:
        raw["runtime"] = runtime
    raw["core_clock_hz"] = int(board.clock_hz)
    core = str(board.core).removesuffix("f")  # CPUID does not tell an M4F from an M4
    part = next((p for p, name in CPUID_PARTS.items() if name == core), None)
    if part is None:
        return raw, None
    weights, arena = setup.get("weights", "flash"), setup.get("arena", "sram")
    raw["model_addr"] = f"{_ADDRESSES[weights]:08x}"
    raw["cpuid"] = f"{0x410F_0001 | part << 4:08x}"
    raw["ccr"] = f"{0x0000_0200 | (_CCR_IC | _CCR_DC if setup.get('cache', True) else 0):08x}"
    return raw, f"{_ADDRESSES[arena]:08x}"


def _hex(value: Any) -> int | None:
    try:
        return int(str(value), 16)
    except ValueError:
        return None


def _place(address: int, core: str, constant: bool) -> str:
    """Where ``address`` lives on a Cortex-M ``core`` (``constant``: read-only data)."""
    if address < 0x2000_0000:
        return "tcm" if core == "cortex-m7" and address < _M7_ITCM_END else "flash"
    if address < 0x4000_0000:
        low, high = _M7_DTCM
        return "tcm" if core == "cortex-m7" and low <= address < high else "sram"
    if constant and 0x9000_0000 <= address < 0xA000_0000:
        return "flash"  # memory-mapped QSPI/OSPI flash
    if 0x6000_0000 <= address < 0xE000_0000:
        return "sdram"
    return "unknown"


def reported_setup(ready: dict[str, Any], result: dict[str, Any] | None = None) -> dict[str, Any]:
    """The setup keys a firmware's ``ready`` (and ``result``) lines report; {} if none.

    Args:
        ready: the ``ready`` line's JSON object.
        result: the ``result`` line's JSON object, whose ``arena_addr`` is the arena's
            address once the firmware has allocated it.
    """
    raw = ready.get("setup")
    if not isinstance(raw, dict):
        return {}
    out: dict[str, Any] = {}
    cpuid = _hex(raw.get("cpuid", ""))
    core = CPUID_PARTS.get((cpuid >> 4) & 0xFFF, "") if cpuid is not None else ""
    if core:
        out["core"] = core
        arena = (result or {}).get("arena_addr", raw.get("arena_addr"))
        for key, value, constant in (
            ("weights", raw.get("model_addr"), True),
            ("arena", arena, False),
        ):
            address = _hex(value) if value is not None else None
            if address is not None:
                out[key] = _place(address, core, constant)
        ccr = _hex(raw.get("ccr", ""))
        if ccr is not None and core in _CACHED_CORES:
            out["cache"] = bool(ccr & _CCR_IC) and bool(ccr & _CCR_DC)
    clock = raw.get("core_clock_hz")
    if isinstance(clock, int) and clock > 0:
        out["clock_hz"] = clock
    if isinstance(raw.get("runtime"), str) and raw["runtime"]:
        out["runtime"] = raw["runtime"]
    if raw.get("opt") in _OPT:
        out["opt"] = _OPT[raw["opt"]]
    return out


def setup_differences(profile: Any, reported: dict[str, Any]) -> list[str]:
    """Where the reported setup contradicts what the board profile states or assumes.

    Compares placement, caches and clock (the keys that move the estimate); the
    runtime text is a build label, not compared.
    """
    from mcunas.cost.setup import BASELINE

    stated = dict(getattr(profile, "setup", {}) or {})
    out = []
    for key in ("weights", "arena"):
        if key in reported and reported[key] != "unknown":
            expected = stated.get(key, BASELINE[key])
            if reported[key] != expected:
                out.append(f"{key}: firmware reports {reported[key]}, profile {expected}")
    if "cache" in reported and reported["cache"] != stated.get("cache", True):
        on = "on" if reported["cache"] else "off"
        out.append(
            f"cache: firmware reports {on}, profile {'on' if not reported['cache'] else 'off'}"
        )
    clock = reported.get("clock_hz")
    if clock and abs(clock / profile.clock_hz - 1) > 0.01:
        out.append(
            f"clock: firmware runs at {clock / 1e6:g} MHz, profile {profile.clock_hz / 1e6:g} MHz"
        )
    return out


def describe_setup(reported: dict[str, Any]) -> str:
    """One line: ``weights flash, arena tcm, caches on, 216 MHz, runtime ..., -O2``."""
    parts = [f"{k} {reported[k]}" for k in ("weights", "arena") if k in reported]
    if "cache" in reported:
        parts.append(f"caches {'on' if reported['cache'] else 'off'}")
    if "clock_hz" in reported:
        parts.append(f"{reported['clock_hz'] / 1e6:g} MHz")
    if "runtime" in reported:
        parts.append(f"runtime {reported['runtime']}")
    if "opt" in reported:
        parts.append(f"-{reported['opt']}")
    return ", ".join(parts) or "nothing (firmware older than the setup report)"


_PINNED_TFLM = re.compile(r"/(?P<lib>[\w.-]+?)(?:\.git)?#(?P<pin>[0-9a-f]{7,40})")
_IDF_TFLM = re.compile(r"esp-tflite-micro:\s*\n\s*version:\s*\"?(?P<version>[^\"\n]+)")


def runtime_label(template_dir: Path, board: Any) -> str:
    """The TFLite Micro build the firmware links, as pinned in the template ("" if unknown).

    ``Chirale_TensorFlowLite@46da2f9`` for the Arduino Cortex-M builds (the commit in
    platformio.ini's lib_deps), ``esp-tflite-micro 1.3.4`` for ESP-IDF (its
    idf_component.yml).
    """
    if board.family in ("xtensa", "riscv32"):
        manifest = Path(template_dir) / "firmware" / "src" / "idf_component.yml"
        found = (
            _IDF_TFLM.search(read_input_text(manifest, "text", "component manifest"))
            if manifest.is_file()
            else None
        )
        return f"esp-tflite-micro {found['version'].strip()}" if found else ""
    ini = Path(template_dir) / "platformio.ini"
    text = read_input_text(ini, "text", "platformio.ini") if ini.is_file() else ""
    found = _PINNED_TFLM.search(text)
    return f"{found['lib']}@{found['pin'][:7]}" if found else ""
