"""A board profile as a value: :class:`BoardProfile`, the cores it names and their families.

The profile's memory budgets and its copies at another clock or kernel library
live here; reading and checking the TOML files that make profiles is
:mod:`mcunas.boards.catalog` (``load_board``, ``list_boards``), which re-exports these names.

Example::

    from mcunas.boards.catalog import load_board
    board = load_board("esp32s3").at_clock(160)
    board.family, board.model_sram_budget_bytes
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from mcunas.boards.checks import KERNEL_LIBRARIES
from mcunas.errors import BoardProfileError
from mcunas.limits import LIMITS

__all__ = [
    "CORES",
    "BoardProfile",
    "check_choice",
    "check_kernels_fit_core",
    "core_family",
]


CORES = (
    "cortex-m0plus",
    "cortex-m4",
    "cortex-m4f",
    "cortex-m7",
    "cortex-m33",
    "cortex-m55",
    "cortex-m85",
    "xtensa-lx6",
    "xtensa-lx7",
    "riscv32",
)


def core_family(core: str) -> str:
    """Return the family of a core name: ``cortex-m``, ``xtensa`` or ``riscv32``."""
    if core.startswith("cortex-m"):
        return "cortex-m"
    if core.startswith("xtensa"):
        return "xtensa"
    return "riscv32"


@dataclass(frozen=True)
class BoardProfile:
    """One board: its chip, memories, kernel library and how to reach it.

    Memory figures are bytes. ``usable_*`` is what the application can use
    (total less what the ROM, caches or bootloader reserve); ``firmware_*`` is
    the measurement firmware's own baseline without model, arena and kernels.
    """

    name: str
    core: str
    clock_hz: int
    sram_bytes: int
    flash_bytes: int
    kernels: str
    title: str = ""
    mcu: str = ""
    usable_sram_bytes: int = 0
    usable_flash_bytes: int = 0
    firmware_ram_bytes: int = 0
    firmware_stack_bytes: int = 0
    firmware_flash_bytes: int = 0
    peak_macs_per_cycle: float = 0.0
    max_arena_bytes: int = 0
    memory: str = "sram"  # where model, arena and code live (board_checks.MEMORY_PLACES)
    # the setup keys the profile states (weights, arena, cache, flash_wait_states, runtime,
    # cmsis_nn, opt; board_checks.check_setup); predict/setup.py turns them into factors
    setup: dict[str, Any] = field(default_factory=dict)
    multicore_kernels: bool = False  # CONV_2D and DEPTHWISE_CONV_2D split over two cores
    pio_env: str = ""
    pio_board: str = ""
    pio_platform: str = ""
    baud: int = 115200
    hwids: tuple[str, ...] = ()
    latency: dict[str, Any] = field(default_factory=dict)
    power: dict[str, Any] = field(default_factory=dict)  # [power], see mcunas/cost/energy.py
    power_clock_hz: int = 0  # the clock [power] currents are given at (the profile's)
    sources: dict[str, str] = field(default_factory=dict)
    path: str = ""
    builtin: bool = False

    @property
    def family(self) -> str:
        """Core family: ``cortex-m``, ``xtensa`` or ``riscv32``."""
        return core_family(self.core)

    @property
    def model_sram_budget_bytes(self) -> int:
        """SRAM left to the model's arena after firmware and stack.

        Capped by ``max_arena_bytes`` where the arena must fit one
        contiguous block smaller than the free total (ESP32, STM32H7).
        """
        free = self.usable_sram_bytes - self.firmware_ram_bytes - self.firmware_stack_bytes
        return min(free, self.max_arena_bytes) if self.max_arena_bytes else free

    @property
    def model_flash_budget_bytes(self) -> int:
        """Flash left to the model and its kernels after the firmware."""
        return self.usable_flash_bytes - self.firmware_flash_bytes

    @property
    def latency_fitted(self) -> bool:
        """True when the profile has its own ``[latency]`` table for its kernel library."""
        return isinstance((self.latency or {}).get(self.kernels), dict)

    def with_kernels(self, kernels: str) -> BoardProfile:
        """Return a copy of this profile using another kernel library."""
        check_choice("kernels", kernels, KERNEL_LIBRARIES, self.path or self.name)
        check_kernels_fit_core(kernels, self.core, self.name)
        from dataclasses import replace

        return replace(self, kernels=kernels)

    def at_clock(self, mhz: float, *, above_profile: bool = False) -> BoardProfile:
        """A copy of the profile running at ``mhz`` (boards often run below their maximum).

        The latency model counts cycles, so every estimate scales with the clock;
        memory figures do not change.

        Args:
            mhz: float. The clock, above 0 and up to ``limits.MAX_CLOCK_MHZ``.
            above_profile: bool, default False. Allow a clock above the profile's
                (``--overclock``); without it such a clock is refused.

        Raises:
            BoardProfileError: ``mhz`` is not a positive finite clock up to 10 GHz, or
                it is above the profile's clock without ``above_profile``.
        """
        from dataclasses import replace

        if not LIMITS["clock_mhz"].holds(mhz):
            raise BoardProfileError(
                f"--clock-mhz {mhz} is not a clock: give MHz {LIMITS['clock_mhz'].text()}"
            )
        if mhz * 1_000_000 > self.clock_hz and not above_profile:
            raise BoardProfileError(
                f"--clock-mhz {mhz:g} is above {self.name}'s {self.clock_hz / 1e6:g} MHz: "
                "give a clock up to the profile's, or add --overclock if the board runs faster."
            )
        return replace(self, clock_hz=int(round(mhz * 1_000_000)))

    def to_dict(self) -> dict[str, Any]:
        """Plain dict for JSON output."""
        from dataclasses import asdict

        data = asdict(self)
        data["hwids"] = list(self.hwids)
        data["family"] = self.family
        data["model_sram_budget_bytes"] = self.model_sram_budget_bytes
        data["model_flash_budget_bytes"] = self.model_flash_budget_bytes
        return data


def check_choice(key: str, value: Any, choices: tuple[str, ...], where: str) -> None:
    """Raise one line naming ``key`` and the choices when ``value`` is not one of them."""
    if value not in choices:
        raise BoardProfileError(f"{where}: {key} = {value!r} is not one of {', '.join(choices)}")


def check_kernels_fit_core(kernels: str, core: str, where: str) -> None:
    """Raise unless the kernel library runs on the core.

    ESP-NN is for Espressif chips only, CMSIS-NN for Arm Cortex-M only.
    """
    if kernels == "esp-nn" and core_family(core) == "cortex-m":
        raise BoardProfileError(
            f"{where}: kernels = 'esp-nn' is Espressif's library and does not run on {core}; "
            "use cmsis-nn or reference"
        )
    if kernels == "cmsis-nn" and core_family(core) != "cortex-m":
        raise BoardProfileError(
            f"{where}: kernels = 'cmsis-nn' is Arm's library for Cortex-M and does not run on "
            f"{core}; use esp-nn or reference"
        )
