"""The ``Measurer`` interface and its one registry; every measurer returns ``Figures``.

A backend is a class registered by name (``register_measurer``, or a
``mcunas.measurers`` entry point of an installed package, as platformio finds a
test runner by name) with a ``open(board, options, stack)`` class method;
:func:`mcunas.measure.opener.open_measurer` opens any registered name, for the
search, ``calibrate``, ``bench`` and the tests alike.
"""

from __future__ import annotations

import contextlib
import importlib
from dataclasses import dataclass
from importlib.metadata import entry_points
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from mcunas.errors import UserError
from mcunas.figures import Figures

if TYPE_CHECKING:
    from mcunas.boards.catalog import BoardProfile

__all__ = [
    "ENTRY_POINT_GROUP",
    "MEASURERS",
    "MeasureOptions",
    "Measurer",
    "MeasurerClass",
    "get_measurer",
    "measurer_names",
    "register_measurer",
]

# Installed packages add measurers under this entry-point group: ``name = "pkg.mod:Class"``.
ENTRY_POINT_GROUP = "mcunas.measurers"


class Measurer(Protocol):
    """A way of measuring INT8 ``.tflite`` models on one kind of board.

    Every measurer is given the front end the model's input goes through, as the
    graph a board runs (:func:`mcunas.frontend.port.graph_of`), or None. One whose
    board runs it reports its figures in ``details["frontend"]``
    (:data:`mcunas.cost.frontend.BOARD_FRONTEND`); one that cannot measures the
    model alone, and the front end's estimated cost is added by the caller
    (:func:`mcunas.cost.profile.with_frontend`).

    Example::

        with open_measurer("simulator", board) as measurer:  # mcunas.measure.opener
            figures = measurer.measure(model_bytes)
    """

    name: str

    def measure(self, model_bytes: bytes, frontend: bytes | None = None) -> Figures:
        """Measure one model (after ``frontend``); raise ``CandidateError`` if it cannot run."""
        ...

    def test_connection(self) -> None:
        """Raise ``FatalError`` if this backend cannot measure anything now."""
        ...

    def close(self) -> None:
        """Release ports, workers and processes; safe to call twice."""
        ...


@dataclass(frozen=True)
class MeasureOptions:
    """What opening a measurer may use; each backend reads the fields it needs.

    Attributes:
        port: the board's serial port, or ``auto`` to detect it (``board``).
        rack: the ``rack.toml`` (``rack``; default ``rack.toml``).
        kernels: kernel library override (``simulator``).
        truth_seed: the virtual device's hidden costs; None: the simulator's own
            figures (``virtual``).
        flash: build and flash each model first (``board``, ``rack``).
        timeout_s: seconds per model read (default the board's).
        power: a power meter spec (``board``).
        trace: log raw serial bytes to this file (``board``).
        pio: the PlatformIO executable (``board``).
        project_factory: the firmware project maker (``board``; tests inject one).
        work_dir: the firmware project folder (``board``; default
            ``$MCUNAS_HOME/build/<board>-<port>``).
    """

    port: str = "auto"
    rack: str | Path | None = None
    kernels: str | None = None
    truth_seed: int | None = 0
    flash: bool = True
    timeout_s: float | None = None
    power: str | None = None
    trace: str | None = None
    pio: str = "pio"
    project_factory: Any = None
    work_dir: str | Path | None = None


class MeasurerClass(Protocol):
    """What a registered backend is: a class that opens its measurer."""

    name: str

    @classmethod
    def open(
        cls, board: BoardProfile, options: MeasureOptions, stack: contextlib.ExitStack
    ) -> Measurer:
        """A measurer of ``board``; what it starts besides itself is closed with ``stack``."""
        ...


# name -> "module:Class", imported on first use so start-up stays fast.
MEASURERS: dict[str, str] = {
    "simulator": "mcunas.measure.simulator:SimulatorMeasurer",
    "board": "mcunas.measure.board:BoardMeasurer",
    "rack": "mcunas.measure.rack:RackMeasurer",
    "virtual": "mcunas.testing.virtual_board.measurer:VirtualBoardMeasurer",
}


def register_measurer(name: str, target: str) -> None:
    """Register a backend by name as ``"package.module:ClassName"`` (a :class:`MeasurerClass`)."""
    MEASURERS[name] = target


def _installed() -> dict[str, str]:
    """Measurers that installed packages declare as ``mcunas.measurers`` entry points."""
    return {ep.name: ep.value for ep in entry_points(group=ENTRY_POINT_GROUP)}


def measurer_names() -> list[str]:
    """Every name :func:`get_measurer` knows: the built-in and registered ones, then installed."""
    return list(dict.fromkeys([*MEASURERS, *_installed()]))


def get_measurer(name: str) -> type[MeasurerClass]:
    """Return the measurer class registered under ``name``.

    Raises:
        UserError: no measurer has that name, or its class cannot be imported.
    """
    target = MEASURERS.get(name) or _installed().get(name)
    if target is None:
        raise UserError(f"Unknown measurer '{name}'. Known: {', '.join(measurer_names())}")
    module, _, cls = target.partition(":")
    try:
        return getattr(importlib.import_module(module), cls)
    except (ImportError, AttributeError) as exc:
        raise UserError(f"Measurer '{name}' ({target}) cannot be loaded: {exc}") from exc
