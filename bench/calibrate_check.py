"""Held-out models predicted against a ground truth, before and after a calibration.

``scripts/bench calibrate`` and ``tests/measure/test_calibrate.py`` measure a virtual
board's calibration by models the suite never ran (docs/benchmarks/latency.md).

Example::

    before = check_models(board, GroundTruth.from_seed(0), models)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from mcunas.boards.catalog import BoardProfile
from mcunas.cost.latency import predict_latency
from mcunas.tflite.reader import read_graph

__all__ = ["check_models"]


def check_models(
    board: BoardProfile,
    truth: Any,
    models: Sequence[tuple[str, bytes]],
) -> list[tuple[str, float, float]]:
    """``(name, predicted_ms, true_ms)`` of held-out models against a ground truth."""
    out = []
    for name, data in models:
        graph = read_graph(data)
        out.append((name, predict_latency(graph, board).ms, truth.latency_ms(graph, board)))
    return out
