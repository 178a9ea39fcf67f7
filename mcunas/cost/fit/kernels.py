"""Fit a board's kernel tables from per-op measurements (one joint least-squares fit).

Every measured op gives one equation in the latency model's own terms
(:func:`mcunas.cost.latency.op_cycles`), on the code path it ran on (the
board's library where it accelerates the op, TFLM's reference kernels
otherwise)::

    cycles / core_factor = mac[path, variant] * units + requant[path] * outputs
                           + op_overhead[path]  (+ byte[path] * bytes_moved, kept)

All unknowns are fitted together by non-negative least squares on *relative*
residuals (each row divided by its measured cycles), so small ops weigh as
much as large ones. Unknowns no measurement touches keep their prior value.
The per-invoke overhead is what whole-model times leave after the sum of their
measured ops (median over models). The fitted tables carry ``scale = 1``:
their cycles are this board's, not a multiple of a prior.

Example::

    tables, report = fit_op_tables(board, op_records, model_rows, graph_of)
    tables["esp-nn"]["mac"]["conv_1x1"], report.op_error_pct
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

__all__ = [
    "OpFitReport",
    "cross_validate",
    "fit_op_tables",
    "op_cross_validate",
    "whole_model_overheads",
]

GraphOf = Callable[[str], Any]  # model hash -> Graph
MIN_REQUANT_SPREAD = 1e-9


@dataclass
class OpFitReport:
    """What the fit saw: op rows per table and the in-sample error per variant."""

    op_rows: int = 0
    variants: dict[str, list[str]] = field(default_factory=dict)  # table -> fitted variants
    op_error_pct: dict[str, dict[str, float]] = field(default_factory=dict)


def _lib_of(op: Any, kernels: str) -> str:
    from mcunas.tflite.kernels import is_accelerated

    return kernels if kernels != "reference" and is_accelerated(op, kernels) else "reference"


def _op_rows(board: Any, records: Sequence[Any], graph_of: GraphOf) -> list[tuple]:
    """(table, feature, measured anchor cycles, fixed byte cycles) per usable op record."""
    from mcunas.cost.latency import resolve
    from mcunas.cost.op_features import op_features

    rows, cache = [], {}
    for rec in records:
        if rec.model_hash not in cache:
            graph = graph_of(rec.model_hash)
            cache[rec.model_hash] = (graph, {f.index: f for f in op_features(graph)})
        graph, feats = cache[rec.model_hash]
        feat = feats.get(rec.op_index)
        if feat is None or rec.op_index >= len(graph.ops) or rec.latency_ms <= 0:
            continue
        if graph.ops[rec.op_index].name != rec.op_name:
            continue  # the profiler's op list does not line up with the graph
        lib = _lib_of(graph.ops[rec.op_index], rec.kernels)
        coef = resolve(replace(board, clock_hz=rec.clock_hz), lib)
        cycles = rec.latency_ms * rec.clock_hz / 1000.0 / coef.factor
        rows.append((lib, feat, cycles, coef.table.byte * feat.bytes_moved))
    return rows


def _columns(rows: list[tuple]) -> list[tuple[str, str]]:
    """Unknowns: per-variant costs, dispatch, and requantization where it is identifiable.

    A library's shared requantization cost is fitted only when at least two MAC
    variants were measured on it; with one it cannot be told from that
    variant's cost per MAC and stays at its prior.
    """
    cols: dict[tuple[str, str], None] = {}
    mac_variants: dict[str, set[str]] = {}
    for lib, feat, _, _ in rows:
        if feat.units > 0:
            cols[(lib, "mac:" + feat.variant)] = None
        if feat.outputs > 0:
            mac_variants.setdefault(lib, set()).add(feat.variant)
        cols[(lib, "op_overhead")] = None
    for lib, variants in mac_variants.items():
        if len(variants) >= 2:
            cols[(lib, "requant")] = None
    return list(cols)


def _solve(
    rows: list[tuple], cols: list[tuple[str, str]], prior_requant: dict[str, float]
) -> dict[tuple[str, str], float]:
    from scipy.optimize import nnls

    index = {c: i for i, c in enumerate(cols)}
    a = np.zeros((len(rows), len(cols)))
    b = np.ones(len(rows))
    for r, (lib, feat, cycles, fixed) in enumerate(rows):
        w = 1.0 / cycles
        if feat.units > 0:
            a[r, index[(lib, "mac:" + feat.variant)]] = feat.units * w
        if feat.outputs > 0 and (lib, "requant") in index:
            a[r, index[(lib, "requant")]] = feat.outputs * w
        elif feat.outputs > 0:
            fixed += prior_requant[lib] * feat.outputs
        a[r, index[(lib, "op_overhead")]] = w
        b[r] = max(cycles - fixed, 0.0) * w
    norms = np.linalg.norm(a, axis=0)
    norms[norms == 0] = 1.0
    x, _ = nnls(a / norms, b, maxiter=50 * len(cols))
    return {c: float(v) for c, v in zip(cols, x / norms, strict=True)}


def whole_model_overheads(op_rows_by_model: dict[str, tuple[float, float]]) -> float | None:
    """Median of (whole-model cycles - sum of its op cycles) over models, at least 0."""
    gaps = [whole - ops for whole, ops in op_rows_by_model.values()]
    return max(statistics.median(gaps), 0.0) if gaps else None


def fit_op_tables(
    board: Any,
    op_records: Sequence[Any],
    model_rows: Sequence[Any],
    graph_of: GraphOf,
) -> tuple[dict[str, dict[str, Any]], OpFitReport]:
    """New ``[latency.<library>]`` entries for ``board`` from its per-op measurements.

    Args:
        board: BoardProfile (its current tables give priors and core factors).
        op_records: per-op :class:`mcunas.cost.fit.records.OpRecord` of this board.
        model_rows: whole-model rows (:class:`CalibrationRow`) of this board; those
            whose model has op records give the per-invoke overhead.
        graph_of: model hash -> :class:`mcunas.tflite.reader.Graph`.

    Returns:
        ``{library: entry}`` (``scale``, ``mac``, ``requant``, ``op_overhead`` and, for
        the board's libraries, ``invoke_overhead``) and an :class:`OpFitReport`.
    """
    from mcunas.cost.latency import op_cycles, resolve

    rows = _op_rows(board, op_records, graph_of)
    report = OpFitReport(op_rows=len(rows))
    if not rows:
        return {}, report
    priors = {lib: resolve(board, lib) for lib in {r[0] for r in rows}}
    prior_requant = {k: c.table.requant * c.scale for k, c in priors.items()}
    solved = _solve(rows, _columns(rows), prior_requant)
    tables: dict[str, dict[str, Any]] = {}
    for (lib, name), value in solved.items():
        entry = tables.setdefault(lib, {"scale": 1.0, "mac": {}})
        if name.startswith("mac:"):
            entry["mac"][name[4:]] = round(value, 5)
        else:
            entry[name] = round(value, 3)
    for lib, entry in tables.items():  # an unfitted requantization stays what the fit used
        entry.setdefault("requant", round(prior_requant[lib], 3))
    for lib, entry in tables.items():
        report.variants[lib] = sorted(entry["mac"])
        _keep_unfitted(board, lib, entry)
    _add_invoke_overhead(board, tables, op_records, model_rows, graph_of)
    trial = replace(board, latency={**(board.latency or {}), **tables})
    for lib, feat, cycles, _ in rows:
        table = resolve(trial, lib).table
        err = abs(op_cycles(feat, table) / cycles - 1.0) * 100.0
        report.op_error_pct.setdefault(lib, {}).setdefault(feat.variant, []).append(err)
    report.op_error_pct = {
        lib: {v: round(statistics.median(e), 1) for v, e in sorted(errs.items())}
        for lib, errs in report.op_error_pct.items()
    }
    for lib, errs in report.op_error_pct.items():
        tables[lib]["op_error_pct"] = errs
    return tables, report


def _keep_unfitted(board: Any, lib: str, entry: dict[str, Any]) -> None:
    """Carry every cost the fit did not touch over to the new table (whose scale is 1).

    An untouched cost keeps its place relative to the others: the old cost times
    the old scale times how much faster or slower the fitted MAC variants came
    out than their old costs (geometric mean of fitted / old). Without that last
    factor a variant no measurement touched would keep the priors' absolute
    cycles, however far the board turned out from them.
    """
    from mcunas.cost.latency import resolve

    old = resolve(board, lib)
    ratios = [
        math.log(cost / (old.table.mac[v] * old.scale))
        for v, cost in entry["mac"].items()
        if cost > 0 and old.table.mac.get(v, 0) > 0
    ]
    speed = old.scale * (math.exp(statistics.fmean(ratios)) if ratios else 1.0)
    mac = {v: round(c * speed, 5) for v, c in old.table.mac.items()}
    entry["mac"] = {**mac, **entry["mac"]}
    for key in ("requant", "op_overhead", "invoke_overhead", "byte"):
        entry.setdefault(key, round(getattr(old.table, key) * speed, 3))


def _add_invoke_overhead(
    board: Any,
    tables: dict,
    op_records: Sequence[Any],
    model_rows: Sequence[Any],
    graph_of: GraphOf,
) -> None:
    from mcunas.cost.fit.records import model_hash
    from mcunas.cost.latency import resolve

    sums: dict[tuple[str, str, int], float] = {}
    for rec in op_records:
        key = (rec.model_hash, rec.kernels, rec.clock_hz)
        sums[key] = sums.get(key, 0.0) + rec.latency_ms
    gaps: dict[str, dict[str, tuple[float, float]]] = {}
    for row in model_rows:
        key = (model_hash(row.model_bytes()), row.kernels, row.clock_hz)
        if key not in sums:
            continue
        factor = resolve(replace(board, clock_hz=row.clock_hz), row.kernels).factor
        to_cycles = row.clock_hz / 1000.0 / factor
        gaps.setdefault(row.kernels, {})[key[0]] = (
            row.latency_ms * to_cycles,
            sums[key] * to_cycles,
        )
    for lib, per_model in gaps.items():
        overhead = whole_model_overheads(per_model)
        if overhead is not None:
            tables.setdefault(lib, {"scale": 1.0, "mac": {}})["invoke_overhead"] = round(
                overhead, 1
            )


def cross_validate(
    board: Any,
    op_records: Sequence[Any],
    model_rows: Sequence[Any],
    graph_of: GraphOf,
    folds: int = 5,
) -> list[tuple[Any, float]]:
    """K-fold over models: fit without a fold, predict its whole-model rows.

    Returns:
        ``(row, predicted_ms)`` for every whole-model row whose model has op
        records (the others are not part of an op-level calibration).
    """
    from mcunas.cost.fit.records import model_hash
    from mcunas.cost.latency import predict_latency

    keyed = [(model_hash(r.model_bytes()), r) for r in model_rows]
    with_ops = sorted({k for k, _ in keyed} & {r.model_hash for r in op_records})
    out = []
    for fold in range(min(folds, len(with_ops))):
        held = set(with_ops[fold::folds])
        tables, _ = fit_op_tables(
            board,
            [r for r in op_records if r.model_hash not in held],
            [r for k, r in keyed if k not in held],
            graph_of,
        )
        trial = replace(board, latency={**(board.latency or {}), **tables})
        for key, row in keyed:
            if key in held:
                b = replace(trial, kernels=row.kernels, clock_hz=row.clock_hz)
                out.append((row, predict_latency(graph_of(key), b).ms))
    return out


def op_cross_validate(
    board: Any, op_records: Sequence[Any], graph_of: GraphOf
) -> list[tuple[float, float]]:
    """Leave-one-op-out: each measured op predicted by a fit without it.

    Only ops whose variant another op of the same code path also measured are
    held out: the check is of what a calibrated profile states for measured
    variants (a new shape of a measured kernel), not of variants no op ran.
    With few models a K-fold over models leaves out whole variants and so
    measures something else.

    Returns:
        ``(predicted, measured)`` cycles of each held-out op on its path's anchor core.
    """
    from mcunas.cost.latency import op_cycles, resolve

    keyed = [
        (i, row) for i, rec in enumerate(op_records) for row in _op_rows(board, [rec], graph_of)
    ]
    seen: dict[tuple[str, str], int] = {}
    for _, (lib, feat, _, _) in keyed:
        seen[(lib, feat.variant)] = seen.get((lib, feat.variant), 0) + 1
    out = []
    for i, (lib, feat, cycles, _) in keyed:
        if seen[(lib, feat.variant)] < 2 or feat.units <= 0:
            continue
        rest = [r for j, r in enumerate(op_records) if j != i]
        tables, _ = fit_op_tables(board, rest, [], graph_of)
        trial = replace(board, latency={**(board.latency or {}), **tables})
        out.append((op_cycles(feat, resolve(trial, lib).table), cycles))
    return out
