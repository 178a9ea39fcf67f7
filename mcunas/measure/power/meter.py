"""Power meters: record a board's supply current during a run and integrate its energy.

A meter is named by a spec (``mcunas bench --power``, a rack board's ``power`` key):

- ``joulescope`` or ``joulescope:SERIAL``: a Joulescope JS110/JS220 (package
  ``joulescope``) in series with the board's supply;
- ``ppk2:PORT``: a Nordic Power Profiler Kit II in ampere-meter mode (package
  ``ppk2-api``), its logic input D0 on the board's marker pin if wired;
- ``virtual``: the virtual board's own meter (tests and demos).

The meter records from just before ``run`` is sent until the result arrives. The
energy of the timed invokes is the integral of voltage x current while the marker
GPIO is high (the firmware raises it around them), or, with no marker in the
trace, between the host's arrival times of the firmware's ``mark`` lines; divided
by the number of timed invokes it is the energy per inference.

Example::

    with open_meter("ppk2:/dev/ttyACM1", board_port="/dev/ttyACM0") as meter:
        meter.start(); ...; trace = meter.stop()
    uj, method = run_energy(trace, marks, runs=20)
"""

from __future__ import annotations

import contextlib
import importlib
from collections.abc import Iterator, Sequence
from typing import Any, Protocol

import numpy as np

from mcunas.measure.power.trace import MeterError, Trace

__all__ = [
    "MeterError",
    "PowerMeter",
    "Trace",
    "energy_between",
    "marker_window",
    "open_meter",
    "parse_meter",
    "run_energy",
]

METER_KINDS = ("joulescope", "ppk2", "virtual")
# Meters opened by a test device's own module, by name ("module:function", called with the
# board's port), so that no product module imports a test device.
METER_OPENERS = {"virtual": "mcunas.testing.virtual_board.meter:open_virtual_meter"}
# Fewer samples than this in the integrated window is no measurement.
MIN_SAMPLES = 10


class PowerMeter(Protocol):
    """What :class:`~mcunas.measure.board.BoardMeasurer` needs from a meter."""

    name: str

    def start(self) -> None:
        """Start recording."""

    def stop(self) -> Trace:
        """Stop recording and return the samples."""

    def close(self) -> None:
        """Release the instrument."""


def parse_meter(spec: str) -> tuple[str, str]:
    """``(kind, address)`` of a meter spec, e.g. ``("ppk2", "/dev/ttyACM1")``.

    Raises:
        MeterError: an unknown kind, or ``ppk2`` without its port.
    """
    kind, _, address = spec.strip().partition(":")
    if kind not in METER_KINDS:
        raise MeterError(
            f"unknown power meter {spec!r}: give joulescope[:SERIAL], ppk2:PORT or virtual"
        )
    if kind == "ppk2" and not address:
        raise MeterError("ppk2 needs its serial port: --power ppk2:/dev/ttyACM1")
    return kind, address


@contextlib.contextmanager
def open_meter(spec: str, *, board_port: str = "", supply_v: float = 3.3) -> Iterator[PowerMeter]:
    """Open the meter named by ``spec``, closed when the block ends.

    Args:
        spec: str, see the module docstring.
        board_port: str, the measured board's serial port (``virtual`` finds its board by it).
        supply_v: float, the board's supply voltage (a PPK2 in ampere mode does not measure it).

    Raises:
        MeterError: the meter's driver is not installed, the meter is absent or busy.
    """
    kind, address = parse_meter(spec)
    if kind in METER_OPENERS:
        module, _, name = METER_OPENERS[kind].partition(":")
        meter: Any = getattr(importlib.import_module(module), name)(board_port)
    else:
        from mcunas.measure.power import drivers

        meter = (
            drivers.JoulescopeMeter(address)
            if kind == "joulescope"
            else drivers.Ppk2Meter(address, supply_v)
        )
    try:
        yield meter
    finally:
        meter.close()


def energy_between(trace: Trace, start_s: float, end_s: float) -> tuple[float, int]:
    """(energy in uJ, samples used) of ``trace`` between two host times (trapezoids)."""
    inside = (trace.t_s >= start_s) & (trace.t_s <= end_s)
    n = int(inside.sum())
    if n < 2:
        return 0.0, n
    t = trace.t_s[inside] * trace.time_scale
    power = trace.current_a[inside] * trace.voltage_v[inside]
    joules = float(np.sum((power[1:] + power[:-1]) * np.diff(t)) / 2.0)
    return joules * 1e6, n


def marker_window(trace: Trace) -> tuple[float, float] | None:
    """Host times of the marker's first rise and the following fall, or None."""
    if trace.marker is None or len(trace.marker) < 2:
        return None
    level = trace.marker.astype(bool)
    rises = np.flatnonzero(~level[:-1] & level[1:]) + 1
    if not len(rises):
        return None
    # the first low sample after the high stretch
    falls = np.flatnonzero(level[rises[0] : -1] & ~level[rises[0] + 1 :]) + rises[0] + 1
    if not len(falls):
        return None
    return float(trace.t_s[rises[0]]), float(trace.t_s[falls[0]])


def _mark_window(marks: Sequence[tuple[str, float]]) -> tuple[float, float] | None:
    starts = [t for edge, t in marks if edge == "start"]
    ends = [t for edge, t in marks if edge == "end"]
    if not starts or not ends or ends[-1] <= starts[-1]:
        return None
    return starts[-1], ends[-1]


def run_energy(
    trace: Trace, marks: Sequence[tuple[str, float]], runs: int, meter: str = "meter"
) -> tuple[float, str]:
    """Energy per timed invoke (uJ) and how its window was found.

    Raises:
        MeterError: no samples, no window (marker never toggled and no ``mark`` lines),
            or too few samples inside it.
    """
    if len(trace.t_s) == 0:
        raise MeterError(f"{meter} returned no samples: is it connected and powering the board?")
    window, method = marker_window(trace), "marker GPIO"
    if window is None:
        window, method = _mark_window(marks), "serial mark lines"
    if window is None:
        raise MeterError(
            f"{meter}: the marker never toggled and the firmware sent no mark lines: "
            "wire [power] marker_pin to the meter's input, or update the firmware"
        )
    uj, n = energy_between(trace, *window)
    if n < MIN_SAMPLES:
        raise MeterError(
            f"{meter}: only {n} samples while the model ran ({window[1] - window[0]:.4f} s): "
            "raise the meter's sample rate or the firmware's runs"
        )
    return uj / max(runs, 1), method
