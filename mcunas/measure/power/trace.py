"""A power meter's recording and its failure: the types every meter driver shares.

Kept apart from :mod:`mcunas.measure.power.meter` (which opens the drivers) so the
drivers and the virtual meter import it without importing each other.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mcunas.errors import UserError

__all__ = ["MeterError", "Trace"]


class MeterError(UserError):
    """The power meter is absent, busy or recorded nothing usable (one line, exit 2)."""


@dataclass(frozen=True)
class Trace:
    """Samples of one recording: host monotonic time, current, voltage, marker level.

    ``time_scale`` is board seconds per host second (a virtual board runs faster than
    real time; 1 for a real meter).
    """

    t_s: np.ndarray
    current_a: np.ndarray
    voltage_v: np.ndarray
    marker: np.ndarray | None = None
    time_scale: float = 1.0
