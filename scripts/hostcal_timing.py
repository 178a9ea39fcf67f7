"""The host calibration's timing: each model's invokes timed in a forked child.

Every model runs in a forked child (:func:`mcunas.tflite.runtime.run_forked`, so
a TFLM abort is contained): interpreter created, random int8 input, warm-up,
then batches of individually timed invokes (``time.perf_counter_ns``). The
statistic is the median of the batch minima (:class:`Timing`).
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass

import numpy as np
from hostcal_models import HostModel

ARENA_BYTES = 16 * 1024 * 1024


@dataclass(frozen=True)
class Timing:
    """One model's host invoke time: the statistic, its batch minima, the trimmed mean."""

    ms: float  # median of the batch minima
    batch_min_ms: tuple[float, ...]
    trimmed_ms: float  # 20% trimmed mean of every timed invoke (for comparison)
    invokes: int

    @property
    def spread_pct(self) -> float:
        """(max - min) of the batch minima over their median, in percent."""
        return (max(self.batch_min_ms) - min(self.batch_min_ms)) / self.ms * 100.0


def _time_in_child(model_bytes: bytes, batches: int, batch_ms: float) -> tuple:
    """(batch minima in ns, all invoke times in ns); runs in a forked child."""
    from mcunas.errors import CandidateError
    from mcunas.tflite.runtime import create_interpreter

    try:
        interp, log = create_interpreter(model_bytes, ARENA_BYTES)
    except TypeError as exc:  # the runtime's Python wrapper on a buffer with no subgraphs
        raise CandidateError(f"host TFLM could not read the model: {exc}") from None
    if interp is None:
        raise CandidateError(f"host TFLM could not load the model: {log.strip()[-200:]}")
    details = interp.get_input_details(0)
    rng = np.random.default_rng(0)
    interp.set_input(rng.integers(-128, 128, size=details["shape"], dtype=np.int8), 0)
    clock = time.perf_counter_ns
    start = clock()
    warm = 0
    while warm < 3 or clock() - start < 5e6:  # warm-up: 3 invokes and at least 5 ms
        interp.invoke()
        warm += 1
    per_invoke = (clock() - start) / warm
    n = int(min(max(batch_ms * 1e6 / per_invoke, 5), 5000))
    minima, times = [], []
    for _ in range(batches):
        batch = []
        for _ in range(n):
            t0 = clock()
            interp.invoke()
            batch.append(clock() - t0)
        minima.append(min(batch))
        times.extend(batch)
    return minima, times


def time_model(model_bytes: bytes, batches: int = 5, batch_ms: float = 40.0) -> Timing:
    """Time one model's invoke on the host (in a forked child, so a TFLM abort is contained).

    Raises:
        mcunas.tflite.runtime.NativeCrash: the runtime died; CandidateError: it could not load.
    """
    from mcunas.tflite.runtime import run_forked

    return _timing(*run_forked(_time_in_child, bytes(model_bytes), batches, batch_ms))


def _timing(minima: list[float], times: list[float]) -> Timing:
    times = sorted(times)
    cut = len(times) // 5
    trimmed = statistics.fmean(times[cut : len(times) - cut] or times)
    return Timing(
        statistics.median(minima) / 1e6, tuple(m / 1e6 for m in minima), trimmed / 1e6, len(times)
    )


def measure_all(
    models: list[HostModel],
    rounds: int,
    batch_ms: float,
) -> tuple[dict[str, Timing], dict[str, str]]:
    """Time every model in ``rounds`` interleaved rounds (one batch per model per round).

    A busy spell on the shared machine then slows one round of many models
    rather than every batch of one model, and the median over rounds drops it.
    A model the host runtime cannot run is reported, not fatal.
    """
    from mcunas.errors import McunasError
    from mcunas.tflite.runtime import NativeCrash, run_forked

    got: dict[str, tuple[list, list]] = {m.name: ([], []) for m in models}
    failed: dict[str, str] = {}
    for _ in range(rounds):
        for m in models:
            if m.name in failed:
                continue
            try:
                minima, times = run_forked(_time_in_child, m.model_bytes, 1, batch_ms)
            except (NativeCrash, McunasError) as exc:
                failed[m.name] = str(exc)
                continue
            got[m.name][0].extend(minima)
            got[m.name][1].extend(times)
    timings = {name: _timing(*mt) for name, mt in got.items() if name not in failed}
    return timings, failed
