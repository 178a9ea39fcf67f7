"""``--power virtual``: the power meter of a virtual board, found by the board's port.

:mod:`mcunas.measure.power.meter` opens it by name (``METER_OPENERS``), as it
opens a measurer, so no product module imports the test device.
"""

from __future__ import annotations

from mcunas.measure.power.trace import MeterError
from mcunas.testing.virtual_board.device import board_at
from mcunas.testing.virtual_board.power import VirtualMeter

__all__ = ["open_virtual_meter"]


def open_virtual_meter(board_port: str) -> VirtualMeter:
    """The meter of the virtual board that serves ``board_port``.

    Raises:
        MeterError: no virtual board serves that port.
    """
    device = board_at(board_port)
    if device is None:
        raise MeterError(f"--power virtual needs a virtual board; none serves {board_port or '?'}")
    return VirtualMeter(device.power)
