"""Calibration on the virtual board's ground truth: held-out whole-model error before/after.

scripts/bench calibrate                      # small suite, seed 0, esp32s3
scripts/bench calibrate --suite full --seeds 0 1 2 --board nucleo_f746zg
scripts/bench calibrate --space 8            # also 8 sampled search-space models (TensorFlow)
scripts/bench calibrate --suite quick        # 3 models; the rest of the small suite held out

Held-out models are never in the suite: the 5 models of mcunas/calibration/models,
three composite models (DS-CNN, inverted residual, attention block) built by the
test suite's recipes, and optionally models sampled from McuSearchSpace and
converted with convert_int8. The virtual board is a test device whose hidden costs
differ from the predictor's (mcunas/testing/virtual_board/truth.py): these figures say the
fit recovers such costs, not how close the predictor is on a real board.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def _space_models(count: int) -> list[tuple[str, bytes]]:
    import numpy as np

    from mcunas.space import McuSearchSpace
    from mcunas.tflite.convert import convert_int8

    space = McuSearchSpace((32, 32, 3), 10)
    rng = np.random.default_rng(0)
    out = []
    for seed in range(count):
        hp = space.sample(seed)
        model = space.build(hp)
        rep = rng.uniform(0, 1, size=(8, 32, 32, 3)).astype("float32")
        out.append((f"space{seed}:{space.describe(hp)[:40]}", convert_int8(model, rep)))
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--board", default="esp32s3")
    parser.add_argument("--suite", default="small", choices=["small", "full", "quick"])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--space", type=int, default=0, help="search-space models to add")
    args = parser.parse_args()
    from bench.calibrate_check import check_models
    from mcunas.boards.catalog import load_board
    from mcunas.cost.fit.records import RecordStore
    from mcunas.cost.fit.suite import load_suite
    from mcunas.measure.calibrate import calibrate
    from mcunas.measure.opener import open_measurer
    from mcunas.testing.virtual_board.truth import GroundTruth
    from tests.measure.test_calibrate import held_out_models

    models = held_out_models() + (_space_models(args.space) if args.space else [])
    if args.suite == "quick":  # the rest of the small suite is held out too
        quick = {m.name for m in load_suite("quick")}
        models += [(m.name, m.model_bytes) for m in load_suite("small") if m.name not in quick]
    for seed in args.seeds:
        with tempfile.TemporaryDirectory() as home:
            os.environ["MCUNAS_HOME"] = home
            start = time.perf_counter()
            board = load_board(args.board)
            truth = GroundTruth.from_seed(seed)
            before = check_models(board, truth, models)
            with open_measurer("virtual", board, truth_seed=seed) as m:
                res = calibrate(board, m, load_suite(args.suite), RecordStore())
            after = check_models(load_board(args.board), truth, models)
            bands = _stated_bands(load_board(args.board), models)
            took = time.perf_counter() - start
        print(
            f"\n{args.board}, truth seed {seed}, {args.suite} suite ({took:.1f} s): "
            f"suite CV median {res.after['median_abs_pct']:.1f}%, "
            f"within 10% {res.after['within_10']:.0%}"
        )
        print(f"  {'held-out model':<42} {'true ms':>9} {'before':>8} {'after':>8}")
        for (name, p0, t), (_, p1, _) in zip(before, after, strict=True):
            e0, e1 = (p0 / t - 1) * 100, (p1 / t - 1) * 100
            print(f"  {name[:42]:<42} {t:9.2f} {e0:+7.1f}% {e1:+7.1f}%")
        for label, rows in (("before", before), ("after", after)):
            errs = [abs(p / t - 1) * 100 for _, p, t in rows]
            share = sum(e <= 10 for e in errs) / len(errs)
            med = statistics.median(errs)
            print(
                f"  {label:<6}: within 10% {share:4.0%}, median |err| {med:5.1f}%, "
                f"worst {max(errs):5.1f}%"
            )
        errs = [abs(p / t - 1) * 100 for _, p, t in after]
        inside = sum(e <= b for e, b in zip(errs, bands, strict=True)) / len(errs)
        print(
            f"  after : stated band median ±{statistics.median(bands):.0f}%, "
            f"holds {inside:.0%} of the held-out models"
        )
    return 0


def _stated_bands(board, models: list) -> list[float]:  # noqa: ANN001
    """The error the calibrated profile states for each held-out model."""
    from mcunas.cost.latency import predict_latency
    from mcunas.tflite.reader import read_graph

    return [predict_latency(read_graph(data), board).error_pct for _, data in models]


if __name__ == "__main__":
    raise SystemExit(main())
