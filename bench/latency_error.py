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
from dataclasses import dataclass, replace
from typing import Any

from mcunas.boards.catalog import BoardProfile
from mcunas.cost.coefficients import core_family

# The product's own prediction from a set of rows, so a bare profile here is predicted
# exactly as leave_one_out predicts a row.
from mcunas.cost.fit.scale import (
    PRIOR_BOARDS,
    CalibrationRow,
    LooResult,
    _board_mean_squares,
    _library,
    _predicted_from,
    band_table,
    fit_dispatch,
    fit_scales,
    path_band,
    predict_row_ms,
    row_fixed_ms,
)
from mcunas.cost.latency import predict_latency
from mcunas.cost.setup import SetupEffect, runtime_stated, setup_effects

__all__ = [
    "RowCheck",
    "check_rows",
    "coverage",
    "former_check",
    "leave_one_board_out",
    "nested_band",
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
    profile`` prints; the nested ones are the same estimate's band with the
    kernel libraries' errors replaced by the bands the other boards' errors give
    (:func:`nested_band`), so a row of fixed costs is held to its op-weighted band.
    """
    out = []
    for r in bare:
        graph = graph_of(r.row)
        others = [o for o in bare if o.row.board != r.row.board]
        plain, stated = profile_for(r.row), profile_for(r.row, published_setup(r.row))
        # the leave-one-board-out prediction already holds the bare profile's own effects
        base = _after(setup_effects(plain))[0]
        effects = setup_effects(stated)
        moved, widened = _after(effects)[0] / base, _before(effects)
        before_band = math.hypot(nested_band(graph, plain, others), widened[1])
        out.append(
            RowCheck(
                r.row,
                r.error_pct,
                predict_latency(graph, plain).error_pct,
                nested_band(graph, plain, others),
                _moved(r, moved),
                predict_latency(graph, stated).error_pct,
                nested_band(graph, stated, others),
                _moved(r, widened[0] / base),
                before_band,
            )
        )
    return out


def nested_band(graph: Any, board: BoardProfile, others: Sequence[LooResult]) -> float:
    """``board``'s stated band for ``graph`` with its libraries' errors from ``others`` alone.

    The board's library and TFLM's reference kernels (which run what the library does
    not) state :func:`~mcunas.cost.fit.scale.path_band` of the other boards' rows
    (runtimes of 2021 on only when the profile states its runtime, as the defaults do).
    """
    from mcunas.cost.coefficients import path_for

    if runtime_stated(board):
        others = [o for o in others if o.row.recent] or others
    family = core_family(board.core)
    latency = {
        lib: {"error_pct": path_band(path_for(board.core, lib), others, family)}
        for lib in {board.kernels, "reference"}
    }
    return predict_latency(graph, replace(board, latency=latency)).error_pct


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
        "setup_nested_band": med(x.setup_nested for x in c),
    }


def former_check(rows: Sequence[CalibrationRow]) -> list[RowCheck]:
    """The same checks by the former method, on the same rows, for a before-and-after table.

    One scale per path for every core family, a path's band from all its rows
    (those of the interpreter's fixed costs too) without a band per family, and
    every setup prior moving the estimate by its guess. Its stated bands are not
    rebuilt (they were constants of the former code): ``bare_band`` and
    ``setup_band`` hold the nested ones.
    """
    fitted = [r for r in rows if not r.off_baseline]
    bare = [_former_predicted(r, [o for o in fitted if o.board != r.board]) for r in rows]
    out = []
    for r in bare:
        others = [o for o in bare if o.row.board != r.row.board and not o.row.off_baseline]
        stated = profile_for(r.row, published_setup(r.row))
        if runtime_stated(stated):
            others = [o for o in others if o.row.recent] or others
        nested = _former_band(r.row.path, others)
        base = _before(setup_effects(profile_for(r.row)))[0]
        factor, error = _before(setup_effects(stated))
        plain = [o for o in bare if o.row.board != r.row.board and not o.row.off_baseline]
        bare_nested = _former_band(r.row.path, plain)
        moved = _moved(r, factor / base)
        out.append(
            RowCheck(
                r.row,
                r.error_pct,
                bare_nested,
                bare_nested,
                moved,
                math.hypot(nested, error),
                math.hypot(nested, error),
                moved,
                math.hypot(nested, error),
            )  # fmt: skip
        )
    return out


def _former_predicted(row: CalibrationRow, fit_rows: Sequence[CalibrationRow]) -> LooResult:
    """``row`` predicted with one scale per path (no per-family scale), as before."""
    scales = {k: v for k, v in fit_scales(fit_rows).items() if "/" not in k}
    invoke = fit_dispatch(fit_rows, scales)
    predicted = predict_row_ms(row, scales, invoke)
    return LooResult(row, predicted, scales.get(row.path, 1.0), 0, row_fixed_ms(row, invoke))


def _former_band(path: str, results: Sequence[LooResult]) -> float:
    """The former path band: every row of the path, no family, no kernel-work filter."""
    if not results:
        return float("nan")
    library = [r for r in results if _library(r.row.path) == _library(path)] or list(results)
    prior = statistics.mean(_board_mean_squares(library))
    own = _board_mean_squares([r for r in results if r.row.path == path])
    variance = (sum(own) + PRIOR_BOARDS * prior) / (len(own) + PRIOR_BOARDS)
    return (math.exp(1.645 * math.sqrt(variance)) - 1.0) * 100.0
