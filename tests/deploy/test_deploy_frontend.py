"""best/project with the front end: both C arrays, both resolvers, predict_audio() and the
README's call sequence; main.cpp checked by the host g++ against the API doubles."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from mcunas.boards.catalog import load_board
from mcunas.commands.cli import main
from mcunas.deploy import ArenaFigure, write_project
from mcunas.errors import ModelError
from mcunas.frontend.config import FrontendConfig
from mcunas.frontend.graph import frontend_model
from mcunas.tflite.csource import model_crc32
from mcunas.tflite.reader import read_graph
from tests.deploy.test_deploy import HOST, MODEL, resolver_double

KWS = MODEL.read_bytes()  # input (49, 10, 1)
FRONT = frontend_model(FrontendConfig(mel_bands=10, pcan=True))
ARENA = ArenaFigure(30000, measured=False, source="simulator")


def _project(tmp_path: Path, board: str, frontend: bytes | None = FRONT) -> Path:
    write_project(KWS, load_board(board), tmp_path / board, ARENA, {"title": "t"}, frontend)
    return tmp_path / board


@pytest.mark.parametrize("board,src", [("nucleo_f746zg", "src"), ("esp32s3", "main")])
def test_project_holds_both_graphs_and_the_call_sequence(tmp_path, board, src):
    out = _project(tmp_path, board)
    main_cpp = (out / src / "main.cpp").read_text()
    assert "predict_audio(g_window, g_scores)" in main_cpp
    consts = dict(re.findall(r"constexpr size_t (k\w+) = (\d+);", main_cpp))
    assert (consts["kFrames"], consts["kFrameSamples"], consts["kHopSamples"]) == (
        "49", "480", "320")  # fmt: skip
    assert consts["kMelBands"] == "10" and int(consts["kFrontendArenaBytes"]) > 0
    ops = (out / src / "frontend_ops.h").read_text()
    names = [n.split(":", 1)[1] for n in read_graph(FRONT).op_names()]
    esp, ours = ops.split("#if defined(ESP_PLATFORM)")[1].split("#else")
    assert esp.count("resolver.Add") == ours.count("resolver.Add") == len(names) == 9
    assert "resolver.AddPCAN()" in esp and "McunasRegisterFrontendOps" in main_cpp
    for name in names:  # Cortex-M: mcunas's kernels under the graph's op names
        assert f'resolver.AddCustom("{name}", mcunas_signal::Register_{name}())' in ours
    assert model_crc32(FRONT) in (out / src / "frontend_data.h").read_text()
    readme = (out / "README.md").read_text()
    assert "predict_audio(window, scores)" in readme and "frontend_init();" in readme
    assert f"`{src}/frontend_ops.h`" in readme
    if board == "esp32s3":
        assert '"frontend_data.cc"' in (out / "main" / "CMakeLists.txt").read_text()
    cortex_m = board != "esp32s3"
    assert ("mcunas's own kernels in `src/signal/`" in readme) == cortex_m
    assert (out / src / "signal" / "tflm_signal_ops.cc").is_file() == cortex_m
    assert ("`src/signal/signal_fft.cc`" in readme) == cortex_m


def test_project_without_front_end_is_unchanged(tmp_path):
    out = _project(tmp_path, "nucleo_f746zg", frontend=None)
    main_cpp = (out / "src" / "main.cpp").read_text()
    assert "predict(g_input, g_scores)" in main_cpp and "predict_audio" not in main_cpp
    assert not (out / "src" / "frontend_data.cc").exists()
    assert "front end" not in (out / "README.md").read_text()


def test_a_front_end_of_other_bands_is_refused(tmp_path):
    with pytest.raises(ModelError, match="not int8 frames x 40 mel bands"):
        _project(tmp_path, "nucleo_f746zg", frontend=frontend_model(FrontendConfig()))


@pytest.mark.skipif(shutil.which("g++") is None, reason="needs the host g++")
@pytest.mark.parametrize("board,src", [("nucleo_f746zg", "src"), ("esp32s3", "main")])
def test_main_cpp_with_front_end_compiles_on_the_host(tmp_path, board, src):
    out = _project(tmp_path, board) / src
    resolver_double(tmp_path / "inc")
    sizes = ["-DHOST_INPUT_BYTES=490", "-DHOST_OUTPUT_BYTES=12"]
    sizes += ["-DESP_PLATFORM"] if board == "esp32s3" else []  # as an ESP-IDF build defines
    cmd = ["g++", "-std=c++17", "-Wall", "-Werror", "-fsyntax-only", *sizes]
    cmd += ["-I", str(tmp_path / "inc"), "-I", str(HOST), "-I", str(out), str(out / "main.cpp")]
    build = subprocess.run(cmd, capture_output=True, text=True, timeout=180, check=False)
    assert build.returncode == 0, build.stderr


@pytest.mark.parametrize("board", ["nucleo_f746zg", "nano33ble", "rp2040"])
def test_export_of_a_best_folder_with_front_end(tmp_path, capsys, board):
    best = tmp_path / "run" / "best"
    best.mkdir(parents=True)
    (best / "model.tflite").write_bytes(KWS)
    (best / "frontend.tflite").write_bytes(FRONT)
    named = {"frontend": FrontendConfig(mel_bands=10, pcan=True).to_dict()}
    info = {"board": {"name": "esp32s3"}, "trial": {}, **named}
    (best / "best.json").write_text(json.dumps(info))
    with pytest.raises(SystemExit) as exc:
        main(["export", str(tmp_path / "run"), "--board", board])
    assert exc.value.code == 0, capsys.readouterr()
    src = best / f"project-{board}" / "src"
    assert (src / "frontend_data.cc").is_file()
    assert "predict_audio" in (src / "main.cpp").read_text()
    assert (src / "signal" / "tflm_signal_ops.cc").is_file()  # the Cortex-M signal kernels
