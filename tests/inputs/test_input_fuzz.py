"""Every reader of a user's file, fed random bytes, cut files, wrong shapes and special files.

Each case must end in a :class:`UserError` (one line) or a normal return, never another
exception; special files (FIFO, socket, folder, ``/dev/zero``) and a 1 GiB sparse file
are refused within a second. The CLI cases run in one child process under an
address-space limit (what a small machine has), each through ``main`` as a user runs it.
"""

from __future__ import annotations

import json
import os
import random
import resource
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from mcunas.errors import McunasError
from mcunas.inputs.formats import load_npz, read_json, read_toml
from mcunas.inputs.shapes import check_best_info
from tests.repo import REPO

pytestmark = pytest.mark.fuzz

MODEL = REPO / "mcunas" / "calibration" / "models" / "kws_ref_model.tflite"
PROFILE = REPO / "mcunas" / "bundled" / "boards" / "nucleo_f746zg.toml"
GIB = 1 << 30
ADDRESS_SPACE = 3 * GIB  # TensorFlow alone maps much address space; 3 GiB stands for a small box


def _wav_bytes() -> bytes:
    import io
    import wave

    buf = io.BytesIO()
    with wave.open(buf, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(16000)
        w.writeframes(np.zeros(1600, "<i2").tobytes())
    return buf.getvalue()


def _npz_bytes() -> bytes:
    import io

    buf = io.BytesIO()
    np.savez(buf, x_train=np.zeros((4, 3, 3)), y_train=np.array([0, 1, 0, 1]))
    return buf.getvalue()


def _readers() -> dict[str, tuple[str, bytes, Callable[[Path], object]]]:
    """Reader name -> (file suffix, a valid file's bytes, the reader)."""
    from mcunas.boards.catalog import load_board
    from mcunas.cost.fit.rows import load_calibration
    from mcunas.data.audio import read_wav
    from mcunas.data.datasets import load_dataset
    from mcunas.distributed.auth import _read_token, read_pem
    from mcunas.errors import UserError
    from mcunas.measure.rack_file import load_rack
    from mcunas.tflite.reader import read_graph

    best = json.dumps({"class_names": ["a", "b"], "board": {"name": "x"}}).encode()
    csv = (REPO / "mcunas" / "calibration" / "measurements.csv").read_bytes()[:2000]
    return {
        "npz": (".npz", _npz_bytes(), lambda p: load_npz(p, "dataset")),
        "dataset": (".npz", _npz_bytes(), load_dataset),
        "wav": (".wav", _wav_bytes(), read_wav),
        "best.json": (".json", best, lambda p: check_best_info(read_json(p, "x"), p, UserError)),
        "profile": (".toml", PROFILE.read_bytes(), lambda p: load_board(str(p))),
        "rack": (".toml", b'[[board]]\nprofile = "esp32"\nport = "/dev/x"\n', load_rack),
        "toml": (".toml", b"a = 1\n", lambda p: read_toml(p, "profile", "profile")),
        "token": (".token", b"abcdef\n", lambda p: _read_token(p, "--token-file")),
        "pem": (".pem", b"-----BEGIN X-----\n", lambda p: read_pem(str(p), "--tls-cert")),
        "model": (".tflite", MODEL.read_bytes(), read_graph),
        "table": (".csv", csv, lambda p: load_calibration(p, p.parent)),
    }


READERS = _readers()


def _outcome(reader: Callable[[Path], object], path: Path) -> tuple[str, float]:
    """``ok`` or ``refused`` and the seconds taken; any other exception fails the test."""
    start = time.monotonic()
    try:
        reader(path)
        result = "ok"
    except McunasError as exc:
        assert "\n" not in str(exc).strip(), str(exc)
        result = "refused"
    return result, time.monotonic() - start


def _variants(valid: bytes, seed: int) -> list[bytes]:
    """Random bytes, cuts and flipped bytes of a valid file."""
    rng = random.Random(seed)
    out = [rng.randbytes(rng.randrange(0, 3000)) for _ in range(8)]
    out += [valid[: rng.randrange(0, max(1, len(valid)))] for _ in range(8)]
    for _ in range(8):
        flipped = bytearray(valid)
        for _ in range(8):
            if flipped:
                flipped[rng.randrange(len(flipped))] = rng.randrange(256)
        out.append(bytes(flipped))
    return out


@pytest.mark.parametrize("name", sorted(READERS))
def test_random_cut_and_flipped_files_end_in_one_line_or_a_value(name: str, tmp_path: Path) -> None:
    suffix, valid, reader = READERS[name]
    for i, data in enumerate(_variants(valid, seed=len(name))):
        path = tmp_path / f"case{i}{suffix}"
        path.write_bytes(data)
        _outcome(reader, path)


def _special_files(tmp_path: Path, suffix: str) -> dict[str, Path]:
    fifo = tmp_path / f"fifo{suffix}"
    os.mkfifo(fifo)
    folder = tmp_path / f"folder{suffix}"
    folder.mkdir()
    (folder / "inside").write_text("x")
    zero = tmp_path / f"zero{suffix}"
    zero.symlink_to("/dev/zero")
    sock_path = tmp_path / f"s{suffix}"
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(sock_path))
    big = tmp_path / f"big{suffix}"
    with open(big, "wb") as fh:
        fh.truncate(GIB + 1)  # sparse: nothing on disk
    return {"fifo": fifo, "folder": folder, "/dev/zero": zero, "socket": sock_path, "1 GiB": big}


