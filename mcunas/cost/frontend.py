"""Cost of the audio front-end graph on a board: latency per signal op, arena, flash.

All figures are estimates. Latency: each signal op's inner loop runs a number of
times fixed by the configuration (counted from the kernels' C loops in
TFLite Micro's ``signal/src/*.cc``), times an assumed cycle count per iteration
for a Cortex-M4-class core (:data:`CYCLES_PER_ITERATION`, not yet measured on a
board: good to a factor of two at best), plus TFLM's own per-op dispatch
(:data:`mcunas.cost.coefficients.DISPATCH_CYCLES`), at the board's clock.
Arena: the host TFLM planner's report for the graph. Flash: the ``.tflite``
bytes (tables and graph), not the signal kernels' code.

Example::

    est = estimate_frontend(model_bytes, load_board("nano33ble"))
    est.frame_ms, est.rows[0].op, est.arena_bytes
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

from mcunas.cost.coefficients import DISPATCH_CYCLES
from mcunas.errors import ModelError
from mcunas.frontend.config import FrontendConfig, filter_bank_tables
from mcunas.frontend.graph import config_of_model

__all__ = [
    "CYCLES_PER_ITERATION",
    "FRONTEND_ERROR_PCT",
    "BOARD_FRONTEND",
    "SPLIT",
    "FrontendCost",
    "FrontendEstimate",
    "FrontendOpCost",
    "estimate_frontend",
    "frontend_cost",
    "frontend_rows",
    "simulated_total",
]

# Assumed cycles per inner-loop iteration on a Cortex-M4-class core (no SIMD use):
# a 16x16 multiply-accumulate with its loads and store ~4; a 32x32->64 one ~8; a
# fixed-point FFT butterfly (4 multiplies, 6 adds, scaling) ~25; Sqrt64's bit loop
# (32 steps) ~130; PCAN's gain lookup, multiply and Sqrt32 ~120; Log32 ~40.
CYCLES_PER_ITERATION = {
    "SignalWindow": 4.0,  # per sample
    "SignalFftAutoScale": 4.0,  # per sample: max |x| pass, shift pass
    "SignalRfft": 25.0,  # per butterfly of the half-size complex FFT + per output bin
    "SignalEnergy": 6.0,  # per bin in [start, end)
    "SignalFilterBank": 8.0,  # per filter weight: two 32x16 -> 64-bit MACs
    "SignalFilterBankSquareRoot": 130.0,  # per band
    "SignalFilterBankSpectralSubtraction": 30.0,  # per band
    "SignalPCAN": 120.0,  # per band
    "SignalFilterBankLog": 40.0,  # per band
}
# The stated error of the front end's latency estimate: the cycle counts are assumed,
# good to a factor of two, so the upper bound is twice the estimate.
FRONTEND_ERROR_PCT = 100.0
# The ``Figures.details`` key of a board measurement whose firmware ran the front end
# before the model: a dict with its ``latency_ms`` per inference window (and
# ``latency_max_ms``, ``arena_bytes``, ``frames``, ``crc32``). The measurement's own
# ``latency_ms`` is the model's; its peak SRAM and flash already hold the front end.
# :func:`mcunas.cost.profile.with_frontend` then adds the measured time and only splits
# SRAM and flash.
BOARD_FRONTEND = "frontend"
# The ``Figures.details`` key of the split: {"frontend": {...}, "model": {...}}.
SPLIT = "cost_split"
INT16_BYTES = 2


@dataclass(frozen=True)
class FrontendOpCost:
    """One signal op's estimated cost per frame."""

    op: str
    iterations: int
    cycles: float
    ms: float


