"""Checks of a board profile's values: one :class:`BoardProfileError` line per mistake.

Used by :mod:`mcunas.boards.catalog` when it loads a profile; a misspelt key, a value
of the wrong type or range, or a ``[latency]`` table that would give negative or
nan estimates is refused here instead of silently changing the figures.
"""

from __future__ import annotations

import difflib
import math
import re
from typing import Any

from mcunas.errors import BoardProfileError
from mcunas.inputs.text import bounded_text
from mcunas.limits import MAX_NUMBER_CHARS, PROFILE_MAXIMA

KERNEL_LIBRARIES = ("reference", "cmsis-nn", "esp-nn")
REQUIRED_KEYS = ("name", "core", "clock_hz", "sram_bytes", "flash_bytes", "kernels")
# Where the model, the arena and the code run from (``memory`` in a profile): internal
# SRAM and flash (the default), tightly coupled memory, or external PSRAM / SDRAM.
MEMORY_PLACES = ("sram", "tcm", "psram", "sdram")
TOP_KEYS = (
    *REQUIRED_KEYS,
    "title",
    "mcu",
    "usable_sram_bytes",
    "usable_flash_bytes",
    "peak_macs_per_cycle",
    "max_arena_bytes",
    "memory",
    *("weights", "arena", "cache", "flash_wait_states", "runtime", "cmsis_nn", "opt"),
    "multicore_kernels",
    "firmware",
    "platformio",
    "serial",
    "latency",
    "power",
    "sources",
)
# keys of the sub-tables mcunas reads ([latency]: check_latency; [sources] is free-form)
TABLE_KEYS = {
    "firmware": ("ram_bytes", "stack_bytes", "flash_bytes"),
    "platformio": ("env", "platform", "board"),
    "serial": ("baud", "hwids"),
}
# [power] (read by mcunas/cost/energy.py): supply voltage, currents in mA at the profile's clock,
# the stated spread of the active current (90%, %) and the GPIO of the energy marker.
POWER_KEYS = (
    "supply_v",
    "active_ma",
    "idle_ma",
    "active_ma_psram",
    "active_ma_dual_core",
    "spread_pct",
    "marker_pin",
    "board_ma",
    "rail",
)
# Which supply a [power] figure is for: the chip's own supply pins (datasheets, MLPerf
# Tiny) or the board's input (a meter on its 3.3 V or USB input, where regulators,
# LEDs, the debug probe and external memories draw too: ``board_ma``).
POWER_RAILS = ("chip", "board")
# (lowest, highest) of each [power] number; a value outside is a unit mistake (A for mA)
_POWER_RANGES = {
    "supply_v": (0.5, 12.0),
    "active_ma": (0.001, 5000.0),
    "idle_ma": (0.0, 5000.0),
    "active_ma_psram": (0.001, 5000.0),
    "active_ma_dual_core": (0.001, 5000.0),
    "spread_pct": (0.0, 1000.0),
    "marker_pin": (0, 1023),
    "board_ma": (0.0, 5000.0),
}
# The build and memory setup a profile may state (each optional; mcunas/cost/setup.py
# turns each into a factor on the latency with its own error): where the weights and
# the arena live, the caches, the flash wait states at the profile's clock, the TFLM and
# CMSIS-NN vintage and the compiler's optimisation level.
WEIGHT_PLACES = ("flash", "sram", "tcm", "sdram", "psram")
ARENA_PLACES = ("sram", "tcm", "sdram", "psram")
OPT_LEVELS = ("O2", "Os", "O3")
MAX_WAIT_STATES = 15
# Versions: a part has at most 4 digits (the length is bounded before any conversion).
_RUNTIME = re.compile(r"tflm-(20\d\d)|(?:tflm-)?(\d{1,4})\.(\d{1,4})(?:\.\d{1,4})?")
_VERSION = re.compile(r"(\d{1,4})\.(\d{1,4})(?:\.\d{1,4})?")
HWID = re.compile(r"[0-9A-F]{4}:[0-9A-F]{4}")
# A board name is also a file and folder name (profiles, build folders): keep it plain.
BOARD_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")


def positive_int(data: dict[str, Any], key: str, where: str) -> int:
    """A required integer key that must be above 0 (and at most its ``PROFILE_MAXIMA``)."""
    value = data[key]
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        raise BoardProfileError(f"{where}: {key} must be a positive integer, got {value!r}")
    _check_maximum(key, value, where, key)
    return value


def _check_maximum(key: str, value: int, where: str, label: str) -> None:
    high = PROFILE_MAXIMA.get(key)
    if high is not None and value > high:
        raise BoardProfileError(
            f"{where}: {label} = {value} is above {high:,}, more than any microcontroller "
            "(a unit mistake?)"
        )


