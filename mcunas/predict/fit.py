"""Fitting the latency model to whole-model measurements, and its honest error.

With few whole-model rows (10 in ``mcunas/calibration/measurements*.csv``) the
model keeps one free parameter per kernel code path: a ``scale`` on cycles
whose relative per-variant costs come from kernel microbenchmarks and priors.
The scale is the geometric mean of measured / modelled cycles over the rows
of that path (least squares in log space). Leave-one-out refits without
each row and predicts it; a path left with no rows falls back to scale 1
(the microbenchmarks or priors taken as they are) -- a genuine out-of-sample
test of the kernel tables.

Example::

    rows = load_calibration()
    for r in leave_one_out(rows): print(r.row.id, r.error_pct)
"""

from __future__ import annotations

import csv
import math
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from mcunas.boards import CORES, KERNEL_LIBRARIES
from mcunas.errors import UserError
from mcunas.predict.coefficients import path_for

__all__ = [
    "CALIBRATION_CSV",
    "CALIBRATION_EXTRA_CSV",
    "CalibrationRow",
    "LooResult",
    "checked_variants",
    "fit_scales",
    "leave_one_board_out",
    "leave_one_out",
    "load_calibration",
    "predict_row_ms",
    "report_loo",
    "summarize",
]

CALIBRATION_DIR = Path(__file__).resolve().parent.parent / "calibration"
CALIBRATION_CSV = CALIBRATION_DIR / "measurements.csv"
# Further published rows mcunas added (sources checked; see calibration/README.md).
CALIBRATION_EXTRA_CSV = CALIBRATION_DIR / "measurements_extra.csv"
_REQUIRED = ("id", "model_file", "core", "clock_mhz", "kernels", "latency_ms")


@dataclass(frozen=True)
class CalibrationRow:
    """One whole-model measurement: a model on a core, clock and kernel library."""

    id: str
    model: Path
    board: str
    core: str
    clock_hz: int
    kernels: str
    latency_ms: float
    runtime: str = ""
    source: str = ""

    @property
    def path(self) -> str:
        """The kernel code path this row measured."""
        return path_for(self.core, self.kernels)

    @property
    def family(self) -> str:
        """Board family label for reports: core and kernel library."""
        return f"{self.core}/{self.kernels}"


def load_calibration(
    path: Path | None = None, models_dir: Path | None = None
) -> list[CalibrationRow]:
    """Read a measurements CSV (the form of ``mcunas/calibration/measurements.csv``).

    Without ``path``: the built-in data, ``measurements.csv`` (as shipped in
    ``shared/calibration``) followed by ``measurements_extra.csv``.

    Raises:
        UserError: missing file or columns, unreadable numbers, missing model file.
    """
    from mcunas.audit import is_float_model

    if path is None:
        return [*load_calibration(CALIBRATION_CSV), *load_calibration(CALIBRATION_EXTRA_CSV)]
    models_dir = models_dir or path.parent / "models"
    try:
        with open(path, newline="", encoding="utf-8") as fh:
            rows = list(csv.DictReader(fh))
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise UserError(f"Cannot read measurements file {path} as CSV: {exc}") from exc
    missing = [k for k in _REQUIRED if not rows or k not in rows[0]]
    if missing:
        raise UserError(f"{path}: needs columns {', '.join(_REQUIRED)}; "
                        f"missing {', '.join(missing)}")
    out = []
    for n, raw in enumerate(rows, start=2):
        if any(raw.get(k) in (None, "") for k in _REQUIRED):
            empty = [k for k in _REQUIRED if raw.get(k) in (None, "")]
            raise UserError(f"{path}:{n}: too few columns or empty {', '.join(empty)}")
        model = Path(raw["model_file"])
        model = model if model.is_absolute() else models_dir / model
        if not model.is_file():
            raise UserError(f"{path}:{n}: model file not found: {model} "
                            "(relative names are looked up in models/ beside the CSV)")
        if raw["core"] not in CORES:
            raise UserError(f"{path}:{n}: unknown core {raw['core']!r} "
                            f"(cores: {', '.join(CORES)})")  # fmt: skip
        if raw["kernels"] not in KERNEL_LIBRARIES:
            raise UserError(f"{path}:{n}: unknown kernels {raw['kernels']!r} "
                            f"(kernels: {', '.join(KERNEL_LIBRARIES)})")  # fmt: skip
        if is_float_model(_graph(model)):
            raise UserError(f"{path}:{n}: {model} is a float model; calibration rows need "
                            "full-integer INT8 models")
        try:
            out.append(
                CalibrationRow(
                    id=raw["id"],
                    model=model,
                    board=raw.get("board", ""),
                    core=raw["core"],
                    clock_hz=int(float(raw["clock_mhz"]) * 1_000_000),
                    kernels=raw["kernels"],
                    latency_ms=float(raw["latency_ms"]),
                    runtime=raw.get("runtime", ""),
                    source=raw.get("source", ""),
                )  # fmt: skip
            )
        except ValueError as exc:
            raise UserError(f"{path}:{n}: bad number ({exc})") from exc
    return out


