"""The virtual board's supply current, and the virtual power meter that records it.

The virtual board draws its profile's idle current, and its active current
(:func:`mcunas.cost.energy.board_power`, with 2% sample noise) while it runs a model:
warm-up, timed and profiled invokes. Its marker is high during the timed invokes
only, as the firmware's GPIO. The meter samples that timeline, so integrating it
must give back the board's own energy per inference (:meth:`PowerTimeline.energy_uj`):
the check of the whole measurement path without an instrument.
"""

from __future__ import annotations

import itertools
import threading
import time

import numpy as np

from mcunas.cost.energy import board_power
from mcunas.measure.power.trace import MeterError, Trace

__all__ = ["PowerTimeline", "VirtualMeter"]

NOISE = 0.02  # relative standard deviation of the active current samples
SAMPLES_PER_SEGMENT = 400
IDLE_SHARE = 0.1  # idle current as a share of active when the profile gives no idle_ma


class PowerTimeline:
    """When the virtual board was active (host times), and its currents.

    Args:
        board: BoardProfile the virtual board pretends to be.
        time_scale: float, the board's speed-up over real time.
    """

    def __init__(self, board: object, time_scale: float = 1.0) -> None:
        power = board_power(board)
        self.supply_v = power.supply_v
        self.active_a = power.active_ma / 1000.0
        idle = power.idle_ma if power.idle_ma is not None else power.active_ma * IDLE_SHARE
        self.idle_a = idle / 1000.0
        self.has_marker = power.marker_pin is not None
        self.time_scale = time_scale
        self._lock = threading.Lock()
        self._runs: list[tuple[float, float, float, float]] = []  # active, marker on/off
        self._rng = np.random.default_rng(0)

    def record_run(self, start: float, timed_start: float, timed_end: float, end: float) -> None:
        """One ``run``: active from ``start`` to ``end``, the marker high in between."""
        with self._lock:
            self._runs.append((start, timed_start, timed_end, end))

    def energy_uj(self, latency_ms: float) -> float:
        """The board's own energy per inference of ``latency_ms`` (board time)."""
        return self.supply_v * self.active_a * latency_ms * 1000.0

    def sample(self, t_from: float, t_to: float) -> Trace:
        """The current between two host times: steps at every edge, samples in between."""
        with self._lock:
            runs = [r for r in self._runs if r[3] >= t_from and r[0] <= t_to]
        edges = sorted({t_from, t_to, *(t for r in runs for t in r if t_from <= t <= t_to)})
        times = np.unique(
            np.concatenate(
                [np.linspace(a, b, SAMPLES_PER_SEGMENT) for a, b in itertools.pairwise(edges)]
            )
        )
        active = np.zeros(len(times), dtype=bool)
        marker = np.zeros(len(times), dtype=bool)
        for start, m_on, m_off, end in runs:
            active |= (times >= start) & (times < end)
            marker |= (times >= m_on) & (times < m_off)
        noise = 1.0 + NOISE * self._rng.standard_normal(len(times))
        current = np.where(active, self.active_a * noise, self.idle_a)
        return Trace(
            t_s=times,
            current_a=current,
            voltage_v=np.full(len(times), self.supply_v),
            marker=marker if self.has_marker else None,
            time_scale=self.time_scale,
        )


class VirtualMeter:
    """A power meter on a virtual board: records its :class:`PowerTimeline`."""

    def __init__(self, timeline: PowerTimeline) -> None:
        self.name = "virtual"
        self._timeline = timeline
        self._t0: float | None = None

    def start(self) -> None:
        """Start recording."""
        self._t0 = time.monotonic()

    def stop(self) -> Trace:
        """The samples since :meth:`start`."""
        if self._t0 is None:
            raise MeterError("virtual meter: stop() before start()")
        return self._timeline.sample(self._t0, time.monotonic())

    def close(self) -> None:
        """Nothing to release."""
