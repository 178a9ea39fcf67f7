"""Whole-model latency measurements: the calibration rows and their checked loading.

A measurements CSV (the form of ``mcunas/calibration/measurements.csv``) holds one
row per model measured on a core, clock and kernel library. This module reads and
checks such a file into :class:`CalibrationRow` values; :mod:`mcunas.cost.fit.scale`
fits the latency model to them and states its error.

Example::

    rows = load_calibration()
    print(len(rows), rows[0].family)
"""

from __future__ import annotations

import csv
import io
import math
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

from mcunas.boards.catalog import CORES, KERNEL_LIBRARIES, MEMORY_PLACES
from mcunas.cost.coefficients import path_for
from mcunas.errors import UserError
from mcunas.figures import MAX_LATENCY_MS
from mcunas.inputs.formats import read_model
from mcunas.inputs.opener import read_input_text
from mcunas.limits import MAX_CLOCK_MHZ
from mcunas.paths import package_path

if TYPE_CHECKING:
    from mcunas.tflite.reader import Graph

__all__ = [
    "CALIBRATION_CSV",
    "CALIBRATION_EXTRA_CSV",
    "RECENT_RUNTIME_YEAR",
    "CalibrationRow",
    "cached_graph",
    "load_calibration",
]

CALIBRATION_DIR = package_path("calibration")
CALIBRATION_CSV = CALIBRATION_DIR / "measurements.csv"
# Further published rows mcunas added (sources checked; see calibration/README.md).
CALIBRATION_EXTRA_CSV = CALIBRATION_DIR / "measurements_extra.csv"
_REQUIRED = ("id", "model_file", "core", "clock_mhz", "kernels", "latency_ms")
# The setup keys a row may state (a profile's, mcunas/boards/checks.py's check_setup).
_SETUP_KEYS = ("weights", "arena", "cache", "flash_wait_states", "opt", "runtime", "cmsis_nn")


# Rows of older runtimes are evidence of spread, not the centre: where a code path
# has rows of this year or later, its scale is fitted on those alone. TFLM and
# CMSIS-NN from 2021 on run Cortex-M models about 1.5x faster per cycle than the
# 2020 builds (MLPerf Tiny: EK-RA6M4 with TF 2.5's TFLM vs NUCLEO-L4R5ZI with 2.3.1;
# predict/setup.py's OLD_RUNTIME_FACTOR). TF 2.5 is of May 2021.
RECENT_RUNTIME_YEAR = 2021


@dataclass(frozen=True)
class CalibrationRow:
    """One whole-model measurement: a model on a core, clock and kernel library."""

    id: str
    model: Path
    board: str
    core: str
    clock_hz: int
    kernels: str
    latency_ms: float
    runtime: str = ""
    source: str = ""
    memory: str = "sram"  # where model, arena and code lived (a profile's ``memory``)
    # the build setup its source states, as a profile's setup keys (``arena = sdram``)
    setup: tuple[tuple[str, str | bool | int], ...] = ()

    @property
    def off_baseline(self) -> bool:
        """True when the row ran with weights or arena in external memory, or caches off.

        Such a row is slower for a reason no kernel scale holds and no published pair
        has fitted (mcunas/cost/setup.py's priors): it checks a stated setup and is
        left out of every fit.
        """
        stated = dict(self.setup)
        external = {stated.get("weights"), stated.get("arena"), self.memory} & {"sdram", "psram"}
        return bool(external) or stated.get("cache") is False

    def model_bytes(self) -> bytes:
        """The row's ``.tflite``, read through the guarded opener (one line if it is not one)."""
        return read_model(self.model, f"model of calibration row {self.id}", UserError)

    @property
    def path(self) -> str:
        """The kernel code path this row measured."""
        return path_for(self.core, self.kernels)

    @property
    def runtime_year(self) -> int | None:
        """The runtime's year as its ``runtime`` text states it (the latest year named)."""
        years = [int(y) for y in re.findall(r"\b(20\d\d)\b", self.runtime)]
        return max(years) if years else None

    @property
    def recent(self) -> bool:
        """True for a runtime of :data:`RECENT_RUNTIME_YEAR` or later, or of no stated year.

        The sources that give no year describe the runtime current when they were read.
        """
        year = self.runtime_year
        return year is None or year >= RECENT_RUNTIME_YEAR

    @property
    def family(self) -> str:
        """Board family label for reports: core and kernel library."""
        return f"{self.core}/{self.kernels}"


def load_calibration(
    path: Path | None = None, models_dir: Path | None = None
) -> list[CalibrationRow]:
    """Read a measurements CSV (the form of ``mcunas/calibration/measurements.csv``).

    Every row is checked (columns, model file, core, kernels, and a latency and
    clock that are finite and physically possible) and refused with its line.

    Without ``path``: the built-in data, ``measurements.csv`` (MLPerf Tiny v0.5
    and Espressif's ESP-NN figures) followed by ``measurements_extra.csv``.

    Raises:
        UserError: missing file or columns, unreadable numbers, missing model file.
    """
    if path is None:
        return [*load_calibration(CALIBRATION_CSV), *load_calibration(CALIBRATION_EXTRA_CSV)]
    models_dir = models_dir or path.parent / "models"
    return [_calibration_row(path, n, raw, models_dir) for n, raw in _csv_rows(path)]


