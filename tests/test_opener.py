"""open_measurer: one way to open any measurer, always closed, checked on request."""

from __future__ import annotations

import pytest
from vboard_helpers import MODEL, virtual_board

from mcunas.boards import load_board
from mcunas.errors import FatalError, UserError
from mcunas.measure.opener import open_measurer


def test_unknown_kind_is_one_line() -> None:
    with pytest.raises(UserError, match="Known: simulator, board, rack, virtual"):
        with open_measurer("scope", load_board("esp32s3")):
            pass


def test_every_measurer_is_closed_when_the_block_ends(monkeypatch) -> None:
    from mcunas.measure.simulator import SimulatorMeasurer

    closed = []
    monkeypatch.setattr(SimulatorMeasurer, "close", lambda self: closed.append(self))
    with pytest.raises(RuntimeError), open_measurer("simulator", load_board("esp32s3")) as m:
        raise RuntimeError("a failure inside the block")
    assert closed == [m]


def test_board_measurer_checks_the_connection_on_request() -> None:
    board = load_board("esp32s3")
    options = {"flash": False, "check": True}  # the board already runs the model
    with virtual_board() as good, open_measurer("board", board, port=good.port, **options) as m:
        figures = m.measure(MODEL)
    assert figures.source == f"virtual-board:{good.port}" and figures.estimated
    with virtual_board("silence") as mute, pytest.raises(FatalError, match="ready"):
        with open_measurer("board", board, port=mute.port, timeout_s=2, **options):
            pass


def test_calibration_of_a_virtual_device_never_names_the_real_board() -> None:
    from mcunas.calibrate import calibration_board

    real = load_board("esp32s3")
    copy = calibration_board(real, virtual=True)
    assert copy.name == "esp32s3-virtual" and copy.hwids == () and "virtual" in copy.title
    assert calibration_board(real, virtual=False) is real
