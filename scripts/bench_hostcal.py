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
board_refit.refit_board, kernel_fit.cross_validate) on the single-op suite models only.
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
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from hostcal_report import op_report, report, summary_line  # noqa: E402

from mcunas.predict.records import RecordStore, model_hash  # noqa: E402
from mcunas.tflite.reader import read_graph  # noqa: E402

ARENA_BYTES = 16 * 1024 * 1024
SOURCE = "host:tflite-micro-python"
CLOCK_HZ = 1_000_000_000  # a unit: host cycles = ms * 1e6
MODELS_DIR = Path(__file__).resolve().parent.parent / "mcunas" / "calibration" / "models"


@dataclass(frozen=True)
class Timing:
    """One model's host invoke time: the statistic, its batch minima, the trimmed mean."""

    ms: float  # median of the batch minima
    batch_min_ms: tuple[float, ...]
    trimmed_ms: float  # 20% trimmed mean of every timed invoke (for comparison)
    invokes: int

    @property
    def spread_pct(self) -> float:
        """(max - min) of the batch minima over their median, in percent."""
        return (max(self.batch_min_ms) - min(self.batch_min_ms)) / self.ms * 100.0


@dataclass(frozen=True)
class HostModel:
    """A model to time: name, kind (single | block | real), bytes."""

    name: str
    kind: str
    model_bytes: bytes


def host_board() -> Any:
    """The esp32s3 profile renamed host-cpu: reference kernels, 1 GHz, no fitted tables."""
    from mcunas.boards import load_board

    return dataclasses.replace(
        load_board("esp32s3"), name="host-cpu", kernels="reference", clock_hz=CLOCK_HZ, latency={}
    )


def reshape_model() -> bytes:
    """A RESHAPE-only model: what one invoke costs with (almost) no kernel work."""
    from mcunas.tflite.writer import build_model

    act = {"dtype": "int8", "scale": 0.05, "zero_point": 0}
    tensors = [
        {"shape": [1, 8, 8], **act},
        {"shape": [2], "dtype": "int32", "data": np.array([1, 64], np.int32)},
        {"shape": [1, 64], **act},
    ]
    return build_model(
        [("RESHAPE", [0, 1], [2], "ReshapeOptions", {"newShape": [1, 64]})], tensors, [0], [2]
    )


def _time_in_child(model_bytes: bytes, batches: int, batch_ms: float) -> tuple:
    """(batch minima in ns, all invoke times in ns); runs in a forked child."""
    from mcunas.errors import CandidateError
    from mcunas.tflite.runtime import create_interpreter

    try:
        interp, log = create_interpreter(model_bytes, ARENA_BYTES)
    except TypeError as exc:  # the runtime's Python wrapper on a buffer with no subgraphs
        raise CandidateError(f"host TFLM could not read the model: {exc}") from None
    if interp is None:
        raise CandidateError(f"host TFLM could not load the model: {log.strip()[-200:]}")
    details = interp.get_input_details(0)
    rng = np.random.default_rng(0)
    interp.set_input(rng.integers(-128, 128, size=details["shape"], dtype=np.int8), 0)
    clock = time.perf_counter_ns
    start = clock()
    warm = 0
    while warm < 3 or clock() - start < 5e6:  # warm-up: 3 invokes and at least 5 ms
        interp.invoke()
        warm += 1
    per_invoke = (clock() - start) / warm
    n = int(min(max(batch_ms * 1e6 / per_invoke, 5), 5000))
    minima, times = [], []
    for _ in range(batches):
        batch = []
        for _ in range(n):
            t0 = clock()
            interp.invoke()
            batch.append(clock() - t0)
        minima.append(min(batch))
        times.extend(batch)
    return minima, times


def time_model(model_bytes: bytes, batches: int = 5, batch_ms: float = 40.0) -> Timing:
    """Time one model's invoke on the host (in a forked child, so a TFLM abort is contained).

    Raises:
        mcunas.tflite.runtime.NativeCrash: the runtime died; CandidateError: it could not load.
    """
    from mcunas.tflite.runtime import run_forked

    return _timing(*run_forked(_time_in_child, bytes(model_bytes), batches, batch_ms))


def _timing(minima: list[float], times: list[float]) -> Timing:
    times = sorted(times)
    cut = len(times) // 5
    trimmed = statistics.fmean(times[cut : len(times) - cut] or times)
    return Timing(
        statistics.median(minima) / 1e6, tuple(m / 1e6 for m in minima), trimmed / 1e6, len(times)
    )


def host_models(suite_size: str = "full") -> list[HostModel]:
    """The calibration suite (single-op and block models) and the 5 calibration models."""
    from mcunas.predict.suite import build_suite

    out = []
    for m in build_suite(suite_size):
        kind = "single" if len(read_graph(m.model_bytes).ops) == 1 else "block"
        out.append(HostModel(m.name, kind, m.model_bytes))
    for path in sorted(MODELS_DIR.glob("*.tflite")):
        out.append(HostModel(path.stem, "real", path.read_bytes()))
    return out


