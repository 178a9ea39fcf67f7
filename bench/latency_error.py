"""The latency model's stated error checked as a new board would meet it.

A bare profile (core, clock and kernel library, no measurement of its own) gets
the default scales fitted on other boards. :func:`leave_one_board_out` predicts
each calibration row from the other boards' rows only; :func:`path_bands` turns
those errors into each code path's stated band (what
``mcunas/cost/coefficients.py``'s ``DEFAULT_ERRORS`` holds) and
:func:`coverage` says how many rows a set of bands holds.
``scripts/bench predictor`` prints them (docs/benchmarks/latency.md).

Example::

    bare = leave_one_board_out(load_calibration())
    bands = path_bands(bare)
    coverage(bare, [bands[r.row.path] for r in bare])
"""

from __future__ import annotations

from collections.abc import Sequence

# The product's own prediction from a set of rows, so a bare profile here is predicted
# exactly as leave_one_out predicts a row.
from mcunas.cost.fit.scale import CalibrationRow, LooResult, _predicted_from, path_band

__all__ = ["coverage", "leave_one_board_out", "path_bands"]


def leave_one_board_out(rows: Sequence[CalibrationRow]) -> list[LooResult]:
    """Predict each row from a fit on the other boards' rows only: a bare profile.

    This is what a profile giving only core, clock and kernel library gets: no
    row of its own board informs the prediction.
    """
    return [_predicted_from(row, [r for r in rows if r.board != row.board]) for row in rows]


def path_bands(results: Sequence[LooResult]) -> dict[str, float]:
    """:func:`~mcunas.cost.fit.scale.path_band` of every path in ``results``."""
    return {p: path_band(p, results) for p in sorted({r.row.path for r in results})}


def coverage(results: Sequence[LooResult], bands: Sequence[float]) -> float:
    """Share of results whose |error| is within their stated band (same order)."""
    inside = [abs(r.error_pct) <= b for r, b in zip(results, bands, strict=True)]
    return sum(inside) / len(inside) if inside else float("nan")
