"""Fitting the latency model to whole-model measurements, and its honest error.

With few whole-model rows (10 in ``mcunas/calibration/measurements*.csv``) the
model keeps one free parameter per kernel code path: a ``scale`` on cycles
whose relative per-variant costs come from kernel microbenchmarks and priors.
The scale is the geometric mean of measured / modelled cycles over the rows
of that path (least squares in log space). Leave-one-out fits without
each row and predicts it; a path left with no rows falls back to scale 1
(the microbenchmarks or priors taken as they are) -- a genuine out-of-sample
test of the kernel tables. The rows themselves are read and checked by
:mod:`mcunas.cost.fit.rows` (its names are re-exported here).

Example::

    rows = load_calibration()
    for r in leave_one_out(rows): print(r.row.id, r.error_pct)
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from mcunas.cost.coefficients import DISPATCH_CYCLES, core_family, family_value
from mcunas.cost.fit.rows import (
    CALIBRATION_CSV,
    CALIBRATION_EXTRA_CSV,
    RECENT_RUNTIME_YEAR,
    CalibrationRow,
    cached_graph,
    load_calibration,
)

__all__ = [
    "CALIBRATION_CSV",
    "CALIBRATION_EXTRA_CSV",
    "CalibrationRow",
    "RECENT_RUNTIME_YEAR",
    "LooResult",
    "cached_graph",
    "checked_variants",
    "band_table",
    "family_scales",
    "overhead_row",
    "path_band",
    "fit_dispatch",
    "fit_scales",
    "leave_one_out",
    "load_calibration",
    "predict_row_ms",
    "summarize",
]


def row_cycles(row: CalibrationRow) -> dict[str, float]:
    """Unscaled modelled cycles of a row, per code path (its memory's factor applied)."""
    return dict(_row_cycles(row.model, row.core, row.kernels, row.memory))


@lru_cache(maxsize=256)
def _row_cycles(model: Path, core: str, kernels: str, memory: str) -> tuple[tuple[str, float], ...]:
    """Computed once per model and board: every leave-one-out fold reads each row again."""
    from mcunas.cost.coefficients import MEMORY_FACTORS
    from mcunas.cost.latency import base_cycles

    slow = MEMORY_FACTORS[memory][0]
    return tuple((p, c * slow) for p, c in base_cycles(cached_graph(model), core, kernels).items())


MIN_CHECKED_SHARE = 0.01  # a variant under 1% of a row's modelled time is not checked by it


def checked_variants(rows: Iterable[CalibrationRow]) -> dict[str, list[str]]:
    """Per code path, the variants whose cost the rows' whole-model figures check.

    A variant counts when, in a row measured on that path, it makes up at least
    :data:`MIN_CHECKED_SHARE` of the row's modelled cycles (on that path). The
    measured error of a path says nothing about variants no row exercised.
    """
    from mcunas.cost.latency import path_tables, work_cycles
    from mcunas.cost.op_features import op_features
    from mcunas.tflite.kernels import is_accelerated

    tables = path_tables()
    out: dict[str, set[str]] = {}
    for row in rows:
        graph = cached_graph(row.model)
        per: dict[tuple[str, str], float] = {}
        for op, feat in zip(graph.ops, op_features(graph), strict=True):
            fast = row.kernels != "reference" and is_accelerated(op, row.kernels)
            path = row.path if fast else "tflm-ref"
            key = (path, feat.variant)
            per[key] = per.get(key, 0.0) + work_cycles(feat, tables[path])
        total = sum(per.values()) or 1.0
        for (path, variant), cycles in per.items():
            if cycles / total >= MIN_CHECKED_SHARE:
                out.setdefault(path, set()).add(variant)
    return {p: sorted(v) for p, v in sorted(out.items())}


def predict_row_ms(
    row: CalibrationRow, scales: dict[str, float], invoke: float | None = None
) -> float:
    """Modelled latency of a row with the given path scales (1 where absent).

    ``invoke``: the per-invoke overhead in LX7 cycles (default: the built-in one).
    """
    from mcunas.cost.latency import INVOKE

    shares = row_cycles(row)
    cycles = sum(_scale(scales, p, row) * c for p, c in shares.items() if p != INVOKE)
    cycles += shares.get(INVOKE, 0.0) * _invoke_ratio(invoke)
    return cycles / row.clock_hz * 1000.0


def row_fixed_ms(row: CalibrationRow, invoke: float | None = None) -> float:
    """What no path scale multiplies in a row's modelled latency (dispatch, unscaled).

    ``invoke``: the per-invoke overhead in LX7 cycles (default: the built-in one).
    """
    from mcunas.cost.latency import FIXED, INVOKE

    shares = row_cycles(row)
    fixed = shares.get(FIXED, 0.0) + shares.get(INVOKE, 0.0) * _invoke_ratio(invoke)
    return fixed / row.clock_hz * 1000.0


def _scale(scales: dict[str, float], path: str, row: CalibrationRow) -> float:
    """The scale of ``path`` for ``row``'s core family (the path's own where none is fitted)."""
    return family_value(scales, path, row.core, 1.0)


def _invoke_ratio(invoke: float | None) -> float:
    return 1.0 if invoke is None else invoke / DISPATCH_CYCLES["invoke"]


# A row whose modelled time is at least this share fixed costs (at the fitted
# scales) measures the interpreter's overhead, not a kernel library.
OVERHEAD_ROW_SHARE = 0.5


def fit_dispatch(rows: Iterable[CalibrationRow], scales: dict[str, float]) -> float | None:
    """The per-invoke overhead (LX7 cycles) that the overhead-bound rows measured.

    For each row whose modelled time is mostly fixed costs, the measured cycles
    less everything else modelled (kernel work at ``scales``, per-op dispatch),
    in LX7 cycles (at least 0); the median over boards (each board once, a
    board's rows averaged): a board faster than the rest of the model allows
    must not pull the fit to zero. None without such rows. The per-op cost
    stays as set (measured on the host).
    """
    from mcunas.cost.latency import INVOKE

    per_board: dict[str, list[float]] = {}
    for row in (r for r in rows if not r.off_baseline):
        shares = row_cycles(row)
        modelled = sum(_scale(scales, p, row) * c for p, c in shares.items())
        if _fixed_share(shares, modelled) < OVERHEAD_ROW_SHARE or not shares.get(INVOKE):
            continue
        rest = row.latency_ms / 1000.0 * row.clock_hz - (modelled - shares[INVOKE])
        per_unit = shares[INVOKE] / DISPATCH_CYCLES["invoke"]  # cycles per LX7 cycle
        per_board.setdefault(row.board or row.id, []).append(max(rest, 0.0) / per_unit)
    if not per_board:
        return None
    return statistics.median(statistics.fmean(v) for v in per_board.values())


def _fixed_share(shares: dict[str, float], total: float) -> float:
    """Share of a row's modelled cycles ``total`` that no scale multiplies."""
    from mcunas.cost.latency import FIXED, INVOKE

    return (shares.get(FIXED, 0.0) + shares.get(INVOKE, 0.0)) / total if total > 0 else 1.0


def fit_scales(
    rows: Iterable[CalibrationRow], fixed: dict[str, float] | None = None
) -> dict[str, float]:
    """One scale per code path: geometric mean of measured / modelled.

    Each board counts once (the geometric mean of its own rows first), so a
    board measured on four models does not outweigh one measured on one.
    Work on other paths inside a row (ops the library does not accelerate)
    is charged at the ``fixed`` scales (1 where absent) and taken off first.
    Where a path has rows of a recent runtime (:attr:`CalibrationRow.recent`),
    its older rows are left out. A path measured on several core families also
    gets a scale per family (``tflm-ref/cortex``, :func:`family_scales`).
    """
    rows = list(rows)
    recent_paths = {r.path for r in rows if r.recent}
    used = [r for r in rows if (r.recent or r.path not in recent_paths) and not r.off_baseline]
    scales = _path_scales(used, dict(fixed or {}))
    return {**scales, **family_scales(used, scales)}


def _path_scales(rows: Sequence[CalibrationRow], fixed: dict[str, float]) -> dict[str, float]:
    """The scales of :func:`fit_scales` before any per-family one."""
    logs: dict[str, dict[str, list[float]]] = {}
    for row in rows:
        shares = row_cycles(row)
        measured = row.latency_ms / 1000.0 * row.clock_hz
        other = sum(_scale(fixed, p, row) * c for p, c in shares.items() if p != row.path)
        own = shares.get(row.path, 0.0)
        if own > 0 and measured > other:
            per_board = logs.setdefault(row.path, {})
            per_board.setdefault(row.board or row.id, []).append(math.log((measured - other) / own))
    return {
        **fixed,
        **{
            p: math.exp(statistics.fmean(statistics.fmean(v) for v in boards.values()))
            for p, boards in logs.items()
        },
    }


def family_scales(rows: Sequence[CalibrationRow], scales: dict[str, float]) -> dict[str, float]:
    """Per core family, the scale of a path that rows measured on several families.

    A path's tables carry its anchor core's cycles and other cores' speeds are
    priors (CoreMark per MHz for the scalar C paths), so a family's rows may sit
    far from the others' (TFLM's reference kernels on a Cortex-M4 run 3x slower per
    cycle than CoreMark carries over from the ESP chips). A family's scale is the
    mean log scale of its boards' rows whose time is mostly kernel work, pooled
    with the median board of the path with the weight of :data:`PRIOR_BOARDS`
    boards: one board moves it half way, and one family far off does not move
    the others (a median, not a mean).
    """
    out: dict[str, float] = {}
    kernel = [r for r in rows if r.path in scales and not overhead_row(r, scales)]
    for path in sorted({r.path for r in kernel}):
        mine = [r for r in kernel if r.path == path]
        if len({core_family(r.core) for r in mine}) < 2:
            continue
        fixed = {k: v for k, v in scales.items() if k != path}
        logs: dict[str, tuple[str, float]] = {}
        for board in {r.board or r.id for r in mine}:
            own = _path_scales([r for r in mine if (r.board or r.id) == board], fixed).get(path)
            if own is not None:
                family = core_family(next(r.core for r in mine if (r.board or r.id) == board))
                logs[board] = (family, math.log(own))
        if not logs:
            continue
        centre = statistics.median(v for _, v in logs.values())
        for family in sorted({f for f, _ in logs.values()}):
            own_logs = [v for f, v in logs.values() if f == family]
            pooled = (sum(own_logs) + PRIOR_BOARDS * centre) / (len(own_logs) + PRIOR_BOARDS)
            out[f"{path}/{family}"] = math.exp(pooled)
    return out


def overhead_row(row: CalibrationRow, scales: dict[str, float]) -> bool:
    """True when a row's modelled time (at ``scales``) is mostly fixed costs."""
    shares = row_cycles(row)
    total = sum(_scale(scales, p, row) * c for p, c in shares.items())
    return _fixed_share(shares, total) >= OVERHEAD_ROW_SHARE


@dataclass(frozen=True)
class LooResult:
    """A row predicted by a model fitted without it."""

    row: CalibrationRow
    predicted_ms: float
    scale: float
    from_rows: int
    fixed_ms: float = 0.0  # of ``predicted_ms``: what no path scale multiplies

    @property
    def error_pct(self) -> float:
        """Signed error, % of the measured latency."""
        return (self.predicted_ms / self.row.latency_ms - 1.0) * 100.0


def leave_one_out(rows: Sequence[CalibrationRow]) -> list[LooResult]:
    """Predict each row from a fit on all the others.

    As a board profile does: the row's code-path scale comes from the other
    rows of the same board where there are some (its ``[latency]`` table), else
    from every other board's rows (the defaults a profile without measurements
    gets). ``from_rows`` counts the rows the scale came from.
    """
    results = []
    for i, row in enumerate(rows):
        rest = [r for j, r in enumerate(rows) if j != i]
        mine = [r for r in rest if r.board == row.board and r.path == row.path]
        results.append(_predicted_from(row, mine or rest))
    return results


def _predicted_from(row: CalibrationRow, fit_rows: Sequence[CalibrationRow]) -> LooResult:
    """``row`` predicted with scales fitted on ``fit_rows`` (which must not hold it)."""
    scales = fit_scales(fit_rows)
    invoke = fit_dispatch(fit_rows, scales)
    used = sum(r.path == row.path for r in fit_rows)
    predicted = predict_row_ms(row, scales, invoke)
    fixed = row_fixed_ms(row, invoke)
    return LooResult(row, predicted, _scale(scales, row.path, row), used, fixed)


# Share of rows a stated error band should hold: a prediction interval, not a median.
BAND_COVERAGE = 0.9
# Its half-width in standard deviations of the log error (normal, two-sided 90%).
BAND_Z = 1.645
# Weight of the library's spread in a path's, in boards: a path measured on one or
# two boards cannot tell its own spread, so it leans on its library's.
PRIOR_BOARDS = 1.0


def path_band(path: str, results: Sequence[LooResult], family: str | None = None) -> float:
    """Stated error (in %) of a new board on ``path``, from leave-one-board-out results.

    A 90% prediction interval of the log error ln(predicted / measured): its
    variance per board is the mean square over the board's rows (so a board
    with four rows counts once), and the path's variance is shrunk towards its
    kernel library's (all paths of cmsis-nn, of esp-nn, ...) with a weight of
    :data:`PRIOR_BOARDS` boards (empirical Bayes). A path seen on one board thus
    states its library's spread, not that one board's luck; a path with many
    boards states its own. The band is exp(z sigma) - 1: symmetric in % of the
    measured latency, so it also holds the log-symmetric interval below.

    Only rows whose time is mostly kernel work count where there are some: a
    row of a few hundred MACs (hello_world) measures the interpreter's fixed
    costs, which carry their own error. With ``family`` (``cortex``, ``riscv32``:
    :func:`~mcunas.cost.coefficients.core_family`), the path's own rows are those
    of that core family: the band of TFLM's reference kernels on a Cortex-M is
    sized from the Cortex-M rows' held-out errors, pooled with the library's. A kind
    with no row of its own states what kinds seen on one board met on it.
    NaN without results.
    """
    if not results:
        return float("nan")
    results = [r for r in results if not r.row.off_baseline]
    kernel = [r for r in results if r.fixed_ms < OVERHEAD_ROW_SHARE * r.predicted_ms]
    results = kernel or results
    if not results:
        return float("nan")
    library = [r for r in results if _library(r.row.path) == _library(path)] or list(results)
    prior = statistics.mean(_board_mean_squares(library))
    mine = [
        r
        for r in results
        if r.row.path == path and (family is None or core_family(r.row.core) == family)
    ]
    own = _board_mean_squares(mine)
    if not own:  # a kind no board measured: what other kinds met on their first board
        prior = _new_kind_variance(results, path, family) or prior
    variance = (sum(own) + PRIOR_BOARDS * prior) / (len(own) + PRIOR_BOARDS)
    return (math.exp(BAND_Z * math.sqrt(variance)) - 1.0) * 100.0


def _kind(result: LooResult, by_family: bool) -> str:
    path = result.row.path
    return f"{path}/{core_family(result.row.core)}" if by_family else path


def _new_kind_variance(results: Sequence[LooResult], path: str, family: str | None) -> float:
    """Mean square log error of the kinds (path, or path and core family) seen on one board.

    A leave-one-board-out prediction of such a board had no row of its kind: its error
    is what a kind without measurements costs (a first Cortex-M board on the reference
    kernels, a first Helium board). 0 when no other kind was seen on one board only.
    """
    by_family = family is not None
    target = f"{path}/{family}" if by_family else path
    boards: dict[str, set[str]] = {}
    for r in results:
        boards.setdefault(_kind(r, by_family), set()).add(r.row.board)
    single = [k for k, b in boards.items() if len(b) == 1 and k != target]
    errors = [statistics.mean(_board_mean_squares([r for r in results if _kind(r, by_family) == k]))
              for k in single]  # fmt: skip
    return statistics.mean(errors) if errors else 0.0


def band_table(results: Sequence[LooResult]) -> dict[str, float]:
    """Every path's band, and a band per core family for paths measured on several.

    The keys are those :func:`~mcunas.cost.coefficients.family_value` reads:
    ``tflm-ref`` and ``tflm-ref/cortex``, ``tflm-ref/riscv32``, ...
    """
    out: dict[str, float] = {}
    for path in sorted({r.row.path for r in results}):
        out[path] = path_band(path, results)
        families = sorted({core_family(r.row.core) for r in results if r.row.path == path})
        if len(families) > 1:
            out.update({f"{path}/{f}": path_band(path, results, f) for f in families})
    return out


def _library(path: str) -> str:
    """The kernel library of a code path: ``cmsis-nn-dsp`` -> ``cmsis-nn``."""
    return path.rsplit("-", 1)[0]


def _board_mean_squares(results: Sequence[LooResult]) -> list[float]:
    """Per board: the mean squared log error of its rows."""
    by_board: dict[str, list[float]] = {}
    for r in results:
        by_board.setdefault(r.row.board, []).append(math.log(r.predicted_ms / r.row.latency_ms))
    return [statistics.mean(e * e for e in errs) for errs in by_board.values()]


def summarize(results: Sequence[LooResult]) -> dict[str, float]:
    """Median absolute % error and shares within 10% and 25%."""
    errs = [abs(r.error_pct) for r in results]
    if not errs:
        return {"n": 0, "median_abs_pct": float("nan"), "within_10": 0.0, "within_25": 0.0}
    return {
        "n": len(errs),
        "median_abs_pct": statistics.median(errs),
        "within_10": sum(e <= 10 for e in errs) / len(errs),
        "within_25": sum(e <= 25 for e in errs) / len(errs),
    }
