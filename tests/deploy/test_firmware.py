"""The firmware project: platformio.ini against the board profiles, and the
portable core (JSON lines, CRC-32, median) compiled and run on the host."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import zlib
from pathlib import Path

import pytest

from mcunas.boards.catalog import list_boards
from tests.repo import REPO

ROOT = REPO
SRC = ROOT / "firmware" / "src"
PORT_OF_PLATFORM = {  # platform -> the port file its Arduino envs must compile
    "ststm32": "port_stm32.cc",
    "nordicnrf52": "port_nrf52_mbed.cc",
    "raspberrypi": "port_rp2040.cc",
}


@pytest.fixture(scope="module")
def pio_config(tmp_path_factory) -> dict[str, dict]:
    """`pio project config` output, with PlatformIO's state in a temporary folder."""
    core = tmp_path_factory.mktemp("pio-core")
    env = dict(os.environ, PLATFORMIO_CORE_DIR=str(core))
    pio = Path(sys.executable).with_name("pio")
    if not pio.exists():
        pio = Path(shutil.which("pio") or "pio")
    proc = subprocess.run(
        [str(pio), "project", "config", "-d", str(ROOT), "--json-output"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return {section: dict(items) for section, items in json.loads(proc.stdout)}


def test_platformio_ini_parses_offline(pio_config):
    assert Path(pio_config["platformio"]["src_dir"]) == SRC
    assert Path(pio_config["platformio"]["include_dir"]) == SRC


def test_every_profile_has_its_env_and_every_env_a_profile(pio_config):
    envs = {name[4:]: opts for name, opts in pio_config.items() if name.startswith("env:")}
    boards = [b for b in list_boards() if b.builtin]
    assert {b.pio_env for b in boards} == set(envs)
    for board in boards:
        opts = envs[board.pio_env]
        assert opts["board"] == board.pio_board, board.name
        assert opts["platform"].split("@")[0].strip() == board.pio_platform, board.name


def test_each_env_compiles_one_port_with_the_right_kernels(pio_config):
    for name, opts in pio_config.items():
        if not name.startswith("env:"):
            continue
        platform = opts["platform"].split("@")[0].strip()
        if platform == "espressif32":
            assert opts["framework"] == ["espidf"], name
            continue
        assert opts["framework"] == ["arduino"], name
        assert any("Chirale_TensorFlowLite" in dep for dep in opts["lib_deps"]), name
        ports = re.findall(r"\+<(port_\w+\.cc)>", " ".join(opts["build_src_filter"]))
        assert ports == [PORT_OF_PLATFORM[platform]], name


def test_sources_named_by_the_builds_exist():
    cmake = (SRC / "CMakeLists.txt").read_text()
    for source in re.findall(r'"([\w/]+\.cc)"', cmake):
        assert source.startswith("generated/") or (SRC / source).is_file(), source
    manifest = (SRC / "idf_component.yml").read_text()
    assert "espressif/esp-tflite-micro" in manifest
    for port in PORT_OF_PLATFORM.values():
        assert (SRC / port).is_file()


def test_firmware_uses_the_names_convert_writes(tmp_path):
    from mcunas.tflite.csource import write_model_sources

    model = (ROOT / "mcunas" / "calibration" / "models" / "kws_ref_model.tflite").read_bytes()
    write_model_sources(model, tmp_path)
    generated = (tmp_path / "model_data.h").read_text() + (tmp_path / "model_ops.h").read_text()
    runner = (SRC / "runner.cc").read_text()
    for name in (
        "g_model_data_len",
        "MCUNAS_MODEL_CRC32_U32",
        "McunasRegisterOps",
        "McunasOpResolver",
    ):
        assert name in runner and name in generated, name


HOST_MAIN = r"""
#include <stdio.h>
#include <string.h>
#include "json_line.h"
#include "port.h"
#include "util.h"
namespace mcunas {
void port_write(const char* data, size_t len) { fwrite(data, 1, len, stdout); }
}
int main() {
  using mcunas::JsonLine;
  JsonLine("ready").str("board", "nucleo_f746zg").num("clock_hz", 216000000u).end();
  JsonLine line("result");
  line.hex32("model_crc32", 0x0badf00du).begin_object("latency_us").num("min", 1)
      .num("median", 2).num("max", 3).end_object().begin_array("ops");
  line.begin_object(nullptr).str("op", "CONV_2D").tenths("us", 12345).end_object();
  line.begin_object(nullptr).str("op", "we\"ird\\\n").tenths("us", 7).end_object();
  line.end();
  const char* text = "123456789";
  printf("crc %08x\n", (unsigned)mcunas::crc32((const uint8_t*)text, strlen(text)));
  uint32_t odd[5] = {9, 1, 7, 3, 5}, even[4] = {40, 10, 30, 20};
  printf("median %u %u\n", (unsigned)mcunas::median_u32(odd, 5),
         (unsigned)mcunas::median_u32(even, 4));
  return 0;
}
"""


@pytest.mark.skipif(shutil.which("g++") is None, reason="needs the host g++")
def test_portable_core_on_the_host(tmp_path):
    (tmp_path / "main.cc").write_text(HOST_MAIN)
    exe = tmp_path / "core"
    subprocess.run(
        [
            "g++",
            "-std=c++17",
            "-Wall",
            "-Werror",
            "-I",
            str(SRC),
            str(tmp_path / "main.cc"),
            str(SRC / "json_line.cc"),
            str(SRC / "util.cc"),
            "-o",
            str(exe),
        ],
        check=True,
        capture_output=True,
        timeout=120,
    )
    lines = subprocess.run([str(exe)], check=True, capture_output=True, text=True).stdout
    ready, result, crc, median = lines.splitlines()
    assert ready.startswith("MCUNAS/1 ")
    assert json.loads(ready[9:]) == {
        "event": "ready",
        "board": "nucleo_f746zg",
        "clock_hz": 216000000,
    }
    parsed = json.loads(result.removeprefix("MCUNAS/1 "))
    assert parsed["model_crc32"] == "0badf00d"
    assert parsed["latency_us"] == {"min": 1, "median": 2, "max": 3}
    assert parsed["ops"] == [{"op": "CONV_2D", "us": 1234.5}, {"op": 'we"ird\\\n', "us": 0.7}]
    assert crc == f"crc {zlib.crc32(b'123456789'):08x}"
    assert median == "median 5 25"
