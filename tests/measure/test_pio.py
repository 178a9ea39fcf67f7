"""PioProject stages against a `pio` test double, and ELF sizing on built ELFs."""

from __future__ import annotations

import json
import shutil
import struct
import subprocess
import sys
import zlib
from dataclasses import replace
from pathlib import Path

import pytest

from mcunas.boards.catalog import load_board
from mcunas.errors import BoardProfileError, CandidateError, FatalError, MeasurementError
from mcunas.measure import pio as pio_mod
from mcunas.measure.elfsize import read_elf_sizes
from mcunas.measure.pio import PioProject
from tests.repo import REPO

MODEL = REPO / "mcunas" / "calibration" / "models"

# Records its argv to $FAKE_PIO_LOG, prints $FAKE_PIO_OUTPUT, copies $FAKE_PIO_ELF to
# <dir>/.pio/build/<env>/firmware.elf on a build, sleeps $FAKE_PIO_SLEEP, exits $FAKE_PIO_RC.
FAKE_PIO = """#!{python}
import json, os, shutil, sys, time
args = sys.argv[1:]
with open(os.environ["FAKE_PIO_LOG"], "a") as fh:
    fh.write(json.dumps(args) + "\\n")
print(os.environ.get("FAKE_PIO_OUTPUT", "Processing..."))
time.sleep(float(os.environ.get("FAKE_PIO_SLEEP", "0")))
rc = int(os.environ.get("FAKE_PIO_RC", "0"))
if rc == 0 and "-t" not in args and os.environ.get("FAKE_PIO_ELF"):
    out = os.path.join(args[args.index("-d") + 1], ".pio", "build", args[args.index("-e") + 1])
    os.makedirs(out, exist_ok=True)
    shutil.copy(os.environ["FAKE_PIO_ELF"], os.path.join(out, "firmware.elf"))
sys.exit(rc)
"""


def make_elf32(path: Path, sections: list[tuple[str, int, int, int, int]]) -> Path:
    """Write a little-endian ELF32 (ARM) with sections (name, sh_type, flags, addr, size)."""
    names = b"\0" + b"".join(s[0].encode() + b"\0" for s in sections) + b".shstrtab\0"
    data = bytearray(52)
    offsets, name_offsets, pos = [], [], 1
    for name, sh_type, _flags, _addr, size in sections:
        name_offsets.append(pos)
        pos += len(name) + 1
        offsets.append(len(data))
        if sh_type != 8:  # SHT_NOBITS has no file contents
            data += bytes(size)
    shstr_off = len(data)
    data += names
    shoff = len(data)
    headers = [bytes(40)]
    for (_n, sh_type, flags, addr, size), noff, off in zip(
        sections, name_offsets, offsets, strict=True
    ):
        headers.append(struct.pack("<10I", noff, sh_type, flags, addr, off, size, 0, 0, 4, 0))
    headers.append(struct.pack("<10I", pos, 3, 0, 0, shstr_off, len(names), 0, 0, 1, 0))
    data += b"".join(headers)
    ident = b"\x7fELF\x01\x01\x01" + bytes(9)
    data[:52] = ident + struct.pack(
        "<HHIIIIIHHHHHH",
        2,
        40,
        1,
        0,
        0,
        shoff,
        0x05000200,
        52,
        0,
        0,
        40,
        len(headers),
        len(headers) - 1,
    )
    path.write_bytes(bytes(data))
    return path


PROGBITS, NOBITS, INIT_ARRAY = 1, 8, 14
A, WA, AX = 0x2, 0x3, 0x6
CORTEX_M_SECTIONS = [
    (".isr_vector", PROGBITS, A, 0x0800_0000, 0x1C8),
    (".text", PROGBITS, AX, 0x0800_0200, 10_000),
    (".rodata", PROGBITS, A, 0x0800_2A00, 5_000),
    (".init_array", INIT_ARRAY, WA, 0x0800_3E00, 8),
    (".data", PROGBITS, WA, 0x2000_0000, 100),
    (".bss", NOBITS, WA, 0x2000_0064, 2_000),
    ("._user_heap_stack", NOBITS, WA, 0x2000_0900, 0x600),
    (".comment", PROGBITS, 0, 0, 50),
]
ESP_SECTIONS = [
    (".iram0.vectors", PROGBITS, AX, 0x4037_0000, 1_024),
    (".iram0.text", PROGBITS, AX, 0x4037_0400, 4_000),
    (".dram0.data", PROGBITS, WA, 0x3FC8_8000, 300),
    (".dram0.bss", NOBITS, WA, 0x3FC8_8200, 800),
    (".dram0.dummy", NOBITS, WA, 0x3FC8_0000, 5_024),
    (".flash.text", PROGBITS, AX, 0x4200_0000, 50_000),
    (".flash.rodata", PROGBITS, A, 0x3C00_0000, 20_000),
    (".rtc.data", PROGBITS, WA, 0x600F_E000, 16),
    (".ext_ram.bss", NOBITS, WA, 0x3D00_0000, 1_000),
]


