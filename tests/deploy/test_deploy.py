"""The deployable project: best/project after a search, `mcunas export`, the files,
`pio project config` offline, and main.cpp compiled and run on the host against
the TFLite Micro API doubles in tests/deploy_host/."""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from mcunas.boards.catalog import load_board
from mcunas.commands.cli import main
from mcunas.deploy import ArenaFigure, arena_size
from mcunas.deploy.pioenv import env_options
from mcunas.search.finish.export import export_best
from mcunas.search.results.store import TrialRecord, TrialStatus
from mcunas.tflite.reader import read_graph
from mcunas.tflite.resolver_ops import RESOLVER_METHODS
from tests.repo import REPO

ROOT = REPO
MODEL = ROOT / "mcunas" / "calibration" / "models" / "kws_ref_model.tflite"
HOST = REPO / "tests" / "deploy_host"
CLASSES = [f"word {i}" for i in range(11)] + ['odd "name"']


def search_out(tmp_path: Path, board: str, arena: int = 30000, estimated: bool = True) -> Path:
    """A finished search's folder under ``tmp_path`` (one trial, ``t7``, exported for ``board``)."""
    out = tmp_path / "out"
    (out / "models").mkdir(parents=True)
    shutil.copy(MODEL, out / "models" / "t7.tflite")
    trial = TrialRecord(
        trial_id="t7",
        status=TrialStatus.OK,
        model_path="models/t7.tflite",
        arena_bytes=arena,
        estimated=estimated,
        source="simulator:v3" if estimated else "board:/dev/ttyACM0",
        description="stages, 4 blocks",
    )
    context = {
        "board": {"name": board},
        "class_names": CLASSES,
        "preprocessing": {"kind": "audio", "mfcc": 10},
    }
    export_best(trial, out, context, load_board(board))
    return out


def _cli(argv: list[str], capsys) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exc:
        main(argv)
    out, err = capsys.readouterr()
    return exc.value.code, out, err


def test_arena_margin_is_stated_and_capped_at_the_budget() -> None:
    assert arena_size(ArenaFigure(10_000, True, "board"), 0) == (
        11264,
        "measured 10000 bytes (board) + 10% margin, rounded up to 1 KiB",
    )
    size, note = arena_size(ArenaFigure(10_000, False, "sim"), 12_000)
    assert size == 12_000 & ~15 and "25% margin" in note and "capped" in note


def test_search_export_writes_a_project_for_the_board(tmp_path: Path) -> None:
    out = search_out(tmp_path, "nucleo_f746zg")
    info = json.loads((out / "best" / "best.json").read_text())
    assert "project/" in info["files"] and "project_error" not in info
    project = out / "best" / "project"
    names = sorted(str(p.relative_to(project)) for p in project.rglob("*") if p.is_file())
    assert names == [
        "README.md",
        "platformio.ini",
        "src/main.cpp",
        "src/model_data.cc",
        "src/model_data.h",
        "src/model_ops.h",
    ]
    graph = read_graph(MODEL.read_bytes())
    inp, outp = graph.inputs[0], graph.outputs[0]
    main_cpp = (project / "src" / "main.cpp").read_text()
    assert f"kArenaBytes = {arena_size(ArenaFigure(30000, False, 's'), 0)[0]};" in main_cpp
    assert "estimated 30000 bytes (simulator:v3) + 25% margin" in main_cpp
    assert f"kInputScale = {inp.scale!r}f;" in main_cpp
    assert f"kInputZeroPoint = {inp.zero_point};" in main_cpp
    assert f"kOutputZeroPoint = {outp.zero_point};" in main_cpp
    assert f"kInputLen = {inp.elements};" in main_cpp and "kNumClasses = 12;" in main_cpp
    assert '"odd \\"name\\""' in main_cpp and "bool predict(const float* input" in main_cpp
    assert "pio run -e nucleo_f746zg -t upload" in (project / "README.md").read_text()
    ops = (project / "src" / "model_ops.h").read_text()
    for op in set(graph.op_names()):
        assert f"resolver.{RESOLVER_METHODS[op]}()" in ops
    ini = (project / "platformio.ini").read_text()
    pinned = env_options(ROOT / "platformio.ini", "nucleo_f746zg")["lib_deps"]
    assert "Chirale_TensorFlowLite.git#" in pinned and pinned in ini