def optional_int(
    data: dict[str, Any],
    key: str,
    default: int,
    where: str,
    *,
    minimum: int = 1,
    label: str = "",
) -> int:
    """An optional integer key: absent gives ``default``, else an int >= ``minimum``."""
    if key not in data:
        return default
    value = data[key]
    if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
        kind = "a positive integer" if minimum > 0 else "an integer >= 0"
        raise BoardProfileError(f"{where}: {label or key} must be {kind}, got {value!r}")
    _check_maximum(key, value, where, label or key)
    return value


def check_keys(data: dict[str, Any], known: tuple[str, ...], where: str, table: str = "") -> None:
    """Refuse keys mcunas does not read: a misspelt key would otherwise be ignored."""
    unknown = [k for k in data if k not in known]
    if unknown:
        key = unknown[0]
        close = [k for k in known if k.startswith(key)] or difflib.get_close_matches(key, known, 1)
        hint = f"; did you mean {close[0]!r}?" if close else f"; known: {', '.join(known)}"
        raise BoardProfileError(f"{where}: unknown key {table}{key!r}{hint}")


# [latency] is read by mcunas/cost/latency.py and written by `latency-model fit`/`calibrate`
_LATENCYTOP_KEYS = ("source", "runtime", "base")  # base: the built-in a fit started from
_LATENCY_NUMBERS = {  # key -> smallest allowed value (scale must be above it)
    "scale": 0.0,
    "error_pct": 0.0,
    "within_10_pct": 0.0,
    "requant": 0.0,
    "op_overhead": 0.0,
    "invoke_overhead": 0.0,
    "byte": 0.0,
}
_LATENCY_TABLES = ("mac", "op_error_pct")  # variant -> cycles per unit / error %
_LATENCY_TEXT = ("source", "runtime", "error_method", "rows", "checked_variants")


# No latency coefficient (a scale, cycles per MAC or per op, an error in %) comes near a
# billion: such a value is a fit gone wrong or a typing error, and would give absurd estimates.
MAX_COEFFICIENT = 1e9


def _number_ok(value: Any, low: float, strict: bool) -> bool:
    if not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value):
        return False
    if value >= MAX_COEFFICIENT:
        return False
    return value > low if strict else value >= low


def check_latency(latency: dict[str, Any], where: str) -> None:
    """Refuse a [latency] table that would give negative, nan or mislabelled estimates."""
    for key, value in latency.items():
        if not isinstance(value, dict):
            if key not in _LATENCYTOP_KEYS:
                raise BoardProfileError(
                    f"{where}: unknown key [latency] {key!r}; give the "
                    "coefficients per library, e.g. [latency.cmsis-nn]"
                )
            continue
        if key not in KERNEL_LIBRARIES:
            raise BoardProfileError(
                f"{where}: [latency.{key}] is not a kernel library ({', '.join(KERNEL_LIBRARIES)})"
            )
        known = (*_LATENCY_NUMBERS, *_LATENCY_TABLES, *_LATENCY_TEXT)
        check_keys(value, known, where, f"[latency.{key}] ")
        for name, low in _LATENCY_NUMBERS.items():
            if name in value and not _number_ok(value[name], low, strict=name == "scale"):
                kind = "a positive number" if name == "scale" else "a number >= 0"
                raise BoardProfileError(
                    f"{where}: [latency.{key}] {name} must be {kind}, got {value[name]!r}"
                )
        for name in _LATENCY_TABLES:
            table = value.get(name, {})
            if not isinstance(table, dict):
                bad = [f"{name} = {table!r}"]
            else:
                bad = [
                    f"{name}.{k} = {v!r}"
                    for k, v in table.items()
                    if not _number_ok(v, 0, strict=False)
                ]
            if bad:
                raise BoardProfileError(
                    f"{where}: [latency.{key}] {bad[0]}: must be a table of numbers >= 0"
                )
        for name in ("rows", "checked_variants"):
            if name in value and not isinstance(value[name], list):
                raise BoardProfileError(f"{where}: [latency.{key}] {name} must be a list")


# No microcontroller core draws less than this while it runs (the most frugal, Ambiq's
# Apollo4, about 4 uA/MHz): below it, a current is a unit mistake or a typing error.
MIN_ACTIVE_UA_PER_MHZ = 1.0
_ACTIVE_KEYS = ("active_ma", "active_ma_psram", "active_ma_dual_core")


