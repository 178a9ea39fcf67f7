"""The clips and front ends the signal kernels are checked on, and the host runtime's answers.

Real clips: the spoken-word dataset script's WAVs (speech with noise, silence
clips, and 10 s of white, pink and brown background noise). Edge cases:
silence, full-scale square waves (both signs and alternating every sample),
speech amplified 16 times and clipped, and the most negative sample alone.
Every front end of the searched space: each window/hop, band count, PCAN off/on.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np

from mcunas.data import spoken_words
from mcunas.data.audio import read_wav
from mcunas.frontend.config import FrontendConfig
from mcunas.frontend.graph import frontend_model
from mcunas.frontend.host import FrontendRunner, to_int16
from mcunas.search.frontends.searched import BANDS, WINDOWS

RATE = 16000


def variants() -> list[FrontendConfig]:
    """Every front end the search space holds (window/hop x bands x PCAN)."""
    out = []
    for window, bands, pcan in itertools.product(WINDOWS, BANDS, (False, True)):
        frame, hop = (float(v) for v in window.split("/"))
        out.append(FrontendConfig(frame_ms=frame, hop_ms=hop, mel_bands=bands, pcan=pcan))
    return out


def real_clips(folder: Path) -> list[np.ndarray]:
    """The spoken-word dataset's WAVs (2 words, 3 clips a class, and its noise) as int16."""
    spoken_words.make(folder, per_class=3, words=("yes", "no"))
    clips = []
    for path in sorted(folder.rglob("*.wav")):
        samples, rate = read_wav(path)
        assert rate == RATE
        clips.append(to_int16(samples))
    return clips


def edge_clips(speech: np.ndarray) -> list[np.ndarray]:
    """Silence, full-scale squares, clipped speech, and the most negative sample."""
    n = RATE // 2
    square = np.where((np.arange(n) // 40) % 2 == 0, 32767, -32768).astype(np.int16)
    alternating = np.where(np.arange(n) % 2 == 0, 32767, -32768).astype(np.int16)
    clipped = np.clip(speech.astype(np.int64) * 16, -32768, 32767).astype(np.int16)
    most_negative = np.full(n, -32768, np.int16)
    return [np.zeros(n, np.int16), square, alternating, clipped, most_negative]


def frames_of(cfg: FrontendConfig, clip: np.ndarray) -> np.ndarray:
    """The clip's frames as the host runner cuts them (int16, frames x samples)."""
    x = clip if len(clip) >= cfg.frame_samples else np.pad(clip, (0, cfg.frame_samples - len(clip)))
    n, hop = cfg.frames(len(x)), cfg.hop_samples
    return np.stack([x[i * hop : i * hop + cfg.frame_samples] for i in range(n)])


def reference(cfg: FrontendConfig, clips: list[np.ndarray]) -> tuple[bytes, list[np.ndarray]]:
    """The front end's bytes, its clips' frames, and the host TFLite Micro runtime's features."""
    model = frontend_model(cfg)
    runner = FrontendRunner(model)
    return model, [runner.clip(c) for c in clips]
