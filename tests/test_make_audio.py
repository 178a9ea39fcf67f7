"""scripts/make_audio.py: the spoken-word WAV dataset, made twice from one seed, read by mcunas."""

from __future__ import annotations

import json
import shutil
import wave

import numpy as np
import pytest
from script_helpers import loaded_script

from mcunas.data_folder import read_folder

needs_tools = pytest.mark.skipif(
    shutil.which("espeak-ng") is None or shutil.which("sox") is None,
    reason="needs espeak-ng and sox: apt-get install espeak-ng sox",
)


@pytest.fixture(scope="module")
def make_audio():
    yield from loaded_script("make_audio")


@pytest.fixture(scope="module")
def made(make_audio, tmp_path_factory):
    if make_audio.check_tools():
        pytest.skip("needs espeak-ng and sox: apt-get install espeak-ng sox")
    out = tmp_path_factory.mktemp("kws")
    rc = make_audio.main(["--out", str(out), "--per-class", "5", "--words", "yes,no"])
    assert rc == 0
    return out


def test_missing_tools_give_the_install_line(make_audio, monkeypatch, capsys, tmp_path):
    monkeypatch.setattr(make_audio.shutil, "which", lambda name: None)
    assert make_audio.main(["--out", str(tmp_path / "x")]) == 2
    assert "apt-get install espeak-ng sox" in capsys.readouterr().err
    assert not (tmp_path / "x").exists()


@needs_tools
def test_layout_and_clips(made):
    manifest = json.loads((made / "manifest.json").read_text())
    assert manifest["classes"] == ["yes", "no", "_unknown_", "_silence_"]
    assert set(manifest["train_variants"]).isdisjoint(manifest["test_variants"])
    for part, n in (("train", 4), ("test", 1)):
        for label in manifest["classes"]:
            clips = sorted((made / part / label).glob("*.wav"))
            assert len(clips) == n == manifest["counts"][part][label]
            with wave.open(str(clips[0])) as w:
                assert (w.getframerate(), w.getnchannels(), w.getsampwidth()) == (16000, 1, 2)
                assert w.getnframes() == 16000
                pcm = np.frombuffer(w.readframes(16000), "<i2")
            assert np.abs(pcm).max() > 0
    assert len(list((made / "train" / "_background_noise_").glob("*.wav"))) == 3


@needs_tools
def test_same_seed_same_bytes_other_seed_other_bytes(made, make_audio, tmp_path):
    args = ["--per-class", "5", "--words", "yes,no"]
    assert make_audio.main(["--out", str(tmp_path / "a"), *args]) == 0
    assert make_audio.main(["--out", str(tmp_path / "b"), *args, "--seed", "1"]) == 0
    for wav in made.rglob("*.wav"):
        rel = wav.relative_to(made)
        assert (tmp_path / "a" / rel).read_bytes() == wav.read_bytes(), rel
    clip = "train/yes/yes_0000.wav"
    assert (tmp_path / "b" / clip).read_bytes() != (made / clip).read_bytes()


@needs_tools
def test_refuses_a_folder_with_files(make_audio, made, capsys):
    assert make_audio.main(["--out", str(made)]) == 2
    assert "not empty" in capsys.readouterr().err


@needs_tools
def test_speech_is_louder_than_silence_and_mcunas_reads_it(made):
    data = read_folder(made / "train")
    assert data.kind == "audio" and data.class_names == ("_silence_", "_unknown_", "no", "yes")
    assert data.noise is not None and len(data.x) == 16
    energy = data.x.reshape(len(data.x), -1).mean(axis=1)
    silence = energy[data.y == 0].mean()
    assert energy[data.y == 3].mean() > silence and energy[data.y == 2].mean() > silence
