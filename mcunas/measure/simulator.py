"""The ``simulator`` measurer: estimates from the graph, the real planner and the latency model.

Example::

    from mcunas.measure.base import get_measurer
    m = get_measurer("simulator")(load_board("esp32s3")).measure(model_bytes)
    m.latency_ms, m.latency_error_pct, m.estimated  # estimated is always True
    m.fits, m.reasons  # a model that does not fit is still measured
"""

from __future__ import annotations

import contextlib
from typing import Any

from mcunas.errors import CandidateError, FatalError, ModelError
from mcunas.figures import Figures
from mcunas.measure.base import MeasureOptions
from mcunas.tflite.csource import model_crc32

__all__ = ["SimulatorMeasurer"]


class SimulatorMeasurer:
    """Measure models without a board: every figure is a labelled estimate.

    Args:
        board: the ``BoardProfile`` to simulate.
        kernels: kernel library override ("reference", "cmsis-nn", "esp-nn").
    """

    name = "simulator"

    def __init__(self, board: Any, kernels: str | None = None, **_options: Any) -> None:
        self.board = board.with_kernels(kernels) if kernels else board

    @classmethod
    def open(
        cls, board: Any, options: MeasureOptions, stack: contextlib.ExitStack
    ) -> SimulatorMeasurer:
        """The simulator for ``board`` (registered as ``simulator``)."""
        return cls(board, kernels=options.kernels)

    def test_connection(self) -> None:
        """Check that the TFLM runtime and the latency model import.

        Raises:
            FatalError: the ``tflite-micro`` package or the latency model is missing.
        """
        try:
            from tflite_micro.python.tflite_micro import runtime  # noqa: F401

            import mcunas.cost.latency  # noqa: F401
        except ImportError as exc:
            raise FatalError(f"simulator unavailable: {exc}. Reinstall mcunas.") from exc

    def measure(self, model_bytes: bytes, frontend: bytes | None = None) -> Figures:
        """Estimate latency, arena, peak SRAM and flash of one INT8 model.

        A model that does not fit the board is still measured: its ``reasons``
        then say why (``fits`` is False). ``frontend`` is not simulated here: the
        figures are the model's alone (no ``details["frontend"]``), and the trial
        adds the front end's estimated cost (:func:`mcunas.cost.profile.with_frontend`).

        Raises:
            CandidateError: the model cannot run (an op without TFLM kernel, a
                float model, a model the runtime cannot allocate).
        """
        from mcunas.cost.profile import profile_model

        try:
            prof = profile_model(bytes(model_bytes), self.board)
        except ModelError as exc:
            raise CandidateError(str(exc)) from exc
        if not prof.runnable:
            raise CandidateError("; ".join(prof.reasons) or "TFLite Micro cannot run the model")
        return prof.figures(model_crc32(bytes(model_bytes)))

    def close(self) -> None:
        """Nothing to release: the simulator holds no port or process."""
