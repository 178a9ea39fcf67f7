"""WAV training features from the front-end graph: the same numbers as its host runner, cached."""

from __future__ import annotations

import wave
from pathlib import Path

import numpy as np
import pytest

from mcunas.data.folder import read_folder
from mcunas.errors import DatasetError
from mcunas.frontend.config import FrontendConfig
from mcunas.frontend.graph import frontend_model
from mcunas.frontend.host import FrontendRunner, scaled


def write_wav(path: Path, samples: np.ndarray, rate: int = 16000) -> None:
    """Write float samples as 16-bit mono PCM."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with wave.open(str(path), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes((np.clip(samples, -1, 1) * 32767).astype("<i2").tobytes())


def make_tones(root: Path, per_class: int = 3, rate: int = 16000, seconds: float = 0.5) -> None:
    """Two classes of tones (low, high; half a second by default) in a little noise."""
    rng = np.random.default_rng(0)
    t = np.arange(int(rate * seconds)) / rate
    for name, freq in (("high", 3000.0), ("low", 400.0)):
        for i in range(per_class):
            tone = 0.3 * np.sin(2 * np.pi * freq * (1 + 0.02 * i) * t)
            write_wav(root / name / f"{i}.wav", tone + rng.normal(0, 0.01, len(t)), rate)


def test_folder_features_are_the_graphs_and_are_cached(tmp_path: Path) -> None:
    make_tones(tmp_path / "data")
    cfg = FrontendConfig(mel_bands=20)
    got = read_folder(tmp_path / "data", frontend=cfg, cache_dir=tmp_path / "cache")
    assert got.x.shape == (6, cfg.frames(8000), 20, 1) and got.kind == "audio"
    assert "front-end graph" in got.preprocessing
    from mcunas.data.audio import read_wav

    samples, _ = read_wav(tmp_path / "data" / "high" / "0.wav")
    runner = FrontendRunner(frontend_model(cfg))
    from mcunas.frontend.host import to_int16

    direct = scaled(runner.clip(to_int16(samples)), cfg)
    assert np.array_equal(got.x[0, ..., 0], direct)  # bit for bit the runner's output
    cached = list((tmp_path / "cache").glob("frontend-features-*.npz"))
    assert len(cached) == 1
    again = read_folder(tmp_path / "data", frontend=cfg, cache_dir=tmp_path / "cache")
    assert np.array_equal(again.x, got.x)
    numpy_path = read_folder(tmp_path / "data")  # the default stays today's log-mel
    assert numpy_path.x.shape[2] == 40 and "log-mel" in numpy_path.preprocessing


def test_the_front_end_takes_the_folders_rate_and_mixed_rates_are_refused(tmp_path: Path) -> None:
    make_tones(tmp_path / "data", rate=8000)
    got = read_folder(tmp_path / "data", frontend=FrontendConfig())
    assert got.frontend is not None and got.frontend.sample_rate == 8000
    assert got.frontend.upper_hz < 4000 and got.x.shape[1:] == (24, 40, 1)
    write_wav(tmp_path / "data" / "low" / "z.wav", np.zeros(16000), rate=16000)
    with pytest.raises(DatasetError, match="front end takes 8000 Hz"):
        read_folder(tmp_path / "data", frontend=FrontendConfig())


def test_load_dataset_carries_the_front_end(tmp_path: Path) -> None:
    from mcunas.data.datasets import load_dataset

    make_tones(tmp_path / "data", per_class=4)
    data = load_dataset(tmp_path / "data", frontend=FrontendConfig(), cache_dir=tmp_path / "c")
    assert data.frontend == FrontendConfig() and data.input_shape == (24, 40, 1)
    assert load_dataset(tmp_path / "data").frontend is None
