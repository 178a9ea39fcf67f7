"""The latency model: per-op cycles from kernel variant, work and the board.

For each op, with ``p`` the kernel code path the board runs it on (its
library's optimized kernel if :func:`mcunas.tflite.kernels.is_accelerated`, else
TFLite Micro's reference kernel)::

    cycles = core_factor[p, core] * (scale[p] * (mac[p, variant] * units
             + requant[p] * outputs + byte[p] * bytes_moved) + op_overhead[p])
    ms = (sum of cycles + core_factor * invoke_overhead) / clock_hz * 1000

``scale`` multiplies the kernels' work only: the per-op and per-invoke
overheads are TFLite Micro's interpreter (tensor lookups, dispatch, the
kernel's call), the same code whichever kernel library runs the ops, with
costs from :data:`mcunas.cost.coefficients.DISPATCH_CYCLES`; and a table's
``unscaled`` variants (TFLM's reference kernels that are flat loops, as
FULLY_CONNECTED, not 4-D indexed ones, as CONV_2D) run at their table cost.

The tables come from :mod:`mcunas.cost.coefficients` (priors) and
:mod:`mcunas.cost.microbench` (ESP-NN kernel cycles); ``scale`` is fitted
to whole-model measurements (:mod:`mcunas.cost.fit.scale`). A board profile's
``[latency.<kernels>]`` table overrides ``scale``, ``error_pct``,
``requant``, ``op_overhead``, ``invoke_overhead``, ``byte`` and, in a
``mac`` sub-table, any variant's cycles.

Example::

    est = predict_latency(read_graph("kws.tflite"), load_board("esp32s3"))
    est.ms, est.error_pct, est.mac_utilisation
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import asdict, dataclass, field, replace
from functools import lru_cache
from typing import Any

from mcunas.cost.coefficients import (
    CORE_FACTORS,
    DEFAULT_CHECKED,
    DEFAULT_ERRORS,
    DEFAULT_SCALES,
    MULTICORE_FACTORS,
    PRIOR_TABLES,
    STATED_RUNTIME_ERRORS,
    PathTable,
    family_value,
    path_for,
)
from mcunas.cost.microbench import microbench_tables
from mcunas.cost.op_features import MAC_VARIANTS, OpFeatures, op_features
from mcunas.cost.setup import combined, runtime_stated, setup_effects
from mcunas.errors import BoardProfileError
from mcunas.tflite.kernels import is_accelerated

__all__ = [
    "MODEL_VERSION",
    "LatencyEstimate",
    "OpEstimate",
    "path_tables",
    "predict_latency",
]

MODEL_VERSION = "lat-1"
NO_DATA_ERROR_PCT = 50.0  # stated error of a code path no measurement has checked
# Stated error of the interpreter's fixed costs (coefficients.DISPATCH_CYCLES):
# the spread of the tiny-model rows they were fitted to, across core families.
OVERHEAD_ERROR_PCT = 30.0
_OVERRIDE_KEYS = ("requant", "op_overhead", "invoke_overhead", "byte")


@dataclass(frozen=True)
class OpEstimate:
    """Estimated time of one op."""

    index: int
    op: str
    variant: str
    macs: int
    ms: float
    accelerated: bool
    error_pct: float = NO_DATA_ERROR_PCT  # measured error for this board, library and variant


@dataclass(frozen=True)
class LatencyEstimate:
    """A whole-model latency estimate with its expected error and lower bound."""

    ms: float
    error_pct: float
    lower_bound_ms: float
    mac_utilisation: float
    ops: tuple[OpEstimate, ...]
    version: str
    coefficients_source: str
    fixed_ms: float = 0.0  # of ``ms``: what no kernel scale multiplies (dispatch, unscaled)

    def to_dict(self) -> dict[str, Any]:
        """Plain dict for JSON output."""
        data = asdict(self)
        data["ops"] = [asdict(o) for o in self.ops]
        return data


@lru_cache(maxsize=1)
def path_tables() -> dict[str, PathTable]:
    """Every code path's table: microbenchmark-derived ones and priors."""
    return {**microbench_tables(), **PRIOR_TABLES}


def _core_factor(path: str, core: str) -> float:
    factors = CORE_FACTORS[path]
    if core in factors:
        return factors[core]
    return CORE_FACTORS["tflm-ref"].get(core, 1.0)


@dataclass(frozen=True)
class _Resolved:
    table: PathTable
    factor: float
    scale: float
    error_pct: float
    source: str
    checked: frozenset[str] = frozenset()
    op_errors: dict[str, float] = field(default_factory=dict)

    def variant_error(self, variant: str) -> float:
        """Stated error of one variant on this path.

        The path's measured whole-model error where those measurements checked
        the variant; else its per-op fit error where op times measured it; else
        at least :data:`NO_DATA_ERROR_PCT`.
        """
        if variant in self.checked or variant == "free":
            return self.error_pct
        if variant in self.op_errors:
            return self.op_errors[variant]
        return max(self.error_pct, NO_DATA_ERROR_PCT)

    def flat_error(self, variant: str) -> float:
        """Stated error of a variant the path's scale leaves alone (a flat-loop kernel).

        Measured, it carries no more than the error of the rows that measured it, those
        whose time is the interpreter's fixed costs (:data:`OVERHEAD_ERROR_PCT`), not the
        band of the scaled kernels; unmeasured, :meth:`variant_error`.
        """
        error = self.variant_error(variant)
        return min(error, OVERHEAD_ERROR_PCT) if variant in self.checked else error


