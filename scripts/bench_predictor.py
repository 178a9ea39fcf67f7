"""Leave-one-out error of the latency model on the built-in calibration rows.

The built-in rows are mcunas/calibration/measurements.csv (as shipped in
shared/calibration) and measurements_extra.csv (further published figures).
Leave-one-out predicts each row as a board profile would: from the other rows
of its board where there are some, else from the other boards. Leave-one-
board-out predicts it from the other boards only: a bare profile.

scripts/bench predictor                   # LOO table, per family, worst cases
scripts/bench predictor --csv FILE.csv    # another measurements file (same columns)
scripts/bench predictor --emit-defaults   # also print DEFAULT_SCALES / _ERRORS / _CHECKED
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from mcunas.boards import BoardProfile  # noqa: E402
from mcunas.predict.core_fit import core_cycle_ratios, load_runs  # noqa: E402
from mcunas.predict.latency import predict_latency  # noqa: E402
from mcunas.predict.scale_fit import (  # noqa: E402
    CALIBRATION_CSV,
    CALIBRATION_EXTRA_CSV,
    checked_variants,
    coverage,
    fit_dispatch,
    fit_scales,
    leave_one_board_out,
    leave_one_out,
    load_calibration,
    path_band,
    path_bands,
    summarize,
)
from mcunas.tflite.reader import read_graph  # noqa: E402


def bare_profile(row) -> BoardProfile:  # noqa: ANN001
    """What a user writes for the row's board: core, clock, memory place, kernels."""
    return BoardProfile(
        name="bare",
        core=row.core,
        clock_hz=row.clock_hz,
        sram_bytes=1 << 20,
        flash_bytes=1 << 22,
        kernels=row.kernels,
        memory=row.memory,
    )


def band_report(bare: list) -> None:  # noqa: ANN001
    """Coverage of the stated band on the leave-one-board-out predictions.

    Stated: the band a bare profile prints today (the defaults were fitted with
    every row). Nested: each row's band from the other boards' errors alone
    (scale_fit.path_band), so no row sets its own band.
    """
    stated = [predict_latency(read_graph(r.row.model), bare_profile(r.row)).error_pct for r in bare]
    nested = [path_band(r.row.path, [o for o in bare if o.row.board != r.row.board]) for r in bare]
    errs = [abs(r.error_pct) for r in bare]
    print(
        f"Stated band (bare profile): holds {coverage(bare, stated):.0%} of rows, median band "
        f"±{statistics.median(stated):.0f}%; nested (other boards' errors): holds "
        f"{coverage(bare, nested):.0%}; median |error| {statistics.median(errs):.1f}%"
    )
    tiny = [r for r in bare if sum(op.macs for op in read_graph(r.row.model).ops) < 10_000]
    if tiny:
        inside = sum(abs(r.error_pct) <= 30 for r in tiny)
        print(f"Models under 10k MACs (bare profile): {inside}/{len(tiny)} within ±30%")


def _line(name: str, stats: dict[str, float]) -> str:
    return (
        f"  {name:<28} n={stats['n']:<2} median |err| {stats['median_abs_pct']:5.1f}%   "
        f"within 10%: {stats['within_10']:4.0%}   within 25%: {stats['within_25']:4.0%}"
    )


def emit_defaults(rows: list, results: list, bare: list) -> None:  # noqa: ANN001
    """Print the defaults of mcunas/predict/coefficients.py and the boards' own scales."""
    scales = fit_scales(rows)
    print("\nDEFAULT_SCALES = " + repr({p: round(s, 4) for p, s in sorted(scales.items())}))
    print("DISPATCH_CYCLES['invoke'] = " + repr(round(fit_dispatch(rows, scales) or 0.0)))
    bands = {p: round(b, 1) for p, b in path_bands(bare).items()}
    print("DEFAULT_ERRORS = " + repr(bands))
    print("DEFAULT_CHECKED = " + repr(checked_variants(rows)))
    ratios = {c: round(r, 2) for c, r in core_cycle_ratios(load_runs()).items()}
    print("CORE_FACTORS['cmsis-nn-dsp'] (energy.csv, same library on each core) = " + repr(ratios))
    by_board: dict[tuple[str, str], list] = defaultdict(list)
    for r in results:
        by_board[(r.row.board, r.row.kernels)].append(r)
    for (board, kernels), group in sorted(by_board.items()):
        own = fit_scales([g.row for g in group], fixed=scales)
        med = statistics.median(abs(g.error_pct) for g in group)
        print(f"{board} [{kernels}] scale={own[group[0].row.path]:.4f} loo_median={med:.1f}%")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--csv", type=Path, default=None, help="default: the built-in rows")
    parser.add_argument("--emit-defaults", action="store_true")
    args = parser.parse_args()
    start = time.perf_counter()
    rows = load_calibration(args.csv)
    results = leave_one_out(rows)
    where = args.csv or f"{CALIBRATION_CSV.name} + {CALIBRATION_EXTRA_CSV.name}"
    print(f"Leave-one-out latency error on {where} ({len(rows)} rows)\n")
    print(f"  {'row':<22} {'path':<13} {'measured':>9} {'predicted':>10} {'error':>8}  fitted from")
    for r in results:
        src = f"{r.from_rows} other row(s)" if r.from_rows else "kernel tables alone"
        print(
            f"  {r.row.id:<22} {r.row.path:<13} {r.row.latency_ms:>7.1f}ms "
            f"{r.predicted_ms:>8.1f}ms {r.error_pct:>+7.1f}%  {src}"
        )
    print("\nPer board family (core / kernel library):")
    by_family: dict[str, list] = defaultdict(list)
    by_core: dict[str, list] = defaultdict(list)
    for r in results:
        by_family[r.row.family].append(r)
        by_core[r.row.core.split("-")[0]].append(r)
    for name, group in sorted(by_family.items()):
        print(_line(name, summarize(group)))
    print("Per core family:")
    for name, group in sorted(by_core.items()):
        print(_line(name, summarize(group)))
    print("All rows:")
    print(_line("all", summarize(results)))
    if args.csv is None:
        shared = {r.id for r in load_calibration(CALIBRATION_CSV)}
        print(f"Rows of {CALIBRATION_CSV.name} (shared/calibration), each fitted without itself:")
        print(_line("measurements.csv", summarize([r for r in results if r.row.id in shared])))
    worst = sorted(results, key=lambda r: -abs(r.error_pct))[:3]
    print("Worst cases: " + ", ".join(f"{r.row.id} {r.error_pct:+.1f}%" for r in worst))
    bare = leave_one_board_out(rows)
    print("\nLeave-one-board-out: a bare profile (core, clock, library; no row of its own board):")
    print("  " + ", ".join(f"{r.row.id} {r.error_pct:+.1f}%" for r in bare))
    by_path: dict[str, list] = defaultdict(list)
    for r in bare:
        by_path[r.row.path].append(r)
    for name, group in sorted(by_path.items()):
        print(_line(name, summarize(group)))
    conv = [
        r
        for r in bare
        if any(op.name.startswith(("CONV", "DEPTHWISE")) for op in read_graph(r.row.model).ops)
    ]
    within = [r for r in conv if abs(r.error_pct) <= 30]
    print(f"Bare profile, conv models: {len(within)}/{len(conv)} within ±30%")
    band_report(bare)
    if args.emit_defaults:
        emit_defaults(rows, results, bare)
    print(f"\n({time.perf_counter() - start:.2f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
