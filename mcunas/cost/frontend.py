"""Cost of the audio front-end graph on a board: latency per signal op, arena, flash.

All figures are estimates. Latency on a Cortex-M board: mcunas's signal kernels
(which the firmware runs there) retire a number of instructions per frame
counted on an emulated Cortex-M4F (``mcunas/calibration/signal_kernels_m4f.csv``,
:mod:`mcunas.frontend.kernels.counts`: QEMU counts instructions and models no
cycles), times a stated range of cycles per such instruction for the board's
core (:data:`CYCLES_PER_INSTRUCTION`); the estimate is the range's middle and
its error the range's half-width. A front end not in the file (not of the
searched space) scales each op's instructions per loop iteration. Elsewhere
(ESP32: esp-tflite-micro's kernels) each op's inner loop runs a number of times
fixed by the configuration (counted from the kernels' C loops in TFLite Micro's
``signal/src/*.cc``), times an assumed cycle count per iteration
(:data:`CYCLES_PER_ITERATION`: good to a factor of two at best). Both add TFLM's
per-op dispatch (:data:`mcunas.cost.coefficients.DISPATCH_CYCLES`), at the
board's clock. Arena: the host TFLM planner's report for the graph. Flash: the
``.tflite`` bytes (tables and graph), plus on Cortex-M the kernels' code
(``signal_kernels_m4f_footprint.csv``); SRAM on Cortex-M adds their static RAM
and deepest stack.

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
    "CYCLES_PER_INSTRUCTION",
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
# Cycles per instruction of the Cortex-M4F's count (Thumb-2, -O2), low and high, per core:
# integer DSP loops with loads, 32x32->64 multiplies (single-cycle UMLAL on M4/M33/M7) and
# taken branches (2-3 cycles) run at 1.1-1.9 on an M3/M4/M33 from flash with few wait
# states; the M7 dual-issues (0.6) but pays cache misses (1.5). The M0+ has no Thumb-2
# (64-bit products and clz in software, more instructions for the same loop): 1.8-4.0
# of its cycles per M4F instruction. Assumptions, not measured on a board.
CYCLES_PER_INSTRUCTION = {
    "cortex-m0plus": (1.8, 4.0),
    "cortex-m0": (1.8, 4.0),
    "cortex-m3": (1.1, 1.9),
    "cortex-m4": (1.1, 1.9),
    "cortex-m4f": (1.1, 1.9),
    "cortex-m33": (1.1, 1.9),
    "cortex-m7": (0.6, 1.5),
    "cortex-m55": (0.6, 1.5),
    "cortex-m85": (0.6, 1.5),
}
COUNTED_SOURCE = (
    "estimate: instructions per frame counted on an emulated Cortex-M4F (QEMU, which models "
    "no cycles) x {lo:g}-{hi:g} cycles per instruction for {core}"
)
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
    error_pct: float = FRONTEND_ERROR_PCT
    kernel_ram_bytes: int = 0  # Cortex-M: the kernels' static RAM and deepest stack

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


def _counted(cfg: FrontendConfig) -> dict[str, float] | None:
    """Instructions per frame per op on the Cortex-M4F, from the stored counts (None: no file)."""
    from mcunas.frontend.kernels.counts import load_counts

    rows = load_counts()
    if not rows:
        return None
    key = (cfg.frame_ms, cfg.hop_ms, cfg.mel_bands, cfg.pcan)
    exact = {r.op: r.instructions for r in rows if (r.frame_ms, r.hop_ms, r.bands, r.pcan) == key}
    if exact:
        return exact
    rates: dict[str, list[float]] = {}  # another front end: instructions per loop iteration
    for r in rows:
        n = _iterations(
            FrontendConfig(frame_ms=r.frame_ms, hop_ms=r.hop_ms, mel_bands=r.bands, pcan=r.pcan)
        )[r.op]
        rates.setdefault(r.op, []).append(r.instructions / max(n, 1))
    return {
        op: n * sum(rates[op]) / len(rates[op])
        for op, n in _iterations(cfg).items()
        if n and op in rates
    }


def _code_figures() -> tuple[int, int]:
    """The Cortex-M kernels' flash and SRAM (static RAM + deepest stack) bytes, from the file."""
    from mcunas.frontend.kernels.counts import load_footprint

    parts = load_footprint().values()
    return sum(p.flash_bytes for p in parts), sum(p.ram_bytes + p.stack_bytes for p in parts)


def _op_rows(cfg: FrontendConfig, board: Any) -> tuple[list[FrontendOpCost], str, float, bool]:
    """Per-op cycles: counted (a Cortex-M core) or assumed; the source, error % and which."""
    per_ms = 1000.0 / board.clock_hz
    counted = _counted(cfg) if board.core in CYCLES_PER_INSTRUCTION else None
    rows = []
    if counted is not None:
        lo, hi = CYCLES_PER_INSTRUCTION[board.core]
        mid = (lo + hi) / 2
        iterations = _iterations(cfg)
        for op, instructions in counted.items():
            cycles = instructions * mid + DISPATCH_CYCLES["op"]
            rows.append(FrontendOpCost(op, iterations[op], cycles, cycles * per_ms))
        source = COUNTED_SOURCE.format(lo=lo, hi=hi, core=board.core)
        return rows, source, 100.0 * (hi - lo) / (hi + lo), True
    for op, n in _iterations(cfg).items():
        if n:
            cycles = n * CYCLES_PER_ITERATION[op] + DISPATCH_CYCLES["op"]
            rows.append(FrontendOpCost(op, n, cycles, cycles * per_ms))
    return rows, FrontendEstimate.source, FRONTEND_ERROR_PCT, False


def estimate_frontend(model_bytes: bytes, board: Any) -> FrontendEstimate:
    """Estimate a front-end graph's latency, arena and flash on ``board``.

    Raises:
        ModelError: the bytes are not an mcunas front end.
    """
    cfg = config_of_model(model_bytes)
    if cfg is None:
        raise ModelError("the model is not an mcunas audio front end")
    rows, source, error, counted = _op_rows(cfg, board)
    frame_ms = sum(r.ms for r in rows) + DISPATCH_CYCLES["invoke"] * 1000.0 / board.clock_hz
    code_flash, code_ram = _code_figures() if counted else (0, 0)
    return FrontendEstimate(
        cfg,
        board.name,
        tuple(rows),
        frame_ms,
        frame_ms * 1000.0 / cfg.hop_ms,
        _arena_bytes(model_bytes),
        len(model_bytes) + code_flash,
        source,
        error,
        code_ram,
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
    int16 samples and the window's int16 feature rows (and on Cortex-M the signal
    kernels' static RAM and stack). Flash: the graph with its tables (and on
    Cortex-M the signal kernels' code).
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
    buffers = INT16_BYTES * (cfg.frame_samples + frames * cfg.mel_bands) + est.kernel_ram_bytes
    return FrontendCost(
        cfg,
        frames,
        est.frame_ms,
        est.frame_ms * frames,
        est.arena_bytes,
        buffers,
        est.flash_bytes,
        est.rows,
        error_pct=est.error_pct,
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
