"""The latency model's stated error checked as a new board would meet it.

A bare profile (core, clock and kernel library, no measurement of its own) gets
the default scales fitted on other boards. :func:`leave_one_board_out` predicts
each calibration row from the other boards' rows only; :func:`path_bands` turns
those errors into each code path's stated band, per core family where a path
ran on several (what ``mcunas/cost/coefficients.py``'s ``DEFAULT_ERRORS`` holds),
and :func:`coverage` says how many rows a set of bands holds.

:func:`check_rows` puts every row through both checks a user meets: a bare
profile, and a profile stating the setup the row's source published (its runtime
vintage, an arena in external memory...). Each gets its stated band (fitted with
every row) and its nested band (from the other boards' errors only), and a
stated setup is checked twice: its priors widening the band (today) and moving
the estimate (as they did before). ``scripts/bench predictor`` prints them by
kernel library and core family (docs/benchmarks/latency.md).

Example::

    bare = leave_one_board_out(load_calibration())
    bands = path_bands(bare)
    coverage(bare, [bands[r.row.path] for r in bare])
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from mcunas.boards.catalog import BoardProfile
from mcunas.cost.coefficients import core_family

# The product's own prediction from a set of rows, so a bare profile here is predicted
# exactly as leave_one_out predicts a row.
from mcunas.cost.fit.scale import CalibrationRow, LooResult, _predicted_from, band_table, path_band
from mcunas.cost.latency import predict_latency
from mcunas.cost.setup import SetupEffect, runtime_stated, setup_effects

__all__ = [
    "RowCheck",
    "check_rows",
    "coverage",
    "leave_one_board_out",
    "path_bands",
    "profile_for",
    "published_setup",
]


def leave_one_board_out(rows: Sequence[CalibrationRow]) -> list[LooResult]:
    """Predict each row from a fit on the other boards' rows only: a bare profile.

    This is what a profile giving only core, clock and kernel library gets: no
    row of its own board informs the prediction.
    """
    return [_predicted_from(row, [r for r in rows if r.board != row.board]) for row in rows]


def path_bands(results: Sequence[LooResult]) -> dict[str, float]:
    """:func:`~mcunas.cost.fit.scale.band_table` of ``results``: per path, and per core family."""
    return band_table(results)


def coverage(results: Sequence[LooResult], bands: Sequence[float]) -> float:
    """Share of results whose |error| is within their stated band (same order)."""
    inside = [abs(r.error_pct) <= b for r, b in zip(results, bands, strict=True)]
    return sum(inside) / len(inside) if inside else float("nan")


def published_setup(row: CalibrationRow) -> dict[str, Any]:
    """The setup keys the row's source states: its ``setup`` cell and its runtime's year."""
    setup: dict[str, Any] = dict(row.setup)
    if row.runtime_year is not None and "runtime" not in setup:
        setup["runtime"] = f"tflm-{row.runtime_year}"
    return setup


def profile_for(row: CalibrationRow, setup: dict[str, Any] | None = None) -> BoardProfile:
    """What a user writes for the row's board: core, clock, memory place, kernels (and setup)."""
    return BoardProfile(
        name="bare",
        core=row.core,
        clock_hz=row.clock_hz,
        sram_bytes=1 << 20,
        flash_bytes=1 << 22,
        kernels=row.kernels,
        memory=row.memory,
        setup=setup or {},
    )


@dataclass(frozen=True)
class RowCheck:
    """One row as a bare profile and with its published setup stated (signed % errors)."""

    row: CalibrationRow
    bare_error: float
    bare_band: float  # as stated (the defaults fitted with every row)
    bare_nested: float  # from the other boards' errors only
    setup_error: float  # published setup stated: priors widen
    setup_band: float
    setup_nested: float
    before_error: float  # published setup stated, priors moving the estimate
    before_nested: float

    @property
    def group(self) -> str:
        """Kernel library and core family: ``reference/cortex``."""
        return f"{self.row.kernels}/{core_family(self.row.core)}"


def check_rows(bare: Sequence[LooResult], graph_of: Any) -> list[RowCheck]:
    """Every leave-one-board-out result checked bare and with its published setup stated.

    ``graph_of(row)`` gives a row's graph. The stated bands are what ``mcunas
    profile`` prints; the nested ones replace the kernels' part by the band the
    other boards' errors give (:func:`~mcunas.cost.fit.scale.path_band`).
    """
    out = []
    for r in bare:
        graph, family = graph_of(r.row), core_family(r.row.core)
        others = [o for o in bare if o.row.board != r.row.board]
        nested = path_band(r.row.path, others, family)
        plain = predict_latency(graph, profile_for(r.row))
        stated = profile_for(r.row, published_setup(r.row))
        effects = setup_effects(stated)
        if runtime_stated(stated):
            recent = [o for o in others if o.row.recent]
            nested = path_band(r.row.path, recent, family) if recent else nested
        # the leave-one-board-out prediction already holds the bare profile's own effects
        base = _after(setup_effects(profile_for(r.row)))[0]
        moved, widened = _after(effects), _before(effects)
        moved, widened = (moved[0] / base, moved[1]), (widened[0] / base, widened[1])
        out.append(
            RowCheck(
                r.row,
                r.error_pct,
                plain.error_pct,
                path_band(r.row.path, others, family),
                _moved(r, moved[0]),
                predict_latency(graph, stated).error_pct,
                math.hypot(nested, moved[1]),
                _moved(r, widened[0]),
                math.hypot(nested, widened[1]),
            )
        )
    return out


def _after(effects: list[SetupEffect]) -> tuple[float, float]:
    """Factor and error of the effects as the model applies them: priors widen only."""
    return math.prod(e.factor for e in effects), math.hypot(0.0, *(e.error_pct for e in effects))


def _before(effects: list[SetupEffect]) -> tuple[float, float]:
    """Factor and error had every prior moved the estimate by its guess (the former model)."""
    factors = [e.prior_factor if e.kind == "prior" else e.factor for e in effects]
    errors = [e.prior_error_pct if e.kind == "prior" else e.error_pct for e in effects]
    return math.prod(factors), math.hypot(0.0, *errors)


def _moved(result: LooResult, factor: float) -> float:
    """The signed % error of a leave-one-board-out prediction moved by ``factor``."""
    return (result.predicted_ms * factor / result.row.latency_ms - 1.0) * 100.0


def summary(checks: Sequence[RowCheck]) -> dict[str, float]:
    """Medians and coverages of a group of checks (NaN-free for an empty group)."""

    def held(errors: list[float], bands: list[float]) -> float:
        return sum(abs(e) <= b for e, b in zip(errors, bands, strict=True)) / len(errors)

    c = list(checks)
    med = statistics.median
    return {
        "n": len(c),
        "bare_median": med(abs(x.bare_error) for x in c),
        "setup_median": med(abs(x.setup_error) for x in c),
        "before_median": med(abs(x.before_error) for x in c),
        "bare_band": med(x.bare_band for x in c),
        "setup_band": med(x.setup_band for x in c),
        "bare_holds": held([x.bare_error for x in c], [x.bare_band for x in c]),
        "bare_nested": held([x.bare_error for x in c], [x.bare_nested for x in c]),
        "setup_holds": held([x.setup_error for x in c], [x.setup_band for x in c]),
        "setup_nested": held([x.setup_error for x in c], [x.setup_nested for x in c]),
        "before_nested": held([x.before_error for x in c], [x.before_nested for x in c]),
        "nested_band": med(x.bare_nested for x in c),
    }
