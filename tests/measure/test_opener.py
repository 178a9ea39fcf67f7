"""open_measurer: one registry, one way to open any measurer, always closed, checked on request."""

from __future__ import annotations

import pytest

from mcunas.boards.catalog import load_board
from mcunas.errors import FatalError, UserError
from mcunas.figures import Figures
from mcunas.measure import base
from mcunas.measure.opener import open_measurer
from tests.vboard_helpers import MODEL, virtual_board


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
    from mcunas.measure.calibrate import calibration_board

    real = load_board("esp32s3")
    copy = calibration_board(real, virtual=True)
    assert copy.name == "esp32s3-virtual" and copy.hwids == () and "virtual" in copy.title
    assert calibration_board(real, virtual=False) is real


class EchoMeasurer:
    """A backend outside mcunas: every model measures as its own size in ms."""

    name = "echo"
    opened: list[EchoMeasurer] = []

    def __init__(self, board, timeout_s) -> None:
        self.board, self.timeout_s, self.closed = board, timeout_s, False

    @classmethod
    def open(cls, board, options, stack) -> EchoMeasurer:
        cls.opened.append(cls(board, options.timeout_s))
        return cls.opened[-1]

    def measure(self, model_bytes: bytes) -> Figures:
        return Figures("echo", True, float(len(model_bytes)), 0, 0, len(model_bytes))

    def test_connection(self) -> None:
        pass

    def close(self) -> None:
        self.closed = True


def test_a_registered_measurer_opens_by_name(monkeypatch) -> None:
    monkeypatch.setitem(base.MEASURERS, "echo", f"{__name__}:EchoMeasurer")
    assert "echo" in base.measurer_names()
    with open_measurer("echo", load_board("esp32s3"), timeout_s=3.0, check=True) as m:
        assert m.measure(b"12345").latency_ms == 5.0 and m.timeout_s == 3.0
    assert EchoMeasurer.opened == [m] and m.closed


def test_an_installed_entry_point_measurer_opens_by_name(monkeypatch) -> None:
    from importlib.metadata import EntryPoint

    point = EntryPoint("echo", f"{__name__}:EchoMeasurer", base.ENTRY_POINT_GROUP)
    monkeypatch.setattr(base, "entry_points", lambda group: [point] if group == point.group else [])
    assert base.get_measurer("echo") is EchoMeasurer
    with pytest.raises(UserError, match="Known: simulator, board, rack, virtual, echo"):
        base.get_measurer("scope")


def test_a_registered_measurer_that_cannot_load_is_one_line(monkeypatch) -> None:
    monkeypatch.setitem(base.MEASURERS, "gone", "no_such_module_here:Meter")
    with pytest.raises(UserError, match="Measurer 'gone'.*cannot be loaded"):
        base.get_measurer("gone")


def test_the_virtual_measurer_names_its_calibration_source_in_its_figures() -> None:
    board = load_board("esp32s3")
    with open_measurer("virtual", board, truth_seed=3) as m:
        figures = m.measure(MODEL)
    assert figures.calibration_source == "virtual:truth-3"
    assert figures.source.startswith("virtual-board:")  # the port, which changes run to run
    with open_measurer("simulator", board) as sim:
        assert sim.measure(MODEL).calibration_source == ""
