"""Open a measurer by kind, for the search and for calibration alike.

Example::

    with open_measurer("board", load_board("esp32s3"), port="auto", check=True) as m:
        figures = m.measure(model_bytes)
"""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from mcunas.boards import BoardProfile
from mcunas.errors import UserError

__all__ = ["KINDS", "VIRTUAL_RUNS", "VIRTUAL_TIME_SCALE", "open_measurer"]

KINDS = ("simulator", "board", "rack", "virtual")
# The virtual test device: timed invokes per model, and how much faster than real time
# it runs them (its figures are what a real run would take).
VIRTUAL_RUNS = 5
VIRTUAL_TIME_SCALE = 1000.0


@contextlib.contextmanager
def open_measurer(
    kind: str,
    board: BoardProfile,
    *,
    port: str = "auto",
    rack: str | Path | None = None,
    kernels: str | None = None,
    truth_seed: int | None = 0,
    flash: bool = True,
    timeout_s: float | None = None,
    check: bool = False,
) -> Iterator[Any]:
    """The measurer of ``kind`` for ``board``, closed when the block ends.

    Args:
        kind: str, one of :data:`KINDS`: ``simulator``; ``board`` (one board on
            ``port``, ``auto`` to detect it); ``rack`` (every board of this profile in
            the ``rack.toml`` ``rack``); ``virtual`` (a virtual test device started in
            this process with the hidden costs of ``truth_seed``, or the simulator's
            own figures if None, flashed through a virtual project).
        board: BoardProfile, the board measured.
        port: str, the board's serial port or ``auto`` (kind ``board``).
        rack: str | Path | None, the ``rack.toml`` (kind ``rack``; default ``rack.toml``).
        kernels: str | None, kernel library override (kind ``simulator``).
        truth_seed: int | None, the virtual device's hidden costs (kind ``virtual``).
        flash: bool, build and flash each model first (kinds ``board``, ``rack``).
        timeout_s: float | None, seconds per model read (default the board's).
        check: bool, run ``test_connection()`` first (a broken setup fails before any
            work; default False).

    Yields:
        A :class:`~mcunas.measure.base.Measurer`. The virtual one has a
        ``calibration_source`` attribute: the stable name its figures are stored under.

    Raises:
        UserError: an unknown kind. FatalError: ``check`` found no working board.
    """
    if kind not in KINDS:
        raise UserError(f"Unknown measurer '{kind}'. Known: {', '.join(KINDS)}")
    with contextlib.ExitStack() as stack:
        measurer = _open(kind, board, stack, port, rack, kernels, truth_seed, flash, timeout_s)
        stack.callback(measurer.close)
        if check:
            measurer.test_connection()
        yield measurer


def _open(
    kind: str,
    board: BoardProfile,
    stack: contextlib.ExitStack,
    port: str,
    rack: str | Path | None,
    kernels: str | None,
    truth_seed: int | None,
    flash: bool,
    timeout_s: float | None,
) -> Any:
    if kind == "simulator":
        from mcunas.measure.simulator import SimulatorMeasurer

        return SimulatorMeasurer(board, kernels=kernels)
    from mcunas.measure.board import DEFAULT_TIMEOUT_S, BoardMeasurer

    timeout = timeout_s or DEFAULT_TIMEOUT_S
    if kind == "rack":
        from mcunas.measure.rack import RackMeasurer

        return RackMeasurer(board, rack=rack or "rack.toml", flash=flash, timeout_s=timeout)
    if kind == "board":
        from mcunas.measure.ports import check_port

        check_port(port)
        return BoardMeasurer(board, port=port, flash=flash, timeout_s=timeout)
    return _open_virtual(board, stack, truth_seed, timeout)


def _open_virtual(
    board: BoardProfile, stack: contextlib.ExitStack, truth_seed: int | None, timeout: float
) -> Any:
    from mcunas.measure.board import BoardMeasurer
    from mcunas.measure.virtual_board.device import VirtualBoard
    from mcunas.measure.virtual_board.figures import simulator_figures
    from mcunas.measure.virtual_board.project import VirtualProject
    from mcunas.measure.virtual_board.truth import truth_figures

    figures = simulator_figures if truth_seed is None else truth_figures(truth_seed)
    device = stack.enter_context(
        VirtualBoard(board, None, figures=figures, runs=VIRTUAL_RUNS, time_scale=VIRTUAL_TIME_SCALE)
    )
    work = stack.enter_context(tempfile.TemporaryDirectory(prefix="mcunas-vboard-"))
    measurer = BoardMeasurer(
        board,
        port=device.port,
        flash=True,
        timeout_s=timeout,
        project_factory=VirtualProject,
        work_dir=work,
    )
    measurer.calibration_source = f"virtual:truth-{truth_seed}"
    return measurer