@lru_cache(maxsize=64)
def _graph(model: Path):  # noqa: ANN202 - Graph, imported lazily
    from mcunas.graph import read_graph

    return read_graph(model)


def row_cycles(row: CalibrationRow) -> dict[str, float]:
    """Unscaled modelled cycles of a row, per code path."""
    from mcunas.predict.latency import base_cycles

    return base_cycles(_graph(row.model), row.core, row.kernels)


MIN_CHECKED_SHARE = 0.01  # a variant under 1% of a row's modelled time is not checked by it


def checked_variants(rows: Iterable[CalibrationRow]) -> dict[str, list[str]]:
    """Per code path, the variants whose cost the rows' whole-model figures check.

    A variant counts when, in a row measured on that path, it makes up at least
    :data:`MIN_CHECKED_SHARE` of the row's modelled cycles (on that path). The
    measured error of a path says nothing about variants no row exercised.
    """
    from mcunas.kernels import is_accelerated
    from mcunas.predict.features import op_features
    from mcunas.predict.latency import op_cycles, path_tables

    tables = path_tables()
    out: dict[str, set[str]] = {}
    for row in rows:
        graph = _graph(row.model)
        per: dict[tuple[str, str], float] = {}
        for op, feat in zip(graph.ops, op_features(graph), strict=True):
            fast = row.kernels != "reference" and is_accelerated(op, row.kernels)
            path = row.path if fast else "tflm-ref"
            key = (path, feat.variant)
            per[key] = per.get(key, 0.0) + op_cycles(feat, tables[path])
        total = sum(per.values()) or 1.0
        for (path, variant), cycles in per.items():
            if cycles / total >= MIN_CHECKED_SHARE:
                out.setdefault(path, set()).add(variant)
    return {p: sorted(v) for p, v in sorted(out.items())}


def predict_row_ms(row: CalibrationRow, scales: dict[str, float]) -> float:
    """Modelled latency of a row with the given path scales (1 where absent)."""
    cycles = sum(scales.get(p, 1.0) * c for p, c in row_cycles(row).items())
    return cycles / row.clock_hz * 1000.0


def fit_scales(
    rows: Iterable[CalibrationRow], fixed: dict[str, float] | None = None
) -> dict[str, float]:
    """One scale per code path: geometric mean of measured / modelled.

    Each board counts once (the geometric mean of its own rows first), so a
    board measured on four models does not outweigh one measured on one.
    Work on other paths inside a row (ops the library does not accelerate)
    is charged at the ``fixed`` scales (1 where absent) and taken off first.
    """
    fixed = dict(fixed or {})
    logs: dict[str, dict[str, list[float]]] = {}
    for row in rows:
        shares = row_cycles(row)
        measured = row.latency_ms / 1000.0 * row.clock_hz
        other = sum(fixed.get(p, 1.0) * c for p, c in shares.items() if p != row.path)
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


@dataclass(frozen=True)
class LooResult:
    """A row predicted by a model fitted without it."""

    row: CalibrationRow
    predicted_ms: float
    scale: float
    from_rows: int

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
        scales = fit_scales(mine or rest)
        used = len(mine) or sum(r.path == row.path for r in rest)
        results.append(LooResult(row, predict_row_ms(row, scales), scales.get(row.path, 1.0), used))
    return results


def leave_one_board_out(rows: Sequence[CalibrationRow]) -> list[LooResult]:
    """Predict each row from a fit on the other boards' rows only: a bare profile.

    This is what a profile giving only core, clock and kernel library gets: no
    row of its own board informs the prediction.
    """
    results = []
    for row in rows:
        rest = [r for r in rows if r.board != row.board]
        scales = fit_scales(rest)
        used = sum(r.path == row.path for r in rest)
        results.append(LooResult(row, predict_row_ms(row, scales), scales.get(row.path, 1.0), used))
    return results


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


def _geomean(values: Sequence[float]) -> float:
    return math.exp(statistics.fmean(math.log(v) for v in values))


