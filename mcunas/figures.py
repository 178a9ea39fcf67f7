"""What one model costs on one board: the one figures type from profile to report.

Every measurer returns :class:`Figures` (the simulator, a board over serial, a
rack, the search's TFLM worker); the budgets check it, the trial store records
it with one call, the report reads it back. It lives in this low layer (no
imports from the rest of mcunas) so ``profile``, ``measure`` and ``search`` can
all use it.

Example::

    from mcunas.measure.opener import open_measurer
    with open_measurer("simulator", load_board("esp32s3")) as measurer:
        figures = measurer.measure(model_bytes)
    figures.latency_ms, figures.latency_error_pct, figures.estimated, figures.fits
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any

from mcunas.errors import ImplausibleFigure

__all__ = ["MAX_BYTES", "MAX_LATENCY_MS", "Figures", "OpTiming"]

# Bounds no real figure crosses: a 32-bit microcontroller addresses at most 4 GiB, and a
# model that takes an hour per inference is a measurement fault, not a candidate.
MAX_BYTES = 2**32
MAX_LATENCY_MS = 3_600_000.0
MAX_MACS = 10**15
MAX_UJ = 1e12  # a megajoule per inference: a unit mistake, not a battery budget


def _whole(value: object, limit: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value < limit


@dataclass(frozen=True)
class OpTiming:
    """Time of one op of the graph, measured or estimated.

    ``error_pct`` is the latency model's stated error for an estimated op
    (None for a measured one).
    """

    index: int
    op: str
    ms: float
    error_pct: float | None = None


@dataclass(frozen=True)
class Figures:
    """A model's cost on a board, and where the figures come from.

    ``source`` is ``simulator:<model version>``, ``board:<port>`` or
    ``virtual-board:<port>``; ``estimated`` is True for simulated figures,
    which then carry ``latency_error_pct``, the latency model's stated error.
    For a board measurement in ``--measure hybrid``, ``sim_latency_ms`` keeps
    the simulator's estimate and ``latency_error_pct`` its error against the
    board. ``calibration_source`` is the stable name a calibration stores these
    figures under when ``source`` (a port) would change from run to run (the
    virtual device's ``virtual:truth-<seed>``; empty: ``source``). ``reasons``
    says why the model cannot run or does not fit the board (empty: it fits).
    ``details`` holds what a particular source adds (audit, memory methods,
    stack and static RAM, stage timings).
    """

    source: str
    estimated: bool
    latency_ms: float
    arena_bytes: int
    peak_sram_bytes: int
    flash_bytes: int
    latency_max_ms: float | None = None
    latency_error_pct: float | None = None
    sim_latency_ms: float | None = None
    macs: int | None = None
    model_crc32: str = ""
    ops: tuple[OpTiming, ...] = ()
    reasons: tuple[str, ...] = ()
    energy_uj: float | None = None
    energy_error_pct: float | None = None
    energy_source: str = ""
    calibration_source: str = ""
    details: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        """Refuse a figure no board can produce (NaN, infinite, negative, absurd)."""
        for name in ("latency_ms", "latency_max_ms", "sim_latency_ms"):
            value = getattr(self, name)
            if value is not None and not (
                isinstance(value, (int, float)) and 0.0 <= value <= MAX_LATENCY_MS
            ):
                raise ImplausibleFigure(name, value, self.source, f"0 to {MAX_LATENCY_MS:g} ms")
        for name in ("arena_bytes", "peak_sram_bytes", "flash_bytes"):
            if not _whole(getattr(self, name), MAX_BYTES):
                raise ImplausibleFigure(name, getattr(self, name), self.source, "0 to 2**32 bytes")
        if self.macs is not None and not _whole(self.macs, MAX_MACS):
            raise ImplausibleFigure("macs", self.macs, self.source, "0 to 1e15")
        for name in ("latency_error_pct", "energy_error_pct"):
            err = getattr(self, name)
            if err is not None and not math.isfinite(err):
                raise ImplausibleFigure(name, err, self.source, "a finite number")
        energy = self.energy_uj
        if energy is not None and not (isinstance(energy, (int, float)) and 0.0 <= energy < MAX_UJ):
            raise ImplausibleFigure("energy_uj", energy, self.source, f"0 to {MAX_UJ:g} uJ")
        if energy == 0 and self.latency_ms > 0:  # a core that runs draws current
            raise ImplausibleFigure(
                "energy_uj", energy, self.source, "above 0 for a latency above 0"
            )

    @property
    def fits(self) -> bool:
        """True if nothing stops the model from running on the board."""
        return not self.reasons

    def checked_against(self, simulated: Figures) -> Figures:
        """These (board) figures with the simulator's estimate and its error against them."""
        error = None
        if self.latency_ms > 0:
            error = 100.0 * (simulated.latency_ms - self.latency_ms) / self.latency_ms
        return dataclasses.replace(
            self,
            sim_latency_ms=simulated.latency_ms,
            latency_error_pct=error,
            macs=self.macs if self.macs is not None else simulated.macs,
        )

    def to_dict(self) -> dict[str, Any]:
        """Plain dict for JSON output."""
        data = dataclasses.asdict(self)
        data["ops"] = [dataclasses.asdict(o) for o in self.ops]
        data["reasons"] = list(self.reasons)
        return data
