"""profile_model, the simulator measurer, and `mcunas profile` (output and bad input)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from mcunas.boards.catalog import load_board
from mcunas.commands.cli import cli, main
from mcunas.cost.profile import profile_model
from mcunas.errors import CandidateError, ModelError
from mcunas.measure.base import get_measurer
from mcunas.tflite.writer import build_model
from tests.repo import REPO
from tests.tflite.test_audit import gelu_model

REPO = REPO
MODELS = REPO / "mcunas" / "calibration" / "models"
KWS = MODELS / "kws_ref_model.tflite"
VWW = MODELS / "vww_96_int8.tflite"

TINY_BOARD = """\
name = "tiny"
core = "cortex-m4f"
clock_hz = 64_000_000
sram_bytes = 65_536
flash_bytes = 262_144
kernels = "cmsis-nn"
"""


def float_model() -> bytes:
    return build_model(
        [("FULLY_CONNECTED", [0, 1], [2])],
        [
            {"shape": [1, 8], "dtype": "float32"},
            {"shape": [4, 8], "dtype": "float32", "data": bytes(128)},
            {"shape": [1, 4], "dtype": "float32"},
        ],
        [0],
        [2],
    )


def test_profile_model_fits_and_labels_its_source() -> None:
    prof = profile_model(KWS, load_board("nucleo_f746zg"))
    assert prof.fits and prof.reasons == () and prof.runnable
    assert prof.source.startswith("simulator:")
    assert prof.latency.ms > prof.latency.lower_bound_ms > 0
    data = prof.to_dict()
    assert data["estimated"] is True and len(data["ops"]) == len(prof.graph.ops)


def test_reasons_name_each_violated_limit(tmp_path: Path) -> None:
    board_file = tmp_path / "tiny.toml"
    board_file.write_text(TINY_BOARD)
    prof = profile_model(VWW, load_board(str(board_file)))
    assert not prof.fits
    text = " | ".join(prof.reasons)
    assert "peak SRAM" in text and "usable SRAM 64.0 KiB" in text
    assert "arena" in text and "flash" in text and "usable flash 256.0 KiB" in text


def test_kernels_override_changes_the_estimate() -> None:
    board = load_board("esp32s3")
    fast = profile_model(KWS, board)
    slow = profile_model(KWS, board, kernels="reference")
    assert slow.audit.kernels == "reference" and slow.latency.ms > fast.latency.ms


def test_unrunnable_model_is_not_an_error_but_is_not_fit() -> None:
    prof = profile_model(gelu_model(), load_board("esp32s3"))
    assert not prof.fits and not prof.runnable
    assert "GELU" in prof.reasons[0]
    with pytest.raises(ModelError, match="full-integer INT8"):
        profile_model(float_model(), load_board("esp32s3"))


def test_simulator_measurer() -> None:
    measurer = get_measurer("simulator")(load_board("esp32s3"))
    measurer.test_connection()
    m = measurer.measure(KWS.read_bytes())
    assert m.estimated and m.source.startswith("simulator:")
    assert m.latency_error_pct is not None and m.latency_max_ms > m.latency_ms
    assert len(m.model_crc32) == 8 and len(m.ops) == 13
    assert m.fits is True and m.reasons == () and m.macs and m.details["runnable"]
    with pytest.raises(CandidateError, match="GELU"):
        measurer.measure(gelu_model())
    with pytest.raises(CandidateError, match="float model"):
        measurer.measure(float_model())


def test_cli_table_and_json() -> None:
    runner = CliRunner()
    result = runner.invoke(cli, ["profile", str(KWS), "--board", "nucleo_f746zg"])
    assert result.exit_code == 0, result.output
    assert "SIMULATOR ESTIMATES" in result.output
    assert "DEPTHWISE_CONV_2D" in result.output and "1x25x5x64" in result.output
    assert "fits nucleo_f746zg: yes" in result.output
    result = runner.invoke(cli, ["profile", str(KWS), "--board", "esp32s3", "--json"])
    data = json.loads(result.output)
    for key in (
        "latency_ms",
        "arena_bytes",
        "peak_sram_bytes",
        "flash_bytes",
        "fits",
        "source",
        "ops",
    ):
        assert key in data
    assert data["ops"][0]["op"] == "CONV_2D" and data["ops"][0]["accelerated"] is True
    # the 10x4 stem over one channel is a kind no ESP32-S3 measurement covers
    # (each op's error mixes in its dispatch overhead's, a small share of these ops)
    assert data["ops"][0]["est_error_pct"] == pytest.approx(50.0, abs=0.5)
    assert data["ops"][1]["est_error_pct"] == pytest.approx(13.9, abs=0.5)
    spent = sum(o["est_ms"] * o["est_error_pct"] for o in data["ops"])
    # the model's error is the time-weighted mean (the invoke overhead at its own error)
    assert spent / data["latency_ms"] == pytest.approx(data["latency_error_pct"], abs=0.5)
    help_text = runner.invoke(cli, ["profile", "--help"]).output
    assert "Examples:" in help_text and "--kernels" in help_text and "--clock-mhz" in help_text


def test_clock_override_scales_latency_not_memory() -> None:
    runner = CliRunner()
    full, half = [
        json.loads(runner.invoke(cli, ["profile", str(KWS), "--board", "nano33ble", *a]).output)
        for a in (["--json"], ["--json", "--clock-mhz", "32"])
    ]
    assert half["latency_ms"] == pytest.approx(2 * full["latency_ms"], rel=1e-6)
    assert half["arena_bytes"] == full["arena_bytes"]
    assert half["peak_sram_bytes"] == full["peak_sram_bytes"]


def _run_main(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    with pytest.raises(SystemExit) as exc:
        main(argv)
    return exc.value.code, capsys.readouterr().err


def test_bad_input_is_one_line_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    not_model = tmp_path / "notes.tflite"
    not_model.write_text("just text")
    floaty = tmp_path / "float.tflite"
    floaty.write_bytes(float_model())
    gelu = tmp_path / "gelu.tflite"
    gelu.write_bytes(gelu_model())
    bad_board = tmp_path / "bad.toml"
    bad_board.write_text('name = "bad"\ncore = "cortex-m4"\n')
    cases = {
        "not found": [str(tmp_path / "missing.tflite"), "--board", "esp32s3"],
        "not a .tflite": [str(not_model), "--board", "esp32s3"],
        "full-integer INT8": [str(floaty), "--board", "esp32s3"],
        "no kernel for: GELU": [str(gelu), "--board", "esp32s3"],
        "Unknown board 'nosuch'": [str(KWS), "--board", "nosuch"],
        "missing required key": [str(KWS), "--board", str(bad_board)],
        "must be a number above 0 to 10000 MHz, got 0": [
            *[str(KWS), "--board", "esp32s3", "--clock-mhz", "0"]
        ],
        "must be a number above 0 to 10000 MHz, got nan": [
            *[str(KWS), "--board", "esp32s3", "--clock-mhz", "nan"]
        ],
        "above esp32s3's 240 MHz": [str(KWS), "--board", "esp32s3", "--clock-mhz", "480"],
    }
    for expected, args in cases.items():
        code, err = _run_main(["profile", *args], capsys)
        lines = [ln for ln in err.splitlines() if ln.strip()]
        assert code == 2, (expected, err)
        assert len(lines) == 1 and expected in lines[0], (expected, err)
        assert "Traceback" not in err


def test_subprocess_error_and_success(tmp_path: Path) -> None:
    env = {**os.environ, "MCUNAS_HOME": str(tmp_path)}
    cmd = [sys.executable, "-m", "mcunas", "profile"]
    bad = subprocess.run(
        [*cmd, str(tmp_path / "none.tflite"), "--board", "esp32s3"],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
        check=False,
    )
    assert bad.returncode == 2 and bad.stderr.strip().count("\n") == 0
    assert "not found" in bad.stderr and "Traceback" not in bad.stderr
    good = subprocess.run(
        [*cmd, str(KWS), "--board", "rp2040", "--json"],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
        check=False,
    )
    assert good.returncode == 0, good.stderr
    assert json.loads(good.stdout)["board"] == "rp2040"