def fit_op_costs(board, records, graph_of) -> tuple[dict[str, float], dict[str, float]]:  # noqa: ANN001
    """Per-variant cycles per unit from per-op measurements on one board.

    For each measured op, the cycles left after its requantization, byte and
    dispatch terms (from the board's current table) divided by its units give
    one estimate of its variant's cost; the median is kept. Returns the costs
    and, per variant, the median absolute % error of the refitted model on
    those ops (its uncertainty).
    """
    from mcunas.predict.features import op_features
    from mcunas.predict.latency import op_cycles, resolve

    coef = resolve(board, board.kernels)
    per_variant: dict[str, list[tuple[float, object]]] = {}
    for rec in records:
        feats = {f.index: f for f in op_features(graph_of(rec.model_hash))}
        feat = feats.get(rec.op_index)
        if feat is None or feat.units <= 0:
            continue
        cycles = rec.latency_ms * rec.clock_hz / 1000.0 / (coef.factor * coef.scale)
        rest = op_cycles(feat, coef.table) - coef.table.mac.get(feat.variant, 0.0) * feat.units
        per_variant.setdefault(feat.variant, []).append(
            (max(cycles - rest, 0.0) / feat.units, (feat, cycles))
        )
    costs = {v: statistics.median(c for c, _ in xs) for v, xs in per_variant.items()}
    errors = {}
    for variant, xs in per_variant.items():
        table = coef.table.__class__(**{**coef.table.__dict__, "mac": {**coef.table.mac, **costs}})
        errs = [abs(op_cycles(f, table) / cyc - 1) * 100 for _, (f, cyc) in xs if cyc > 0]
        errors[variant] = round(statistics.median(errs), 1) if errs else 100.0
    return costs, errors


def board_loo(board, rows: Sequence[CalibrationRow]) -> list[LooResult]:  # noqa: ANN001
    """Leave-one-out on one board: each row predicted with a scale from the others.

    ``board`` carries the tables in use (its ``[latency]`` overrides); a row
    with no sibling of the same kernel library gets its code path's scale
    fitted on the calibration rows other than itself (never its own figure).
    """
    from dataclasses import replace

    from mcunas.predict.latency import predict_latency

    unit: dict[str, float] = {}
    for row in rows:
        lib = {**(board.latency or {}).get(row.kernels, {}), "scale": 1.0}
        b = replace(board, kernels=row.kernels, clock_hz=row.clock_hz,
                    latency={**(board.latency or {}), row.kernels: lib})  # fmt: skip
        unit[row.id] = predict_latency(_graph(row.model), b).ms
    results = []
    for row in rows:
        others = [
            r.latency_ms / unit[r.id] for r in rows if r.id != row.id and r.kernels == row.kernels
        ]
        scale = _geomean(others) if others else _scale_without(row)
        results.append(LooResult(row, scale * unit[row.id], scale, len(others)))
    return results


def report_loo(board, rows, op_records, graph_of) -> list[LooResult]:  # noqa: ANN001
    """Every whole-model row of a board, predicted by a fit that never saw it.

    Rows whose models were also measured op by op (a calibration run) were what
    the profile's per-op tables were fitted on, so they are predicted by a
    leave-one-model-out refit of those tables (from the built-in base, as
    :func:`refit_board` does); the other rows (published figures) by
    :func:`board_loo`.
    """
    from mcunas.predict.opfit import cross_validate
    from mcunas.predict.records import model_hash

    keys = {(r.model_hash, r.kernels, r.clock_hz) for r in op_records}
    hashes = {r.id: model_hash(r.model.read_bytes()) for r in rows}
    op_rows = [r for r in rows if (hashes[r.id], r.kernels, r.clock_hz) in keys]
    others = [r for r in rows if r not in op_rows]
    results = board_loo(board, others) if others else []
    base = fit_base(board)
    for kernels in sorted({r.kernels for r in op_rows}):
        mine = [r for r in op_rows if r.kernels == kernels]
        ops = [o for o in op_records if o.kernels == kernels]
        models = len({hashes[r.id] for r in mine})
        for row, predicted in cross_validate(base, ops, mine, graph_of, folds=models):
            results.append(LooResult(row, predicted, 1.0, len(mine) - 1))
    return results


def _scale_without(row: CalibrationRow) -> float:
    """The path's scale fitted on the calibration rows other than ``row`` (1 if none)."""
    rest = [r for r in load_calibration() if r.id != row.id]
    return fit_scales(rest).get(row.path, 1.0)


FIT_SOURCE = "mcunas predictor fit"


def fit_base(board):  # noqa: ANN001, ANN201 - BoardProfile in, BoardProfile out
    """The profile a refit starts from: never the output of an earlier refit.

    A refit uses every measurement in the store, so starting from a profile an
    earlier refit wrote would count those measurements twice (and a K-fold
    held-out model would leak into its own prediction). A profile whose
    ``[latency]`` table mcunas wrote gets back the table of the built-in profile
    that fit started from (its ``base``, e.g. ``esp32s3`` for ``esp32s3-virtual``;
    else the built-in of the same name), or none if there is no built-in;
    hand-written tables stay.
    """
    from dataclasses import replace

    from mcunas.boards import builtin_boards_dir, load_board

    latency = board.latency or {}
    if board.builtin or not str(latency.get("source", "")).startswith(FIT_SOURCE):
        return board
    name = latency.get("base") or board.name
    builtin = builtin_boards_dir() / f"{name}.toml"
    if not builtin.is_file():
        return replace(board, latency={})
    return replace(board, latency={**(load_board(str(builtin)).latency or {}), "base": name})


