"""Run the front-end graph in the host TFLite Micro runtime, as the board runs it.

A clip is cut into frames (``FrontendConfig.frames``; a clip shorter than a
frame is zero-padded) and each frame is one invoke, in order, after a reset of
the interpreter: the noise estimate of PCAN carries from frame to frame within
a clip, as on the board, and starts afresh for each clip.

Example::

    runner = FrontendRunner(frontend_model(FrontendConfig()))
    feats = runner.clip(to_int16(samples))        # int16 (frames, mel_bands)
"""

from __future__ import annotations

import numpy as np

from mcunas.errors import ModelError
from mcunas.frontend.config import FrontendConfig
from mcunas.frontend.graph import config_of_model
from mcunas.tflite.runtime import create_interpreter

__all__ = ["ARENA_BYTES", "FrontendRunner", "scaled", "to_int16"]

ARENA_BYTES = 512 * 1024  # the host arena: the planner reports what a board needs


def to_int16(samples: np.ndarray) -> np.ndarray:
    """Float samples in [-1, 1] as int16 PCM (rounded, clipped), what a microphone gives."""
    return np.clip(np.round(np.asarray(samples, np.float64) * 32768.0), -32768, 32767).astype(
        np.int16
    )


def scaled(features: np.ndarray, cfg: FrontendConfig) -> np.ndarray:
    """int16 features as float32 natural-log units (divided by 2**output_bits)."""
    return (features.astype(np.float32) / np.float32(1 << cfg.output_bits)).astype(np.float32)


class FrontendRunner:
    """One host interpreter of a front-end model.

    Args:
        model_bytes: bytes, a model written by :func:`mcunas.frontend.graph.frontend_model`.

    Raises:
        ModelError: the bytes are no front end, or the runtime cannot load them.
    """

    def __init__(self, model_bytes: bytes) -> None:
        cfg = config_of_model(model_bytes)
        if cfg is None:
            raise ModelError("the model is not an mcunas audio front end (see its description)")
        self.cfg = cfg
        interp, log = create_interpreter(model_bytes, ARENA_BYTES)
        if interp is None:
            raise ModelError(f"the host runtime cannot load the front end: {log.strip()[-200:]}")
        self._interp = interp

    def reset(self) -> None:
        """Start afresh (the noise estimate of PCAN), as at a new clip."""
        self._interp.reset()

    def frame(self, frame: np.ndarray) -> np.ndarray:
        """Features of one int16 frame (no reset: state carries over)."""
        self._interp.set_input(np.ascontiguousarray(frame, np.int16), 0)
        self._interp.invoke()
        return np.array(self._interp.get_output(0), np.int16)

    def clip(self, samples: np.ndarray) -> np.ndarray:
        """int16 features (frames, mel_bands) of one int16 clip, after a reset."""
        cfg, x = self.cfg, np.asarray(samples, np.int16).reshape(-1)
        if len(x) < cfg.frame_samples:
            x = np.pad(x, (0, cfg.frame_samples - len(x)))
        self.reset()
        n, hop = cfg.frames(len(x)), cfg.hop_samples
        return np.stack([self.frame(x[i * hop : i * hop + cfg.frame_samples]) for i in range(n)])