def test_cortex_m_elf_sizes(tmp_path):
    sizes = read_elf_sizes(make_elf32(tmp_path / "fw.elf", CORTEX_M_SECTIONS), "cortex-m")
    assert sizes.static_ram_bytes == 100 + 2_000  # heap/stack reservation and flash arrays out
    assert sizes.flash_bytes == 0x1C8 + 10_000 + 5_000 + 8 + 100
    assert sizes.ram_sections == (".data", ".bss")


def test_esp_elf_sizes(tmp_path):
    sizes = read_elf_sizes(make_elf32(tmp_path / "fw.elf", ESP_SECTIONS), "xtensa")
    assert sizes.static_ram_bytes == 1_024 + 4_000 + 300 + 800  # IRAM code is SRAM too
    assert sizes.flash_bytes == 1_024 + 4_000 + 300 + 50_000 + 20_000 + 16


@pytest.mark.skipif(shutil.which("gcc") is None, reason="needs the host gcc")
def test_sizes_of_an_elf_linked_by_gcc(tmp_path):
    src = tmp_path / "t.c"
    src.write_text(
        "int big[1000]; int init[4] = {1, 2, 3, 4};\n"
        'const char msg[] = "mcunas";\nint main(void) { return big[0] + init[1]; }\n'
    )
    subprocess.run(["gcc", "-O1", "-o", str(tmp_path / "t.elf"), str(src)], check=True)
    sizes = read_elf_sizes(tmp_path / "t.elf", "riscv32")
    assert sizes.sections[".bss"] >= 4_000
    assert sizes.static_ram_bytes >= 4_000 + 16
    assert sizes.flash_bytes >= sizes.sections[".text"] + sizes.sections[".data"]


def test_not_an_elf(tmp_path):
    (tmp_path / "x.elf").write_text("not an elf")
    with pytest.raises(MeasurementError, match="Cannot read firmware ELF"):
        read_elf_sizes(tmp_path / "x.elf", "cortex-m")


@pytest.fixture
def fake_pio(tmp_path, monkeypatch):
    script = tmp_path / "bin" / "pio"
    script.parent.mkdir()
    script.write_text(FAKE_PIO.format(python=sys.executable))
    script.chmod(0o755)
    calls = tmp_path / "calls.jsonl"
    monkeypatch.setenv("FAKE_PIO_LOG", str(calls))
    monkeypatch.setenv("FAKE_PIO_ELF", str(make_elf32(tmp_path / "fw.elf", CORTEX_M_SECTIONS)))
    for var in ("FAKE_PIO_RC", "FAKE_PIO_OUTPUT", "FAKE_PIO_SLEEP"):
        monkeypatch.delenv(var, raising=False)

    def read_calls() -> list[list[str]]:
        return [json.loads(line) for line in calls.read_text().splitlines()]

    return str(script), read_calls


@pytest.fixture
def model_bytes() -> bytes:
    return (MODEL / "kws_ref_model.tflite").read_bytes()


def test_generate_writes_a_complete_project(tmp_path, model_bytes):
    board = load_board("nucleo_f746zg")
    project = PioProject(board, tmp_path / "w")
    assert project.generate(model_bytes) == tmp_path / "w"
    gen = project.generated_dir
    assert {p.name for p in gen.iterdir()} == {
        "model_data.cc",
        "model_data.h",
        "model_ops.h",
        "mcunas_config.h",
    }
    config = (gen / "mcunas_config.h").read_text()
    assert f"#define MCUNAS_ARENA_BYTES {board.model_sram_budget_bytes}u" in config
    assert '#define MCUNAS_BOARD_NAME "nucleo_f746zg"' in config
    assert "#define MCUNAS_RUNS 20" in config
    assert project.model_crc32 == f"{zlib.crc32(model_bytes):08x}"
    assert (tmp_path / "w" / "platformio.ini").is_file()
    assert (tmp_path / "w" / "firmware" / "src" / "runner.cc").is_file()
    assert not (tmp_path / "w" / "CMakeLists.txt").exists()  # only ESP-IDF needs it
    PioProject(load_board("esp32s3"), tmp_path / "e").generate(model_bytes)
    assert (tmp_path / "e" / "CMakeLists.txt").is_file()


def test_generate_rejects_a_model_over_the_flash_budget(tmp_path, model_bytes):
    board = replace(load_board("nucleo_f746zg"), usable_flash_bytes=60_000)
    with pytest.raises(CandidateError, match="flash budget"):
        PioProject(board, tmp_path / "w").generate(model_bytes)


def test_profile_without_platformio_env(tmp_path):
    with pytest.raises(BoardProfileError, match=r"\[platformio\]"):
        PioProject(replace(load_board("rp2040"), pio_env=""), tmp_path)