def _base_name(board) -> str | None:  # noqa: ANN001
    """The built-in profile ``board`` is (a renamed copy of), if any."""
    if board.builtin and board.path:
        return Path(board.path).stem
    return (board.latency or {}).get("base")


def refit_board(board, rows, op_records, graph_of) -> dict:  # noqa: ANN001
    """A new ``[latency]`` table for ``board`` from its measurements.

    Per kernel library: the kernel tables from per-op records (if any; a joint
    fit of every variant, requantization and dispatch cost, see
    :mod:`mcunas.predict.opfit`), then the scale from whole-model rows (the sum
    constraint), and the stated error from a leave-one-out over those rows.
    A library fitted from per-op records takes its scale only from the
    whole-model rows of the same runs (models with op records) and states the
    K-fold cross-validated error over them; other rows (published figures of
    another runtime) are not mixed into its op-level costs.
    """
    from dataclasses import replace

    from mcunas.predict.opfit import fit_op_tables

    board = fit_base(board)
    table: dict = {"source": f"{FIT_SOURCE}: {len(rows)} model and "
                   f"{len(op_records)} op measurements"}  # fmt: skip
    if _base_name(board):
        table["base"] = _base_name(board)
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
            unit = [r.row.latency_ms / (r.predicted_ms / r.scale) for r in loo]
            entry["scale"] = round(_geomean(unit), 4)
            entry["error_pct"] = round(statistics.median(abs(r.error_pct) for r in loo), 1)
            entry["rows"] = [r.id for r in mine]
            entry["checked_variants"] = checked_variants(mine).get(mine[0].path, [])
        table[kernels] = entry
    for lib, entry in (board.latency or {}).items():  # libraries no measurement refits
        if isinstance(entry, dict) and lib not in table:
            table[lib] = entry
    return table


def _op_level_scale_and_error(prior, board, entry, rows, op_records, graph_of) -> None:  # noqa: ANN001
    """Scale from the rows measured with per-op times; error by K-fold over their models.

    The K-fold refits start from ``prior`` (the profile before this fit), so a
    held-out model never leaks into the costs it is predicted with.
    """
    from dataclasses import replace

    from mcunas.predict.latency import predict_latency
    from mcunas.predict.opfit import cross_validate
    from mcunas.predict.records import model_hash

    keys = {r.model_hash for r in op_records}
    same_runs = [r for r in rows if model_hash(r.model.read_bytes()) in keys]
    if not same_runs:
        return
    unit = [
        r.latency_ms
        / predict_latency(
            _graph(r.model), replace(board, kernels=r.kernels, clock_hz=r.clock_hz)
        ).ms
        for r in same_runs
    ]
    entry["scale"] = round(_geomean(unit), 4)
    entry["rows"] = [r.id for r in same_runs]
    ops = [r for r in op_records if r.kernels == same_runs[0].kernels]
    cv = cross_validate(prior, ops, same_runs, graph_of)
    if cv:
        errs = [abs(p / r.latency_ms - 1) * 100 for r, p in cv]
        entry["error_pct"] = round(statistics.median(errs), 1)
        entry["within_10_pct"] = round(sum(e <= 10 for e in errs) / len(errs) * 100, 1)
        entry["error_method"] = f"k-fold cross-validation over {len(errs)} models"


def _toml_value(value) -> str:  # noqa: ANN001
    if isinstance(value, dict):
        return "{ " + ", ".join(f'"{k}" = {_toml_value(v)}' for k, v in value.items()) + " }"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return repr(value)
    return '"' + str(value).replace("\\", "\\\\").replace('"', '\\"') + '"'


def write_user_board(board, latency: dict) -> Path:  # noqa: ANN001
    """Write the profile with a new ``[latency]`` table into the user boards folder."""
    from mcunas.boards import user_boards_dir

    text = Path(board.path).read_text(encoding="utf-8") if board.path else ""
    # a renamed copy (esp32s3-virtual) keeps its own name, title and USB ids
    own = {"": {"name": board.name, "title": board.title}, "[serial]": {"hwids": list(board.hwids)}}
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
    out = user_boards_dir() / f"{board.name}.toml"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(lines).rstrip() + "\n", encoding="utf-8")
    return out
