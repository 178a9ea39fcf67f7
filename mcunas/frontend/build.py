"""What a firmware needs to run ``frontend.tflite`` before the model, in one go.

The firmware (``firmware/src/frontend_stage.cc``, and ``main.cpp`` of
``best/project``) invokes the front end once per hop of a raw int16 window and
quantises each frame's int16 features into the model's int8 input. It needs
the framing (frames, frame and hop samples), the bands, the output scale and
an arena for the front end: :func:`frontend_build` gives them for a front end
and the model it feeds, and checks that the two fit together.

Example::

    fb = frontend_build(frontend_bytes, model_bytes)
    fb.defines()   # {"MCUNAS_HAS_FRONTEND": "1", "MCUNAS_FRONTEND_FRAMES": "49", ...}
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mcunas.errors import BoardProfileError, CandidateError, ModelError
from mcunas.frontend.config import FrontendConfig

__all__ = [
    "FRONTEND_ARENA_MARGIN",
    "NO_SIGNAL_OPS",
    "FrontendBuild",
    "check_signal_ops",
    "frontend_build",
    "runs_signal_ops",
    "uses_signal_kernels",
    "write_frontend_build",
]

# The host planner's arena is a 64-bit figure (larger than on a 32-bit board);
# a margin on top covers what the planner may need while it allocates.
FRONTEND_ARENA_MARGIN = 0.25
ARENA_ROUND_BYTES = 1024


@dataclass(frozen=True)
class FrontendBuild:
    """The front end's parameters as a firmware needs them (see the module's docstring)."""

    config: FrontendConfig
    frames: int
    host_arena_bytes: int
    arena_bytes: int

    def window_samples(self) -> int:
        """Samples of one inference window: the first frame plus one hop per further frame."""
        return self.config.frame_samples + (self.frames - 1) * self.config.hop_samples

    def defines(self) -> dict[str, str]:
        """The ``MCUNAS_FRONTEND_*`` macros of ``mcunas_config.h`` (C text values)."""
        c = self.config
        return {
            "MCUNAS_HAS_FRONTEND": "1",
            "MCUNAS_FRONTEND_FRAMES": f"{self.frames}u",
            "MCUNAS_FRONTEND_FRAME_SAMPLES": f"{c.frame_samples}u",
            "MCUNAS_FRONTEND_HOP_SAMPLES": f"{c.hop_samples}u",
            "MCUNAS_FRONTEND_MEL_BANDS": f"{c.mel_bands}u",
            "MCUNAS_FRONTEND_OUTPUT_BITS": str(c.output_bits),
            "MCUNAS_FRONTEND_ARENA_BYTES": f"{self.arena_bytes}u",
        }


def frontend_build(frontend_bytes: bytes, model_bytes: bytes) -> FrontendBuild:
    """The front end's firmware parameters for the model it feeds.

    Args:
        frontend_bytes: bytes, a ``frontend.tflite`` written by mcunas.
        model_bytes: bytes, the INT8 model whose input is (frames, mel bands, 1).

    Raises:
        ModelError: the bytes are no mcunas front end, the runtime cannot load it,
            or the model's input is not int8 frames x the front end's bands.
    """
    from mcunas.frontend.graph import config_of_model
    from mcunas.frontend.host import ARENA_BYTES
    from mcunas.tflite.reader import read_graph
    from mcunas.tflite.runtime import arena_report, create_interpreter

    cfg = config_of_model(frontend_bytes)
    if cfg is None:
        raise ModelError("frontend.tflite is not an mcunas audio front end (see its description)")
    inp = read_graph(model_bytes).inputs[0]
    shape = tuple(int(d) for d in inp.shape[1:])
    if inp.dtype.upper() != "INT8" or len(shape) < 2 or math.prod(shape[1:]) != cfg.mel_bands:
        raise ModelError(
            f"the model's input {inp.dtype} {shape} is not int8 frames x {cfg.mel_bands} mel "
            "bands: it was not trained on this front end's features"
        )
    interp, log = create_interpreter(frontend_bytes, ARENA_BYTES)
    if interp is None:
        raise ModelError(f"the host runtime cannot load the front end: {log.strip()[-200:]}")
    host = arena_report(interp).total_bytes
    size = math.ceil(host * (1 + FRONTEND_ARENA_MARGIN) / ARENA_ROUND_BYTES) * ARENA_ROUND_BYTES
    return FrontendBuild(cfg, shape[0], host, size)


# Why a board can run no front end: it builds with neither esp-tflite-micro (ESP32)
# nor the Arduino TFLite Micro library with mcunas's signal kernels (Cortex-M).
NO_SIGNAL_OPS = (
    "it builds with neither esp-tflite-micro (ESP32 boards) nor the Cortex-M Arduino "
    "library with mcunas's signal kernels, so frontend.tflite cannot run there: measure "
    "the model alone"
)


def runs_signal_ops(board: Any) -> bool:
    """True when the board's firmware can run a front-end graph.

    ESP32 boards build with esp-tflite-micro, which has TFLite Micro's signal ops;
    Cortex-M boards with the pinned Arduino library, which has none, so the
    firmware registers mcunas's own signal kernels (``firmware/src/signal/``).
    """
    return str(board.pio_platform).startswith("espressif32") or board.family == "cortex-m"


def uses_signal_kernels(board: Any) -> bool:
    """True when the board runs the front end on mcunas's signal kernels (Cortex-M)."""
    return not str(board.pio_platform).startswith("espressif32") and board.family == "cortex-m"


def check_signal_ops(board: Any, frontend_bytes: bytes | None = None) -> None:
    """Refuse a front-end firmware the board cannot build.

    With ``frontend_bytes`` on a Cortex-M board, also refuse a graph mcunas's signal
    kernels cannot run (an op they lack, an option out of range).

    Raises:
        BoardProfileError: the board can run no front end.
        UserError: the graph has an op or option the kernels refuse (one line naming the op).
    """
    if not runs_signal_ops(board):
        raise BoardProfileError(f"{board.name}: {NO_SIGNAL_OPS}")
    if frontend_bytes is not None and uses_signal_kernels(board):
        from mcunas.frontend.kernels.graph import check_kernel_graph

        check_kernel_graph(frontend_bytes)


def write_frontend_build(
    frontend_bytes: bytes, model_bytes: bytes, out_dir: Path, kernels_dir: Path | None = None
) -> dict[str, str]:
    """Write ``frontend_data.cc/.h`` and ``frontend_ops.h`` into ``out_dir``; return the defines.

    With ``kernels_dir``, the signal kernels' sources are copied there too.

    Raises:
        CandidateError: the front end and the model do not fit together, or the front
            end uses an op TFLite Micro cannot register.
    """
    from mcunas.frontend.csource import write_frontend_sources

    try:
        defines = frontend_build(frontend_bytes, model_bytes).defines()
    except ModelError as exc:
        raise CandidateError(f"front end and model do not fit together: {exc}") from None
    write_frontend_sources(frontend_bytes, out_dir, kernels_dir)
    return defines
