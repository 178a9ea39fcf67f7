"""Training features of a WAV dataset computed by the front-end graph in the host runtime.

The model trains on exactly the numbers the board's ``frontend.tflite`` gives
(its int16 output divided by ``2**output_bits``): host and device features are
the same by construction. :func:`mcunas.data.audio.log_mel` stays as the documented
float reference the graph is tested against. Results are cached by the graph's
bytes and the clips' contents, so a second run (or a resumed search) reads them
back instead of running the graph again.

Example::

    x, note, noise = graph_wav_features(paths, FrontendConfig(), cache_dir=out / "cache")
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np

from mcunas.data.audio import read_wav
from mcunas.errors import DatasetError
from mcunas.files import write_file
from mcunas.frontend.config import FrontendConfig
from mcunas.frontend.graph import frontend_model
from mcunas.frontend.host import FrontendRunner, scaled, to_int16
from mcunas.inputs.opener import read_input

__all__ = ["clip_features", "graph_wav_features"]


def clip_features(runner: FrontendRunner, clips: list[np.ndarray]) -> np.ndarray:
    """Float features (N, frames, bands, 1) of equal-length float clips through ``runner``."""
    return np.stack([scaled(runner.clip(to_int16(c)), runner.cfg) for c in clips])[..., None]


def _key(model: bytes, paths: list[Path], noise_paths: list[Path] | None) -> str:
    h = hashlib.sha256(model)
    for p in [*paths, *(noise_paths or [])]:
        data = read_input(p, "wav", "WAV file", DatasetError)
        h.update(p.name.encode() + hashlib.sha256(data).digest())
    return h.hexdigest()[:16]


def graph_wav_features(
    paths: list[Path],
    cfg: FrontendConfig,
    noise_paths: list[Path] | None = None,
    cache_dir: Path | None = None,
) -> tuple[np.ndarray, str, np.ndarray | None]:
    """:func:`mcunas.data.audio.wav_features`, with the features made by the front-end graph.

    Clips are zero-padded or cut to the longest clip's length; every clip must
    have the front end's sample rate.

    Returns:
        (features (N, frames, bands, 1) float32, description, noise windows or None).

    Raises:
        DatasetError: a file is unreadable or has another sample rate.
    """
    model = frontend_model(cfg)
    cache = (
        cache_dir / f"frontend-features-{_key(model, paths, noise_paths)}.npz"
        if cache_dir
        else None
    )
    clips = [read_wav(p) for p in paths]
    for p, (_, rate) in zip(paths, clips, strict=True):
        if rate != cfg.sample_rate:
            raise DatasetError(
                f"WAV file {p} has sample rate {rate} Hz, the front end takes {cfg.sample_rate} Hz"
            )
    length = max(len(s) for s, _ in clips)
    note = (
        f"wav: mono, {cfg.sample_rate} Hz, {length} samples (zero-padded) -> int16, "
        f"front-end graph (TFLM signal ops) {cfg.frame_ms:g} ms frame / {cfg.hop_ms:g} ms hop, "
        f"{cfg.mel_bands} mel bands {cfg.lower_hz:g}-{cfg.upper_hz:g} Hz, "
        f"{'PCAN, ' if cfg.pcan else ''}ln / {1 << cfg.output_bits} -> "
        f"{cfg.frames(length)}x{cfg.mel_bands}"
    )
    if cache is not None and cache.exists():
        got = _cached(cache)
        if got is not None:
            return got[0], note, got[1]
    runner = FrontendRunner(model)
    fixed = [np.pad(s[:length], (0, length - len(s[:length]))) for s, _ in clips]
    x = clip_features(runner, fixed)
    noise = _noise(runner, noise_paths, length) if noise_paths else None
    if cache is not None:
        import io

        buf = io.BytesIO()
        np.savez(buf, x=x, noise=noise if noise is not None else np.zeros(0, np.float32))
        write_file(cache, buf.getvalue(), "feature cache", inside=Path(cache).parent)
    return x, note, noise


def _cached(cache: Path) -> tuple[np.ndarray, np.ndarray | None] | None:
    """The cached features and noise windows, or None for a damaged cache (made again)."""
    from mcunas.inputs.formats import load_npz

    try:
        got = load_npz(cache, "feature cache", DatasetError)
        return got["x"], (got["noise"] if got["noise"].size else None)
    except (DatasetError, KeyError):
        return None


def _noise(runner: FrontendRunner, paths: list[Path], length: int) -> np.ndarray | None:
    from mcunas.data.audio import MAX_NOISE_WINDOWS

    windows = []
    for p in paths:
        samples, rate = read_wav(p)
        if rate != runner.cfg.sample_rate:
            raise DatasetError(
                f"Noise file {p} has sample rate {rate} Hz, not {runner.cfg.sample_rate}"
            )
        step = max(1, length // 2)
        windows += [
            samples[s : s + length] for s in range(0, max(1, len(samples) - length + 1), step)
        ]
    every = max(1, -(-len(windows) // MAX_NOISE_WINDOWS))
    windows = [np.pad(w, (0, length - len(w))) for w in windows[::every]]
    return clip_features(runner, windows) if windows else None
