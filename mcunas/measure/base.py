"""The ``Measurer`` interface and its registry; every measurer returns ``Figures``."""

from __future__ import annotations

import importlib
from typing import Protocol

from mcunas.errors import UserError
from mcunas.figures import Figures

__all__ = ["MEASURERS", "Measurer", "get_measurer", "register_measurer"]


class Measurer(Protocol):
    """A way of measuring INT8 ``.tflite`` models on one kind of board.

    Example::

        with open_measurer("simulator", board) as measurer:  # mcunas.measure.opener
            figures = measurer.measure(model_bytes)
    """

    name: str

    def measure(self, model_bytes: bytes) -> Figures:
        """Measure one model; raise ``CandidateError`` if it cannot run."""
        ...

    def test_connection(self) -> None:
        """Raise ``FatalError`` if this backend cannot measure anything now."""
        ...

    def close(self) -> None:
        """Release ports, workers and processes; safe to call twice."""
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
