"""Calibrate a board's latency model: measure the suite, store, fit, write the profile.

``calibrate`` measures every model of the calibration suite
(:mod:`mcunas.cost.fit.suite`) through any :class:`~mcunas.measure.base.Measurer`
(a board on a port, a rack, the virtual board), stores each whole-model and
per-op time in the :class:`~mcunas.cost.fit.records.RecordStore`, fits the
board's kernel tables from the per-op times (:mod:`mcunas.cost.fit.kernels`),
states the fitted model's error by K-fold cross-validation over the suite's
models, and writes the profile into the user boards folder, where every
later ``profile``, ``search`` and simulator run picks it up.

Example::

    with open_measurer("virtual", calibration_board(board, virtual=True)) as measurer:
        result = calibrate(board, measurer, load_suite("small"), RecordStore())
    result.before, result.after, result.profile_path
"""

from __future__ import annotations

import dataclasses
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mcunas.boards.catalog import BoardProfile
from mcunas.cost.fit.suite import SuiteModel
from mcunas.errors import CandidateError, MeasurementError, UserError
from mcunas.figures import Figures

__all__ = [
    "CalibrationResult",
    "ModelOutcome",
    "calibrate",
    "calibration_board",
    "error_summary",
]

CV_FOLDS = 5
Progress = Callable[[int, int, "ModelOutcome"], None]


@dataclass(frozen=True)
class ModelOutcome:
    """One suite model: measured (with the prediction before calibration) or failed."""

    name: str
    measured_ms: float | None = None
    predicted_ms: float | None = None  # with the board's profile before calibration
    ops: int = 0  # per-op times stored
    error: str | None = None
    calibration_source: str = ""  # the measurement's stable name, if it has one

    @property
    def ok(self) -> bool:
        """True when the model was measured."""
        return self.measured_ms is not None


@dataclass
class CalibrationResult:
    """What a calibration run measured, fitted and wrote."""

    board: str
    source: str
    outcomes: list[ModelOutcome]
    before: dict[str, float]
    after: dict[str, float]
    table: dict[str, Any] = field(default_factory=dict)
    profile_path: Path | None = None
    setup: dict[str, Any] = field(default_factory=dict)  # what the firmware reported

    def to_dict(self) -> dict[str, Any]:
        """Plain dict for ``--json``."""
        return {
            "board": self.board,
            "source": self.source,
            "profile": str(self.profile_path) if self.profile_path else None,
            "before": self.before,
            "after": self.after,
            "models": [vars(o) | {"ok": o.ok} for o in self.outcomes],
            "latency": self.table,
            "setup": self.setup,
        }


def error_summary(pairs: Sequence[tuple[float, float]]) -> dict[str, float]:
    """``(predicted, measured)`` pairs -> n, median |%|, share within 10% and 25%, worst."""
    errs = [abs(p / m - 1.0) * 100.0 for p, m in pairs if m > 0]
    if not errs:
        return {
            "n": 0,
            "median_abs_pct": float("nan"),
            "within_10": 0.0,
            "within_25": 0.0,
            "worst_pct": float("nan"),
        }
    return {
        "n": len(errs),
        "median_abs_pct": round(statistics.median(errs), 2),
        "within_10": round(sum(e <= 10 for e in errs) / len(errs), 3),
        "within_25": round(sum(e <= 25 for e in errs) / len(errs), 3),
        "worst_pct": round(max(errs), 1),
    }


def calibration_board(board: BoardProfile, virtual: bool) -> BoardProfile:
    """The profile a calibration run measures and writes.

    A virtual test device's costs must never overwrite the real board's profile:
    it is calibrated as a separate board, ``NAME-virtual``, titled as a test
    device and with no USB ids (so it is never auto-detected as the real board).
    """
    if not virtual:
        return board
    return dataclasses.replace(
        board, name=f"{board.name}-virtual", title=f"{board.title} (virtual test device)", hwids=()
    )


def _predict_before(board: BoardProfile, model: SuiteModel) -> float:
    from mcunas.cost.latency import predict_latency
    from mcunas.tflite.reader import read_graph

    return predict_latency(read_graph(model.model_bytes), board).ms


def _futures(measurer: Any, suite: Sequence[SuiteModel]) -> list[Any]:
    """Submit every model (a rack measures them in parallel) or defer sequential calls."""
    from mcunas.measure.rack import RackMeasurer

    if isinstance(measurer, RackMeasurer):
        return [measurer.submit(m.model_bytes) for m in suite]
    return [_Deferred(measurer, m.model_bytes) for m in suite]


