"""The firmware runs frontend.tflite then the model in one go: sources, protocol, virtual board.

The firmware's C is compiled for boards only (PlatformIO); here the host side is
checked: the generated sources and defines the firmware reads, the ``frontend``
object of the result line, the virtual board that runs both graphs in the host
TFLM runtime, and ``mcunas bench`` of a ``best/`` folder with a front end.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from mcunas.boards.catalog import load_board
from mcunas.commands import bench
from mcunas.commands.cli import main
from mcunas.errors import CandidateError
from mcunas.frontend.config import FrontendConfig
from mcunas.frontend.graph import config_of_model, frontend_model
from mcunas.measure.board import BoardMeasurer, ModelMismatch
from mcunas.measure.pio import PioProject
from mcunas.measure.protocol import ProtocolError, Result, encode_line, parse_line
from mcunas.testing.virtual_board.figures import fixed_figures
from mcunas.testing.virtual_board.flasher import VirtualProject
from mcunas.tflite.csource import model_crc32
from mcunas.tflite.reader import read_graph
from tests.repo import REPO
from tests.vboard_helpers import virtual_board

ROOT = REPO
SRC = ROOT / "firmware" / "src"
KWS = (ROOT / "mcunas" / "calibration" / "models" / "kws_ref_model.tflite").read_bytes()
FRONT = frontend_model(FrontendConfig(mel_bands=10, pcan=True))  # kws_ref_model: (49, 10, 1)
ESP = load_board("esp32s3")


def _defines(path: Path) -> dict[str, str]:
    return dict(re.findall(r"#define (\w+) (\S+)", path.read_text()))


def test_generate_writes_both_graphs_and_the_framing(tmp_path):
    project = PioProject(ESP, tmp_path)
    project.generate(KWS, frontend=FRONT)
    gen = project.generated_dir
    defines = _defines(gen / "mcunas_config.h")
    assert defines["MCUNAS_HAS_FRONTEND"] == "1"
    assert defines["MCUNAS_FRONTEND_FRAMES"] == "49u"
    assert defines["MCUNAS_FRONTEND_FRAME_SAMPLES"] == "480u"  # 30 ms at 16 kHz
    assert defines["MCUNAS_FRONTEND_HOP_SAMPLES"] == "320u"
    assert defines["MCUNAS_FRONTEND_MEL_BANDS"] == "10u"
    fe_arena = int(defines["MCUNAS_FRONTEND_ARENA_BYTES"].rstrip("u"))
    assert fe_arena > 0 and fe_arena % 1024 == 0
    # the two arenas share the board's model SRAM budget
    model_arena = int(defines["MCUNAS_ARENA_BYTES"].rstrip("u"))
    assert model_arena + fe_arena == ESP.model_sram_budget_bytes
    assert _defines(gen / "frontend_data.h")["MCUNAS_FRONTEND_CRC32"] == f'"{model_crc32(FRONT)}"'
    # every op of each graph is registered by its own resolver
    for graph, header, fn in ((FRONT, "frontend_ops.h", "McunasRegisterFrontendOps"),
                              (KWS, "model_ops.h", "McunasRegisterOps")):  # fmt: skip
        text = (gen / header).read_text()
        assert fn in text
        ways = 2 if header == "frontend_ops.h" else 1  # ESP-IDF's ops, or mcunas's kernels
        assert text.count("resolver.Add") == ways * len(set(read_graph(graph).op_names()))
    assert "resolver.AddRfft()" in (gen / "frontend_ops.h").read_text()


def test_generate_without_front_end_keeps_the_old_build(tmp_path):
    project = PioProject(ESP, tmp_path)
    project.generate(KWS)
    defines = _defines(project.generated_dir / "mcunas_config.h")
    assert "MCUNAS_HAS_FRONTEND" not in defines
    assert int(defines["MCUNAS_ARENA_BYTES"].rstrip("u")) == ESP.model_sram_budget_bytes
    assert not (project.generated_dir / "frontend_data.cc").exists()


@pytest.mark.parametrize("board", ["nano33ble", "nucleo_f746zg", "nucleo_h743zi",
                                   "nucleo_l4r5zi", "rp2040"])  # fmt: skip
def test_every_cortex_m_board_builds_the_front_end_on_the_signal_kernels(tmp_path, board):
    project = PioProject(load_board(board), tmp_path)
    project.generate(KWS, frontend=FRONT)
    ops = (project.generated_dir / "frontend_ops.h").read_text()
    assert '#include "signal/tflm_signal_ops.h"' in ops
    assert 'resolver.AddCustom("SignalPCAN", mcunas_signal::Register_SignalPCAN())' in ops
    assert (tmp_path / "firmware" / "src" / "signal" / "tflm_signal_ops.cc").is_file()
    assert "+<signal/*.cc>" in (tmp_path / "platformio.ini").read_text()


def test_a_graph_the_signal_kernels_cannot_run_is_refused_naming_the_op(tmp_path):
    from mcunas.errors import UserError
    from tests.frontend.test_signal_graph import with_op_renamed, with_option

    nano = load_board("nano33ble")
    with pytest.raises(UserError, match=r"^front end: op SignalDelay is not in mcunas's signal"):
        PioProject(nano, tmp_path).generate(
            KWS, frontend=with_op_renamed(FRONT, "SignalPCAN", "SignalDelay")
        )
    with pytest.raises(UserError, match=r"^front end: SignalWindow: option shift=40 is outside"):
        PioProject(nano, tmp_path).generate(
            KWS, frontend=with_option(FRONT, "SignalWindow", shift=40)
        )


def test_a_front_end_the_model_was_not_trained_on_is_refused(tmp_path):
    with pytest.raises(CandidateError, match="not int8 frames x 40 mel bands"):
        PioProject(ESP, tmp_path).generate(KWS, frontend=frontend_model(FrontendConfig()))


def test_firmware_reads_every_name_the_host_writes(tmp_path):
    project = PioProject(ESP, tmp_path)
    project.generate(KWS, frontend=FRONT)
    stage = (SRC / "frontend_stage.cc").read_text() + (SRC / "runner.cc").read_text()
    written = "".join(p.read_text() for p in project.generated_dir.iterdir())
    for name in ("g_frontend_data_len", "MCUNAS_FRONTEND_CRC32_U32", "McunasRegisterFrontendOps",
                 "McunasFrontendOpResolver"):  # fmt: skip
        assert name in stage and name in written, name
    used = set(re.findall(r"MCUNAS_FRONTEND_[A-Z0-9_]+", (SRC / "frontend_stage.cc").read_text()))
    assert len(used) >= 7 and all(name in written for name in used), used
    assert "frontend_stage.cc" in (SRC / "CMakeLists.txt").read_text()
    assert "+<frontend_stage.cc>" in (ROOT / "platformio.ini").read_text()


def _result(**extra) -> str:
    base = {
        "event": "result", "model_crc32": "0badf00d", "runs": 3,
        "latency_us": {"min": 1, "median": 2, "max": 3}, "arena_bytes": 10, "stack_bytes": 1,
    }  # fmt: skip
    return encode_line({**base, **extra}).strip()


def test_the_result_line_carries_the_front_end_and_older_lines_still_parse():
    old = parse_line(_result())
    assert isinstance(old, Result) and old.frontend is None
    fe = {"crc32": "12345678", "frames": 49, "arena_bytes": 5000,
          "latency_us": {"min": 4000, "median": 4100, "max": 4200}}  # fmt: skip
    new = parse_line(_result(frontend=fe))
    assert isinstance(new, Result) and new.frontend is not None
    assert (new.frontend.frames, new.frontend.latency_median_us) == (49, 4100)
    with pytest.raises(ProtocolError, match="frontend.latency_us"):
        parse_line(_result(frontend={**fe, "latency_us": {"min": 5, "median": 1, "max": 9}}))
    with pytest.raises(ProtocolError, match="crc32"):
        parse_line(_result(frontend={**fe, "crc32": "XYZ"}))


FAST = fixed_figures(latency_ms=3.0, arena_bytes=30_000)


def test_virtual_board_runs_both_graphs_and_reports_both(tmp_path):
    with virtual_board(model=KWS, figures=FAST, time_scale=1000) as vb:
        m = BoardMeasurer(
            ESP, port=vb.port, timeout_s=5, project_factory=VirtualProject, work_dir=tmp_path
        ).measure(KWS, FRONT)
    fe = m.details["frontend"]
    assert fe["crc32"] == model_crc32(FRONT) and fe["frames"] == 49
    assert fe["latency_ms"] > 0 and fe["arena_bytes"] > 0
    assert (
        m.peak_sram_bytes
        == 30_000
        + fe["arena_bytes"]
        + m.details["static_ram_bytes"]
        + (m.details["result"]["stack_bytes"])
    )
    assert m.latency_ms == pytest.approx(3.0)  # the model's own figure keeps its meaning
    assert (tmp_path / "frontend.tflite").read_bytes() == FRONT


def test_a_board_without_the_front_end_is_caught(tmp_path):
    with virtual_board(model=KWS, figures=FAST, time_scale=1000) as vb:
        reader = BoardMeasurer(ESP, port=vb.port, flash=False, timeout_s=5)
        with pytest.raises(ModelMismatch, match="runs front end none"):
            reader.measure(KWS, FRONT)


def frontend_best_folder(root: Path) -> Path:
    """``root/best`` with a model and its audio front end, searched for the esp32s3."""
    best = root / "best"
    best.mkdir(parents=True)
    (best / "model.tflite").write_bytes(KWS)
    (best / "frontend.tflite").write_bytes(FRONT)
    info = {"board": {"name": "esp32s3"}, "frontend": config_of_model(FRONT).to_dict()}
    (best / "best.json").write_text(json.dumps(info))
    return best


def test_bench_of_a_best_folder_measures_front_end_and_model(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(bench, "PROJECT_FACTORY", VirtualProject)
    best = frontend_best_folder(tmp_path / "run")
    with virtual_board(model=KWS, figures=FAST, time_scale=1000) as vb:
        with pytest.raises(SystemExit) as exc:
            main(["bench", str(tmp_path / "run"), "--board", "esp32s3", "--port", vb.port])
    out = capsys.readouterr().out
    assert exc.value.code == 0, out
    assert "front end " in out and "per window of 49 frames" in out
    assert "= arena + front-end arena + static RAM" in out
    assert f"CRC-32 {model_crc32(FRONT)} (checked)" in out
    with pytest.raises(SystemExit) as exc:
        main(["bench", str(best), "--board", "esp32s3", "--dry-run", "--project-dir",
              str(tmp_path / "fw")])  # fmt: skip
    assert exc.value.code == 0
    assert (tmp_path / "fw" / "firmware" / "src" / "generated" / "frontend_ops.h").is_file()


@pytest.mark.skipif(shutil.which("g++") is None, reason="needs the host g++")
def test_frontend_stage_compiles_with_the_generated_sources(tmp_path):
    """frontend_stage.cc against its generated headers and the TFLM API doubles of
    tests/deploy_host (the real build is PlatformIO's; firmware/README.md says which
    TFLM headers it was checked against)."""
    from tests.deploy.test_deploy import HOST, resolver_double

    project = PioProject(ESP, tmp_path / "fw")
    project.generate(KWS, frontend=FRONT)
    src = tmp_path / "fw" / "firmware" / "src"
    resolver_double(tmp_path / "inc")
    cmd = ["g++", "-std=c++17", "-Wall", "-Werror", "-fsyntax-only"]
    cmd += ["-DHOST_INPUT_BYTES=490", "-DHOST_OUTPUT_BYTES=12", "-I", str(tmp_path / "inc")]
    cmd += ["-I", str(HOST), "-I", str(src), str(src / "frontend_stage.cc")]
    build = subprocess.run(cmd, capture_output=True, text=True, timeout=180, check=False)
    assert build.returncode == 0, build.stderr


def test_a_search_measuring_a_front_end_on_any_built_in_board_passes_its_checks(
    tmp_path,
):
    from mcunas.search.api import check_search
    from mcunas.search.settings.config import SearchConfig

    main, sub = os.openpty()  # a port that exists: the refusal is the board's, not the port's
    try:
        port = os.ttyname(sub)
        for board, out in (("nucleo_f746zg", "o"), ("esp32s3", "e"), ("nano33ble", "n")):
            config = SearchConfig(board=board, frontend="tflm", measure="board", port=port)
            config.out = str(tmp_path / out)
            assert check_search(config).name == board  # esp-tflite-micro or the signal kernels
    finally:
        os.close(sub)
        os.close(main)
