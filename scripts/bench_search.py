"""Hardware-aware search vs plain Keras Tuner random search with constraints checked afterwards.

Both runs use the same random oracle, seed and trial budget, so they propose the
same candidates in the same order. Ours costs each candidate before training
and never trains an infeasible one; the baseline is a stock
``keras_tuner.RandomSearch`` (its own ``run_trial``: build + fit with early
stopping on val_loss) that converts, evaluates and costs each trained model
with the same INT8 conversion, TFLite Micro accuracy and simulator afterwards.

    scripts/bench search [--board esp32s3] [--trials 10] [--epochs 10]
                         [--max-latency-ms 5] [--max-sram-kb 96] [--seed 0]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


def ours(args: argparse.Namespace, out: Path, time_budget_s: float | None = None) -> dict:
    from mcunas.engine import run_search
    from mcunas.search import SearchConfig
    from mcunas.search.report.result import infeasible_train_s
    from mcunas.search.results.store import TrialStatus

    trials = args.trials if time_budget_s is None else 5 * args.trials
    cfg = SearchConfig(
        board=args.board,
        out=str(out),
        strategy="random",
        max_trials=trials,
        epochs=args.epochs,
        seed=args.seed,
        max_latency_ms=args.max_latency_ms,
        max_sram_kb=args.max_sram_kb,
        time_budget_s=time_budget_s,
    )
    start = time.monotonic()
    result = run_search(cfg, stream=sys.stderr)
    ok = [r for r in result.trials if r.status == TrialStatus.OK]
    return {
        "wall_s": time.monotonic() - start,
        "train_s": sum(r.train_s for r in result.trials),
        "infeasible_train_s": infeasible_train_s(result.trials),
        "feasible": len(ok),
        "trials": len(result.trials),
        "best": max((r.int8_accuracy or 0 for r in ok), default=None),
        "points": [(r.int8_accuracy, r.latency_ms, r.peak_sram_bytes) for r in ok],
    }


def baseline(args: argparse.Namespace, out: Path) -> dict:
    from bench_posthoc import posthoc_random

    from mcunas.boards.catalog import load_board
    from mcunas.data.datasets import load_dataset
    from mcunas.search.results.budgets import Budgets
    from mcunas.space import FAMILIES, McuSearchSpace

    data = load_dataset(None, seed=args.seed)
    space = McuSearchSpace(data.input_shape, data.num_classes, FAMILIES)
    budgets = Budgets(args.max_latency_ms, args.max_sram_kb, None)
    board = load_board(args.board)
    return posthoc_random(space, data, board, budgets, out, args.trials, args.epochs, args.seed)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--board", default="esp32s3")
    parser.add_argument("--trials", type=int, default=10)
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--max-latency-ms", type=float, default=5.0)
    parser.add_argument("--max-sram-kb", type=float, default=96.0)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    from mcunas.search.results.pareto import Point, normalized_hypervolume, reference_point

    with tempfile.TemporaryDirectory() as tmp:
        a = ours(args, Path(tmp) / "ours")
        b = baseline(args, Path(tmp) / "baseline")
        c = ours(args, Path(tmp) / "timed", time_budget_s=b["wall_s"])
    ref = reference_point(args.max_latency_ms, args.max_sram_kb * 1024)
    print(
        f"\nboard {args.board}, budgets: latency <= {args.max_latency_ms:g} ms, peak SRAM <= "
        f"{args.max_sram_kb:g} KB; {args.trials} trials x <= {args.epochs} epochs, seed "
        f"{args.seed}, digits; same random oracle for both"
    )
    print(f"{'':38}{'hardware-aware':>16}{'post-hoc random':>17}{'ours, same time':>17}")
    for label, key, fmt in [
        ("wall time (s)", "wall_s", "{:.1f}"),
        ("training time, all (s)", "train_s", "{:.1f}"),
        ("training time on infeasible (s)", "infeasible_train_s", "{:.1f}"),
        ("trials run", "trials", "{}"),
        ("feasible trials", "feasible", "{}"),
    ]:
        print(f"{label:38}{fmt.format(a[key]):>16}{fmt.format(b[key]):>17}{fmt.format(c[key]):>17}")
    acc = ["-" if r["best"] is None else f"{100 * r['best']:.1f}%" for r in (a, b, c)]
    print(f"{'best feasible INT8 accuracy':38}{acc[0]:>16}{acc[1]:>17}{acc[2]:>17}")
    hv = [normalized_hypervolume([Point(*p) for p in r["points"]], ref) for r in (a, b, c)]
    print(f"{'hypervolume of feasible front (norm.)':38}{hv[0]:>16.4f}{hv[1]:>17.4f}{hv[2]:>17.4f}")
    print("(ours, same time: the same search given the baseline's wall time as --time-budget)")
    print(
        "(hypervolume reference: accuracy 0, the latency budget, the SRAM budget; estimates "
        "from the simulator)"
    )


if __name__ == "__main__":
    main()
