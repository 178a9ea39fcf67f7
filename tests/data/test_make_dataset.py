"""mcunas make-dataset spoken-words: the WAV dataset, made twice from one seed, read by mcunas."""

from __future__ import annotations

import json
import os
import shutil
import sys
import wave

import numpy as np
import pytest

from mcunas.commands.cli import main
from mcunas.data import spoken_words
from mcunas.data.folder import read_folder

HAVE_TOOLS = shutil.which("espeak-ng") is not None and shutil.which("sox") is not None
needs_tools = pytest.mark.skipif(
    not HAVE_TOOLS, reason="needs espeak-ng and sox: apt-get install espeak-ng sox"
)
SMALL = ["--per-class", "5", "--words", "yes,no"]


def _make(capsys, *args: str) -> tuple[int, str, str]:
    try:
        main(["make-dataset", "spoken-words", *args])
        code = 0
    except SystemExit as exc:
        code = exc.code
    out, err = capsys.readouterr()
    assert "Traceback" not in err, err
    return code, out, err


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    if not HAVE_TOOLS:
        pytest.skip("needs espeak-ng and sox: apt-get install espeak-ng sox")
    out = tmp_path_factory.mktemp("kws") / "data"
    spoken_words.make(out, per_class=5, words=("yes", "no"))
    return out


def test_missing_tools_give_the_install_line(monkeypatch, capsys, tmp_path):
    monkeypatch.setattr(spoken_words.shutil, "which", lambda name: None)
    code, _, err = _make(capsys, str(tmp_path / "x"))
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert "apt-get install espeak-ng sox" in err
    assert not (tmp_path / "x").exists()


def test_a_failing_tool_is_one_line():
    with pytest.raises(spoken_words.UserError, match=r"^sh failed \(exit 3\): broken$"):
        spoken_words.run_tool(["sh", "-c", "echo first >&2; echo broken >&2; exit 3"])
    with pytest.raises(spoken_words.UserError, match="^no-such-tool-here could not run"):
        spoken_words.run_tool(["no-such-tool-here"])


def test_settings_that_leave_a_split_empty_are_refused(tmp_path):
    for kwargs in ({"per_class": 1}, {"test_fraction": 0.0}, {"words": ()}, {"words": ("a", "a")}):
        with pytest.raises(spoken_words.UserError):
            spoken_words.make(tmp_path / "x", **kwargs)
    assert not (tmp_path / "x").exists()


def test_refuses_a_folder_with_files_or_a_file(capsys, tmp_path):
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "a.wav").write_bytes(b"")
    (tmp_path / "file").write_text("")
    for name, words in (("full", "not empty"), ("file", "not a folder")):
        code, _, err = _make(capsys, str(tmp_path / name))
        assert code == 2 and words in err, err
    assert [p.name for p in (tmp_path / "full").iterdir()] == ["a.wav"]


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
def test_same_seed_same_bytes_other_seed_other_bytes(made, capsys, tmp_path):
    assert _make(capsys, str(tmp_path / "a"), *SMALL)[0] == 0
    assert _make(capsys, str(tmp_path / "b"), *SMALL, "--seed", "1")[0] == 0
    for wav in made.rglob("*.wav"):
        rel = wav.relative_to(made)
        assert (tmp_path / "a" / rel).read_bytes() == wav.read_bytes(), rel
    clip = "train/yes/yes_0000.wav"
    assert (tmp_path / "b" / clip).read_bytes() != (made / clip).read_bytes()


@needs_tools
def test_refuses_the_made_folder(made, capsys):
    code, _, err = _make(capsys, str(made))
    assert code == 2 and "not empty" in err


@needs_tools
def test_speech_is_louder_than_silence_and_mcunas_reads_it(made):
    data = read_folder(made / "train")
    assert data.kind == "audio" and data.class_names == ("_silence_", "_unknown_", "no", "yes")
    assert data.noise is not None and len(data.x) == 16
    energy = data.x.reshape(len(data.x), -1).mean(axis=1)
    silence = energy[data.y == 0].mean()
    assert energy[data.y == 3].mean() > silence and energy[data.y == 2].mean() > silence


# Stand-ins for espeak-ng (a WAV of a tone whose pitch follows the word) and sox (its
# 16-bit frames as raw PCM): the command's whole path runs where the tools are missing.
FAKE_ESPEAK = """#!{python}
import io, sys, wave
import numpy as np
if "--version" in sys.argv:
    print("eSpeak NG stand-in"); sys.exit(0)
word = sys.argv[-1]
t = np.arange(8000) / 22050
x = (8000 * np.sin(2 * np.pi * (200 + 40 * len(word)) * t)).astype("<i2")
buf = io.BytesIO()
with wave.open(buf, "wb") as w:
    w.setnchannels(1); w.setsampwidth(2); w.setframerate(22050); w.writeframes(x.tobytes())
sys.stdout.buffer.write(buf.getvalue())
"""
FAKE_SOX = """#!{python}
import io, sys, wave
if "--version" in sys.argv:
    print("sox stand-in"); sys.exit(0)
with wave.open(io.BytesIO(sys.stdin.buffer.read())) as w:
    sys.stdout.buffer.write(w.readframes(w.getnframes()))
"""


def test_the_command_writes_a_dataset_mcunas_reads(monkeypatch, capsys, tmp_path):
    tools = tmp_path / "bin"
    tools.mkdir()
    for name, text in (("espeak-ng", FAKE_ESPEAK), ("sox", FAKE_SOX)):
        (tools / name).write_text(text.format(python=sys.executable))
        (tools / name).chmod(0o755)
    monkeypatch.setenv("PATH", f"{tools}:{os.environ['PATH']}")
    code, out, err = _make(capsys, str(tmp_path / "kws"), *SMALL)
    assert code == 0, err
    assert out.strip().splitlines()[-1] == f"20 clips, 4 classes, in {tmp_path / 'kws'}"
    manifest = json.loads((tmp_path / "kws" / "manifest.json").read_text())
    assert manifest["counts"]["test"] == {"yes": 1, "no": 1, "_unknown_": 1, "_silence_": 1}
    assert manifest["espeak_ng"] == "eSpeak NG stand-in"
    data = read_folder(tmp_path / "kws" / "train")
    assert data.kind == "audio" and len(data.x) == 16 and data.noise is not None
    again = tmp_path / "again"
    assert _make(capsys, str(again), *SMALL)[0] == 0
    for wav in (tmp_path / "kws").rglob("*.wav"):
        assert (again / wav.relative_to(tmp_path / "kws")).read_bytes() == wav.read_bytes()
