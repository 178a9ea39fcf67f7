"""Datasets: built-in digits, .npz, image and WAV folders, and every bad-input message."""

from __future__ import annotations

import wave
from pathlib import Path

import numpy as np
import pytest

from mcunas.data.datasets import load_dataset, log_mel, stratified_split
from mcunas.errors import DatasetError


def _png(path: Path, size: tuple[int, int], mode: str = "L", value: int = 0) -> None:
    from PIL import Image

    path.parent.mkdir(parents=True, exist_ok=True)
    color = value if mode == "L" else (value, 255 - value, 7)
    Image.new(mode, size, color).save(path)


def _wav(path: Path, samples: np.ndarray, rate: int = 8000, channels: int = 1) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    pcm = (np.clip(samples, -1, 1) * 32767).astype("<i2")
    if channels == 2:
        pcm = np.repeat(pcm, 2)
    with wave.open(str(path), "wb") as w:
        w.setnchannels(channels)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(pcm.tobytes())


def test_digits_default_split_is_stratified_and_reproducible() -> None:
    a = load_dataset(seed=3)
    b = load_dataset("digits", seed=3)
    c = load_dataset(seed=4)
    assert a.input_shape == (8, 8, 1) and a.num_classes == 10
    assert a.x_train.dtype == np.float32 and 0.0 <= a.x_train.min() and a.x_train.max() <= 1.0
    assert len(a.x_train) + len(a.x_val) == 1797
    np.testing.assert_array_equal(a.y_val, b.y_val)
    np.testing.assert_array_equal(a.x_train, b.x_train)
    assert not np.array_equal(a.x_val, c.x_val)
    counts = np.bincount(a.y_val, minlength=10)
    assert counts.min() >= 34 and counts.max() <= 38  # ~20% of each ~180-sample class
    assert a.representative(50).shape == (50, 8, 8, 1)


def test_stratified_split_keeps_singletons_in_training() -> None:
    y = np.array([0, 0, 0, 0, 0, 1, 1, 2])
    train, val = stratified_split(y, 0.4, seed=0)
    assert sorted(np.concatenate([train, val]).tolist()) == list(range(8))
    assert sorted(y[val].tolist()) == [0, 0, 1]