def _checked(entry: dict[str, Any], path: str) -> frozenset[str]:
    """Variants the stated error was measured on (see :func:`scale_fit.checked_variants`)."""
    if "checked_variants" in entry:
        if not isinstance(entry["checked_variants"], list):
            raise TypeError("checked_variants must be a list of variant names")
        return frozenset(str(v) for v in entry["checked_variants"])
    if isinstance(entry.get("op_error_pct"), dict):
        return frozenset(entry["op_error_pct"])
    return frozenset(DEFAULT_CHECKED.get(path, ()))


def _board_entry(board: Any, kernels: str) -> dict[str, Any]:
    entry = (board.latency or {}).get(kernels, {})
    if not isinstance(entry, dict):
        raise BoardProfileError(f"{board.path or board.name}: [latency.{kernels}] must be a table")
    return entry


def resolve(board: Any, kernels: str) -> _Resolved:
    """Coefficients a board uses for one kernel library (board table over defaults)."""
    path = path_for(board.core, kernels)
    table = path_tables()[path]
    entry = _board_entry(board, kernels)
    where = board.path or board.name
    try:
        scale = float(entry.get("scale", family_value(DEFAULT_SCALES, path, board.core, 1.0)))
        defaults = STATED_RUNTIME_ERRORS if runtime_stated(board) else DEFAULT_ERRORS
        default_error = family_value(defaults, path, board.core, NO_DATA_ERROR_PCT)
        error = float(entry.get("error_pct", default_error))
        checked = _checked(entry, path) if "error_pct" in entry or not entry else frozenset()
        op_errors = {str(k): float(v) for k, v in entry.get("op_error_pct", {}).items()}
        changes = {k: float(entry[k]) for k in _OVERRIDE_KEYS if k in entry}
        if "mac" in entry:
            changes["mac"] = {**table.mac, **{k: float(v) for k, v in entry["mac"].items()}}
    except (TypeError, ValueError, AttributeError) as exc:
        raise BoardProfileError(f"{where}: malformed [latency.{kernels}] ({exc})") from exc
    if scale <= 0:
        raise BoardProfileError(f"{where}: [latency.{kernels}] scale must be positive")
    if changes:
        table = replace(table, **changes)
    if entry:
        source = str(entry.get("source") or (board.latency or {}).get("source") or where)
    elif path in DEFAULT_SCALES:
        source = f"{path} defaults fitted to mcunas/calibration/measurements*.csv"
    else:
        source = f"{path} priors ({table.source}); no measurement checks them"
    factor = _core_factor(path, board.core)
    return _Resolved(table, factor, scale, error, source, checked, op_errors)


def work_cycles(feat: OpFeatures, table: PathTable) -> float:
    """Cycles of one op's kernel work on a path's anchor core, before core factor and scale."""
    mac = table.mac.get(feat.variant, table.mac.get("other", 40.0))
    return mac * feat.units + table.requant * feat.outputs + table.byte * feat.bytes_moved


def op_cycles(feat: OpFeatures, table: PathTable) -> float:
    """Cycles of one op on a path's anchor core at scale 1: work plus dispatch overhead."""
    return work_cycles(feat, table) + table.op_overhead


def split_cycles(feat: OpFeatures, table: PathTable) -> tuple[float, float]:
    """(cycles the path's scale multiplies, cycles it does not) of one op, at scale 1.

    The scale covers the kernel's work, except for the variants the table runs
    unscaled (:attr:`PathTable.unscaled`); the per-op dispatch is never scaled.
    """
    work = work_cycles(feat, table)
    if feat.variant in table.unscaled:
        return 0.0, work + table.op_overhead
    return work, table.op_overhead


# Keys of :func:`base_cycles` for cycles no path scale multiplies: the per-invoke
# overhead (fitted on its own, see scale_fit.fit_dispatch) and everything else fixed.
INVOKE, FIXED = "invoke", "fixed"


def base_cycles(graph: Any, core: str, kernels: str) -> dict[str, float]:
    """Unscaled cycles per code path (core factor applied) of one graph.

    The fit multiplies each path's share by that path's scale; the :data:`INVOKE`
    share (per-invoke overhead) and the :data:`FIXED` one (per-op dispatch,
    unscaled variants) keep scale 1.
    """
    tables = path_tables()
    main = path_for(core, kernels)
    fixed = 0.0
    shares: dict[str, float] = {main: 0.0}
    for op, feat in zip(graph.ops, op_features(graph), strict=True):
        path = main if is_accelerated(op, kernels) else "tflm-ref"
        factor = _core_factor(path, core)
        scaled, unscaled = split_cycles(feat, tables[path])
        shares[path] = shares.get(path, 0.0) + scaled * factor
        fixed += unscaled * factor
    shares[FIXED] = fixed
    shares[INVOKE] = tables[main].invoke_overhead * _core_factor(main, core)
    return shares


