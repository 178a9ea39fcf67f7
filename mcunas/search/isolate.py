"""Run TFLite Micro work (profile, INT8 accuracy, simulated measurement) in a worker process.

The host TFLite Micro runtime is native code: a model that crashes it (a
segmentation fault) would otherwise kill the whole search. The worker is one
spawned process (no TensorFlow in it), reused across trials; if it dies, the
candidate becomes a failed trial ("TFLite Micro crashed ...") and the next call
starts a fresh worker.
"""

from __future__ import annotations

import multiprocessing
import signal
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from concurrent.futures.process import BrokenProcessPool
from typing import Any

import numpy as np

from mcunas.errors import CandidateError

__all__ = ["TflmWorker"]

# Seconds one TFLM job may take (profiling tries a dozen arenas; accuracy runs
# a few thousand invokes) before the candidate is given up as hung.
JOB_TIMEOUT_S = 600.0

_BOARDS: dict[str, Any] = {}
_SIMULATORS: dict[str, Any] = {}


def _ignore_sigint() -> None:
    """Leave Ctrl-C to the search process, which stops the worker itself."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _board(ref: str) -> Any:
    if ref not in _BOARDS:
        from mcunas.boards import load_board

        _BOARDS[ref] = load_board(ref)
    return _BOARDS[ref]


def _job_profile(ref: str, model_bytes: bytes) -> dict[str, Any]:
    from mcunas.profile import profile_model

    prof = profile_model(model_bytes, _board(ref))
    return {
        "fits": bool(prof.fits),
        "reasons": tuple(prof.reasons),
        "latency_ms": float(prof.latency.ms),
        "error_pct": prof.latency.error_pct,
        "arena_bytes": int(prof.memory.arena_bytes),
        "peak_sram_bytes": int(prof.memory.peak_sram_bytes),
        "flash_bytes": int(prof.memory.flash_bytes),
        "macs": int(prof.graph.total_macs),
        "source": str(prof.source),
    }


def _job_accuracy(model_bytes: bytes, x: np.ndarray, y: np.ndarray) -> float:
    from mcunas.evaluate import int8_accuracy

    return int8_accuracy(model_bytes, x, y)


def _job_simulate(ref: str, model_bytes: bytes) -> Any:
    if ref not in _SIMULATORS:
        from mcunas.measure.simulator import SimulatorMeasurer

        _SIMULATORS[ref] = SimulatorMeasurer(_board(ref))
    return _SIMULATORS[ref].measure(model_bytes)


class TflmWorker:
    """A one-process pool for TFLM jobs on one board.

    Args:
        board_ref: str, the board's profile name or path (loaded in the worker).
    """

    def __init__(self, board_ref: str) -> None:
        self.board_ref = board_ref
        self._pool: ProcessPoolExecutor | None = None

    def _submit(self, what: str, fn: Any, *args: Any) -> Any:
        if self._pool is None:
            ctx = multiprocessing.get_context("spawn")
            self._pool = ProcessPoolExecutor(
                max_workers=1, mp_context=ctx, initializer=_ignore_sigint
            )
        future = self._pool.submit(fn, *args)
        try:
            return future.result(timeout=JOB_TIMEOUT_S)
        except BrokenProcessPool:
            self._restart()
            raise CandidateError(
                f"TFLite Micro crashed (native fault) while {what} this model"
            ) from None
        except FutureTimeout:
            self._restart()
            raise CandidateError(f"TFLite Micro took over {JOB_TIMEOUT_S:.0f} s {what}") from None

    def _restart(self) -> None:
        if self._pool is not None:
            for proc in list(getattr(self._pool, "_processes", {}).values()):
                if proc.is_alive():
                    proc.kill()
            self._pool.shutdown(wait=False, cancel_futures=True)
        self._pool = None

    def profile(self, model_bytes: bytes) -> dict[str, Any]:
        """``profile_model`` figures as a plain dict."""
        return self._submit("profiling", _job_profile, self.board_ref, model_bytes)

    def int8_accuracy(self, model_bytes: bytes, x: np.ndarray, y: np.ndarray) -> float:
        """``evaluate.int8_accuracy`` in the worker."""
        return self._submit("evaluating", _job_accuracy, model_bytes, x, y)

    def simulate(self, model_bytes: bytes) -> Any:
        """``SimulatorMeasurer(board).measure`` in the worker (a Measurement)."""
        return self._submit("simulating", _job_simulate, self.board_ref, model_bytes)

    def close(self) -> None:
        """Stop the worker."""
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None
