import subprocess
import sys

import pytest

from mcunas.boards.catalog import load_board
from mcunas.errors import CandidateError, FatalError, MeasurementError
from mcunas.measure.base import get_measurer
from mcunas.measure.board import (
    BoardMeasurer,
    BuildFailed,
    ModelMismatch,
    ModelTooLarge,
    UploadFailed,
    WrongFirmware,
)
from mcunas.measure.serial_link import BoardCrashed, LinkError, PortVanished
from mcunas.testing.virtual_board.device import FAULTS, VirtualBoard
from mcunas.testing.virtual_board.flasher import VirtualProject
from mcunas.tflite.csource import model_crc32
from tests.vboard_helpers import MODEL, OTHER_MODEL, virtual_board

ESP = load_board("esp32s3")


def reader(port, **kw):
    return BoardMeasurer(ESP, port=port, flash=False, timeout_s=kw.pop("timeout_s", 2), **kw)


def test_registered_as_board():
    assert get_measurer("board") is BoardMeasurer


@pytest.mark.parametrize("fault", [None, "garbage", "reset"])
def test_measures_through_noise_and_resets(fault):
    with virtual_board(fault) as vb:
        m = reader(vb.port).measure(MODEL)
    assert m.source == f"virtual-board:{vb.port}" and m.estimated and m.details["virtual"]
    assert m.latency_ms == 2.0 and m.latency_max_ms >= m.latency_ms
    assert m.model_crc32 == model_crc32(MODEL)
    d = m.details
    assert m.peak_sram_bytes == m.arena_bytes + d["static_ram_bytes"] + d["stack_bytes"]
    assert d["static_ram_source"] == "firmware" and d["result"]["virtual"] is True
    assert [o.op for o in m.ops] == ["CONV_2D", "FULLY_CONNECTED"]
    assert m.ops[0].ms == pytest.approx(1.6)


@pytest.mark.parametrize(
    ("fault", "error", "text"),
    [
        ("silence", LinkError, "never printed 'ready'"),
        ("crc", ModelMismatch, "drop --no-flash"),
        ("error", CandidateError, "arena_too_small"),
        ("disconnect", PortVanished, "vanished"),
        ("crash", BoardCrashed, "Guru Meditation"),
    ],
)
def test_every_fault_mode_gives_a_clear_error(fault, error, text):
    assert fault in FAULTS
    with virtual_board(fault) as vb, pytest.raises(error, match=text):
        reader(vb.port, timeout_s=0.5).measure(MODEL)


def test_crc_in_ready_line_fails_before_running():
    with virtual_board() as vb:
        vb.ready_line = lambda: (
            '{"event":"ready","board":"esp32s3","fw":"x","model_crc32":"00000000"}'.join(
                ["MCUNAS/1 ", "\n"]
            )
        )
        with pytest.raises(ModelMismatch, match="runs model 00000000"):
            reader(vb.port).measure(MODEL)
        assert vb.runs_served == 0


def test_wrong_board_profile_on_the_port():
    with virtual_board(board="esp32") as vb, pytest.raises(WrongFirmware, match="'esp32'"):
        reader(vb.port).measure(MODEL)


def test_flash_path_loads_the_new_model(tmp_path):
    with virtual_board(model=OTHER_MODEL) as vb:
        m = BoardMeasurer(
            ESP, port=vb.port, timeout_s=2, project_factory=VirtualProject, work_dir=tmp_path
        ).measure(MODEL)
        assert vb.runs_served == 1
    assert m.model_crc32 == model_crc32(MODEL) and m.details["flashed"]
    assert m.details["static_ram_source"] == "elf"
    assert m.flash_bytes == ESP.firmware_flash_bytes + len(MODEL)
    assert (tmp_path / "model.tflite").read_bytes() == MODEL
    assert set(m.details["stage_s"]) == {"generate_s", "build_s", "upload_s", "read_s"}


class FailingProject(VirtualProject):
    def __init__(self, *a, stage="build", error=MeasurementError, **kw):
        super().__init__(*a, **kw)
        self.stage, self.error = stage, error

    def build(self):
        if self.stage == "build":
            raise self.error("pio run failed: undefined reference; see the log")
        return super().build()

    def upload(self, port):
        if self.stage == "upload":
            raise self.error("pio upload failed: no response; hold BOOT")
        return super().upload(port)


@pytest.mark.parametrize(
    ("stage", "error", "raised"),
    [
        ("build", MeasurementError, BuildFailed),
        ("upload", MeasurementError, UploadFailed),
        ("build", FatalError, FatalError),
    ],
)
def test_stage_failures_are_wrapped(tmp_path, stage, error, raised):
    def factory(board, work_dir, pio="pio"):
        return FailingProject(board, work_dir, stage=stage, error=error)

    with virtual_board() as vb, pytest.raises(raised, match="failed"):
        BoardMeasurer(ESP, port=vb.port, project_factory=factory, work_dir=tmp_path).measure(MODEL)


def test_model_too_large_is_rejected_before_building(tmp_path):
    calls = []

    def factory(*a, **kw):
        calls.append(a)
        return VirtualProject(*a, **kw)

    big = b"\0" * (ESP.model_flash_budget_bytes + 1)
    with pytest.raises(ModelTooLarge, match="leaves"):
        BoardMeasurer(ESP, port="/dev/null", project_factory=factory).measure(big)
    assert not calls


def test_connection_check_without_flash():
    with virtual_board() as vb:
        reader(vb.port).test_connection()
    with virtual_board("silence") as vb, pytest.raises(FatalError, match="ready"):
        reader(vb.port, timeout_s=0.3).test_connection()


def test_simulator_figures(calibration_dir):
    pytest.importorskip("mcunas.cost.profile")
    from mcunas.testing.virtual_board.figures import simulator_figures

    model = (calibration_dir / "models" / "kws_ref_model.tflite").read_bytes()
    figures = simulator_figures(model, ESP)
    assert figures.latency_ms > 0 and figures.arena_bytes > 0 and figures.ops
    with VirtualBoard(ESP, model, figures=lambda *_: figures, runs=1, time_scale=1000) as vb:
        m = reader(vb.port).measure(model)
    assert m.latency_ms == pytest.approx(figures.latency_ms, abs=0.001)


def test_module_prints_pty_path_for_demos(tmp_path):
    model = tmp_path / "m.tflite"
    model.write_bytes(MODEL)
    cmd = [
        sys.executable,
        "-m",
        "mcunas.testing.virtual_board",
        "--board",
        "esp32s3",
        "--model",
        str(model),
        "--latency-ms",
        "3",
    ]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    try:
        port = proc.stdout.readline().strip()
        assert port.startswith("/dev/")
        assert reader(port).measure(MODEL).latency_ms == 3.0
    finally:
        proc.terminate()
        proc.wait(5)


def test_real_firmware_lines_are_not_estimates():
    with virtual_board() as vb:
        line, result_line = vb.ready_line(), vb.result_line
        vb.ready_line = lambda: line.replace(',"virtual":true', "")
        vb.result_line = lambda f: result_line(f).replace(',"virtual":true', "")
        m = reader(vb.port).measure(MODEL)
    assert not m.estimated and not m.details["virtual"]
