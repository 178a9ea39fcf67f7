"""The guarded opener, bounded strings and shape checks, and the readers built on them."""

from __future__ import annotations

import hashlib
import io
import json
import os
import struct
import wave
import zipfile
from pathlib import Path

import numpy as np
import pytest

from mcunas.errors import BoardProfileError, DatasetError, ModelError, UserError
from mcunas.inputs import bounded_float, bounded_int, bounded_text, read_input
from mcunas.inputs.formats import load_npz, read_wav_data
from mcunas.inputs.shapes import check_labels, check_samples
from mcunas.limits import MAX_WAV_SECONDS, READ_BOUNDS, read_bound_text


def test_a_file_over_its_kind_bound_is_refused_before_reading(tmp_path: Path) -> None:
    path = tmp_path / "serve.token"
    with open(path, "wb") as fh:
        fh.truncate(READ_BOUNDS["token"][0] + 1)
    with pytest.raises(UserError, match="more than the 4096 bytes|more than the 4.0 KiB"):
        read_input(path, "token", "--token-file")
    path.write_bytes(b"x" * READ_BOUNDS["token"][0])
    assert len(read_input(path, "token", "--token-file")) == READ_BOUNDS["token"][0]


def test_a_regular_file_that_never_ends_is_cut_at_its_bound() -> None:
    """/proc files say they are empty and go on: what is read is bounded, not the stat."""
    with pytest.raises(UserError, match="more than"):
        read_input("/proc/self/smaps", "token", "--token-file")


def test_the_bounds_are_stated_in_words() -> None:
    assert read_bound_text("token") == "4 KiB" and read_bound_text("json") == "4 MiB"
    assert all(bound > 0 and words for bound, words in READ_BOUNDS.values())


@pytest.mark.parametrize(
    ("value", "message"),
    [("9" * 5000, "5,000 characters"), ("12x", "whole number"), (True, "whole number")],
)
def test_bounded_int_refuses_long_and_odd_strings(value: object, message: str) -> None:
    with pytest.raises(UserError, match=message):
        bounded_int(value, "runtime")


def test_bounded_numbers_and_names_take_the_ordinary_ones() -> None:
    assert bounded_int("2_023", "year") == 2023 and bounded_int(7.0, "n") == 7
    assert bounded_float("1e3", "x") == 1000.0
    with pytest.raises(UserError, match="finite"):
        bounded_float("nan", "x")
    with pytest.raises(UserError, match="control characters"):
        bounded_text("a\nb", "name")
    with pytest.raises(UserError, match="at most 200"):
        bounded_text("a" * 201, "name")


@pytest.mark.parametrize(
    ("labels", "message"),
    [
        (np.array([0, 1, 2]), "3 labels for 4 samples"),
        (np.array([0, 1, np.nan, 1]), "NaN"),
        (np.array(["a", "b", "c", "d"]), "integers"),
        (np.array([0, 1.5, 1, 0]), "not whole"),
        (np.array([0, -1, 1, 0]), "found -1"),
        (np.array([0, 5, 1, 0]), "the classes are 0 to 2"),
        (np.zeros((4, 2)), "1-D"),
    ],
)
def test_labels_are_whole_class_indices_as_many_as_the_samples(labels, message) -> None:
    with pytest.raises(DatasetError, match=message):
        check_labels(labels, "y_test", DatasetError, samples=4, classes=3)


def test_labels_and_samples_that_hold() -> None:
    assert check_labels(np.array([[0.0], [2.0]]), "y", UserError, 2, 3).tolist() == [0, 2]
    assert check_samples(np.full((2, 3), 255, np.uint8), "x", UserError).max() == 1.0
    with pytest.raises(UserError, match="first in sample 1"):
        check_samples(np.array([[0.0], [np.inf]]), "x", UserError)
    with pytest.raises(UserError, match="must hold numbers"):
        check_samples(np.zeros(2, dtype=[("a", "f4")]), "x", UserError)


def _wav_header(frames: int, rate: int = 16000) -> bytes:
    buf = io.BytesIO()
    with wave.open(buf, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(np.zeros(frames, "<i2").tobytes())
    return buf.getvalue()


def test_a_wav_header_that_claims_more_than_the_file_or_the_bound_is_refused(tmp_path) -> None:
    data = bytearray(_wav_header(100))
    long = tmp_path / "long.wav"
    claimed = int(MAX_WAV_SECONDS * 16000 + 16000) * 2
    long.write_bytes(bytes(data[:40]) + struct.pack("<I", claimed) + bytes(data[44:]))
    with pytest.raises(DatasetError, match="header says"):
        read_wav_data(long, "WAV file", DatasetError)
    cut = tmp_path / "cut.wav"
    cut.write_bytes(bytes(data[:40]) + struct.pack("<I", 20_000) + bytes(data[44:]))
    with pytest.raises(DatasetError, match="cut short"):
        read_wav_data(cut, "WAV file", DatasetError)


def test_an_npz_member_that_claims_more_than_it_holds_is_refused(tmp_path: Path) -> None:
    header = np.lib.format.header_data_from_array_1_0(np.zeros(3))
    header["shape"] = (10**9,)
    buf = io.BytesIO()
    np.lib.format.write_array_header_1_0(buf, header)
    path = tmp_path / "liar.npz"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("x.npy", buf.getvalue() + bytes(24))
    with pytest.raises(DatasetError, match="claims 8,000,000,000 bytes"):
        load_npz(path, "dataset", DatasetError)


def test_a_class_folder_with_a_fifo_clip_is_refused_naming_it(tmp_path: Path) -> None:
    from mcunas.data.datasets import load_dataset

    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "0.wav").write_bytes(_wav_header(1600))
    os.mkfifo(tmp_path / "b" / "1.wav")
    with pytest.raises(DatasetError, match=r"1.wav: it is a named pipe"):
        load_dataset(tmp_path)