def test_npz_with_and_without_validation(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    x = rng.integers(0, 256, size=(40, 6, 5), dtype=np.uint8)
    y = np.arange(40) % 4
    np.savez(tmp_path / "a.npz", x_train=x, y_train=y)
    ds = load_dataset(tmp_path / "a.npz", val_fraction=0.25)
    assert ds.input_shape == (6, 5, 1) and ds.num_classes == 4
    assert len(ds.x_val) == 12 and ds.x_train.max() <= 1.0
    np.savez(
        tmp_path / "b.npz",
        x_train=x.astype(np.float32),
        y_train=y.astype(np.float64),
        x_val=x[:8].astype(np.float32),
        y_val=y[:8],
    )
    ds = load_dataset(str(tmp_path / "b.npz"))
    assert len(ds.x_val) == 8 and len(ds.x_train) == 40 and ds.x_train.max() > 1.0
    np.savez(tmp_path / "c.npz", x_train=rng.normal(size=(10, 12)), y_train=np.arange(10) % 2)
    assert load_dataset(tmp_path / "c.npz").input_shape == (12, 1, 1)


@pytest.mark.parametrize(
    ("arrays", "message"),
    [
        ({"x_train": np.zeros((5, 4, 4)), "y_train": np.zeros(4, int)}, "x_train has 5 samples"),
        ({"x_train": np.zeros((4, 4, 4)), "y_train": np.array([0.5, 1, 0, 1])}, "integers"),
        ({"x_train": np.zeros((4, 4, 4)), "y_train": np.array([-1, 1, 0, 1])}, "integers 0..K-1"),
        ({"x_train": np.zeros((4, 4, 4)), "y_train": np.array([0, 2, 0, 2])}, "missing [1]"),
        ({"x_train": np.zeros((4, 4, 4)), "y_train": np.zeros(4, int)}, "at least 2 classes"),
        ({"x_train": np.zeros((4, 4, 4))}, "no 'y_train'"),
        ({"x_train": np.zeros((4, 4, 4)), "y_train": np.array(list("abab"))}, "integers"),
        (
            {
                "x_train": np.zeros((4, 4, 4)),
                "y_train": np.array([0, 1, 0, 1]),
                "x_val": np.zeros((2, 4, 4)),
                "y_val": np.array([0, 5]),
            },
            "y_val has label 5",
        ),
    ],
)
def test_npz_errors(tmp_path: Path, arrays: dict, message: str) -> None:
    np.savez(tmp_path / "bad.npz", **arrays)
    with pytest.raises(DatasetError) as info:
        load_dataset(tmp_path / "bad.npz")
    assert message in str(info.value)
    assert "\n" not in str(info.value)


def test_path_errors(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match="not found"):
        load_dataset(tmp_path / "nope")
    (tmp_path / "data.csv").write_text("1,2\n")
    with pytest.raises(DatasetError, match="Unknown dataset format"):
        load_dataset(tmp_path / "data.csv")
    (tmp_path / "broken.npz").write_bytes(b"not a zip")
    with pytest.raises(DatasetError, match="broken.npz is not an .npz file"):
        load_dataset(tmp_path / "broken.npz")
    (tmp_path / "empty").mkdir()
    with pytest.raises(DatasetError, match="no class subfolders"):
        load_dataset(tmp_path / "empty")
    (tmp_path / "empty" / "cat").mkdir()
    with pytest.raises(DatasetError, match="cat has no image or WAV files"):
        load_dataset(tmp_path / "empty")
    with pytest.raises(DatasetError, match="val_fraction"):
        load_dataset(val_fraction=1.5)


def test_image_folder_grayscale_and_rgb(tmp_path: Path) -> None:
    for i in range(3):
        _png(tmp_path / "g" / "a" / f"{i}.png", (10, 12), value=0)
        _png(tmp_path / "g" / "b" / f"{i}.png", (10, 12), value=255)
    _png(tmp_path / "g" / "b" / "odd.png", (20, 20), value=255)  # resized to the common size
    ds = load_dataset(tmp_path / "g", val_fraction=0.34)
    assert ds.input_shape == (12, 10, 1) and ds.class_names == ("a", "b")
    assert len(ds.x_train) + len(ds.x_val) == 7
    x = np.concatenate([ds.x_train, ds.x_val])
    y = np.concatenate([ds.y_train, ds.y_val])
    assert np.all(x[y == 0] == 0.0) and np.allclose(x[y == 1], 1.0)
    _png(tmp_path / "c" / "a" / "0.png", (200, 100), mode="RGB", value=10)
    _png(tmp_path / "c" / "a" / "1.bmp", (200, 100), mode="RGB", value=10)
    _png(tmp_path / "c" / "b" / "0.png", (200, 100), value=3)
    _png(tmp_path / "c" / "b" / "1.png", (200, 100), value=3)
    assert load_dataset(tmp_path / "c").input_shape == (48, 96, 3)  # shrunk into 96x96


def test_unreadable_image_is_named(tmp_path: Path) -> None:
    _png(tmp_path / "a" / "0.png", (8, 8))
    _png(tmp_path / "b" / "0.png", (8, 8))
    (tmp_path / "b" / "1.png").write_bytes(b"\x89PNG garbage")
    with pytest.raises(DatasetError, match=r"Cannot read image .*1\.png"):
        load_dataset(tmp_path)


def test_log_mel_shape_and_tone() -> None:
    rate = 16000
    t = np.arange(rate) / rate
    feats = log_mel(0.5 * np.sin(2 * np.pi * 1000 * t), rate)
    assert feats.shape == (49, 40) and feats.dtype == np.float32
    band = int(np.argmax(feats.mean(axis=0)))
    silent = log_mel(np.zeros(rate), rate)
    assert np.allclose(silent, np.log(1e-6))
    assert 10 <= band <= 22  # 1 kHz sits in the lower-middle mel bands up to 8 kHz


def test_wav_folder(tmp_path: Path) -> None:
    rate = 8000
    t = np.arange(rate // 2) / rate
    for i in range(3):
        _wav(tmp_path / "low" / f"{i}.wav", 0.4 * np.sin(2 * np.pi * 300 * t))
        _wav(
            tmp_path / "high" / f"{i}.wav",
            0.4 * np.sin(2 * np.pi * 3000 * t[: rate // 3]),
            channels=2,
        )
    ds = load_dataset(tmp_path, val_fraction=0.34)
    frames = 1 + (rate // 2 - 240) // 160
    assert ds.input_shape == (frames, 40, 1)
    assert ds.class_names == ("high", "low") and "log-mel" in ds.preprocessing
    x = np.concatenate([ds.x_train, ds.x_val])[..., 0]
    y = np.concatenate([ds.y_train, ds.y_val])
    assert x[y == 0][:, :5].mean(axis=(0, 1)).argmax() > x[y == 1][:, :5].mean(axis=(0, 1)).argmax()
    _wav(tmp_path / "low" / "fast.wav", np.zeros(100), rate=16000)
    with pytest.raises(DatasetError, match="fast.wav has sample rate 16000"):
        load_dataset(tmp_path)
    (tmp_path / "low" / "fast.wav").write_bytes(b"RIFF\x00\x00")
    with pytest.raises(DatasetError, match="Cannot read the WAV file .*fast.wav: cut short"):
        load_dataset(tmp_path)


def _npz(tmp_path: Path, x, y) -> Path:
    path = tmp_path / "d.npz"
    np.savez(path, x_train=x, y_train=y)
    return path


def test_absurd_labels_are_refused_before_anything_is_allocated(tmp_path: Path) -> None:
    x = np.zeros((4, 8, 8), np.float32)
    with pytest.raises(DatasetError, match="label 1000000000; .* at most 1000"):
        load_dataset(_npz(tmp_path, x, np.array([0, 1, 2, 1_000_000_000])))


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_nan_and_infinite_inputs_are_named(tmp_path: Path, bad: float) -> None:
    x = np.zeros((6, 4, 4), np.float32)
    x[3, 1, 2] = bad
    with pytest.raises(DatasetError, match="1 NaN or infinite value.*sample 3"):
        load_dataset(_npz(tmp_path, x, np.array([0, 1] * 3)))


def test_zero_sized_samples_are_named(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match="samples have zero size"):
        load_dataset(_npz(tmp_path, np.zeros((6, 0, 4), np.float32), np.array([0, 1] * 3)))


def test_a_text_file_named_npz_is_not_given_pickle_advice(tmp_path: Path) -> None:
    path = tmp_path / "x.npz"
    path.write_text("x_train,y_train\n1,2\n")
    with pytest.raises(DatasetError, match="is not an .npz file") as info:
        load_dataset(path)
    assert "pickle" not in str(info.value)


def test_a_named_pipe_is_refused_without_opening_it(tmp_path: Path) -> None:
    import os

    fifo = tmp_path / "data.npz"
    os.mkfifo(fifo)
    with pytest.raises(DatasetError, match="not a regular file or folder"):
        load_dataset(fifo)  # opening a FIFO for reading would block forever


@pytest.mark.parametrize(
    ("rate", "frames", "message"), [(0, 100, "sample rate of 0 Hz"), (16000, 0, "holds no samples")]
)
def test_broken_wavs_are_named(tmp_path: Path, rate: int, frames: int, message: str) -> None:
    for cls in ("a", "b"):
        (tmp_path / cls).mkdir()
        with wave.open(str(tmp_path / cls / "x.wav"), "wb") as w:
            w.setnchannels(1)
            w.setsampwidth(2)
            w.setframerate(16000)
            w.writeframes(b"\x00\x01" * (frames if cls == "a" else 100))
    raw = bytearray((tmp_path / "a" / "x.wav").read_bytes())
    raw[24:28] = rate.to_bytes(4, "little")  # the header's sample rate (wave refuses to write 0)
    (tmp_path / "a" / "x.wav").write_bytes(bytes(raw))
    with pytest.raises(DatasetError, match=message):
        load_dataset(tmp_path)


def test_npz_kind_test_split_and_series_layout(tmp_path) -> None:
    rng = np.random.default_rng(0)
    x = rng.random((20, 50, 3), dtype=np.float32)  # (N, T, C)
    y = np.arange(20) % 2
    path = tmp_path / "s.npz"
    np.savez(path, x_train=x, y_train=y, x_test=x[:6], y_test=y[:6], kind="series")
    d = load_dataset(path)
    assert d.kind == "series" and d.input_shape == (50, 1, 3)
    assert d.x_test.shape == (6, 50, 1, 3) and list(d.y_test) == list(y[:6])
    np.savez(path, x_train=x, y_train=y)  # no kind: (N, H, W) is a grayscale image
    d = load_dataset(path)
    assert d.kind == "image" and d.input_shape == (50, 3, 1) and d.x_test is None
    np.savez(path, x_train=x[:, :, None, :], y_train=y)  # (N, T, 1, C) is a series
    assert load_dataset(path).kind == "series"


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"kind": "video"}, "kind must be one of image, audio, series"),
        ({"x_test": np.zeros((3, 50, 3))}, "must have both x_test and y_test"),
        ({"x_test": np.zeros((3, 40, 3)), "y_test": np.zeros(3)}, "x_test samples have shape"),
        ({"x_test": np.zeros((3, 50, 3)), "y_test": [0, 1, 5]}, "y_test has label 5"),
    ],
)
def test_bad_test_split_or_kind_is_one_line(tmp_path, extra, message) -> None:
    x = np.zeros((20, 50, 3), dtype=np.float32)
    path = tmp_path / "s.npz"
    np.savez(path, x_train=x, y_train=np.arange(20) % 2, **extra)
    with pytest.raises(DatasetError, match=message):
        load_dataset(path)


def test_background_noise_folder_is_not_a_class(tmp_path) -> None:
    def wav(path, seconds, seed):
        path.parent.mkdir(parents=True, exist_ok=True)
        data = (np.random.default_rng(seed).normal(0, 3000, int(8000 * seconds))).astype("<i2")
        with wave.open(str(path), "wb") as w:
            w.setnchannels(1), w.setsampwidth(2), w.setframerate(8000)
            w.writeframes(data.tobytes())

    for label in ("yes", "no"):
        for i in range(3):
            wav(tmp_path / label / f"{i}.wav", 0.5, i)
    wav(tmp_path / "_background_noise_" / "hum.wav", 3.0, 9)
    d = load_dataset(tmp_path)
    assert d.class_names == ("no", "yes") and d.kind == "audio"
    assert d.noise is not None and d.noise.shape[1:] == d.input_shape and len(d.noise) >= 5
