"""The measurement value objects and the ``Measurer`` interface."""

from __future__ import annotations

import importlib
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

from mcunas.errors import UserError

__all__ = ["MEASURERS", "Measurement", "Measurer", "OpTiming", "get_measurer", "register_measurer"]


@dataclass(frozen=True)
class OpTiming:
    """Time of one op of the graph, measured or estimated."""

    index: int
    op: str
    ms: float


@dataclass(frozen=True)
class Measurement:
    """What one measurement of one model on one board says, and where from.

    ``source`` is ``simulator:<model version>`` or ``board:<port>``;
    ``estimated`` is True for simulated figures, which then carry
    ``latency_error_pct``: the predictor's measured error for that board.
    """

    source: str
    estimated: bool
    latency_ms: float
    arena_bytes: int
    peak_sram_bytes: int
    flash_bytes: int
    latency_max_ms: float | None = None
    latency_error_pct: float | None = None
    model_crc32: str = ""
    ops: tuple[OpTiming, ...] = ()
    details: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """Plain dict for JSON output and the trial store."""
        data = asdict(self)
        data["ops"] = [asdict(o) for o in self.ops]
        return data


class Measurer(Protocol):
    """A way of measuring INT8 ``.tflite`` models on one kind of board.

    Example::

        measurer = get_measurer("simulator")(board)
        m = measurer.measure(model_bytes)
    """

    name: str

    def measure(self, model_bytes: bytes) -> Measurement:
        """Measure one model; raise ``CandidateError`` if it cannot run."""
        ...

    def test_connection(self) -> None:
        """Raise ``FatalError`` if this backend cannot measure anything now."""
        ...


# name -> "module:Class", imported on first use so start-up stays fast.
MEASURERS: dict[str, str] = {
    "simulator": "mcunas.measure.simulator:SimulatorMeasurer",
    "board": "mcunas.measure.board:BoardMeasurer",
    "rack": "mcunas.measure.rack:RackMeasurer",
}


def register_measurer(name: str, target: str) -> None:
    """Register a backend by name as ``"package.module:ClassName"``."""
    MEASURERS[name] = target


def get_measurer(name: str) -> type:
    """Return the measurer class registered under ``name``."""
    if name not in MEASURERS:
        raise UserError(f"Unknown measurer '{name}'. Known: {', '.join(sorted(MEASURERS))}")
    module, _, cls = MEASURERS[name].partition(":")
    return getattr(importlib.import_module(module), cls)
