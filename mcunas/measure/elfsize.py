"""Static RAM and flash of a firmware ELF, per core family (pyelftools).

- flash: every allocated section with contents in the file (code, read-only
  data, vector tables, and the initial image of ``.data``): what the flashed
  image holds. The same for every family.
- static RAM: allocated writable sections in the chip's internal SRAM
  (``.data``, ``.bss``, ``.noinit``...), without the linker's heap and stack
  reservations (the stack is measured on the board, the arena is heap):
  * cortex-m: sections placed in the ARMv7-M/ARMv8-M SRAM region
    0x2000_0000-0x3FFF_FFFF (architecture memory map, B3.1), which excludes
    ``.init_array`` & co. that are writable-flagged but live in flash;
  * xtensa / riscv32 (ESP-IDF): writable sections plus ``.iram0.*`` code,
    which occupies internal SRAM too; RTC memory, PSRAM (``.ext_ram``) and
    flash-mapped sections are left out.

Example::

    sizes = read_elf_sizes(Path(".pio/build/esp32s3/firmware.elf"), "xtensa")
    sizes.static_ram_bytes, sizes.flash_bytes
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from mcunas.errors import MeasurementError

__all__ = ["ElfSizes", "read_elf_sizes"]

SHF_WRITE = 0x1
SHF_ALLOC = 0x2
CORTEX_M_SRAM = (0x2000_0000, 0x4000_0000)  # ARMv7-M memory map: SRAM region
_RESERVATION_WORDS = ("heap", "stack", "dummy")  # ._user_heap_stack, .heap, .dram0.dummy
_ESP_OFF_CHIP_PREFIXES = (".rtc", ".ext_ram", ".flash")
_FAMILIES = ("cortex-m", "xtensa", "riscv32")


@dataclass(frozen=True)
class ElfSizes:
    """Memory figures of one ELF, in bytes, with the sections counted in each."""

    static_ram_bytes: int
    flash_bytes: int
    sections: dict[str, int] = field(default_factory=dict)
    ram_sections: tuple[str, ...] = ()
    flash_sections: tuple[str, ...] = ()


def read_elf_sizes(path: Path, family: str) -> ElfSizes:
    """Read static RAM and flash from a linked firmware ELF.

    Args:
        path: Path, the ELF file.
        family: str, ``cortex-m``, ``xtensa`` or ``riscv32`` (BoardProfile.family).

    Raises:
        MeasurementError: the file is missing or not an ELF.
    """
    if family not in _FAMILIES:
        raise ValueError(f"unknown core family {family!r}; expected one of {_FAMILIES}")
    from elftools.common.exceptions import ELFError
    from elftools.elf.elffile import ELFFile

    try:
        with open(path, "rb") as fh:
            elf = ELFFile(fh)
            rows = [
                (s.name, s["sh_type"], s["sh_flags"], s["sh_addr"], s["sh_size"])
                for s in elf.iter_sections()
            ]
    except FileNotFoundError as exc:
        raise MeasurementError(f"Firmware ELF not found: {path}") from exc
    except (ELFError, OSError) as exc:
        raise MeasurementError(f"Cannot read firmware ELF {path}: {exc}") from exc
    ram, flash, sizes = [], [], {}
    for name, sh_type, flags, addr, size in rows:
        if not flags & SHF_ALLOC or size == 0:
            continue
        sizes[name] = size
        if sh_type != "SHT_NOBITS":
            flash.append(name)
        if _is_static_ram(name, flags, addr, family):
            ram.append(name)
    return ElfSizes(
        static_ram_bytes=sum(sizes[n] for n in ram),
        flash_bytes=sum(sizes[n] for n in flash),
        sections=sizes,
        ram_sections=tuple(ram),
        flash_sections=tuple(flash),
    )


def _is_static_ram(name: str, flags: int, addr: int, family: str) -> bool:
    lowered = name.lower()
    if any(word in lowered for word in _RESERVATION_WORDS):
        return False
    if family == "cortex-m":
        lo, hi = CORTEX_M_SRAM
        return bool(flags & SHF_WRITE) and lo <= addr < hi
    if lowered.startswith(_ESP_OFF_CHIP_PREFIXES):
        return False
    return bool(flags & SHF_WRITE) or lowered.startswith(".iram0")