@dataclass(frozen=True)
class FrontendEstimate:
    """The front end's estimated cost on one board (per frame and per second of audio)."""

    config: FrontendConfig
    board: str
    rows: tuple[FrontendOpCost, ...]
    frame_ms: float
    per_second_ms: float
    arena_bytes: int
    flash_bytes: int
    source: str = "estimate: loop counts x assumed cycles per iteration (not measured)"

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready figures."""
        out = asdict(self)
        out["config"] = self.config.to_dict()
        return out


def _iterations(cfg: FrontendConfig) -> dict[str, int]:
    tables = filter_bank_tables(cfg)
    half = cfg.fft_length // 2
    butterflies = half // 2 * int(math.log2(half)) + half  # complex FFT + real split
    bands = cfg.mel_bands
    return {
        "SignalWindow": cfg.frame_samples,
        "SignalFftAutoScale": cfg.frame_samples,
        "SignalRfft": butterflies,
        "SignalEnergy": tables.end_index - tables.start_index,
        "SignalFilterBank": int(tables.channel_widths.astype(int).sum()),
        "SignalFilterBankSquareRoot": bands,
        "SignalFilterBankSpectralSubtraction": bands if cfg.pcan else 0,
        "SignalPCAN": bands if cfg.pcan else 0,
        "SignalFilterBankLog": bands,
    }


def _arena_bytes(model_bytes: bytes) -> int:
    from mcunas.frontend.host import ARENA_BYTES
    from mcunas.tflite.runtime import arena_report, create_interpreter

    interp, log = create_interpreter(model_bytes, ARENA_BYTES)
    if interp is None:
        raise ModelError(f"the host runtime cannot load the front end: {log.strip()[-200:]}")
    return arena_report(interp).total_bytes


def estimate_frontend(model_bytes: bytes, board: Any) -> FrontendEstimate:
    """Estimate a front-end graph's latency, arena and flash on ``board``.

    Raises:
        ModelError: the bytes are not an mcunas front end.
    """
    cfg = config_of_model(model_bytes)
    if cfg is None:
        raise ModelError("the model is not an mcunas audio front end")
    per_ms = 1000.0 / board.clock_hz
    rows = []
    for op, n in _iterations(cfg).items():
        if n == 0:
            continue
        cycles = n * CYCLES_PER_ITERATION[op] + DISPATCH_CYCLES["op"]
        rows.append(FrontendOpCost(op, n, cycles, cycles * per_ms))
    frame_ms = sum(r.ms for r in rows) + DISPATCH_CYCLES["invoke"] * per_ms
    return FrontendEstimate(
        cfg,
        board.name,
        tuple(rows),
        frame_ms,
        frame_ms * 1000.0 / cfg.hop_ms,
        _arena_bytes(model_bytes),
        len(model_bytes),
    )


@dataclass(frozen=True)
class FrontendCost:
    """What the front end adds to one inference of a model that reads ``frames`` rows.

    Latency is per inference window: all ``frames`` frames of the window computed
    (as ``mcunas predict`` and a board that classifies a whole clip do; a board that
    streams computes only the new frames per inference, so this is the upper figure).
    SRAM: the front end runs in its own ``MicroInterpreter`` and arena, beside the
    model's (two interpreters, two arenas, both allocated for the program's life:
    they add, nothing is shared), plus the buffers between them: the last frame of
    int16 samples and the window's int16 feature rows. Flash: the graph with its
    tables (not the signal kernels' code).
    """

    config: FrontendConfig
    frames: int
    frame_ms: float
    latency_ms: float
    arena_bytes: int
    buffer_bytes: int
    flash_bytes: int
    ops: tuple[FrontendOpCost, ...]
    error_pct: float = FRONTEND_ERROR_PCT
    source: str = "estimate: loop counts x assumed cycles per iteration (not measured)"

    @property
    def sram_bytes(self) -> int:
        """Arena and buffers: what the front end adds to the model's peak SRAM."""
        return self.arena_bytes + self.buffer_bytes

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready figures (per window; ``ops`` per frame)."""
        return {
            "config": self.config.to_dict(),
            "frames": self.frames,
            "frame_ms": self.frame_ms,
            "latency_ms": self.latency_ms,
            "latency_error_pct": self.error_pct,
            "arena_bytes": self.arena_bytes,
            "buffer_bytes": self.buffer_bytes,
            "sram_bytes": self.sram_bytes,
            "flash_bytes": self.flash_bytes,
            "source": self.source,
            "ops": [asdict(o) for o in self.ops],
        }


def frontend_rows(front: FrontendCost) -> list[dict[str, Any]]:
    """The front end's ops as rows of a per-layer table (``profile.layer_rows``' keys).

    Indexed ``F0``, ``F1``, ...; each op's time is per frame x the window's frames.
    """
    return [
        {
            "index": f"F{i}",
            "op": f"{row.op} (front end, x{front.frames} frames)",
            "output_shape": [],
            "dtype": "int16",
            "macs": None,
            "est_ms": row.ms * front.frames,
            "est_error_pct": front.error_pct,
            "accelerated": False,
            "live_bytes": None,
        }
        for i, row in enumerate(front.ops)
    ]


def frontend_cost(model_bytes: bytes, frames: int, board: Any) -> FrontendCost:
    """The front end's cost per inference window of ``frames`` frames on ``board``.

    Raises:
        ModelError: the bytes are not an mcunas front end.
    """
    est = estimate_frontend(model_bytes, board)
    cfg, frames = est.config, max(1, int(frames))
    buffers = INT16_BYTES * (cfg.frame_samples + frames * cfg.mel_bands)
    return FrontendCost(
        cfg,
        frames,
        est.frame_ms,
        est.frame_ms * frames,
        est.arena_bytes,
        buffers,
        est.flash_bytes,
        est.rows,
        source=est.source,
    )


def simulated_total(figures: Any, fe_sim_ms: float, fe_ms: float) -> dict[str, Any]:
    """``--measure hybrid``: the simulator's front end + model and its error against the board.

    ``figures`` is a board measurement of the model checked against the simulator
    (``sim_latency_ms`` set); the board ran the front end too (``fe_ms``). The
    returned ``sim_latency_ms`` adds the front end's estimate ``fe_sim_ms``, and
    ``latency_error_pct`` compares the two totals. Empty when nothing was simulated.
    """
    if figures.sim_latency_ms is None:
        return {}
    sim = figures.sim_latency_ms + fe_sim_ms
    measured = figures.latency_ms + fe_ms
    error = 100.0 * (sim - measured) / measured if measured > 0 else None
    return {"sim_latency_ms": sim, "latency_error_pct": error}