class _Deferred:
    """A future-like whose measurement runs when its result is asked for (in order)."""

    def __init__(self, measurer: Any, model_bytes: bytes) -> None:
        self._measurer, self._bytes = measurer, model_bytes

    def result(self) -> Figures:
        return self._measurer.measure(self._bytes)


def _store_one(
    store: Any, board: BoardProfile, model: SuiteModel, m: Figures, source: str | None
) -> int:
    from mcunas.tflite.reader import read_graph

    graph = read_graph(model.model_bytes)
    ops = [(o.index, o.op, o.ms) for o in m.ops]
    names_match = [o.op for o in m.ops] == [op.name for op in graph.ops]
    truncated = bool((m.details.get("result") or {}).get("ops_truncated"))
    if not names_match or truncated:
        ops = []  # a profile that does not line up op for op cannot be attributed
    where = f"calibrate:{source or m.calibration_source or m.source}"
    store.add_measurement(
        model.model_bytes,
        board.name,
        board.core,
        board.kernels,
        board.clock_hz,
        m.latency_ms,
        where,
        label=f"suite:{model.name}",
        ops=ops,
    )
    if m.details.get("setup"):
        store.add_setup(board.name, where, m.details["setup"])
    return len(ops)


def measure_suite(
    board: BoardProfile,
    measurer: Any,
    suite: Sequence[SuiteModel],
    store: Any,
    progress: Progress | None = None,
    source: str | None = None,
    setups: list[dict[str, Any]] | None = None,
) -> list[ModelOutcome]:
    """Measure and store every suite model; a model that fails is recorded and skipped.

    ``source`` names where the figures come from in the store (default: the
    measurement's ``calibration_source``, else its ``source``, ``board:<port>``);
    a new measurement of the same model
    from the same source replaces the old one. The build setup the firmware
    reported (``Figures.details["setup"]``) is stored beside the rows and, if
    ``setups`` is given, appended to it.

    Raises:
        FatalError: the setup broke (no port, every rack board out).
    """
    outcomes = []
    for i, (model, fut) in enumerate(zip(suite, _futures(measurer, suite), strict=True), 1):
        predicted = _predict_before(board, model)
        try:
            m = fut.result()
            if m.latency_ms <= 0:
                raise MeasurementError(f"non-positive latency {m.latency_ms} ms")
            n_ops = _store_one(store, board, model, m, source)
            if setups is not None and m.details.get("setup"):
                setups.append(m.details["setup"])
            outcome = ModelOutcome(
                model.name, m.latency_ms, predicted, n_ops, calibration_source=m.calibration_source
            )
        except (CandidateError, MeasurementError, UserError) as exc:
            outcome = ModelOutcome(model.name, predicted_ms=predicted, error=str(exc))
        outcomes.append(outcome)
        if progress:
            progress(i, len(suite), outcome)
    return outcomes


def fit_latency(board: BoardProfile, store: Any) -> tuple[dict[str, Any], dict[str, float]]:
    """Fit ``board``'s latency model to everything the store holds for it; cross-validated error.

    Returns:
        The new ``[latency]`` table and the K-fold whole-model error summary.
    """
    from mcunas.cost.fit.store import fit_store

    fitted = fit_store(board, store, folds=CV_FOLDS)
    return fitted.table, error_summary([(p, r.latency_ms) for r, p in fitted.cv])


def calibrate(
    board: BoardProfile,
    measurer: Any,
    suite: Sequence[SuiteModel],
    store: Any,
    progress: Progress | None = None,
    write: bool = True,
    source: str | None = None,
) -> CalibrationResult:
    """Measure the suite on ``board``, store it, fit and (by default) write the profile.

    Raises:
        UserError: no model could be measured.
        FatalError: the setup broke.
    """
    from mcunas.cost.fit.board import write_user_board

    setups: list[dict[str, Any]] = []
    outcomes = measure_suite(board, measurer, suite, store, progress, source, setups)
    measured = [o for o in outcomes if o.ok]
    if not measured:
        reasons = "; ".join(f"{o.name}: {o.error}" for o in outcomes[:3])
        raise UserError(f"no suite model could be measured on {board.name} ({reasons})")
    before = error_summary(
        [
            (o.predicted_ms, o.measured_ms)
            for o in measured
            if o.predicted_ms is not None and o.measured_ms is not None
        ]
    )
    table, after = fit_latency(board, store)
    path = write_user_board(board, table) if write else None
    stable = next((o.calibration_source for o in measured if o.calibration_source), "")
    source = source or stable or str(getattr(measurer, "name", type(measurer).__name__))
    setup = setups[-1] if setups else {}
    return CalibrationResult(board.name, source, outcomes, before, after, table, path, setup)
