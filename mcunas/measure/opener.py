"""Open a measurer by name, for the search, calibration, ``bench`` and tests alike.

The name is looked up in the one registry (:mod:`mcunas.measure.base`), so a
backend registered with ``register_measurer`` or installed as a
``mcunas.measurers`` entry point opens here like the built-in ones.

Example::

    with open_measurer("board", load_board("esp32s3"), port="auto", check=True) as m:
        figures = m.measure(model_bytes)
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from mcunas.boards.catalog import BoardProfile
from mcunas.measure.base import MeasureOptions, Measurer, get_measurer

__all__ = ["open_measurer"]


@contextlib.contextmanager
def open_measurer(
    kind: str, board: BoardProfile, *, check: bool = False, **options: Any
) -> Iterator[Measurer]:
    """The measurer registered as ``kind`` for ``board``, closed when the block ends.

    Args:
        kind: str, a registered name: ``simulator``; ``board`` (one board on
            ``port``, ``auto`` to detect it); ``rack`` (every board of this profile in
            the ``rack.toml`` ``rack``); ``virtual`` (a virtual test device started in
            this process with the hidden costs of ``truth_seed``, or the simulator's
            own figures if None, flashed through a virtual project); or any other
            registered backend.
        board: BoardProfile, the board measured.
        check: bool, run ``test_connection()`` first (a broken setup fails before any
            work; default False).
        **options: the fields of :class:`~mcunas.measure.base.MeasureOptions`
            (``port``, ``rack``, ``kernels``, ``truth_seed``, ``flash``, ``timeout_s``...).

    Yields:
        A :class:`~mcunas.measure.base.Measurer`. Its figures carry
        ``calibration_source`` where they have a stable name to be stored under.

    Raises:
        UserError: an unknown kind. FatalError: ``check`` found no working board.
    """
    cls = get_measurer(kind)
    with contextlib.ExitStack() as stack:
        measurer = cls.open(board, MeasureOptions(**options), stack)
        stack.callback(measurer.close)
        if check:
            measurer.test_connection()
        yield measurer
