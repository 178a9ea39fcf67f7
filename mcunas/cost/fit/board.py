"""Board profiles fitted to their measurements, and their honest error.

A board's ``[latency]`` table comes from what the measurement store holds for
it: per-op records of a calibration run (a joint per-op fit, see
:mod:`mcunas.cost.fit.kernels`) and whole-model rows (the scale, the sum
constraint). Every fit starts from the built-in profile (:func:`fit_base`),
so fitting twice gives the same profile; the stated errors are
out-of-sample (leave-one-out, K-fold, leave-one-model-out).

Example::

    table = fit_board(load_board("esp32s3"), rows, op_records, graph_of)
    write_user_board(load_board("esp32s3"), table)
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mcunas.cost.fit.error import FEW_MODELS, cv_band, few_model_band
from mcunas.cost.fit.scale import (
    CalibrationRow,
    LooResult,
    cached_graph,
    checked_variants,
    fit_scales,
    load_calibration,
)
from mcunas.files import plain_name
from mcunas.inputs.opener import read_input_text

if TYPE_CHECKING:
    from mcunas.boards.catalog import BoardProfile
    from mcunas.cost.fit.kernels import GraphOf
    from mcunas.cost.fit.records import OpRecord

__all__ = [
    "FIT_SOURCE",
    "LatencyTable",
    "board_loo",
    "fit_base",
    "fit_op_costs",
    "fit_board",
    "report_loo",
    "write_user_board",
]

# A profile's ``[latency]`` table as written to TOML: ``source``, ``base`` and one
# table per kernel library (``scale``, ``error_pct``, the fitted costs...).
LatencyTable = dict[str, Any]


def _geomean(values: Sequence[float]) -> float:
    return math.exp(statistics.fmean(math.log(v) for v in values))


def fit_op_costs(
    board: BoardProfile, records: Sequence[OpRecord], graph_of: GraphOf
) -> tuple[dict[str, float], dict[str, float]]:
    """Per-variant cycles per unit from per-op measurements on one board.

    For each measured op, the cycles left after its requantization, byte and
    dispatch terms (from the board's current table) divided by its units give
    one estimate of its variant's cost; the median is kept. Returns the costs
    and, per variant, the median absolute % error of the fitted model on
    those ops (its uncertainty).
    """
    from mcunas.cost.latency import resolve, work_cycles
    from mcunas.cost.op_features import op_features

    coef = resolve(board, board.kernels)
    per_variant: dict[str, list[tuple[float, tuple[Any, float]]]] = {}
    for rec in records:
        feats = {f.index: f for f in op_features(graph_of(rec.model_hash))}
        feat = feats.get(rec.op_index)
        if feat is None or feat.units <= 0:
            continue
        # the kernel's work, in scale-1 anchor cycles: dispatch is not scaled
        cycles = rec.latency_ms * rec.clock_hz / 1000.0 / coef.factor - coef.table.op_overhead
        if feat.variant not in coef.table.unscaled:
            cycles /= coef.scale
        rest = work_cycles(feat, coef.table) - coef.table.mac.get(feat.variant, 0.0) * feat.units
        per_variant.setdefault(feat.variant, []).append(
            (max(cycles - rest, 0.0) / feat.units, (feat, cycles))
        )
    costs = {v: statistics.median(c for c, _ in xs) for v, xs in per_variant.items()}
    errors = {}
    for variant, xs in per_variant.items():
        table = coef.table.__class__(**{**coef.table.__dict__, "mac": {**coef.table.mac, **costs}})
        errs = [abs(work_cycles(f, table) / cyc - 1) * 100 for _, (f, cyc) in xs if cyc > 0]
        errors[variant] = round(statistics.median(errs), 1) if errs else 100.0
    return costs, errors


def board_loo(board: BoardProfile, rows: Sequence[CalibrationRow]) -> list[LooResult]:
    """Leave-one-out on one board: each row predicted with a scale from the others.

    ``board`` carries the tables in use (its ``[latency]`` overrides); a row
    with no sibling of the same kernel library gets its code path's scale
    fitted on the calibration rows other than itself (never its own figure).
    """
    from dataclasses import replace

    from mcunas.cost.latency import predict_latency

    unit: dict[str, float] = {}  # the kernels' work at scale 1, ms
    fixed: dict[str, float] = {}  # the interpreter's overhead, ms (not scaled)
    for row in rows:
        lib = {**(board.latency or {}).get(row.kernels, {}), "scale": 1.0}
        b = replace(
            board,
            kernels=row.kernels,
            clock_hz=row.clock_hz,
            latency={**(board.latency or {}), row.kernels: lib},
        )
        est = predict_latency(cached_graph(row.model), b)
        unit[row.id], fixed[row.id] = est.ms - est.fixed_ms, est.fixed_ms
    results = []
    for row in rows:
        others = [
            max(r.latency_ms - fixed[r.id], 1e-9) / unit[r.id]
            for r in rows
            if r.id != row.id and r.kernels == row.kernels and unit[r.id] > 0
        ]
        scale = _geomean(others) if others else _scale_without(row)
        predicted = scale * unit[row.id] + fixed[row.id]
        results.append(LooResult(row, predicted, scale, len(others), fixed[row.id]))
    return results


def report_loo(
    board: BoardProfile,
    rows: Sequence[CalibrationRow],
    op_records: Sequence[OpRecord],
    graph_of: GraphOf | None,
) -> list[LooResult]:
    """Every whole-model row of a board, predicted by a fit that never saw it.

    Rows whose models were also measured op by op (a calibration run) were what
    the profile's per-op tables were fitted on, so they are predicted by a
    leave-one-model-out fit of those tables (from the built-in base, as
    :func:`fit_board` does); the other rows (published figures) by
    :func:`board_loo`.
    """
    from mcunas.cost.fit.kernels import cross_validate
    from mcunas.cost.fit.records import model_hash

    keys = {(r.model_hash, r.kernels, r.clock_hz) for r in op_records}
    hashes = {r.id: model_hash(r.model_bytes()) for r in rows}
    op_rows = [r for r in rows if (hashes[r.id], r.kernels, r.clock_hz) in keys]
    others = [r for r in rows if r not in op_rows]
    results = board_loo(board, others) if others else []
    base = fit_base(board)
    for kernels in sorted({r.kernels for r in op_rows}):
        if graph_of is None:
            raise ValueError("rows measured op by op need graph_of")
        mine = [r for r in op_rows if r.kernels == kernels]
        ops = [o for o in op_records if o.kernels == kernels]
        models = len({hashes[r.id] for r in mine})
        for row, predicted in cross_validate(base, ops, mine, graph_of, folds=models):
            results.append(LooResult(row, predicted, 1.0, len(mine) - 1))
    return results


def _scale_without(row: CalibrationRow) -> float:
    """The path's scale (its core family's) fitted on the calibration rows but ``row`` (or 1)."""
    from mcunas.cost.coefficients import family_value

    rest = [r for r in load_calibration() if r.id != row.id]
    return family_value(fit_scales(rest), row.path, row.core, 1.0)


# How a fitted profile's [latency] source line starts: read back to tell fitted profiles
# from hand-written ones, so it keeps the command's former name (profiles on disk carry it).
FIT_SOURCE = "mcunas predictor fit"


def fit_base(board: BoardProfile) -> BoardProfile:
    """The profile a fit starts from: never the output of an earlier fit.

    A fit uses every measurement in the store, so starting from a profile an
    earlier fit wrote would count those measurements twice (and a K-fold
    held-out model would leak into its own prediction). A profile whose
    ``[latency]`` table mcunas wrote gets back the table of the built-in profile
    that fit started from (its ``base``, e.g. ``esp32s3`` for ``esp32s3-virtual``;
    else the built-in of the same name), or none if there is no built-in;
    hand-written tables stay.
    """
    from dataclasses import replace

    from mcunas.boards.catalog import load_board
    from mcunas.paths import builtin_boards_dir

    latency = board.latency or {}
    if board.builtin or not str(latency.get("source", "")).startswith(FIT_SOURCE):
        return board
    name = latency.get("base") or board.name
    builtin = builtin_boards_dir() / f"{plain_name(name, 'base board')}.toml"
    if not builtin.is_file():
        return replace(board, latency={})
    return replace(board, latency={**(load_board(str(builtin)).latency or {}), "base": name})


def _base_name(board: BoardProfile) -> str | None:
    """The built-in profile ``board`` is (a renamed copy of), if any."""
    if board.builtin and board.path:
        return Path(board.path).stem
    return (board.latency or {}).get("base")


def fit_board(
    board: BoardProfile,
    rows: Sequence[CalibrationRow],
    op_records: Sequence[OpRecord],
    graph_of: GraphOf,
) -> LatencyTable:
    """A new ``[latency]`` table for ``board`` from its measurements.

    Per kernel library: the kernel tables from per-op records (if any; a joint
    fit of every variant, requantization and dispatch cost, see
    :mod:`mcunas.cost.fit.kernels`), then the scale from whole-model rows (the sum
    constraint), and the stated error from a leave-one-out over those rows.
    A library fitted from per-op records takes its scale only from the
    whole-model rows of the same runs (models with op records) and states the
    K-fold cross-validated error over them; other rows (published figures of
    another runtime) are not mixed into its op-level costs.
    """
    from dataclasses import replace

    from mcunas.cost.fit.kernels import fit_op_tables

    board = fit_base(board)
    table: LatencyTable = {
        "source": f"{FIT_SOURCE}: {len(rows)} model and {len(op_records)} op measurements"
    }
    base = _base_name(board)
    if base:
        table["base"] = base
    op_tables = fit_op_tables(board, op_records, rows, graph_of)[0] if op_records else {}
    for kernels in sorted({r.kernels for r in rows} | set(op_tables)):
        if kernels in op_tables:  # the base's costs are baked in; its errors are not ours
            entry = dict(op_tables[kernels])
        else:
            entry = dict((board.latency or {}).get(kernels, {}))
        mine = [r for r in rows if r.kernels == kernels]
        trial = replace(board, latency={**(board.latency or {}), **op_tables, kernels: entry})
        if kernels in op_tables:
            _op_level_scale_and_error(board, trial, entry, mine, op_records, graph_of)
            entry["checked_variants"] = sorted(entry.get("op_error_pct", {}))
        elif mine:
            loo = board_loo(trial, mine)
            unit = [  # rows of overhead-bound models (all fixed costs) say nothing of it
                max(r.row.latency_ms - r.fixed_ms, 1e-9) / ((r.predicted_ms - r.fixed_ms) / r.scale)
                for r in loo
                if r.predicted_ms > r.fixed_ms
            ]
            if unit:
                entry["scale"] = round(_geomean(unit), 4)
            entry["error_pct"] = round(statistics.median(abs(r.error_pct) for r in loo), 1)
            entry["rows"] = [r.id for r in mine]
            entry["checked_variants"] = checked_variants(mine).get(mine[0].path, [])
        table[kernels] = entry
    for lib, entry in (board.latency or {}).items():  # libraries no measurement fits
        if isinstance(entry, dict) and lib not in table:
            table[lib] = entry
    return table


def _op_level_scale_and_error(
    prior: BoardProfile,
    board: BoardProfile,
    entry: dict[str, Any],
    rows: Sequence[CalibrationRow],
    op_records: Sequence[OpRecord],
    graph_of: GraphOf,
) -> None:
    """Scale from the rows measured with per-op times; error by K-fold over their models.

    The K-fold fits start from ``prior`` (the profile before this fit), so a
    held-out model never leaks into the costs it is predicted with.
    """
    from mcunas.cost.fit.kernels import cross_validate
    from mcunas.cost.fit.records import model_hash

    keys = {r.model_hash for r in op_records}
    same_runs = [r for r in rows if model_hash(r.model_bytes()) in keys]
    if not same_runs:
        return
    left, work = 0.0, 0.0  # measured time beyond the rest, and this library's kernel work
    for r in same_runs:
        rest, mine = _library_split(board, r, entry)
        if mine > 0:
            left += max(r.latency_ms - rest, 0.0)
            work += mine
    if work > 0 and left > 0:
        # a ratio of sums, not a mean of ratios: a model whose time is nearly all another
        # path's (an attention block on reference kernels) leaves this library's share as
        # a small difference of large numbers, and must not weigh as much as a conv model
        entry["scale"] = round(left / work, 4)
    entry["rows"] = [r.id for r in same_runs]
    ops = [r for r in op_records if r.kernels == same_runs[0].kernels]
    cv = cross_validate(prior, ops, same_runs, graph_of)
    if cv:
        errs = [abs(p / r.latency_ms - 1) * 100 for r, p in cv]
        entry["error_pct"] = cv_band([(p, r.latency_ms) for r, p in cv])
        entry["within_10_pct"] = round(sum(e <= 10 for e in errs) / len(errs) * 100, 1)
        entry["error_method"] = (
            f"90% band of k-fold cross-validation over {len(errs)} models "
            f"(median {statistics.median(errs):.1f}%)"
        )
        if len(errs) < FEW_MODELS:
            few_model_band(prior, entry, ops, graph_of, statistics.median(errs))


def _library_split(
    board: BoardProfile, row: CalibrationRow, entry: dict[str, Any]
) -> tuple[float, float]:
    """(ms of everything else, ms of the kernel work ``entry``'s scale multiplies) of a row.

    The scale of a library multiplies only the work of the ops that run on it: the
    other path's kernels (TFLM's reference ones), the dispatch and the unscaled
    variants are what the prediction leaves at any scale, read from two predictions.
    """
    from dataclasses import replace

    from mcunas.cost.latency import predict_latency

    graph = cached_graph(row.model)
    ms = []
    for scale in (1.0, 2.0):
        latency = {**(board.latency or {}), row.kernels: {**entry, "scale": scale}}
        b = replace(board, kernels=row.kernels, clock_hz=row.clock_hz, latency=latency)
        ms.append(predict_latency(graph, b).ms)
    mine = ms[1] - ms[0]
    return ms[0] - mine, mine


def _toml_value(value: Any) -> str:
    if isinstance(value, dict):
        return "{ " + ", ".join(f'"{k}" = {_toml_value(v)}' for k, v in value.items()) + " }"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return repr(value)
    return '"' + str(value).replace("\\", "\\\\").replace('"', '\\"') + '"'


def write_user_board(board: BoardProfile, latency: LatencyTable) -> Path:
    """Write the profile with a new ``[latency]`` table into the user boards folder.

    The table is checked first, as a profile's is when it loads: a fit can never
    write a non-finite, negative or absurd coefficient. The file is replaced
    atomically.

    Raises:
        BoardProfileError: the fitted table is not one a profile may hold.
    """
    from mcunas.boards.checks import check_latency
    from mcunas.files import write_file
    from mcunas.paths import user_boards_dir

    text = read_input_text(board.path, "profile", "board profile") if board.path else ""
    # a renamed copy (esp32s3-virtual) keeps its own name, title and USB ids
    own: dict[str, dict[str, Any]] = {
        "": {"name": board.name, "title": board.title},
        "[serial]": {"hwids": list(board.hwids)},
    }
    kept, skipping, section = [], False, ""
    for line in text.splitlines():
        if line.strip().startswith("["):
            section = line.split("#")[0].strip()
            skipping = section.startswith("[latency")
        key = line.split("=")[0].strip()
        if "=" in line and key in own.get(section, {}):
            line = f"{key} = {_toml_value(own[section][key])}"
        if not skipping:
            kept.append(line)
    while kept and not kept[-1].strip():
        kept.pop()  # an earlier fit's blank lines before its [latency] table
    lines = [*kept, "", "[latency]"]
    lines += [f"{k} = {_toml_value(v)}" for k, v in latency.items() if not isinstance(v, dict)]
    for lib, entry in latency.items():
        if isinstance(entry, dict):
            lines += ["", f"[latency.{lib}]"]
            lines += [f"{k} = {_toml_value(v)}" for k, v in entry.items()]
    out = user_boards_dir() / f"{plain_name(board.name, 'board name')}.toml"
    check_latency(latency, f"fit of {board.name} (not written to {out})")
    text = "\n".join(lines).rstrip() + "\n"
    return write_file(out, text, "fitted profile", inside=user_boards_dir())
