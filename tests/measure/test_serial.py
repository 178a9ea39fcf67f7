import os
import pty
import time

import pytest
import serial

from mcunas.measure.protocol import Ready, Result
from mcunas.measure.serial_link import (
    READ_POLL_S,
    BoardCrashed,
    BoardRejectedModel,
    LinkError,
    PortBusy,
    PortNotFound,
    PortVanished,
    SerialLink,
)
from tests.vboard_helpers import virtual_board


def test_hello_ready_run_result():
    with virtual_board() as vb, SerialLink(vb.port) as link:
        assert isinstance(link.wait_ready(2), Ready)
        result = link.run(2)
        assert isinstance(result, Result) and result.latency_median_us == 2000


def test_no_such_port():
    with pytest.raises(PortNotFound, match="no board on /dev/nonexistent-tty"):
        SerialLink("/dev/nonexistent-tty").open()


def test_port_busy():
    with virtual_board() as vb:
        holder = serial.Serial(vb.port, exclusive=True)
        try:
            with pytest.raises(PortBusy, match="busy"):
                SerialLink(vb.port).open()
        finally:
            holder.close()


def test_silent_board_times_out_without_hanging():
    with virtual_board("silence") as vb, SerialLink(vb.port) as link:
        start = time.monotonic()
        with pytest.raises(LinkError, match="never printed 'ready' within 0.4 s.*nothing was"):
            link.wait_ready(0.4)
        assert time.monotonic() - start < 1.5


def test_result_timeout_keeps_deadline_and_restores_port_timeout():
    from mcunas.testing.virtual_board.figures import fixed_figures

    slow = fixed_figures(latency_ms=5000.0, arena_bytes=1)
    opened: list[serial.Serial] = []

    def keep(*args, **kwargs) -> serial.Serial:  # noqa: ANN002, ANN003
        opened.append(serial.Serial(*args, **kwargs))
        return opened[-1]

    with virtual_board(figures=slow) as vb, SerialLink(vb.port, serial_factory=keep) as link:
        link.wait_ready(2)
        start = time.monotonic()
        with pytest.raises(LinkError, match="sent no result within 0.3 s"):
            link.run(0.3)
        assert time.monotonic() - start < 1.5
        assert opened[0].timeout == READ_POLL_S


def test_timeout_error_carries_unread_tail():
    master, slave = pty.openpty()
    path = os.ttyname(slave)
    try:
        with SerialLink(path) as link:
            os.write(master, b"rst:0x1 (POWERON)\r\nI (3) app: stuck in a loop\r\npartial")
            with pytest.raises(LinkError, match="unread tail:.*stuck in a loop.*partial"):
                link.wait_ready(0.4)
    finally:
        os.close(master)
        os.close(slave)


def test_vanished_mid_read():
    with virtual_board("disconnect") as vb, SerialLink(vb.port) as link:
        link.wait_ready(2)
        with pytest.raises(PortVanished, match="vanished"):
            link.run(2)


def test_crash_is_reported_as_such():
    with virtual_board("crash") as vb, SerialLink(vb.port) as link:
        link.wait_ready(2)
        with pytest.raises(BoardCrashed, match="Guru Meditation"):
            link.run(2)


def test_error_event_rejects_the_model():
    with virtual_board("error") as vb, SerialLink(vb.port) as link:
        link.wait_ready(2)
        with pytest.raises(BoardRejectedModel, match="arena_too_small"):
            link.run(2)


def test_reset_mid_line_reruns(tmp_path):
    log = tmp_path / "trace.log"
    with virtual_board("reset") as vb, SerialLink(vb.port, trace_path=log) as link:
        link.wait_ready(2)
        assert isinstance(link.run(2), Result)
        assert any("MCUNAS/1" in line for line in link.ignored_lines)  # the cut line
    text = log.read_text()
    assert text.count("TX    b'run\\n'") == 2  # re-sent after the reset
    assert "RX" in text and "OPEN" in text and "CLOSE" in text
    assert text.splitlines()[1].split()[0].endswith("s")  # timing column


def test_trace_path_is_named_in_errors(tmp_path):
    log = tmp_path / "t.log"
    with virtual_board("silence") as vb, SerialLink(vb.port, trace_path=log) as link:
        with pytest.raises(LinkError, match=str(log)):
            link.wait_ready(0.2)