def _version(board: Any) -> str:
    blob = json.dumps(
        [sorted((k, asdict(t)) for k, t in path_tables().items()), DEFAULT_SCALES, CORE_FACTORS],
        sort_keys=True,
        default=str,
    )
    version = f"{MODEL_VERSION}+{hashlib.sha1(blob.encode()).hexdigest()[:8]}"
    if board.latency:
        board_blob = json.dumps(board.latency, sort_keys=True, default=str).encode()
        version += f".{hashlib.sha1(board_blob).hexdigest()[:6]}"
    if getattr(board, "setup", None):
        setup_blob = json.dumps(board.setup, sort_keys=True, default=str).encode()
        version += f"-s{hashlib.sha1(setup_blob).hexdigest()[:6]}"
    return version


def predict_latency(graph: Any, board: Any) -> LatencyEstimate:
    """Estimate one invoke of ``graph`` on ``board`` (its kernel library and clock).

    Args:
        graph: a :class:`mcunas.tflite.reader.Graph`.
        board: a :class:`mcunas.boards.catalog.BoardProfile` (use ``with_kernels`` to try
            another kernel library).

    Returns:
        A :class:`LatencyEstimate`. Each op's ``error_pct`` is the measured error
        of its code path on this board (leave-one-out or cross-validated) where
        measurements checked its variant, and at least 50% where none did
        (e.g. BATCH_MATMUL on a board calibrated only with conv models); the
        model's ``error_pct`` is their time-weighted mean.

    Raises:
        BoardProfileError: the profile's ``[latency]`` table is malformed.
    """
    main = resolve(board, board.kernels)
    ref = resolve(board, "reference") if board.kernels != "reference" else main
    tally = _tally(graph, board, main, ref)
    slow, slow_error = combined(setup_effects(board))  # memory placement, caches, vintage
    per_ms = 1000.0 / board.clock_hz * slow
    ms = tally.total * per_ms
    peak = board.peak_macs_per_cycle or 1.0
    lower = tally.macs / peak * per_ms / slow  # the MAC units do not slow down
    error = tally.weighted / tally.total if tally.total > 0 else main.error_pct
    ops = tuple(
        OpEstimate(
            op.index,
            op.name,
            feat.variant,
            feat.macs,
            cycles * per_ms,
            fast,
            round(math.hypot(err, slow_error), 1),
        )  # fmt: skip
        for op, feat, cycles, fast, err in tally.ops
    )
    return LatencyEstimate(
        ms=ms,
        error_pct=round(math.hypot(error, slow_error), 1),
        lower_bound_ms=lower,
        mac_utilisation=lower / ms if ms > 0 else 0.0,
        ops=ops,
        version=_version(board),
        coefficients_source=main.source,
        fixed_ms=tally.fixed * per_ms,
    )


@dataclass
class _Tally:
    """Cycles of one invoke: total, the unscaled part, error-weighted, MACs, per op."""

    total: float
    fixed: float
    weighted: float
    macs: int = 0
    ops: list[tuple[Any, OpFeatures, float, bool, float]] = field(default_factory=list)


def _tally(graph: Any, board: Any, main: _Resolved, ref: _Resolved) -> _Tally:
    """Walk the graph: each op on its code path (the board's library or the reference)."""
    invoke = main.table.invoke_overhead * main.factor
    tally = _Tally(total=invoke, fixed=invoke, weighted=invoke * OVERHEAD_ERROR_PCT)
    for op, feat in zip(graph.ops, op_features(graph), strict=True):
        fast = board.kernels != "reference" and is_accelerated(op, board.kernels)
        coef = main if fast else ref
        scaled, unscaled = split_cycles(feat, coef.table)
        dispatch = coef.table.op_overhead * coef.factor
        kernel, flat = scaled * coef.factor * coef.scale, unscaled * coef.factor - dispatch
        if board.multicore_kernels:
            kernel, flat = (w * MULTICORE_FACTORS.get(op.name, 1.0) for w in (kernel, flat))
        cycles = kernel + flat + dispatch
        spent = (
            kernel * coef.variant_error(feat.variant)
            + flat * coef.flat_error(feat.variant)
            + dispatch * OVERHEAD_ERROR_PCT
        )
        error = round(spent / cycles, 1) if cycles > 0 else OVERHEAD_ERROR_PCT
        tally.total, tally.weighted = tally.total + cycles, tally.weighted + spent
        tally.fixed += unscaled * coef.factor
        tally.macs += feat.macs if feat.variant in MAC_VARIANTS else 0
        tally.ops.append((op, feat, cycles, fast, error))
    return tally