@pytest.mark.parametrize("name", sorted(READERS))
def test_special_and_oversized_files_are_refused_within_a_second(name: str, tmp_path: Path) -> None:
    suffix, _, reader = READERS[name]
    for kind, path in _special_files(tmp_path, suffix).items():
        result, seconds = _outcome(reader, path)
        assert result == "refused", (name, kind)
        assert seconds < 1.0, (name, kind, seconds)


SHAPES = [[1, 2], None, "x", 3, {"class_names": 3}, {"class_names": [1, 2]}, {"board": []}]
SHAPES += [{"model_sha256": 5}, {"model_sha256": "abc"}, {"frontend": "x"}, {"trial": [1]}]
SHAPES += [{"class_names": ["a"] * 1001}, {"class_names": [""]}, {"board": {"name": 3}}]


@pytest.mark.parametrize("value", SHAPES, ids=lambda v: json.dumps(v)[:30])
def test_best_json_of_another_shape_is_refused(value: object, tmp_path: Path) -> None:
    path = tmp_path / "best.json"
    path.write_text(json.dumps(value))
    assert _outcome(READERS["best.json"][2], path)[0] == "refused"


def _driver_cases(root: Path) -> list[tuple[str, list[str]]]:
    """(what, argv) of CLI runs that must each end in one line and exit 2."""
    from tests.commands.test_predict_command import kws_best_folder

    best = kws_best_folder(root / "ok")
    wav = root / "clip.wav"
    wav.write_bytes(_wav_bytes())
    special = _special_files(root, ".wav")
    cases = [("warm-up", ["predict", str(best), str(wav)])]  # imports, not counted
    cases += [(f"predict, a {k} clip", ["predict", str(best), str(p)]) for k, p in special.items()]
    cases += _npz_cases(root, best)
    for i, value in enumerate([[1, 2], None, {"class_names": 3}]):
        other = kws_best_folder(root / f"shape{i}")
        (other / "best.json").write_text(json.dumps(value))
        cases.append((f"predict, best.json {value}", ["predict", str(other), str(wav)]))
        cases.append((f"export, best.json {value}", ["export", str(other)]))
    swapped = kws_best_folder(root / "swapped")
    (swapped / "model.tflite").write_bytes((swapped / "frontend.tflite").read_bytes())
    cases.append(("predict, front end as the model", ["predict", str(swapped), str(wav)]))
    profile = root / "long.toml"
    profile.write_text('runtime = "' + "9" * 5000 + '.1"\n' + PROFILE.read_text().split("\n", 1)[1])
    cases.append(("boards show, 5000-digit runtime", ["boards", "show", str(profile)]))
    return cases


def _npz_cases(root: Path, best: Path) -> list[tuple[str, list[str]]]:
    x = np.zeros((4, 49, 10), np.float32)
    bad = {
        "short y": {"x_test": x, "y_test": np.arange(3)},
        "NaN y": {"x_test": x, "y_test": np.array([0, 1, np.nan, 1])},
        "text y": {"x_test": x, "y_test": np.array(["a", "b", "c", "d"])},
        "2.5 y": {"x_test": x, "y_test": np.array([0, 1, 2.5, 1])},
        "negative y": {"x_test": x, "y_test": np.array([0, -1, 0, 1])},
        "y beyond the classes": {"x_test": x, "y_test": np.array([0, 1, 12, 1])},
        "NaN x": {"x_test": np.full_like(x, np.nan), "y_test": np.arange(4)},
        "structured x": {"x_test": np.zeros(4, dtype=[("a", "f4")]), "y_test": np.arange(4)},
    }
    out = []
    for what, arrays in bad.items():
        path = root / f"{what.replace(' ', '_')}.npz"
        np.savez(path, **arrays)
        out.append((f"predict, .npz with {what}", ["predict", str(best), str(path)]))
    return out


DRIVER = """
import contextlib, io, json, sys, time
from mcunas.commands.cli import main
out = []
for what, argv in json.loads(sys.argv[1]):
    err = io.StringIO()
    start = time.monotonic()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            main(argv)
            code = 0
        except SystemExit as exc:
            code = exc.code
    out.append([what, code, err.getvalue(), time.monotonic() - start])
print(json.dumps(out))
"""


def _limit_address_space() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))


def test_cli_readers_end_in_one_line_and_exit_2_under_an_address_space_limit(
    tmp_path: Path,
) -> None:
    cases = _driver_cases(tmp_path)
    run = subprocess.run(
        [sys.executable, "-c", DRIVER, json.dumps(cases)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=REPO,
        preexec_fn=_limit_address_space,
        check=False,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    results = json.loads(run.stdout.strip().splitlines()[-1])
    assert len(results) == len(cases) and results[0][1] == 0, results[0]
    for what, code, err, _ in results[1:]:
        lines = [line for line in err.splitlines() if line.startswith("Error")]
        assert code == 2 and len(lines) == 1, (what, code, err)
        assert "Traceback" not in err and "internal error" not in err, (what, err)
        if what.startswith("predict, a ") and "folder" not in what:  # a folder is an input
            # the clip's kind or size is named, never "does not exist"
            assert "Refused to read" in err, (what, err)
    # No hang: each run loads best/ (its model and front end) before the clip is refused,
    # on a machine shared with other work; the reader's own second is checked above.
    specials = [r for r in results if r[0].startswith("predict, a ")]
    assert all(seconds < 10.0 for *_, seconds in specials), specials