def isolate_ops(model_bytes: bytes) -> list[bytes]:
    """One model per op of ``model_bytes``: the op alone, its non-constant inputs as inputs.

    The tensors, buffers and quantization are the original's, so each op runs
    the same kernel on the same shapes as inside the whole model.
    """
    import copy

    import flatbuffers
    from tflite_micro.tensorflow.lite.micro.python import schema_py_generated as fb

    model = fb.ModelT.InitFromPackedBuf(bytearray(model_bytes), 0)
    sub = model.subgraphs[0]
    const = {
        i
        for i, t in enumerate(sub.tensors)
        if t.buffer and model.buffers[t.buffer].data is not None
    }
    out = []
    for op in sub.operators:
        one, graph = copy.copy(model), copy.copy(sub)
        graph.operators, graph.outputs = [op], list(op.outputs)
        graph.inputs = [t for t in op.inputs if t >= 0 and t not in const]
        one.subgraphs = [graph]
        builder = flatbuffers.Builder(len(model_bytes) + 4096)
        builder.Finish(one.Pack(builder), file_identifier=b"TFL3")
        out.append(bytes(builder.Output()))
    return out


def op_models(models: list[HostModel]) -> list[HostModel]:
    """Each op of the real models on its own (kind ``op``, name ``model#index:OP``)."""
    out = []
    for m in models:
        if m.kind == "real":
            for i, data in enumerate(isolate_ops(m.model_bytes)):
                name = read_graph(data).ops[0].name
                out.append(HostModel(f"{m.name}#{i}:{name}", "op", data))
    return out


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
        ``tables`` (kernel_fit.fit_op_tables, scale 1), ``report``, ``refit`` (the
        ``[latency]`` table ``mcunas calibrate`` would write, board_refit.refit_board),
        ``cv`` (kernel_fit.cross_validate, 5 folds: (row, predicted ms)) and ``graphs``.
    """
    from mcunas.predict.board_refit import refit_board
    from mcunas.predict.kernel_fit import cross_validate, fit_op_tables

    graphs = {model_hash(m.model_bytes): read_graph(m.model_bytes) for m in models}
    single = {model_hash(m.model_bytes) for m in models if m.kind == "single"}
    rows = [r for r in store.model_rows(board.name) if model_hash(r.model.read_bytes()) in single]
    ops = store.op_records(board.name)
    tables, report = fit_op_tables(board, ops, rows, graphs.__getitem__)
    refit = refit_board(board, rows, ops, graphs.__getitem__)
    cv = cross_validate(board, ops, rows, graphs.__getitem__, folds=5)
    return {"tables": tables, "report": report, "refit": refit, "cv": cv, "graphs": graphs}


def _geomean(values: list[float]) -> float:
    return math.exp(statistics.fmean(math.log(v) for v in values))


def predictions(
    board: Any, models: list[HostModel], timings: dict[str, Timing], fitted: dict[str, Any]
) -> dict[str, dict[str, float]]:
    """Predicted ms per model: ``before`` (default tables x one factor), ``opfit``, ``refit``.

    The one factor is the geometric mean of measured / predicted over the
    single-op models, so the default tables are in host units.
    """
    from mcunas.predict.latency import predict_latency

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
    refit = predict(dataclasses.replace(board, latency=fitted["refit"]))
    return {
        "before": {k: v * factor for k, v in prior.items()},
        "opfit": opfit,
        "refit": refit,
        "factor": {"value": factor},
    }


def measure_all(
    models: list[HostModel],
    rounds: int,
    batch_ms: float,
) -> tuple[dict[str, Timing], dict[str, str]]:
    """Time every model in ``rounds`` interleaved rounds (one batch per model per round).

    A busy spell on the shared machine then slows one round of many models
    rather than every batch of one model, and the median over rounds drops it.
    A model the host runtime cannot run is reported, not fatal.
    """
    from mcunas.errors import McunasError
    from mcunas.tflite.runtime import NativeCrash, run_forked

    got: dict[str, tuple[list, list]] = {m.name: ([], []) for m in models}
    failed: dict[str, str] = {}
    for _ in range(rounds):
        for m in models:
            if m.name in failed:
                continue
            try:
                minima, times = run_forked(_time_in_child, m.model_bytes, 1, batch_ms)
            except (NativeCrash, McunasError) as exc:
                failed[m.name] = str(exc)
                continue
            got[m.name][0].extend(minima)
            got[m.name][1].extend(times)
    timings = {name: _timing(*mt) for name, mt in got.items() if name not in failed}
    return timings, failed


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
            "held-out, board_refit.refit_board",
            [(preds_eq["refit"][m.name], timings[m.name].ms) for m in held],
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