def _csv_rows(path: Path) -> list[tuple[int, dict[str, str]]]:
    """The rows of a measurements CSV with their line numbers (a byte-order mark is fine)."""
    text = read_input_text(path, "table", "measurements file")  # a BOM is dropped
    try:
        rows = list(csv.DictReader(io.StringIO(text, newline="")))
    except csv.Error as exc:
        raise UserError(f"Cannot read measurements file {path} as CSV: {exc}") from exc
    missing = [k for k in _REQUIRED if not rows or k not in rows[0]]
    if missing:
        raise UserError(
            f"{path}: needs columns {', '.join(_REQUIRED)}; missing {', '.join(missing)}"
        )
    return list(enumerate(rows, start=2))


def _calibration_row(path: Path, n: int, raw: dict[str, str], models_dir: Path) -> CalibrationRow:
    """One checked row of a measurements CSV.

    Its columns are present, its model is found and INT8, its core and kernels are
    known, and its latency and clock are finite and physically possible.
    """
    from mcunas.tflite.audit import is_float_model

    where = f"{path}:{n}"
    empty = [k for k in _REQUIRED if raw.get(k) in (None, "")]
    if empty:
        raise UserError(f"{where}: too few columns or empty {', '.join(empty)}")
    model = Path(raw["model_file"])
    model = model if model.is_absolute() else models_dir / model
    if not model.is_file():
        raise UserError(
            f"{where}: model file not found: {model} "
            "(relative names are looked up in models/ beside the CSV)"
        )
    if raw["core"] not in CORES:
        raise UserError(f"{where}: unknown core {raw['core']!r} (cores: {', '.join(CORES)})")
    if raw["kernels"] not in KERNEL_LIBRARIES:
        raise UserError(
            f"{where}: unknown kernels {raw['kernels']!r} (kernels: {', '.join(KERNEL_LIBRARIES)})"
        )
    if is_float_model(cached_graph(model)):
        raise UserError(f"{where}: {model} is a float model; calibration rows need INT8 models")
    memory = raw.get("memory") or "sram"
    if memory not in MEMORY_PLACES:
        raise UserError(f"{where}: unknown memory {memory!r} (places: {', '.join(MEMORY_PLACES)})")
    latency_ms = _bounded(raw["latency_ms"], 0.0, MAX_LATENCY_MS, f"{where}: latency_ms")
    clock_mhz = _bounded(raw["clock_mhz"], 0.0, MAX_CLOCK_MHZ, f"{where}: clock_mhz")
    return CalibrationRow(
        id=raw["id"],
        model=model,
        board=raw.get("board", ""),
        core=raw["core"],
        clock_hz=int(clock_mhz * 1_000_000),
        kernels=raw["kernels"],
        latency_ms=latency_ms,
        runtime=raw.get("runtime", ""),
        source=raw.get("source", ""),
        memory=memory,
        setup=_setup(raw.get("setup") or "", where),
    )


MAX_SETUP_CHARS = 200  # a setup cell is a few keys: longer is not one


def _setup(text: str, where: str) -> tuple[tuple[str, str | bool | int], ...]:
    """A ``setup`` cell, ``arena=sdram; opt=Os``, checked as a profile's keys are."""
    from mcunas.boards.checks import check_setup

    if len(text) > MAX_SETUP_CHARS:
        raise UserError(f"{where}: setup is longer than {MAX_SETUP_CHARS} characters")
    data: dict[str, str | bool | int] = {}
    for part in filter(None, (p.strip() for p in text.split(";"))):
        key, sep, value = (x.strip() for x in part.partition("="))
        if not sep:
            raise UserError(f"{where}: setup {part!r} is not key=value")
        data[key] = {"true": True, "false": False}.get(value, value)
        if key == "flash_wait_states" and value.isdigit():
            data[key] = int(value)
    unknown = sorted(set(data) - set(_SETUP_KEYS))
    if unknown:
        raise UserError(f"{where}: unknown setup key {unknown[0]!r}")
    return tuple(check_setup(data, f"{where}: setup").items())


def _bounded(text: str, low: float, high: float, what: str) -> float:
    """A number strictly above ``low`` and at most ``high``, else one line naming it."""
    try:
        value = float(text)
    except ValueError:
        raise UserError(f"{what}: bad number {text!r}") from None
    if not (math.isfinite(value) and low < value <= high):
        raise UserError(f"{what} = {text} is outside ({low:g}, {high:g}]: refused")
    return value


@lru_cache(maxsize=64)
def cached_graph(model: Path) -> Graph:
    """The graph of a model file, read once (the fits read the same models many times)."""
    from mcunas.tflite.reader import read_graph

    return read_graph(model)
