import json
import subprocess
import sys

import pytest
import serial

from mcunas.boards.catalog import load_board
from mcunas.commands import bench
from mcunas.commands.cli import main
from mcunas.errors import MeasurementError
from mcunas.testing.virtual_board.flasher import VirtualProject
from mcunas.tflite.csource import model_crc32
from mcunas.tflite.writer import build_model
from tests.vboard_helpers import MODEL, OTHER_MODEL, virtual_board


@pytest.fixture
def model_file(tmp_path):
    path = tmp_path / "m.tflite"
    path.write_bytes(MODEL)
    return path


def run(argv, capsys):
    with pytest.raises(SystemExit) as exc:
        main(argv)
    out, err = capsys.readouterr()
    return exc.value.code, out, err


def fails_with(argv, capsys, text):
    code, out, err = run(argv, capsys)
    assert code == 2, out + err
    assert err.strip().count("\n") == 0 and text in err, err
    return err


def test_bench_no_flash_human(model_file, capsys):
    with virtual_board() as vb:
        code, out, err = run(
            ["bench", str(model_file), "--board", "esp32s3", "--port", vb.port, "--no-flash"],
            capsys,
        )
    assert code == 0, err
    assert "latency      2.000 ms median" in out and "model CRC-32" in out
    assert "slowest ops  #0 CONV_2D 1.600 ms" in out
    # the virtual firmware reports its build setup like a board's (esp32s3: no Cortex-M map)
    assert "setup        240 MHz, runtime virtual (mcunas simulator), -O2" in out


def test_bench_reports_a_cortex_m_boards_placement(model_file, capsys):
    with virtual_board(board="nucleo_f746zg") as vb:
        code, out, err = run(
            ["bench", str(model_file), "--board", "nucleo_f746zg", "--port", vb.port, "--no-flash"],
            capsys,
        )
    assert code == 0, err
    assert "setup        weights flash, arena sram, caches on, 216 MHz" in out


def test_bench_json_keys(model_file, capsys):
    with virtual_board() as vb:
        code, out, _ = run(
            [
                "bench",
                str(model_file),
                "--board",
                "esp32s3",
                "--port",
                vb.port,
                "--no-flash",
                "--json",
            ],
            capsys,
        )
    data = json.loads(out)
    for key in (
        "latency_ms",
        "latency_max_ms",
        "arena_bytes",
        "peak_sram_bytes",
        "flash_bytes",
        "source",
        "ops",
    ):
        assert key in data
    assert data["source"] == f"virtual-board:{vb.port}" and data["estimated"] is True
    assert data["latency_ms"] == 2.0 and data["ops"][0]["op"] == "CONV_2D"


def test_bench_flash_path_with_pio_double(model_file, capsys, monkeypatch, tmp_path):
    monkeypatch.setattr(bench, "PROJECT_FACTORY", VirtualProject)
    with virtual_board(model=OTHER_MODEL) as vb:
        code, out, err = run(
            [
                "bench",
                str(model_file),
                "--board",
                "esp32s3",
                "--port",
                vb.port,
                "--json",
                "--trace",
                str(tmp_path / "t.log"),
            ],
            capsys,
        )
    assert code == 0, err
    data = json.loads(out)
    assert data["details"]["static_ram_source"] == "elf" and data["details"]["flashed"]
    assert "TX    b'run\\n'" in (tmp_path / "t.log").read_text()


@pytest.mark.parametrize(
    ("fault", "text"),
    [
        ("silence", "never printed 'ready' within 0.5 s"),
        ("crc", "not this model"),
        ("disconnect", "vanished"),
        ("error", "arena_too_small"),
        ("crash", "Guru Meditation"),
    ],
)
def test_bench_faults_one_line_exit_2(model_file, capsys, fault, text):
    with virtual_board(fault) as vb:
        fails_with(
            [
                "bench",
                str(model_file),
                "--board",
                "esp32s3",
                "--port",
                vb.port,
                "--no-flash",
                "--timeout",
                "0.5",
            ],
            capsys,
            text,
        )


def test_bench_port_problems(model_file, capsys, monkeypatch):
    base = ["bench", str(model_file), "--board", "esp32s3", "--no-flash"]
    missing = "/dev/no-such-tty"
    fails_with([*base, "--port", missing], capsys, f"serial port {missing} does not exist")
    with virtual_board() as vb:
        holder = serial.Serial(vb.port, exclusive=True)
        try:
            fails_with([*base, "--port", vb.port], capsys, "is busy")
        finally:
            holder.close()
    monkeypatch.setattr("mcunas.measure.ports.serial_ports", lambda: [])
    fails_with(base, capsys, "no serial port matches esp32s3's USB ids (303A:1001")