def test_a_huge_runtime_in_a_profile_is_one_line(tmp_path: Path) -> None:
    from mcunas.boards.catalog import load_board
    from tests.repo import REPO

    text = (REPO / "mcunas" / "bundled" / "boards" / "nucleo_f746zg.toml").read_text()
    lines = [line for line in text.splitlines() if not line.startswith(("runtime", "cmsis_nn"))]
    for key in ("runtime", "cmsis_nn"):
        path = tmp_path / f"{key}.toml"
        path.write_text(f'{key} = "{"9" * 5000}.1"\n' + "\n".join(lines))
        with pytest.raises(BoardProfileError, match=f"{key} is 5,002 characters long"):
            load_board(str(path))


def test_a_token_gRPC_cannot_send_is_refused(tmp_path: Path, monkeypatch) -> None:
    from mcunas.distributed.auth import _env_token, _read_token

    path = tmp_path / "t"
    path.write_text("caf\u00e9-token\n")
    with pytest.raises(UserError, match="printable ASCII"):
        _read_token(path, "--token-file")
    monkeypatch.setenv("MCUNAS_TOKEN", "x" * 5000)
    with pytest.raises(UserError, match="at most 4096"):
        _env_token()


def test_a_tls_key_of_another_certificate_is_named(tmp_path: Path) -> None:
    from mcunas.distributed.auth import server_credentials
    from tests.distributed.test_distributed_door import tls_files

    (tmp_path / "one").mkdir()
    (tmp_path / "two").mkdir()
    cert, _ = tls_files(tmp_path / "one")
    _, other_key = tls_files(tmp_path / "two")
    with pytest.raises(UserError, match="does not belong to --tls-cert"):
        server_credentials(str(cert), str(other_key))


def _best(tmp_path: Path, **changes) -> Path:
    from tests.commands.test_predict_command import kws_best_folder

    best = kws_best_folder(tmp_path, frontend=changes.pop("frontend", True))
    info = json.loads((best / "best.json").read_text())
    info.update(changes)
    (best / "best.json").write_text(json.dumps(info))
    return best


def test_predict_reads_the_front_end_best_json_names(tmp_path: Path, capsys) -> None:
    from mcunas.deploy.inference import BestModel
    from mcunas.frontend.config import FrontendConfig
    from mcunas.frontend.graph import frontend_model

    best = _best(tmp_path / "a", frontend=False)
    (best / "frontend.tflite").write_bytes(frontend_model(FrontendConfig(mel_bands=10)))
    assert BestModel.load(best).runner is None  # present, not named: not used, and said
    assert "names no front end" in capsys.readouterr().err
    other = _best(tmp_path / "b", frontend=FrontendConfig(mel_bands=10).to_dict())
    (other / "frontend.tflite").unlink()
    with pytest.raises(ModelError, match="names a front end and .* is missing"):
        BestModel.load(other)


def test_predict_checks_the_model_against_best_json(tmp_path: Path) -> None:
    from mcunas.deploy.inference import BestModel

    best = _best(tmp_path / "a", model_sha256=hashlib.sha256(b"other").hexdigest())
    with pytest.raises(ModelError, match="changed since the search exported it"):
        BestModel.load(best)
    swapped = _best(tmp_path / "b")
    (swapped / "model.tflite").write_bytes((swapped / "frontend.tflite").read_bytes())
    (swapped / "best.json").write_text(json.dumps({"class_names": ["a"]}))
    with pytest.raises(ModelError, match="front-end graph, not the model"):
        BestModel.load(swapped)
    fewer = _best(tmp_path / "c", class_names=["a", "b"])
    with pytest.raises(ModelError, match="12 outputs and best.json names 2 classes"):
        BestModel.load(fewer)


def test_clips_of_another_rate_than_the_model_was_trained_on_are_refused(tmp_path) -> None:
    from mcunas.data.audio import wav_features
    from mcunas.deploy.inference import BestModel

    trained = tmp_path / "trained.wav"
    trained.write_bytes(_wav_header(16000))
    note = wav_features([trained])[1]  # what a search of 16 kHz clips writes in best.json
    best = BestModel.load(_best(tmp_path, frontend=False, preprocessing=note))
    assert best.trained_rate == 16000
    clip = tmp_path / "slow.wav"
    clip.write_bytes(_wav_header(8000, rate=8000))
    with pytest.raises(DatasetError, match="8000 Hz, the model was trained on 16000 Hz"):
        best.wav_features(clip)


def test_readers_route_through_the_guarded_opener() -> None:
    """No reader of a user's file opens it another way (the fuzz tier tests each one)."""
    import re

    from tests.repo import REPO

    direct = re.compile(r"np\.load\(|wave\.open\(str|tomllib\.loads\(path|Image\.open\(p\)")
    found = [
        str(path.relative_to(REPO))
        for path in (REPO / "mcunas").rglob("*.py")
        if direct.search(path.read_text()) and "inputs" not in path.parts
    ]
    assert found == []
