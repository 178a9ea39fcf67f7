"""Shared helpers for the serial, virtual-board, rack and bench tests (no simulator needed)."""

from __future__ import annotations

import contextlib

from mcunas.boards.catalog import load_board
from mcunas.testing.virtual_board.device import VirtualBoard
from mcunas.testing.virtual_board.figures import fixed_figures
from mcunas.tflite.writer import build_model


def tiny_int8_model(op: str = "RELU", width: int = 4) -> bytes:
    """A one-op INT8 .tflite (the virtual board only hashes it; bench also parses it)."""
    t = {"shape": [1, width], "dtype": "int8", "scale": 0.1, "zero_point": 0}
    return build_model([(op, [0], [1])], [dict(t), dict(t)], [0], [1])


MODEL = tiny_int8_model()
OTHER_MODEL = tiny_int8_model(width=8)
FAST = fixed_figures(latency_ms=2.0, arena_bytes=40_000)


@contextlib.contextmanager
def virtual_board(fault=None, model=MODEL, board="esp32s3", figures=FAST, **kwargs):
    profile = load_board(board) if isinstance(board, str) else board
    vb = VirtualBoard(profile, model, figures=figures, fault=fault, runs=5, **kwargs)
    vb.start()
    try:
        yield vb
    finally:
        vb.stop()