def test_bench_build_and_upload_failures(model_file, capsys, monkeypatch):
    class Broken(VirtualProject):
        stage = "build"

        def build(self):
            if self.stage == "build":
                raise MeasurementError("pio run -e esp32s3 failed (exit 1); see the output above")
            return super().build()

        def upload(self, port):
            raise MeasurementError("pio upload failed; hold BOOT and retry")

    monkeypatch.setattr(bench, "PROJECT_FACTORY", Broken)
    with virtual_board() as vb:
        argv = ["bench", str(model_file), "--board", "esp32s3", "--port", vb.port]
        fails_with(argv, capsys, "build failed: pio run -e esp32s3 failed")
        Broken.stage = "upload"
        fails_with(argv, capsys, f"upload to {vb.port} failed: pio upload failed")


def test_bench_bad_model_files(tmp_path, capsys):
    fails_with(
        ["bench", str(tmp_path / "nope.tflite"), "--board", "esp32s3"],
        capsys,
        "Model file not found",
    )
    junk = tmp_path / "junk.tflite"
    junk.write_bytes(b"not a model at all")
    fails_with(["bench", str(junk), "--board", "esp32s3"], capsys, "not a .tflite model")
    flt = tmp_path / "float.tflite"
    f32 = {"dtype": "float32"}
    flt.write_bytes(
        build_model(
            [("FULLY_CONNECTED", [0, 1], [2])],
            [
                {**f32, "shape": [1, 4]},
                {**f32, "shape": [4, 4], "data": bytes(64)},
                {**f32, "shape": [1, 4]},
            ],
            [0],
            [2],
        )
    )
    fails_with(
        ["bench", str(flt), "--board", "esp32s3", "--no-flash", "--port", "/dev/null"],
        capsys,
        "is a float model",
    )
    big = tmp_path / "big.tflite"  # a real INT8 model with 4 MB of weights
    t = {"dtype": "int8", "scale": 0.1, "zero_point": 0}
    big.write_bytes(
        build_model(
            [("FULLY_CONNECTED", [0, 1], [2])],
            [
                {**t, "shape": [1, 2048]},
                {**t, "shape": [2048, 2048], "data": bytes(2048 * 2048)},
                {**t, "shape": [1, 2048]},
            ],
            [0],
            [2],
        )
    )
    fails_with(
        ["bench", str(big), "--board", "esp32s3", "--port", "/dev/null"],
        capsys,
        f"leaves {load_board('esp32s3').model_flash_budget_bytes} bytes of flash",
    )


def test_rack_list(tmp_path, capsys):
    with virtual_board() as good, virtual_board("silence") as mute:
        rack = tmp_path / "rack.toml"
        rack.write_text(
            f'[[board]]\nprofile = "esp32s3"\nport = "{good.port}"\nname = "left"\n'
            f'[[board]]\nprofile = "esp32s3"\nport = "{mute.port}"\n'
        )
        code, out, _ = run(["rack", "list", "--rack", str(rack), "--timeout", "0.4"], capsys)
        assert code == 0
        assert "ready (firmware 0.1.0-virtual)" in out and "no answer" in out
        assert "1 of 2 board(s) answer" in out
        code, out, _ = run(
            ["rack", "list", "--rack", str(rack), "--timeout", "0.4", "--json"], capsys
        )
        rows = json.loads(out)
        assert [r["answers"] for r in rows] == [True, False] and rows[0]["name"] == "left"
    fails_with(
        ["rack", "list", "--rack", str(tmp_path / "none.toml")], capsys, "rack file not found"
    )


def test_bench_as_subprocess(model_file):
    with virtual_board() as vb:
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "mcunas",
                "bench",
                str(model_file),
                "--board",
                "esp32s3",
                "--port",
                vb.port,
                "--no-flash",
                "--json",
            ],
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["model_crc32"] == model_crc32(MODEL)


@pytest.mark.parametrize("value", ["inf", "nan", "0", "-1", "soon"])
def test_every_timeout_is_a_finite_positive_number(model_file, capsys, value: str) -> None:
    for argv in (
        ["bench", str(model_file), "--board", "esp32s3", "--timeout", value],
        ["rack", "list", "--timeout", value],
        ["calibrate", "--board", "esp32s3", "--virtual", "--timeout", value],
    ):
        code, _, err = run(argv, capsys)
        assert code == 2 and "--timeout" in err and "Traceback" not in err


def test_bench_dry_run_writes_the_project_without_a_board(model_file, tmp_path, capsys):
    fw = tmp_path / "fw"
    argv = ["bench", str(model_file), "--board", "esp32s3", "--port", "/dev/none", "--dry-run"]
    code, out, err = run([*argv, "--project-dir", str(fw)], capsys)
    assert code == 0, err
    assert f"pio run -e esp32s3 -d {fw} -t upload" in out
    assert (fw / "platformio.ini").is_file() and (fw / "CMakeLists.txt").is_file()
    assert (fw / "firmware" / "esp-idf" / "sdkconfig.defaults").is_file()
    header = (fw / "firmware" / "src" / "generated" / "model_data.h").read_text()
    assert model_crc32(MODEL) in header
