"""The range of every number mcunas takes: one place, used by the checks and the help.

Each :class:`Limit` is finite on both sides. The lower ends are what can work
at all (one trial, one epoch, a budget above zero); the upper ends are
physical: no microcontroller has 4 GiB of SRAM, runs at 10 GHz, classifies
ten million classes or takes an input of 100000 x 100000 pixels, and a value
beyond them is a typing or unit mistake that would otherwise make mcunas try
to allocate hundreds of GiB or wait for ever. Foundation layer: imports only
``mcunas.errors``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from mcunas.errors import UserError

__all__ = [
    "LIMITS",
    "MAX_CLASSES",
    "MAX_CLOCK_MHZ",
    "MAX_INPUT_SIDE",
    "MAX_INPUT_VALUES",
    "MAX_SEED",
    "PROFILE_MAXIMA",
    "READ_BOUNDS",
    "MAX_NUMBER_CHARS",
    "MAX_NAME_CHARS",
    "MAX_WAV_SECONDS",
    "Limit",
    "check_input_shape",
    "check_number",
    "read_bound_text",
]

MAX_SEED = 2**32 - 1  # numpy's seeds are unsigned 32-bit
MAX_CLOCK_MHZ = 10_000.0  # a clock above 10 GHz is a typing error, not a microcontroller
# More classes than this is a labelling mistake for a microcontroller classifier (and a
# label of 1e9 must not make mcunas allocate a billion-entry table).
MAX_CLASSES = 1000
# One input: a side up to 65536 samples (a raw series), 1024 channels, at most 4 Mi
# values (a 1182 x 1182 RGB image; 4 MiB as int8, more than any profile's SRAM).
MAX_INPUT_SIDE = 65_536
MAX_INPUT_CHANNELS = 1024
MAX_INPUT_VALUES = 4 * 1024 * 1024
_DAY_S = 86_400.0
# The largest whole number each board-profile key may hold: a 32-bit microcontroller
# addresses at most 4 GiB; no serial link runs above 20 Mbaud; no core at 10 GHz.
MAX_MEMORY_BYTES = 2**32
PROFILE_MAXIMA: dict[str, int] = {
    "clock_hz": int(MAX_CLOCK_MHZ * 1_000_000),
    "sram_bytes": MAX_MEMORY_BYTES,
    "flash_bytes": MAX_MEMORY_BYTES,
    "usable_sram_bytes": MAX_MEMORY_BYTES,
    "usable_flash_bytes": MAX_MEMORY_BYTES,
    "max_arena_bytes": MAX_MEMORY_BYTES,
    "ram_bytes": MAX_MEMORY_BYTES,
    "stack_bytes": MAX_MEMORY_BYTES,
    "baud": 20_000_000,
}
MAX_PEAK_MACS_PER_CYCLE = 1024.0  # a wide NPU's int8 MACs per cycle; a CPU core does 0.25-16


@dataclass(frozen=True)
class Limit:
    """A closed (or, with ``above``, half-open) range of one number.

    Args:
        low: float. The smallest value allowed (excluded with ``above``).
        high: float. The largest value allowed.
        integer: bool, default False. Whole numbers only.
        above: bool, default False. ``low`` itself is refused (e.g. "above 0").
        unit: str, default "". Shown after the numbers.
    """

    low: float
    high: float
    integer: bool = False
    above: bool = False
    unit: str = ""

    def text(self) -> str:
        """The range in words, as the help and the errors state it: ``1 to 10000``."""
        unit = f" {self.unit}" if self.unit else ""
        low = f"above {_number(self.low)}" if self.above else _number(self.low)
        return f"{low} to {_number(self.high)}{unit}"

    def holds(self, value: object) -> bool:
        """True if ``value`` is a finite number in the range (and whole if it must be)."""
        if isinstance(value, bool) or not isinstance(value, int | float):
            return False
        if not math.isfinite(value) or (self.integer and value != int(value)):
            return False
        low_ok = value > self.low if self.above else value >= self.low
        return low_ok and value <= self.high


def _number(value: float) -> str:
    """A limit as written in the help: whole numbers in full, ``4294967295`` not ``4.3e9``."""
    return str(int(value)) if value == int(value) else f"{value:g}"


# option name (without --, as the SearchConfig field) -> its range
LIMITS: dict[str, Limit] = {
    "max_trials": Limit(1, 100_000, integer=True),
    "max_draws": Limit(1, 10_000_000, integer=True),
    "epochs": Limit(1, 10_000, integer=True),
    "batch_size": Limit(1, 65_536, integer=True),
    "supernet_epochs": Limit(1, 100_000, integer=True),
    "subnets": Limit(1, 1_000_000, integer=True),
    "finetune_epochs": Limit(0, 10_000, integer=True),
    "finalists": Limit(0, 1000, integer=True),
    "seed": Limit(0, MAX_SEED, integer=True),
    "truth_seed": Limit(-1, MAX_SEED, integer=True),
    "classes": Limit(2, MAX_CLASSES, integer=True),
    "per_class": Limit(2, 100_000, integer=True),  # make-dataset: clips a class
    "test_fraction": Limit(0, 0.9, above=True),
    "clock_mhz": Limit(0, MAX_CLOCK_MHZ, above=True, unit="MHz"),
    "max_latency_ms": Limit(0, 3_600_000, above=True, unit="ms"),
    "max_sram_kb": Limit(0, 4 * 1024 * 1024, above=True, unit="KB"),
    "max_flash_kb": Limit(0, 4 * 1024 * 1024, above=True, unit="KB"),
    "max_energy_uj": Limit(0, 1e9, above=True, unit="uJ"),
    "time_budget_s": Limit(0, 365 * _DAY_S, above=True, unit="s"),
    "worker_timeout_s": Limit(0, _DAY_S, above=True, unit="s"),
    "timeout_s": Limit(0, _DAY_S, above=True, unit="s"),
}


def option_name(name: str) -> str:
    """``max_latency_ms`` -> ``--max-latency-ms``; ``time_budget_s`` -> ``--time-budget``."""
    flag = name.removesuffix("_s") if name.endswith(("timeout_s", "budget_s")) else name
    return "--" + flag.replace("_", "-")


def check_number(name: str, value: object, label: str | None = None) -> None:
    """Raise :class:`UserError` unless ``value`` lies in ``LIMITS[name]`` (None passes).

    Args:
        name: str. A key of :data:`LIMITS`.
        value: object. The value given (None: not given).
        label: str | None. How to name it [default: the option, e.g. ``--epochs``].
    """
    limit = LIMITS[name]
    if value is None or limit.holds(value):
        return
    kind = "a whole number" if limit.integer else "a number"
    raise UserError(f"{label or option_name(name)} must be {kind} {limit.text()}, got {value!r}.")


def check_input_shape(shape: tuple[int, ...], label: str = "--input-shape") -> None:
    """Refuse an input (H, W, C) no microcontroller model takes (one line, before any work)."""
    text = ",".join(str(v) for v in shape)
    if len(shape) != 3 or any(isinstance(v, bool) or not isinstance(v, int) for v in shape):
        raise UserError(f"{label} must be three whole sizes H,W,C, got {text}.")
    if min(shape) < 1 or max(shape[:2]) > MAX_INPUT_SIDE or shape[2] > MAX_INPUT_CHANNELS:
        raise UserError(
            f"{label} {text} is out of range: H and W from 1 to {MAX_INPUT_SIDE}, "
            f"C from 1 to {MAX_INPUT_CHANNELS}."
        )
    if math.prod(shape) > MAX_INPUT_VALUES:
        raise UserError(
            f"{label} {text} has {math.prod(shape):,} values per input: at most "
            f"{MAX_INPUT_VALUES:,} (4 MiB as int8, more than any microcontroller's SRAM)."
        )


# The largest file of each kind mcunas reads (bytes), checked before a byte is read
# (:mod:`mcunas.inputs`): a file beyond it is a wrong path, a damaged file or a
# hostile one, and reading it whole would exhaust memory. Each bound is far above
# what the kind holds in practice.
MiB = 1 << 20
READ_BOUNDS: dict[str, tuple[int, str]] = {
    # kind: (bytes, what fits in it)
    "wav": (64 * MiB, "a few minutes of audio; a clip may last at most 10 minutes"),
    "image": (64 * MiB, "a photograph of 20 megapixels several times over"),
    "npz": (1024 * MiB, "a dataset of a billion int8 values or 256 Mi float32 values"),
    "json": (4 * MiB, "best.json is a few KB"),
    "model": (128 * MiB, "more than the flash of any microcontroller"),
    "token": (4096, "a token is a line of a few dozen characters"),
    "pem": (1 * MiB, "a certificate chain or key is a few KB"),
    "profile": (1 * MiB, "a board profile or rack file is a few KB"),
    "table": (64 * MiB, "a table of a few hundred thousand measured rows"),
    "store": (16 * 1024 * MiB, "a trial store of millions of trials"),
    "checkpoint": (2048 * MiB, "a supernet's weights and optimizer state"),
    "text": (16 * MiB, "a project or build file"),
}
MAX_WAV_SECONDS = 600.0  # a keyword clip lasts a second, a noise recording a few minutes
# The longest string mcunas converts to a number or takes as a name or address: a
# number of 40 characters is already beyond every limit above (Python refuses to
# convert more than 4300 digits, and a longer string is a mistake, not a number).
MAX_NUMBER_CHARS = 40
MAX_NAME_CHARS = 200


def read_bound_text(kind: str) -> str:
    """A kind's read bound in words, for the help: ``64 MiB``, ``4 KiB``."""
    size = READ_BOUNDS[kind][0]
    return f"{size // MiB} MiB" if size >= MiB else f"{size // 1024} KiB"
