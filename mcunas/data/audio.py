"""Audio features for WAV datasets: the log-mel spectrogram the deployed model expects.

The same :func:`log_mel` computes the training inputs and is the contract for
the device's front end (port it, or feed the model its output). Parameters:

- frame: 30 ms (480 samples at 16 kHz), hop: 20 ms (320 samples), both rounded
  to whole samples; frames = 1 + (samples - frame) // hop (a clip shorter than
  one frame is zero-padded to one frame);
- window: periodic Hann; FFT size: next power of two >= frame (512 at 16 kHz);
  power spectrum |rfft|^2;
- 40 triangular mel filters (HTK mel scale, 2595 * log10(1 + f / 700)) from
  20 Hz to the Nyquist frequency, unnormalised;
- output: natural log of (mel energy + 1e-6), shape (frames, 40), float32.

A 1 s clip at 16 kHz gives 49 x 40 features, the classic keyword-spotting size.
Samples are floats in [-1, 1] (PCM divided by its full scale), mono.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from mcunas.errors import DatasetError
from mcunas.inputs.formats import read_wav_data

FRAME_MS = 30.0
HOP_MS = 20.0
N_MELS = 40
FMIN_HZ = 20.0
LOG_FLOOR = 1e-6

__all__ = ["log_mel", "read_wav", "wav_features"]


def _hz_to_mel(f: np.ndarray | float) -> np.ndarray:
    return 2595.0 * np.log10(1.0 + np.asarray(f, dtype=np.float64) / 700.0)


def _mel_to_hz(m: np.ndarray) -> np.ndarray:
    return 700.0 * (10.0 ** (m / 2595.0) - 1.0)


def mel_filterbank(sample_rate: int, n_fft: int, n_mels: int = N_MELS) -> np.ndarray:
    """Triangular mel filters, shape (n_fft // 2 + 1, n_mels).

    Args:
        sample_rate: int, samples per second.
        n_fft: int, FFT size.
        n_mels: int, number of mel bands (default 40).

    Returns:
        float32 matrix mapping a power spectrum to mel band energies.
    """
    mels = np.linspace(_hz_to_mel(FMIN_HZ), _hz_to_mel(sample_rate / 2.0), n_mels + 2)
    edges = _mel_to_hz(mels)
    freqs = np.linspace(0.0, sample_rate / 2.0, n_fft // 2 + 1)
    lower, centre, upper = edges[:-2, None], edges[1:-1, None], edges[2:, None]
    rising = (freqs[None, :] - lower) / np.maximum(centre - lower, 1e-9)
    falling = (upper - freqs[None, :]) / np.maximum(upper - centre, 1e-9)
    return np.maximum(0.0, np.minimum(rising, falling)).T.astype(np.float32)


def log_mel(samples: np.ndarray, sample_rate: int) -> np.ndarray:
    """Log-mel spectrogram of a mono clip (parameters in the module docstring).

    Args:
        samples: np.ndarray, mono samples in [-1, 1], shape (n,).
        sample_rate: int, samples per second.

    Returns:
        float32 array of shape (frames, 40).
    """
    x = np.asarray(samples, dtype=np.float32).reshape(-1)
    frame = max(1, round(sample_rate * FRAME_MS / 1000.0))
    hop = max(1, round(sample_rate * HOP_MS / 1000.0))
    if len(x) < frame:
        x = np.pad(x, (0, frame - len(x)))
    n_frames = 1 + (len(x) - frame) // hop
    n_fft = 1 << (frame - 1).bit_length()
    starts = np.arange(n_frames)[:, None] * hop + np.arange(frame)[None, :]
    window = (0.5 - 0.5 * np.cos(2.0 * np.pi * np.arange(frame) / frame)).astype(np.float32)
    spectrum = np.abs(np.fft.rfft(x[starts] * window, n=n_fft, axis=1)) ** 2
    energies = spectrum.astype(np.float32) @ mel_filterbank(sample_rate, n_fft)
    return np.log(energies + LOG_FLOOR).astype(np.float32)


# Sample rates a real recording has; anything else is a broken header.
MIN_RATE_HZ = 1_000
MAX_RATE_HZ = 384_000


def read_wav(path: Path) -> tuple[np.ndarray, int]:
    """Read a PCM WAV file as mono float samples in [-1, 1].

    Args:
        path: Path, the WAV file (8, 16, 24 or 32-bit PCM, any channel count).

    Returns:
        (samples, sample_rate).

    Raises:
        DatasetError: The file is not a readable PCM WAV file, not a regular file,
            larger than ``READ_BOUNDS["wav"]`` or longer than ``MAX_WAV_SECONDS``
            (:mod:`mcunas.inputs`: checked before its samples are read).
    """
    wav = read_wav_data(path, "WAV file", DatasetError)
    width, channels, rate, raw = wav.width, wav.channels, wav.rate, wav.raw
    if not MIN_RATE_HZ <= rate <= MAX_RATE_HZ:
        raise DatasetError(
            f"WAV file {path} has a sample rate of {rate} Hz (expected {MIN_RATE_HZ} to "
            f"{MAX_RATE_HZ} Hz): the header is broken"
        )
    if not raw or channels < 1:
        raise DatasetError(f"WAV file {path} holds no samples: remove it or record it again")
    if width == 1:
        data = (np.frombuffer(raw, np.uint8).astype(np.float32) - 128.0) / 128.0
    elif width == 2:
        data = np.frombuffer(raw, "<i2").astype(np.float32) / 32768.0
    elif width == 3:
        b = np.frombuffer(raw, np.uint8).reshape(-1, 3).astype(np.int32)
        ints = (b[:, 0] | (b[:, 1] << 8) | (b[:, 2] << 16)) << 8 >> 8
        data = ints.astype(np.float32) / 8388608.0
    elif width == 4:
        data = np.frombuffer(raw, "<i4").astype(np.float32) / 2147483648.0
    else:
        raise DatasetError(f"Cannot read WAV file {path}: unsupported sample width {width}")
    usable = len(data) - len(data) % channels
    return data[:usable].reshape(-1, channels).mean(axis=1), rate


def wav_features(
    paths: list[Path], noise_paths: list[Path] | None = None
) -> tuple[np.ndarray, str, np.ndarray | None]:
    """Log-mel features of WAV clips padded/cut to the longest clip's length.

    Args:
        paths: list[Path], WAV files that share one sample rate.
        noise_paths: list[Path] | None, background noise recordings (a
            ``_background_noise_`` folder) at the same rate, cut into clip-length
            windows for training-time noise mixing (default None).

    Returns:
        (features of shape (N, frames, 40, 1), description of the preprocessing,
        noise window features of shape (M, frames, 40, 1) or None).

    Raises:
        DatasetError: A file is unreadable or has a different sample rate.
    """
    clips = [read_wav(p) for p in paths]
    rate = clips[0][1]
    _same_rate(paths, clips, rate)
    length = max(len(s) for s, _ in clips)
    feats = []
    for samples, _ in clips:
        fixed = np.zeros(length, dtype=np.float32)
        fixed[: len(samples)] = samples[:length]
        feats.append(log_mel(fixed, rate))
    x = np.stack(feats)[..., None]
    note = (
        f"wav: mono, {rate} Hz, {length} samples (zero-padded), log-mel "
        f"{FRAME_MS:g} ms frame / {HOP_MS:g} ms hop, {N_MELS} mel bands "
        f"{FMIN_HZ:g}-{rate / 2:g} Hz, ln(energy + {LOG_FLOOR:g}) -> {x.shape[1]}x{N_MELS}"
    )
    noise = _noise_windows(noise_paths, rate, length) if noise_paths else None
    return x, note, noise


# Background noise windows kept for augmentation (a few long recordings give hundreds).
MAX_NOISE_WINDOWS = 400


def _same_rate(paths: list[Path], clips: list[tuple[np.ndarray, int]], rate: int) -> None:
    for p, (_, r) in zip(paths, clips, strict=True):
        if r != rate:
            raise DatasetError(
                f"WAV file {p} has sample rate {r} Hz, others have {rate} Hz; resample them"
            )


def _noise_windows(paths: list[Path], rate: int, length: int) -> np.ndarray | None:
    """Log-mel features of clip-length windows (half overlapping) of noise recordings."""
    clips = [read_wav(p) for p in paths]
    _same_rate(paths, clips, rate)
    windows = [
        samples[start : start + length]
        for samples, _ in clips
        for start in range(0, max(1, len(samples) - length + 1), max(1, length // 2))
    ]
    every = max(1, -(-len(windows) // MAX_NOISE_WINDOWS))  # spread over all the files
    windows = [np.pad(w, (0, length - len(w))) for w in windows[::every]]
    if not windows:
        return None
    return np.stack([log_mel(w, rate) for w in windows])[..., None]
