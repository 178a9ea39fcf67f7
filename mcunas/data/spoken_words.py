"""A keyword-spotting WAV dataset made offline with espeak-ng and sox.

``mcunas make-dataset spoken-words OUT`` writes it. Ten command words (by
default the ten of the common 12-class keyword-spotting task), ``_unknown_``
(other words) and ``_silence_`` (noise alone), each clip 1 s of 16 kHz mono
16-bit PCM: a word spoken by one of espeak-ng's English voices with one of its
voice variants, at a random speed, pitch and amplitude, resampled to 16 kHz by
sox, placed at a random offset and mixed with white, pink or brown noise at a
random signal-to-noise ratio. ``train/`` also gets a ``_background_noise_``
folder of longer noise recordings, which a search mixes into training clips::

    OUT/train/<class>/<class>_<n>.wav    OUT/test/<class>/<class>_<n>.wav
    OUT/train/_background_noise_/*.wav   OUT/manifest.json

Everything is drawn from one seed, so the same command writes the same bytes
(espeak-ng is deterministic for the same arguments; sox runs with ``-R -D``:
repeatable, no dither). The split is speaker-disjoint: the test clips use
voice variants no training clip uses. Nothing is installed here: without
espeak-ng or sox :func:`check_tools` says which ``apt-get install`` line to run.

Example::

    check_tools()
    manifest = make(Path("data/kws"), per_class=30, seed=0)
"""

from __future__ import annotations

import io
import json
import shutil
import subprocess
import wave
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from mcunas.errors import UserError
from mcunas.files import plain_name, write_file

__all__ = [
    "NOISE_FOLDER",
    "SILENCE",
    "UNKNOWN",
    "WORDS",
    "check_out",
    "check_tools",
    "make",
    "run_tool",
]

WORDS = ("yes", "no", "up", "down", "left", "right", "on", "off", "stop", "go")
UNKNOWN_WORDS = (
    "bed", "bird", "cat", "dog", "happy", "house", "marvin", "sheila", "tree", "wow",
    "zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine",
    "learn", "follow", "forward", "backward", "visual",
)  # fmt: skip
UNKNOWN, SILENCE, NOISE_FOLDER = "_unknown_", "_silence_", "_background_noise_"
# espeak-ng's own English voices (not the mbrola ones, a separate package).
VOICES = (
    "en-us", "en-gb", "en-gb-scotland", "en-gb-x-gbclan", "en-gb-x-rp",
    "en-gb-x-gbcwmd", "en-029", "en-us-nyc",
)  # fmt: skip
VARIANTS = (
    "m1", "m2", "m3", "m4", "m5", "m6", "m7", "f1", "f2", "f3", "f4", "f5",
    "croak", "klatt", "klatt2", "klatt3", "Alex", "Andy", "Annie", "Denis", "Hugo",
    "Lee", "Mario", "Michael", "Tweaky", "Storm", "anika", "edward", "john", "linda",
)  # fmt: skip
RATE = 16000
CLIP_SAMPLES = RATE  # 1 s
SPEED_WPM = (110, 220)  # espeak-ng -s range, words per minute
PITCH = (20, 80)  # espeak-ng -p range, 0..99
SNR_DB = (5.0, 30.0)  # speech to noise, per clip
NOISE_KINDS = ("white", "pink", "brown")
BACKGROUND_SECONDS = 10
TOOLS = ("espeak-ng", "sox")


def check_tools() -> None:
    """Refuse in one line, naming the ``apt-get install`` line, unless espeak-ng and sox run.

    Raises:
        UserError: either tool is not on ``PATH``.
    """
    missing = [t for t in TOOLS if shutil.which(t) is None]
    if missing:
        raise UserError(
            f"{' and '.join(missing)} not found: the spoken-word dataset is made with "
            "espeak-ng and sox; install them (apt-get install espeak-ng sox)"
        )