def check_power_consistency(power: dict[str, Any], clock_hz: int, where: str) -> None:
    """Refuse [power] values that contradict each other or the clock.

    An idle current above an active one, or an active current under
    ``MIN_ACTIVE_UA_PER_MHZ`` at the profile's clock (it would give an energy of
    about zero per inference, which passes any energy budget).
    """
    mhz = clock_hz / 1e6
    for key in _ACTIVE_KEYS:
        if key not in power:
            continue
        per_mhz = 1000.0 * power[key] / mhz
        if per_mhz < MIN_ACTIVE_UA_PER_MHZ:
            raise BoardProfileError(
                f"{where}: [power] {key} = {power[key]!r} mA at {mhz:g} MHz is {per_mhz:.3g} "
                f"uA/MHz; no core runs on under {MIN_ACTIVE_UA_PER_MHZ:g} uA/MHz (a unit mistake?)"
            )
        if power.get("idle_ma", 0) > power[key]:
            raise BoardProfileError(
                f"{where}: [power] idle_ma = {power['idle_ma']!r} is above {key} = "
                f"{power[key]!r}: the current between inferences must be the lower one"
            )


def check_power(power: dict[str, Any], where: str) -> None:
    """Refuse a [power] table with unknown keys or values no board has (e.g. amps for mA)."""
    check_keys(power, POWER_KEYS, where, "[power] ")
    if "rail" in power and power["rail"] not in POWER_RAILS:
        raise BoardProfileError(
            f"{where}: [power] rail = {power['rail']!r} is not one of {', '.join(POWER_RAILS)}"
        )
    for key, value in power.items():
        if key == "rail":
            continue
        low, high = _POWER_RANGES[key]
        whole = key == "marker_pin"
        ok = isinstance(value, int) if whole else isinstance(value, (int, float))
        if not ok or isinstance(value, bool) or not (low <= value <= high):
            kind = "a whole GPIO number" if whole else "a number"
            raise BoardProfileError(
                f"{where}: [power] {key} must be {kind} from {low:g} to {high:g}, got {value!r}"
            )


def check_setup(data: dict[str, Any], where: str) -> dict[str, Any]:
    """The setup keys a profile states (see :data:`WEIGHT_PLACES`), each checked.

    Returns only the keys present, so a profile that states none keeps today's
    estimate. Raises :class:`BoardProfileError` (one line) for a bad value.
    """
    setup: dict[str, Any] = {}
    for key, choices in (("weights", WEIGHT_PLACES), ("arena", ARENA_PLACES), ("opt", OPT_LEVELS)):
        if key in data:
            if data[key] not in choices:
                raise BoardProfileError(
                    f"{where}: {key} = {data[key]!r} is not one of {', '.join(choices)}"
                )
            setup[key] = data[key]
    if "cache" in data:
        if not isinstance(data["cache"], bool):
            raise BoardProfileError(f"{where}: cache must be true or false, got {data['cache']!r}")
        setup["cache"] = data["cache"]
    if "flash_wait_states" in data:
        value = data["flash_wait_states"]
        whole = isinstance(value, int) and not isinstance(value, bool)
        if not whole or not 0 <= value <= MAX_WAIT_STATES:
            raise BoardProfileError(
                f"{where}: flash_wait_states must be a whole number from 0 to {MAX_WAIT_STATES}, "
                f"got {value!r}"
            )
        setup["flash_wait_states"] = value
    for key, pattern, example in (
        ("runtime", _RUNTIME, '"tflm-2023" or a TensorFlow version such as "2.5.0"'),
        ("cmsis_nn", _VERSION, '"x.y", e.g. "6.0"'),
    ):
        if key in data:
            value = data[key]
            if isinstance(value, str):
                bounded_text(value, f"{where}: {key}", MAX_NUMBER_CHARS, BoardProfileError)
            if not isinstance(value, str) or not pattern.fullmatch(value):
                raise BoardProfileError(f"{where}: {key} must be {example}, got {value!r}")
            setup[key] = value
    return setup


def cmsis_nn_major(version: str) -> int:
    """The major number of a ``cmsis_nn`` version (checked by :func:`check_setup` first)."""
    match = _VERSION.fullmatch(version) if len(version) <= MAX_NUMBER_CHARS else None
    if match is None:
        raise BoardProfileError(f"cmsis_nn {version[:24]!r} is not a version x.y")
    return int(match.group(1))


def runtime_year(runtime: str) -> int:
    """The year a ``runtime`` value stands for: ``tflm-2023`` is 2023, TF ``2.5`` is 2021.

    TensorFlow versions map to their release year (2.0: 2019, 2.1-2.4: 2020, 2.5-2.7: 2021,
    2.8-2.11: 2022, later: 2023 on); a check with :func:`check_setup` comes first.
    """
    match = _RUNTIME.fullmatch(runtime) if len(runtime) <= MAX_NUMBER_CHARS else None
    if match is None:
        raise BoardProfileError(f"runtime {runtime[:24]!r} is not tflm-YYYY or a version")
    if match.group(1):
        return int(match.group(1))
    major, minor = int(match.group(2)), int(match.group(3))
    if major < 2:
        return 2019
    return 2019 + (minor >= 1) + (minor >= 5) + (minor >= 8) + (minor >= 12)
