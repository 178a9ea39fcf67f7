"""Hardware tier: a real board on a real port.

WARNING: these tests overwrite the board's flash with the mcunas measurement
firmware. Run them only on a bench board:

    scripts/test -m hardware --port /dev/ttyACM0 --board nucleo_f746zg

They are skipped unless --port is given (see tests/conftest.py).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from mcunas.boards.catalog import BoardProfile, load_board
from mcunas.measure.board import BoardMeasurer, probe_board
from mcunas.measure.simulator import SimulatorMeasurer
from mcunas.tflite.csource import model_crc32

pytestmark = pytest.mark.hardware

MODELS = Path(__file__).resolve().parents[2] / "mcunas" / "calibration" / "models"


@pytest.fixture
def real_board(request: pytest.FixtureRequest) -> tuple[BoardProfile, str]:
    name = request.config.getoption("--board")
    if not name:
        pytest.fail("hardware tests need --board NAME as well as --port")
    board = load_board(name)
    baud = request.config.getoption("--baud")
    if baud:
        from dataclasses import replace

        board = replace(board, baud=baud)
    return board, request.config.getoption("--port")


def test_flash_and_measure_kws(real_board: tuple[BoardProfile, str]) -> None:
    board, port = real_board
    model = (MODELS / "kws_ref_model.tflite").read_bytes()
    measured = BoardMeasurer(board, port=port, flash=True, timeout_s=300).measure(model)
    assert measured.source == f"board:{port}" and not measured.estimated
    assert measured.model_crc32 == model_crc32(model)
    assert measured.latency_ms > 0 and measured.arena_bytes > 0
    assert measured.peak_sram_bytes <= board.usable_sram_bytes
    simulated = SimulatorMeasurer(board).measure(model)
    # A sanity bound, not the predictor's accuracy: that is `mcunas latency-model report`.
    assert simulated.latency_ms / 3 < measured.latency_ms < simulated.latency_ms * 3


def test_board_answers_after_flash(real_board: tuple[BoardProfile, str]) -> None:
    board, port = real_board
    ready = probe_board(port, board.baud, timeout_s=10)
    assert ready.board == board.name