def test_espidf_board_gets_an_idf_project(tmp_path: Path) -> None:
    project = search_out(tmp_path, "esp32c3", estimated=False) / "best" / "project"
    for name in ("CMakeLists.txt", "main/CMakeLists.txt", "main/main.cpp", "partitions.csv"):
        assert (project / name).is_file(), name
    manifest = (project / "main" / "idf_component.yml").read_text()
    assert "espressif/esp-tflite-micro" in manifest
    defaults = (project / "sdkconfig.defaults").read_text()
    assert 'CUSTOM_FILENAME="partitions.csv"' in defaults
    assert (project / "sdkconfig.defaults.esp32c3").is_file()
    main_cpp = (project / "main" / "main.cpp").read_text()
    assert 'extern "C" void app_main' in main_cpp and "measured 30000 bytes" in main_cpp
    assert "project(mcunas_esp32c3)" in (project / "CMakeLists.txt").read_text()


@pytest.mark.parametrize("board", ["esp32s3", "rp2040"])
def test_project_config_parses_offline(tmp_path: Path, board) -> None:
    project = search_out(tmp_path, board) / "best" / "project"
    pio = Path(sys.executable).with_name("pio")
    env = dict(os.environ, PLATFORMIO_CORE_DIR=str(tmp_path / "pio-core"))
    proc = subprocess.run(
        [str(pio) if pio.exists() else "pio", "project", "config", "-d", str(project)]
        + ["--json-output"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    config = {section: dict(items) for section, items in json.loads(proc.stdout)}
    assert config["platformio"]["default_envs"] == [board]
    assert config[f"env:{board}"]["board"] == load_board(board).pio_board
    if board.startswith("esp32"):
        assert Path(config["platformio"]["src_dir"]) == project / "main"


def test_export_command_for_another_board_estimates_its_arena(tmp_path: Path, capsys) -> None:
    out = search_out(tmp_path, "nucleo_f746zg")
    code, text, err = _cli(
        ["export", str(out / "best"), "--board", "nucleo_h743zi", "--json"], capsys
    )
    assert code == 0, err
    report = json.loads(text)
    project = out / "best" / "project-nucleo_h743zi"
    assert report["project"] == str(project) and "src/main.cpp" in report["files"]
    assert "estimated" in (project / "src" / "main.cpp").read_text()
    assert "estimate for nucleo_h743zi" in (project / "src" / "main.cpp").read_text()
    code, text, err = _cli(["export", str(out), "--out", str(tmp_path / "p")], capsys)
    assert code == 0 and "pio run -t upload" in text
    assert "simulator:v3" in (tmp_path / "p" / "src" / "main.cpp").read_text()


def test_export_refuses_a_folder_without_best_and_a_changed_model(tmp_path: Path, capsys) -> None:
    code, _, err = _cli(["export", str(tmp_path)], capsys)
    assert code == 2 and "No best.json" in err and len(err.strip().splitlines()) == 1
    out = search_out(tmp_path, "nucleo_f746zg")
    (out / "best" / "model.tflite").write_bytes(MODEL.read_bytes()[:-4] + b"XXXX")
    code, _, err = _cli(["export", str(out)], capsys)
    assert code == 2 and "changed since" in err and "Traceback" not in err


def resolver_double(include: Path) -> None:
    """A stand-in ``micro_mutable_op_resolver.h`` under ``include``: each Add method returns ok."""
    methods = "".join(
        f"  TfLiteStatus {m}() {{ return kTfLiteOk; }}\n"
        for m in sorted(set(RESOLVER_METHODS.values()))
    )
    methods += "  TfLiteStatus AddCustom(const char*, TfLiteRegistration*) { return kTfLiteOk; }\n"
    path = include / "tensorflow" / "lite" / "micro" / "micro_mutable_op_resolver.h"
    path.parent.mkdir(parents=True)
    path.write_text(
        '#pragma once\n#include "tensorflow/lite/c/common.h"\n'
        "namespace tflite {\nclass MicroOpResolver {};\n"
        "template <unsigned int tOpCount>\n"
        "class MicroMutableOpResolver : public MicroOpResolver {\n"
        f" public:\n{methods}}};\n}}  // namespace tflite\n"
    )


DRIVER = r"""
#include <stdio.h>
#include <stddef.h>
bool predict(const float* input, float* scores);
size_t top_class(const float* scores);
void setup();
void loop();
int main() {
  setup();
  float input[HOST_INPUT_BYTES];
  for (int i = 0; i < HOST_INPUT_BYTES; ++i) input[i] = -3.0f + 0.05f * i;
  float scores[HOST_OUTPUT_BYTES];
  if (!predict(input, scores)) return 1;
  for (int i = 0; i < HOST_OUTPUT_BYTES; ++i) printf("score %.6f\n", scores[i]);
  printf("top %zu\n", top_class(scores));
  loop();
  return 0;
}
"""


@pytest.mark.skipif(shutil.which("g++") is None, reason="needs the host g++")
def test_main_cpp_compiles_and_predicts_on_the_host(tmp_path: Path) -> None:
    out = search_out(tmp_path, "nucleo_f746zg")
    src = out / "best" / "project" / "src"
    graph = read_graph(MODEL.read_bytes())
    inp, outp = graph.inputs[0], graph.outputs[0]
    resolver_double(tmp_path / "inc")
    (tmp_path / "driver.cc").write_text(DRIVER)
    exe = tmp_path / "host"
    sizes = [f"-DHOST_INPUT_BYTES={inp.elements}", f"-DHOST_OUTPUT_BYTES={outp.elements}"]
    cmd = ["g++", "-std=c++17", "-Wall", "-Werror", *sizes, "-I", str(tmp_path / "inc")]
    cmd += ["-I", str(HOST), "-I", str(src), str(src / "main.cpp"), str(src / "model_data.cc")]
    build = subprocess.run(
        [*cmd, str(tmp_path / "driver.cc"), "-o", str(exe)],
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert build.returncode == 0, build.stderr
    lines = subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout
    main_cpp = (src / "main.cpp").read_text()
    arena = int(re.search(r"kArenaBytes = (\d+);", main_cpp).group(1))
    assert f"arena {arena} aligned16 1" in lines and "model ready" in lines
    scores = [float(v) for v in re.findall(r"^score (-?[\d.]+)$", lines, re.MULTILINE)]
    expected = []
    for i in range(outp.elements):  # the double's output is its input, element by element
        x = (-3.0 + 0.05 * i) / inp.scale  # C's lroundf: halves away from zero
        q = max(-128, min(127, int(math.copysign(math.floor(abs(x) + 0.5), x)) + inp.zero_point))
        expected.append((q - outp.zero_point) * outp.scale)
    assert scores == pytest.approx(expected, abs=2e-6)
    assert f"top {max(range(len(expected)), key=expected.__getitem__)}" in lines
    assert re.search(r"class \d+ \(.+\), score -?\d+/1000, latency \d+ us", lines)


@pytest.mark.skipif(shutil.which("g++") is None, reason="needs the host g++")
def test_espidf_main_cpp_compiles_on_the_host(tmp_path: Path) -> None:
    src = search_out(tmp_path, "esp32s3") / "best" / "project" / "main"
    resolver_double(tmp_path / "inc")
    graph = read_graph(MODEL.read_bytes())
    sizes = [f"-DHOST_INPUT_BYTES={graph.inputs[0].elements}", "-DHOST_OUTPUT_BYTES=12"]
    cmd = ["g++", "-std=c++17", "-Wall", "-Werror", "-fsyntax-only", *sizes]
    cmd += ["-I", str(tmp_path / "inc"), "-I", str(HOST), "-I", str(src), str(src / "main.cpp")]
    build = subprocess.run(cmd, capture_output=True, text=True, timeout=180, check=False)
    assert build.returncode == 0, build.stderr
