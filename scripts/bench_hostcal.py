"""Per-op calibration checked on a real CPU: this host running TFLM's reference kernels.

scripts/bench hostcal                 # full suite + the 5 calibration models, 5 batches each
scripts/bench hostcal --quick         # small suite, 3 short batches (about 15 s)
scripts/bench hostcal --repeat 9      # 9 batches per model

No microcontroller here, but the host CPU runs the real TensorFlow Lite Micro
reference kernels (the tflite-micro Python package), so it is treated as a
board "host-cpu" with kernels = reference and clock 1 GHz (a unit only:
cycles = ms * 1e6). Models are timed in ``--repeat`` interleaved rounds: in
each round every model runs in a forked child (:func:`mcunas.tflite.runtime.run_forked`,
so a TFLM abort is contained): interpreter created, random int8 input,
warm-up, then one batch of individually timed invokes (``time.perf_counter_ns``).
Statistic: the median over rounds of each batch's minimum invoke time; the
spread is (max - min) of those minima over their median. The per-invoke cost
(Python binding, interpreter loop) is the same statistic on a RESHAPE-only
model; a single-op model's op time is its time minus that.

The op fit uses the library's own code (RecordStore, kernel_fit.fit_op_tables,
board_fit.fit_board, kernel_fit.cross_validate) on the single-op suite models only.
The multi-op suite blocks and the 5 real models are held out: they are
predicted, never fitted. Figures are host timings (a desktop CPU with caches
and out-of-order execution, not an MCU): they test whether the predictor's
structure (per-variant cost per unit + requant per output + per-op and
per-invoke overhead, summed over ops) carries from single ops to whole models
on a real machine; they do not say how close it is on a microcontroller.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

# The models come from hostcal_models, their timings from hostcal_timing, the tables
# from hostcal_report; this script stores, fits and predicts (the names re-exported).
from hostcal_models import (  # noqa: E402
    CLOCK_HZ,
    MODELS_DIR,
    HostModel,
    host_board,
    host_models,
    isolate_ops,
    op_models,
    reshape_model,
)
from hostcal_report import op_report, report, summary_line  # noqa: E402
from hostcal_timing import ARENA_BYTES, Timing, measure_all, time_model  # noqa: E402

from mcunas.cost.fit.records import RecordStore, model_hash  # noqa: E402
from mcunas.tflite.reader import read_graph  # noqa: E402

SOURCE = "host:tflite-micro-python"

__all__ = [
    "ARENA_BYTES",
    "CLOCK_HZ",
    "MODELS_DIR",
    "SOURCE",
    "HostModel",
    "Timing",
    "fit_and_predict",
    "fit_host",
    "host_board",
    "host_models",
    "isolate_ops",
    "measure_all",
    "op_models",
    "predictions",
    "reshape_model",
    "store_timings",
    "time_model",
]


def store_timings(
    store: RecordStore,
    board: Any,
    models: list[HostModel],
    timings: dict[str, Timing],
    overhead_ms: float,
) -> int:
    """Store every whole-model time; single-op models also get op time = time - overhead.

    Returns:
        The number of per-op records stored (a single-op model no slower than
        the overhead gets none).
    """
    n_ops = 0
    for m in models:
        if m.name not in timings:
            continue
        ms = timings[m.name].ms
        ops = []
        if m.kind == "single" and ms - overhead_ms > 0:
            ops = [(0, read_graph(m.model_bytes).ops[0].name, ms - overhead_ms)]
        store.add_measurement(
            m.model_bytes,
            board.name,
            board.core,
            board.kernels,
            board.clock_hz,
            ms,
            SOURCE,
            label=m.name,
            ops=ops,
        )
        n_ops += len(ops)
    return n_ops


def fit_host(board: Any, store: RecordStore, models: list[HostModel]) -> dict[str, Any]:
    """Fit on the single-op models' records only; the library's own fit code.

    Returns:
        ``tables`` (kernel_fit.fit_op_tables, scale 1), ``report``, ``fit`` (the
        ``[latency]`` table ``mcunas calibrate`` would write, board_fit.fit_board),
        ``cv`` (kernel_fit.cross_validate, 5 folds: (row, predicted ms)) and ``graphs``.
    """
    from mcunas.cost.fit.board import fit_board
    from mcunas.cost.fit.kernels import cross_validate, fit_op_tables

    graphs = {model_hash(m.model_bytes): read_graph(m.model_bytes) for m in models}
    single = {model_hash(m.model_bytes) for m in models if m.kind == "single"}
    rows = [r for r in store.model_rows(board.name) if model_hash(r.model.read_bytes()) in single]
    ops = store.op_records(board.name)
    tables, report = fit_op_tables(board, ops, rows, graphs.__getitem__)
    fit = fit_board(board, rows, ops, graphs.__getitem__)
    cv = cross_validate(board, ops, rows, graphs.__getitem__, folds=5)
    return {"tables": tables, "report": report, "fit": fit, "cv": cv, "graphs": graphs}


def _geomean(values: list[float]) -> float:
    return math.exp(statistics.fmean(math.log(v) for v in values))


def predictions(
    board: Any, models: list[HostModel], timings: dict[str, Timing], fitted: dict[str, Any]
) -> dict[str, dict[str, float]]:
    """Predicted ms per model: ``before`` (default tables x one factor), ``opfit``, ``fit``.

    The one factor is the geometric mean of measured / predicted over the
    single-op models, so the default tables are in host units.
    """
    from mcunas.cost.latency import predict_latency

    def predict(b: Any) -> dict[str, float]:
        return {
            m.name: predict_latency(read_graph(m.model_bytes), b).ms
            for m in models
            if m.name in timings
        }

    prior = predict(board)
    factor = _geomean(
        [
            timings[m.name].ms / prior[m.name]
            for m in models
            if m.kind == "single" and m.name in prior
        ]
    )
    opfit = predict(dataclasses.replace(board, latency=fitted["tables"]))
    fit = predict(dataclasses.replace(board, latency=fitted["fit"]))
    return {
        "before": {k: v * factor for k, v in prior.items()},
        "opfit": opfit,
        "fit": fit,
        "factor": {"value": factor},
    }


def fit_and_predict(
    board: Any, models: list[HostModel], timings: dict[str, Timing], overhead_ms: float
) -> tuple[dict[str, Any], dict[str, Any], int]:
    """Store the timings in a fresh temporary store, fit, predict: (fitted, preds, op records)."""
    with tempfile.TemporaryDirectory(prefix="mcunas-hostcal-") as tmp:
        store = RecordStore(Path(tmp) / "predictor.sqlite")
        n_ops = store_timings(store, board, models, timings, overhead_ms)
        fitted = fit_host(board, store, models)
        store.close()
    timed = [m for m in models if m.name in timings]
    return fitted, predictions(board, timed, timings, fitted), n_ops


def _print_timing(
    models: list[HostModel],
    ops: list[HostModel],
    timings: dict[str, Timing],
    overhead: Timing,
    took: float,
    batches: int,
    batch_ms: float,
) -> None:
    """What was timed, how, the per-invoke overhead and the spread of the batch minima."""
    spreads = [t.spread_pct for t in timings.values()]
    trim = [t.trimmed_ms / t.ms for t in timings.values()]
    print(
        f"host-cpu: TFLM reference kernels (tflite-micro Python), {len(models)} models and "
        f"{len(ops)} isolated ops of the real models timed "
        f"in {took:.1f} s: {batches} interleaved rounds, one ~{batch_ms:g} ms batch each"
    )
    print("statistic: median over rounds of the batch's minimum invoke time (perf_counter_ns)")
    print(
        f"per-invoke overhead (RESHAPE-only model): {overhead.ms * 1e3:.2f} us "
        f"(batch minima {', '.join(f'{v * 1e3:.2f}' for v in overhead.batch_min_ms)} us)"
    )
    print(
        f"spread of batch minima: median {statistics.median(spreads):.1f}%, "
        f"max {max(spreads):.1f}%; 20% trimmed mean / statistic: median "
        f"{statistics.median(trim):.3f}, max {max(trim):.3f}"
    )


def _equal_clock_fit(
    board: Any,
    models: list[HostModel],
    timings: dict[str, Timing],
    overhead_ms: float,
    factor: float,
) -> None:
    """The same fit with the clock at which the default tables need no factor.

    Variants a K-fold leaves unmeasured keep their prior cycles, which at 1 GHz
    are in MCU units; at this clock they are in host units.
    """
    eq = dataclasses.replace(board, name="host-cpu-eq", clock_hz=round(CLOCK_HZ / factor))
    fitted_eq, preds_eq, _ = fit_and_predict(eq, models, timings, overhead_ms)
    held = [m for m in models if m.kind != "single" and m.name in timings]
    print(
        f"\nSame fit with the clock set to {eq.clock_hz / 1e9:.1f} GHz (default tables x1 on "
        "the single-op models), so unmeasured variants' priors are in host units:"
    )
    print(summary_line("cross_validate", [(p, r.latency_ms) for r, p in fitted_eq["cv"]]))
    print(
        summary_line(
            "held-out, board_fit.fit_board",
            [(preds_eq["fit"][m.name], timings[m.name].ms) for m in held],
        )
    )


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--repeat", type=int, default=5, help="interleaved rounds (one timed batch per model each)"
    )
    parser.add_argument("--batch-ms", type=float, default=40.0, help="target length of a batch")
    parser.add_argument(
        "--quick", action="store_true", help="small suite, 3 batches of 10 ms (a smoke run)"
    )
    parser.add_argument("--all", action="store_true", help="list the single-op models too")
    parser.add_argument(
        "--no-ops", action="store_true", help="skip timing the real models' ops one by one"
    )
    args = parser.parse_args()
    batches = 3 if args.quick else max(args.repeat, 1)
    batch_ms = 10.0 if args.quick else args.batch_ms
    start = time.perf_counter()
    board = host_board()
    models = host_models("small" if args.quick else "full")
    overhead_model = HostModel("(reshape-only)", "overhead", reshape_model())
    ops = [] if args.no_ops else op_models(models)
    timings, failed = measure_all([overhead_model, *models, *ops], batches, batch_ms)
    overhead = timings.pop(overhead_model.name)
    took = time.perf_counter() - start
    _print_timing(models, ops, timings, overhead, took, batches, batch_ms)
    for name, why in failed.items():
        print(f"  not timed: {name}: {why}")
    fitted, preds, n_ops = fit_and_predict(board, models, timings, overhead.ms)
    n_rows = sum(m.name in timings for m in models)
    print(
        f"store: {n_rows} whole-model and {n_ops} per-op records; op fit on "
        f"{fitted['report'].op_rows} op rows"
    )
    report(board, models, timings, fitted, preds, args.all)
    if ops:
        op_report(board, models, ops, timings, overhead.ms, fitted)
    _equal_clock_fit(board, models, timings, overhead.ms, preds["factor"]["value"])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
