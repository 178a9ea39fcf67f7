"""Run TFLite Micro work (profile, INT8 accuracy, simulated measurement) in a worker process.

The host TFLite Micro runtime is native code: a model that crashes it (a
segmentation fault) would otherwise kill the whole search. The worker is one
spawned process (no TensorFlow in it), reused across trials; if it dies, the
candidate becomes a failed trial ("TFLite Micro crashed ...") and the next call
starts a fresh worker.
"""

from __future__ import annotations

import contextlib
import ctypes
import multiprocessing
import os
import signal
import threading
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from concurrent.futures.process import BrokenProcessPool
from typing import TypeVar

import numpy as np

from mcunas.boards.catalog import BoardProfile
from mcunas.errors import CandidateError
from mcunas.figures import Figures

__all__ = ["TflmWorker"]

# Seconds one TFLM job may take (profiling tries a dozen arenas; accuracy runs
# a few thousand invokes) before the candidate is given up as hung.
T = TypeVar("T")

JOB_TIMEOUT_S = 600.0

# Seconds between the worker's checks that the search process is still alive.
PARENT_POLL_S = 0.5
# Linux prctl option: the signal a process gets when its parent dies.
_PR_SET_PDEATHSIG = 1


def _init_worker(parent_pid: int) -> None:
    """Leave Ctrl-C to the search process, and die with it.

    The search stops the worker itself on Ctrl-C. If the search is killed
    (``kill -9``), the worker must not live on holding the caller's stdout and
    stderr: on Linux the kernel sends it SIGKILL (``PR_SET_PDEATHSIG``), and a
    watch thread exits it within :data:`PARENT_POLL_S` everywhere else.
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent_pid:  # the parent died before the line above
        os._exit(1)
    threading.Thread(target=_watch_parent, args=(parent_pid,), daemon=True).start()


def _watch_parent(parent_pid: int) -> None:
    while os.getppid() == parent_pid:
        time.sleep(PARENT_POLL_S)
    os._exit(1)


def _job_profile(board: BoardProfile, model_bytes: bytes) -> Figures:
    from mcunas.cost.profile import profile_model

    return profile_model(model_bytes, board).figures()


def _job_scores(model_bytes: bytes, x: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    from mcunas.tflite.evaluate import int8_scores

    return int8_scores(model_bytes, x, y)


def _job_simulate(board: BoardProfile, model_bytes: bytes) -> Figures:
    from mcunas.measure.simulator import SimulatorMeasurer

    return SimulatorMeasurer(board).measure(model_bytes)


class TflmWorker:
    """A one-process pool for TFLM jobs on one board.

    Args:
        board: BoardProfile, the board every job profiles or simulates on.
    """

    def __init__(self, board: BoardProfile) -> None:
        self.board = board
        self._pool: ProcessPoolExecutor | None = None

    def _submit(self, what: str, fn: Callable[..., T], *args: object) -> T:
        if self._pool is None:
            ctx = multiprocessing.get_context("spawn")
            self._pool = ProcessPoolExecutor(
                max_workers=1, mp_context=ctx, initializer=_init_worker, initargs=(os.getpid(),)
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

    def profile(self, model_bytes: bytes) -> Figures:
        """``profile_model(...).figures()`` in the worker: fits or not, with reasons."""
        return self._submit("profiling", _job_profile, self.board, model_bytes)

    def int8_scores(self, model_bytes: bytes, x: np.ndarray, y: np.ndarray) -> tuple[float, float]:
        """``evaluate.int8_scores`` in the worker: accuracy and mean cross-entropy."""
        return self._submit("evaluating", _job_scores, model_bytes, x, y)

    def int8_accuracy(self, model_bytes: bytes, x: np.ndarray, y: np.ndarray) -> float:
        """``evaluate.int8_accuracy`` in the worker."""
        return self.int8_scores(model_bytes, x, y)[0]

    def simulate(self, model_bytes: bytes) -> Figures:
        """``SimulatorMeasurer(board).measure`` in the worker.

        Raises:
            CandidateError: TFLite Micro cannot run the model, or crashed on it.
        """
        return self._submit("simulating", _job_simulate, self.board, model_bytes)

    def close(self) -> None:
        """Stop the worker."""
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None