def test_build_runs_pio_and_reads_the_elf(tmp_path, fake_pio):
    pio, calls = fake_pio
    project = PioProject(load_board("nucleo_f746zg"), tmp_path / "w", pio=pio)
    info = project.build()
    assert calls() == [["run", "-e", "nucleo_f746zg", "-d", str(tmp_path / "w")]]
    assert info.elf_path == tmp_path / "w" / ".pio" / "build" / "nucleo_f746zg" / "firmware.elf"
    assert (info.static_ram_bytes, info.flash_bytes) == (2_100, 0x1C8 + 15_108)
    assert info.log_path.read_text().startswith("$ ")


@pytest.mark.parametrize(
    ("output", "error", "message"),
    [
        ("ld: region `RAM' overflowed by 1234 bytes", CandidateError, "overflowed by 1234"),
        (
            "Error: The program size (2000000 bytes) is greater than maximum allowed (1048576 "
            "bytes)",
            CandidateError,
            "too large",
        ),
        (
            "error: 'class tflite::MicroMutableOpResolver<3>' has no member named 'AddGelu'",
            CandidateError,
            "AddGelu",
        ),
        (
            "Platform Manager: Installing espressif32\nHTTPClientError:",
            FatalError,
            "internet access",
        ),
        ("runner.cc:12: error: expected ';'", MeasurementError, "build.log"),
    ],
)
def test_build_failures_are_mapped(tmp_path, fake_pio, monkeypatch, output, error, message):
    monkeypatch.setenv("FAKE_PIO_RC", "1")
    monkeypatch.setenv("FAKE_PIO_OUTPUT", output)
    with pytest.raises(error, match=message) as info:
        PioProject(load_board("esp32s3"), tmp_path / "w", pio=fake_pio[0]).build()
    assert type(info.value) is error


def test_build_failure_quotes_the_log_tail(tmp_path, fake_pio, monkeypatch):
    monkeypatch.setenv("FAKE_PIO_RC", "1")
    monkeypatch.setenv("FAKE_PIO_OUTPUT", "compiling\nfatal: something odd")
    with pytest.raises(MeasurementError) as info:
        PioProject(load_board("esp32s3"), tmp_path / "w", pio=fake_pio[0]).build()
    assert "fatal: something odd" in str(info.value)
    assert "pio run -e esp32s3" in str(info.value)


def test_build_timeout(tmp_path, fake_pio, monkeypatch):
    monkeypatch.setattr(pio_mod, "BUILD_TIMEOUT_S", 0.5)
    monkeypatch.setenv("FAKE_PIO_SLEEP", "5")
    with pytest.raises(MeasurementError, match="timed out after"):
        PioProject(load_board("rp2040"), tmp_path / "w", pio=fake_pio[0]).build()


def test_missing_pio_is_fatal(tmp_path):
    project = PioProject(load_board("rp2040"), tmp_path, pio=str(tmp_path / "no-such-pio"))
    with pytest.raises(FatalError, match="pip install platformio"):
        project.build()


def test_upload_arguments(tmp_path, fake_pio):
    pio, calls = fake_pio
    PioProject(load_board("rp2040"), tmp_path / "w", pio=pio).upload("/dev/ttyACM3")
    assert calls() == [
        [
            "run",
            "-e",
            "rp2040",
            "-d",
            str(tmp_path / "w"),
            "-t",
            "upload",
            "--upload-port",
            "/dev/ttyACM3",
        ]
    ]


@pytest.mark.parametrize(
    ("output", "hint"),
    [
        (
            "A fatal error occurred: Failed to connect to ESP32-S3: No serial data received.",
            "hold BOOT",
        ),
        ("could not open port '/dev/ttyUSB9': [Errno 13] Permission denied", "dialout"),
        ("Error: No ST-LINK detected!", "ST-LINK"),
        ("Something unexpected", "USB cable"),
    ],
)
def test_upload_failure_hints(tmp_path, fake_pio, monkeypatch, output, hint):
    monkeypatch.setenv("FAKE_PIO_RC", "1")
    monkeypatch.setenv("FAKE_PIO_OUTPUT", output)
    with pytest.raises(MeasurementError, match=hint) as info:
        PioProject(load_board("esp32s3"), tmp_path / "w", pio=fake_pio[0]).upload("/dev/ttyX")
    assert "upload.log" in str(info.value)


def test_pio_is_found_beside_python_without_an_activated_venv(tmp_path, monkeypatch):
    beside = Path(sys.executable).parent / "pio"
    if not beside.exists():
        pytest.skip("platformio's pio is not installed beside this Python")
    monkeypatch.setenv("PATH", str(tmp_path))  # as with `.venv/bin/mcunas` from a bare shell
    assert PioProject(load_board("esp32s3"), tmp_path / "w")._pio() == str(beside)
