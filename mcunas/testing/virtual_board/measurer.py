"""The ``virtual`` measurer: a virtual test device started in this process, measured as a board.

The device speaks the firmware's serial protocol and is flashed through a
virtual project, so this is the whole board path (build, flash, CRC, protocol)
without hardware. Its figures carry ``calibration_source``
``virtual:truth-<seed>``, stable across runs while the port is not.
"""

from __future__ import annotations

import contextlib
import tempfile

from mcunas.boards.catalog import BoardProfile
from mcunas.measure.base import MeasureOptions
from mcunas.measure.board import DEFAULT_TIMEOUT_S, BoardMeasurer

__all__ = ["VIRTUAL_RUNS", "VIRTUAL_TIME_SCALE", "VirtualBoardMeasurer"]

# The virtual test device: timed invokes per model, and how much faster than real time
# it runs them (its figures are what a real run would take).
VIRTUAL_RUNS = 5
VIRTUAL_TIME_SCALE = 1000.0


class VirtualBoardMeasurer(BoardMeasurer):
    """A :class:`BoardMeasurer` on a virtual device it starts (registered as ``virtual``)."""

    name = "virtual"

    @classmethod
    def open(
        cls, board: BoardProfile, options: MeasureOptions, stack: contextlib.ExitStack
    ) -> VirtualBoardMeasurer:
        """Start a device with the hidden costs of ``options.truth_seed``, closed with ``stack``.

        ``truth_seed`` None: the device reports the simulator's own figures.
        """
        from mcunas.testing.virtual_board.device import VirtualBoard
        from mcunas.testing.virtual_board.figures import simulator_figures
        from mcunas.testing.virtual_board.flasher import VirtualProject
        from mcunas.testing.virtual_board.truth import truth_figures

        seed = options.truth_seed
        figures = simulator_figures if seed is None else truth_figures(seed)
        device = stack.enter_context(
            VirtualBoard(
                board, None, figures=figures, runs=VIRTUAL_RUNS, time_scale=VIRTUAL_TIME_SCALE
            )
        )
        work = stack.enter_context(tempfile.TemporaryDirectory(prefix="mcunas-vboard-"))
        return cls(
            board,
            port=device.port,
            flash=True,
            timeout_s=options.timeout_s or DEFAULT_TIMEOUT_S,
            project_factory=VirtualProject,
            work_dir=work,
            calibration_source=f"virtual:truth-{seed}",
        )
