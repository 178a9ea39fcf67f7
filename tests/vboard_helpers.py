"""Shared helpers for the serial, virtual-board, rack and bench tests (no simulator needed)."""

from __future__ import annotations

import contextlib

from mcunas.boards import load_board
from mcunas.measure.virtual_board import VirtualBoard, fixed_figures

# A byte string with the .tflite identifier; the virtual board only hashes it.
MODEL = b"\x1c\x00\x00\x00TFL3" + bytes(range(200))
OTHER_MODEL = b"\x1c\x00\x00\x00TFL3" + bytes(range(100, 250))
FAST = fixed_figures(latency_ms=2.0, arena_bytes=40_000)


@contextlib.contextmanager
def virtual_board(fault=None, model=MODEL, board="esp32s3", figures=FAST, **kwargs):
    vb = VirtualBoard(load_board(board), model, figures=figures, fault=fault, runs=5, **kwargs)
    vb.start()
    try:
        yield vb
    finally:
        vb.stop()