def check_out(out: Path) -> None:
    """Refuse an ``OUT`` that is not a folder or already holds files (nothing is replaced).

    Raises:
        UserError: ``out`` exists and is not an empty folder.
    """
    if out.exists() and not out.is_dir():
        raise UserError(f"{out} is not a folder; give a new folder for the dataset")
    if out.is_dir() and any(out.iterdir()):
        raise UserError(f"{out} is not empty; give a new folder for the dataset")


def speak(word: str, voice: str, speed: int, pitch: int, amplitude: int) -> np.ndarray:
    """One word spoken by espeak-ng, resampled to 16 kHz mono by sox, as float32 in [-1, 1]."""
    spoken = run_tool(
        ["espeak-ng", "--stdout", "-v", voice, "-s", str(speed), "-p", str(pitch),
         "-a", str(amplitude), word],
    )  # fmt: skip
    pcm = run_tool(
        ["sox", "-R", "-D", "-t", "wav", "-", "-t", "raw", "-r", str(RATE), "-c", "1", "-b", "16",
         "-e", "signed-integer", "-"],
        spoken,
    )  # fmt: skip
    return np.frombuffer(pcm, "<i2").astype(np.float32) / 32768.0


def run_tool(cmd: list[str], data: bytes | None = None) -> bytes:
    """Run ``cmd`` (``data`` on its stdin): its stdout, or one UserError line naming the tool."""
    try:
        return subprocess.run(cmd, input=data, check=True, capture_output=True).stdout
    except subprocess.CalledProcessError as exc:
        said = (exc.stderr or b"").decode(errors="replace").strip().splitlines()
        last = f": {said[-1]}" if said else ""
        raise UserError(f"{cmd[0]} failed (exit {exc.returncode}){last}") from None
    except OSError as exc:
        raise UserError(f"{cmd[0]} could not run: {exc.strerror or exc}") from None


def noise(kind: str, n: int, rng: np.random.Generator) -> np.ndarray:
    """Unit-RMS noise: white, pink (1/f power, shaped in the frequency domain) or brown."""
    white = rng.standard_normal(n)
    if kind == "white":
        out = white
    elif kind == "brown":
        out = np.cumsum(white)
        out -= np.linspace(out[0], out[-1], n)  # no drift across the clip
    else:
        spectrum = np.fft.rfft(white)
        f = np.arange(len(spectrum), dtype=np.float64)
        f[0] = 1.0
        out = np.fft.irfft(spectrum / np.sqrt(f), n)
    return (out / (np.sqrt(np.mean(out**2)) + 1e-12)).astype(np.float32)


def clip(speech: np.ndarray | None, rng: np.random.Generator) -> np.ndarray:
    """A 1 s clip: speech at a random offset plus noise at a random SNR (noise alone if None)."""
    kind = NOISE_KINDS[rng.integers(len(NOISE_KINDS))]
    bed = noise(kind, CLIP_SAMPLES, rng)
    if speech is None:
        return bed * float(rng.uniform(0.002, 0.1))
    speech = speech[np.flatnonzero(np.abs(speech) > 1e-3).min() :] if np.any(speech) else speech
    speech = speech[:CLIP_SAMPLES]
    out = np.zeros(CLIP_SAMPLES, np.float32)
    start = int(rng.integers(0, CLIP_SAMPLES - len(speech) + 1))
    out[start : start + len(speech)] = speech
    rms = float(np.sqrt(np.mean(speech**2))) + 1e-9
    snr = float(rng.uniform(*SNR_DB))
    return out + bed * rms / 10 ** (snr / 20)


