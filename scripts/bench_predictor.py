"""Leave-one-out error of the latency model on the built-in calibration rows.

The built-in rows are mcunas/calibration/measurements.csv (MLPerf Tiny v0.5 and
Espressif's ESP-NN figures) and measurements_extra.csv (further published figures).
Leave-one-out predicts each row as a board profile would: from the other rows
of its board where there are some, else from the other boards. Leave-one-
board-out predicts it from the other boards only: a bare profile.

scripts/bench predictor                   # LOO table, per family, worst cases, and the
                                          # bands' coverage by kernel library and core family
                                          # (bare and published setup stated; now and before)
scripts/bench predictor --csv FILE.csv    # another measurements file (same columns)
scripts/bench predictor --emit-defaults   # also print DEFAULT_SCALES / _ERRORS / _CHECKED
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.core_fit import core_cycle_ratios, load_runs  # noqa: E402
from bench.latency_error import (  # noqa: E402
    check_rows,
    former_check,
    leave_one_board_out,
    path_bands,
    summary,
)
from mcunas.cost.fit.scale import (  # noqa: E402
    CALIBRATION_CSV,
    CALIBRATION_EXTRA_CSV,
    checked_variants,
    fit_dispatch,
    fit_scales,
    leave_one_out,
    load_calibration,
    predict_row_ms,
    summarize,
)
from mcunas.tflite.reader import read_graph  # noqa: E402


def band_report(rows: list, bare: list) -> None:  # noqa: ANN001
    """Every row as a bare profile and with its published setup stated, by library and family.

    Stated bands are what a profile prints (the defaults were fitted with every row);
    nested ones come from the other boards' errors alone, so no row sets its own band.
    "before" is the former method on the same rows (bench.latency_error.former_check):
    one scale per path, a band per path, every setup prior moving the estimate.
    """
    now = check_rows(bare, lambda row: read_graph(row.model))
    before = former_check(rows)
    print(
        "\nHeld-out coverage by kernel library / core family (nested: each row's band from"
        " the other boards only; width: its median; band, holds: as stated)\n"
        f"  {'group':<18} {'n':>3} | {'bare: med.err':>13} {'before':>6} {'nested':>6} "
        f"{'before':>6} {'width':>5} {'band':>5} {'holds':>5} | {'setup: med.err':>14} "
        f"{'before':>6} {'nested':>6} {'before':>6} {'width':>5} {'band':>5} {'holds':>5}"
    )
    old = _groups(before)
    for name, checks in sorted(_groups(now).items(), key=lambda g: (g[0].startswith("all"), g[0])):
        s, b = summary(checks), summary(old[name])
        print(
            f"  {name:<18} {s['n']:>3} | {s['bare_median']:12.1f}% {b['bare_median']:5.1f}% "
            f"{s['bare_nested']:6.0%} {b['bare_nested']:6.0%} {s['nested_band']:4.0f}% "
            f"{s['bare_band']:4.0f}% {s['bare_holds']:5.0%} | {s['setup_median']:13.1f}% "
            f"{b['setup_median']:5.1f}% {s['setup_nested']:6.0%} {b['setup_nested']:6.0%} "
            f"{s['setup_nested_band']:4.0f}% {s['setup_band']:4.0f}% {s['setup_holds']:5.0%}"
        )
    for label, checks in (("now", now), ("before", before)):
        misses = [c for c in checks if abs(c.bare_error) > c.bare_nested]
        missed = [c for c in checks if abs(c.setup_error) > c.setup_nested]
        print(f"Nested misses, {label}: bare " + _names(misses, "bare") + "; setup stated "
              + _names(missed, "setup"))  # fmt: skip
    tiny = [r for r in bare if sum(op.macs for op in read_graph(r.row.model).ops) < 10_000]
    if tiny:
        inside = sum(abs(r.error_pct) <= 30 for r in tiny)
        print(f"Models under 10k MACs (bare profile): {inside}/{len(tiny)} within ±30%")


def _groups(checks: list) -> dict[str, list]:  # noqa: ANN001
    groups: dict[str, list] = defaultdict(list)
    for c in checks:
        groups[c.group].append(c)
        groups["all rows"].append(c)
        if c.row.core.startswith("cortex-m"):
            groups["all Cortex-M"].append(c)
    return groups


def _names(checks: list, kind: str) -> str:  # noqa: ANN001
    return (
        ", ".join(
            f"{c.row.id} {getattr(c, kind + '_error'):+.0f}% (±{getattr(c, kind + '_nested'):.0f}%)"
            for c in checks
        )
        or "none"
    )


def old_runtime_factor(rows: list) -> None:  # noqa: ANN001
    """Per cycle, boards of a runtime of 2020 or earlier against the recent scale of their path."""
    recent = fit_scales([r for r in rows if r.recent])
    logs = []
    for r in rows:
        if not r.recent and r.path in recent:
            logs.append(math.log(r.latency_ms / predict_row_ms(r, recent, None)))
    if len(logs) > 1:
        spread = (math.exp(1.645 * statistics.stdev(logs)) - 1) * 100
        print(
            f"OLD_RUNTIME_FACTOR = ({math.exp(statistics.fmean(logs)):.2f}, "
            f"{spread:.0f}%) from {len(logs)} rows (90% band of one model's ratio)"
        )


def _line(name: str, stats: dict[str, float]) -> str:
    return (
        f"  {name:<28} n={stats['n']:<2} median |err| {stats['median_abs_pct']:5.1f}%   "
        f"within 10%: {stats['within_10']:4.0%}   within 25%: {stats['within_25']:4.0%}"
    )


def emit_defaults(rows: list, results: list, bare: list) -> None:  # noqa: ANN001
    """Print the defaults of mcunas/cost/coefficients.py and the boards' own scales."""
    scales = fit_scales(rows)
    print("\nDEFAULT_SCALES = " + repr({p: round(s, 4) for p, s in sorted(scales.items())}))
    print("DISPATCH_CYCLES['invoke'] = " + repr(round(fit_dispatch(rows, scales) or 0.0)))
    bands = {p: round(b, 1) for p, b in path_bands(bare).items()}
    print("DEFAULT_ERRORS = " + repr(bands))
    recent = {p: round(b, 1) for p, b in path_bands([r for r in bare if r.row.recent]).items()}
    print("STATED_RUNTIME_ERRORS = " + repr(recent))
    print("DEFAULT_CHECKED = " + repr(checked_variants(rows)))
    old_runtime_factor(rows)
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
        print(f"Rows of {CALIBRATION_CSV.name} (MLPerf Tiny, ESP-NN), each fitted without itself:")
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
    band_report(rows, bare)
    if args.emit_defaults:
        emit_defaults(rows, results, bare)
    print(f"\n({time.perf_counter() - start:.2f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
