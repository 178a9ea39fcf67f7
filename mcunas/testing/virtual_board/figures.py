"""What a virtual board reports for a model: the simulator's figures, or fixed ones.

A :class:`mcunas.testing.virtual_board.device.VirtualBoard` takes a provider
``(model_bytes, board) -> FirmwareFigures``; :mod:`mcunas.testing.virtual_board.truth` gives a
third, a device with hidden costs.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass

from mcunas.boards.catalog import BoardProfile
from mcunas.tflite.csource import model_crc32

__all__ = [
    "FiguresProvider",
    "FirmwareFigures",
    "FrontendFigures",
    "fixed_figures",
    "frontend_figures",
    "simulator_figures",
]


@dataclass(frozen=True)
class FirmwareFigures:
    """What the virtual firmware reports for one model (estimates, not measurements)."""

    latency_ms: float
    arena_bytes: int
    stack_bytes: int
    static_ram_bytes: int
    flash_bytes: int
    ops: tuple[tuple[str, float], ...] = ()  # (op name, ms)
    error: tuple[str, str] | None = None  # (code, message) when the model cannot run


FiguresProvider = Callable[[bytes, BoardProfile], FirmwareFigures]
# Simulated figures per (model CRC, size, board, kernels): a re-flashed model is not re-simulated.
_FIGURES_CACHE: dict[tuple[str, int, str, str], FirmwareFigures] = {}
_CACHE_LOCK = threading.Lock()


def simulator_figures(model_bytes: bytes, board: BoardProfile) -> FirmwareFigures:
    """FirmwareFigures from the simulator (``cost.profile.profile_model``) for a model and board.

    The stack high-water mark is not simulated: a third of the firmware's stack
    stands in for it.
    """
    key = (model_crc32(model_bytes), len(model_bytes), board.name, board.kernels)
    with _CACHE_LOCK:
        if key in _FIGURES_CACHE:
            return _FIGURES_CACHE[key]
    from mcunas.cost.profile import profile_model

    prof = profile_model(model_bytes, board)
    error = None
    if not prof.fits:
        over = prof.memory.arena_bytes > board.model_sram_budget_bytes
        error = ("arena_too_small" if over else "model_not_runnable", "; ".join(prof.reasons))
    figures = FirmwareFigures(
        latency_ms=float(prof.latency.ms),
        arena_bytes=int(prof.memory.arena_bytes),
        stack_bytes=board.firmware_stack_bytes // 3,
        static_ram_bytes=board.firmware_ram_bytes,
        flash_bytes=int(prof.memory.flash_bytes),
        ops=tuple((o.op, float(o.ms)) for o in prof.latency.ops),
        error=error,
    )
    with _CACHE_LOCK:
        _FIGURES_CACHE[key] = figures
    return figures


def fixed_figures(latency_ms: float, arena_bytes: int) -> FiguresProvider:
    """A provider that reports the same latency and arena for any model (no simulator)."""

    def provider(model_bytes: bytes, board: BoardProfile) -> FirmwareFigures:
        return FirmwareFigures(
            latency_ms=latency_ms,
            arena_bytes=arena_bytes,
            stack_bytes=board.firmware_stack_bytes // 3,
            static_ram_bytes=board.firmware_ram_bytes,
            flash_bytes=board.firmware_flash_bytes + len(model_bytes),
            ops=(("CONV_2D", latency_ms * 0.8), ("FULLY_CONNECTED", latency_ms * 0.2)),
        )

    return provider


@dataclass(frozen=True)
class FrontendFigures:
    """What the virtual firmware reports for its front end (an estimate, not a measurement)."""

    crc32: str
    frames: int
    frame_samples: int
    hop_samples: int
    latency_ms: float  # one inference window: ``frames`` invokes
    arena_bytes: int
    model_bytes: int


def frontend_figures(frontend: bytes, model_bytes: bytes, board: BoardProfile) -> FrontendFigures:
    """Run a raw window through both graphs in the host TFLM runtime, as the firmware does.

    The synthetic window goes through ``frontend`` (one invoke per hop) and its
    features through the model, so a front end and model that cannot run together
    fail here as on the board. The latency is the simulator's per-frame estimate
    times the frames; the arena is the host planner's.

    Raises:
        ModelError: the front end and the model do not fit together or cannot run.
        CandidateError: the model cannot run in the host runtime.
    """
    import numpy as np

    from mcunas.cost.frontend import estimate_frontend
    from mcunas.frontend.build import frontend_build
    from mcunas.frontend.host import FrontendRunner, scaled
    from mcunas.tflite.evaluate import int8_outputs

    fb = frontend_build(frontend, model_bytes)
    window = np.random.default_rng(0).integers(-8192, 8192, fb.window_samples(), np.int16)
    feats = scaled(FrontendRunner(frontend).clip(window), fb.config)
    int8_outputs(model_bytes, feats.reshape(1, fb.frames, -1, 1))
    est = estimate_frontend(frontend, board)
    return FrontendFigures(
        crc32=model_crc32(frontend),
        frames=fb.frames,
        frame_samples=fb.config.frame_samples,
        hop_samples=fb.config.hop_samples,
        latency_ms=est.frame_ms * fb.frames,
        arena_bytes=est.arena_bytes,
        model_bytes=len(frontend),
    )