def write_wav(path: Path, x: np.ndarray, inside: Path | None = None) -> None:
    """16-bit mono PCM at 16 kHz, peak-limited so nothing clips.

    With ``inside`` (the dataset's folder) no link below it is followed.
    """
    peak = float(np.max(np.abs(x))) if len(x) else 0.0
    if peak > 0.99:
        x = x * (0.99 / peak)
    pcm = np.round(x * 32767).astype("<i2")
    buf = io.BytesIO()
    with wave.open(buf, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(RATE)
        w.writeframes(pcm.tobytes())
    write_file(path, buf.getvalue(), "clip", inside=inside)


def split_variants(rng: np.random.Generator, test_fraction: float) -> tuple[list, list]:
    """Voice variants for training and for testing, disjoint (at least one for testing)."""
    order = [VARIANTS[i] for i in rng.permutation(len(VARIANTS))]
    n_test = max(1, round(len(order) * test_fraction))
    return order[n_test:], order[:n_test]


def one_clip(label: str, variants: list, rng: np.random.Generator) -> np.ndarray:
    """A clip of one class, its voice, variant, speed, pitch, amplitude and noise drawn from rng."""
    if label == SILENCE:
        return clip(None, rng)
    pool = UNKNOWN_WORDS if label == UNKNOWN else (label,)
    word = pool[rng.integers(len(pool))]
    voice = f"{VOICES[rng.integers(len(VOICES))]}+{variants[rng.integers(len(variants))]}"
    speech = speak(
        word, voice, int(rng.integers(*SPEED_WPM)), int(rng.integers(*PITCH)),
        int(rng.integers(60, 200)),
    )  # fmt: skip
    return clip(speech, rng)


def make(
    out: Path,
    per_class: int = 30,
    seed: int = 0,
    test_fraction: float = 0.2,
    words: Sequence[str] = WORDS,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Write the dataset under ``out``; return its manifest (also written as manifest.json).

    Args:
        out: Path. The dataset's folder (created; :func:`check_out` it first).
        per_class: int, default 30. Clips per class, training and test together (>= 2).
        seed: int, default 0. Every random draw comes from it.
        test_fraction: float, default 0.2. The test split's share of each class.
        words: the command words, one class each.
        progress: called with one line per class written.

    Raises:
        UserError: a tool failed, or the settings leave a split empty.
    """
    words = tuple(plain_name(w, "word") for w in words)  # each a folder's name
    if per_class < 2 or not 0 < test_fraction < 1 or not words:
        raise UserError("the dataset needs 2 clips a class or more, 0 < test fraction < 1, a word")
    if len(set(words)) != len(words) or {UNKNOWN, SILENCE} & set(words):
        raise UserError(f"the words must differ from each other and from {UNKNOWN}, {SILENCE}")
    rng = np.random.default_rng(seed)
    train_variants, test_variants = split_variants(rng, test_fraction)
    labels = (*words, UNKNOWN, SILENCE)
    n_test = min(per_class - 1, max(1, round(per_class * test_fraction)))
    counts: dict[str, dict[str, int]] = {"train": {}, "test": {}}
    for label in labels:
        for part, n, variants in (
            ("train", per_class - n_test, train_variants),
            ("test", n_test, test_variants),
        ):
            folder = out / part / label
            for i in range(n):
                clip_x = one_clip(label, variants, rng)
                write_wav(folder / f"{label}_{i:04d}.wav", clip_x, inside=out)
            counts[part][label] = n
        if progress:
            progress(f"{label}: {per_class} clips")
    bg = out / "train" / NOISE_FOLDER
    for kind in NOISE_KINDS:
        write_wav(bg / f"{kind}.wav", 0.1 * noise(kind, RATE * BACKGROUND_SECONDS, rng), out)
    manifest = {
        "seed": seed, "per_class": per_class, "test_fraction": test_fraction,
        "sample_rate": RATE, "clip_samples": CLIP_SAMPLES, "classes": list(labels),
        "counts": counts, "train_variants": train_variants, "test_variants": test_variants,
        "voices": list(VOICES), "speed_wpm": list(SPEED_WPM), "pitch": list(PITCH),
        "snr_db": list(SNR_DB), "espeak_ng": _version(["espeak-ng", "--version"]),
        "sox": _version(["sox", "--version"]),
    }  # fmt: skip
    write_file(out / "manifest.json", json.dumps(manifest, indent=1) + "\n", inside=out)
    return manifest


def _version(cmd: list[str]) -> str:
    return subprocess.run(cmd, capture_output=True, text=True, check=False).stdout.strip()
