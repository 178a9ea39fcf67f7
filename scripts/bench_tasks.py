"""Proof on real data: mcunas against MiniRocket, a reference design and a post-hoc random search.

Tasks (offline): the UCR/UEA datasets shipped in the ``aeon`` wheel with their
published train/test splits (JapaneseVowels: speech, 12 LPC channels;
BasicMotions: IMU, 6 axes; GunPoint: motion, 1 channel) and scikit-learn's
digits (a seeded, stratified 25% test split: it has no published one). Each
task runs under two budgets (a board with a latency and a peak-SRAM budget).
Per task and budget:

- **mcunas**: ``mcunas search`` (evolution, every family) on an ``.npz`` with
  the test split; the test accuracy is of ``best/`` (INT8, TFLite Micro kernels);
- **reference**: the ``--seed-arch`` design (kws-dscnn for series, ic-resnet8
  for images) scaled to the task, trained with the same recipe (one trial);
  it is trained even when it misses the budgets (only the board's memory
  limits apply), and its latency is printed beside it;
- **ref.fit**: the largest variant of that design inside the budgets (its
  width and input resolution stepped down as ``--seed-arch`` does), trained
  the same way: what a user of the reference could deploy;
- **MiniRocket**: aeon's MiniRocketClassifier on the same split (a strong
  reference that is not MCU-sized; budgets do not apply to it);
- **random**: Keras Tuner's stock RandomSearch over the same space and recipe,
  budgets applied after training, given mcunas's wall time.

Latency and SRAM are simulator estimates (no board here).

    scripts/bench tasks [--tasks basicmotions,gunpoint,japanesevowels,digits]
                        [--budgets esp32s3,nano33ble] [--trials 8] [--epochs 30]
                        [--no-random] [--out runs/bench-tasks]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from functools import partial
from pathlib import Path

import numpy as np

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

# Board and budgets: (board, max latency ms, max peak SRAM KB).
BUDGETS = {"esp32s3": ("esp32s3", 10.0, 128.0), "nano33ble": ("nano33ble", 20.0, 96.0)}
TASKS = ("basicmotions", "gunpoint", "japanesevowels", "digits")


def _series(name: str) -> tuple[tuple[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]:
    """Train and test (N, T, C) float32 inputs and labels of an aeon-bundled dataset.

    Unequal lengths (JapaneseVowels: 7 to 29 steps) are padded with each
    series' last value to the longest of both splits.
    """
    import aeon.datasets as ds

    loader = {
        "basicmotions": ds.load_basic_motions,
        "gunpoint": ds.load_gunpoint,
        "japanesevowels": ds.load_japanese_vowels,
    }.get(name)
    if loader is None:  # any other set bundled in the wheel, by its aeon name
        bundled = {p.name.lower(): p.name for p in (Path(ds.__file__).parent / "data").iterdir()}
        if name not in bundled:
            raise SystemExit(f"no bundled aeon dataset {name!r}; choose from {sorted(bundled)}")
        loader = partial(ds.load_classification, bundled[name])
    (x, y), (xt, yt) = loader(split="train"), loader(split="test")
    longest = max(s.shape[-1] for s in [*x, *xt])

    def padded(series: list[np.ndarray] | np.ndarray) -> np.ndarray:
        out = [np.pad(s, ((0, 0), (0, longest - s.shape[-1])), mode="edge") for s in series]
        return np.transpose(np.stack(out).astype(np.float32), (0, 2, 1))

    return (padded(x), y), (padded(xt), yt)


def task_arrays(name: str) -> dict[str, np.ndarray]:
    """The task's arrays for an ``.npz``: x/y train and test, and ``kind``."""
    if name == "digits":
        from sklearn.datasets import load_digits
        from sklearn.model_selection import train_test_split

        bunch = load_digits()
        x = (bunch.images.astype(np.float32) / 16.0)[..., None]
        xtr, xte, ytr, yte = train_test_split(
            x, bunch.target, test_size=0.25, stratify=bunch.target, random_state=0
        )
        return {"x_train": xtr, "y_train": ytr, "x_test": xte, "y_test": yte, "kind": "image"}
    (xtr, ytr), (xte, yte) = _series(name)
    classes = {c: i for i, c in enumerate(sorted(set(ytr)))}
    return {
        "x_train": xtr,
        "y_train": np.array([classes[c] for c in ytr]),
        "x_test": xte,
        "y_test": np.array([classes[c] for c in yte]),
        "kind": "series",
    }


def minirocket(arrays: dict[str, np.ndarray], seed: int) -> dict:
    from aeon.classification.convolution_based import MiniRocketClassifier

    def nct(x: np.ndarray) -> np.ndarray:  # aeon wants (N, channels, length)
        if arrays["kind"] == "image":  # a one-channel series of the pixels, row by row
            return x.reshape(len(x), 1, -1).astype(np.float64)
        return np.transpose(x.reshape(len(x), x.shape[1], -1), (0, 2, 1)).astype(np.float64)

    start = time.monotonic()
    clf = MiniRocketClassifier(random_state=seed)
    clf.fit(nct(arrays["x_train"]), arrays["y_train"])
    acc = float(np.mean(clf.predict(nct(arrays["x_test"])) == arrays["y_test"]))
    return {"test": acc, "wall_s": time.monotonic() - start}


def mcunas_run(npz: Path, out: Path, budget: tuple, args: argparse.Namespace, **extra) -> dict:
    from mcunas.engine import run_search
    from mcunas.search import SearchConfig

    board, latency, sram = budget
    settings = {"max_trials": args.trials, "epochs": args.epochs, "seed": args.seed, **extra}
    cfg = SearchConfig(
        board=board,
        out=str(out),
        dataset=str(npz),
        max_latency_ms=latency,
        max_sram_kb=sram,
        **settings,
    )
    start = time.monotonic()
    result = run_search(cfg, stream=sys.stderr, overwrite=True)
    best, d = result.best, result.draws()
    row = {"wall_s": time.monotonic() - start, "trained": d["trained"], "drawn": d["drawn"]}
    row["failed"] = result.counts().get("failed", 0)
    if best is not None:
        row.update(
            test=(result.test or {}).get("int8_accuracy"),
            val=best.int8_accuracy,
            latency_ms=best.latency_ms,
            latency_error_pct=best.latency_error_pct,
            sram_kb=(best.peak_sram_bytes or 0) / 1024,
            flash_kb=(best.flash_bytes or 0) / 1024,
            macs=best.macs,
            description=best.description,
            origin=best.origin or "search",
        )
        own = None if result.refit is None else result.refit.figures
        if own is not None:  # an average of refits is exported: its own graph's figures
            row.update(
                latency_ms=own.latency_ms,
                sram_kb=own.peak_sram_bytes / 1024,
                flash_kb=own.flash_bytes / 1024,
                members=result.refit.members,
            )
    return row


def random_run(npz: Path, out: Path, budget: tuple, args: argparse.Namespace, wall: float) -> dict:
    from bench_posthoc import posthoc_random

    from mcunas.boards.catalog import load_board
    from mcunas.data.datasets import load_dataset
    from mcunas.search.results.budgets import Budgets
    from mcunas.search.training.recipe import plan_recipe
    from mcunas.space import FAMILIES, McuSearchSpace

    data = load_dataset(npz, seed=args.seed)
    space = McuSearchSpace(data.input_shape, data.num_classes, FAMILIES)
    board, latency, sram = budget
    return posthoc_random(
        space,
        data,
        load_board(board),
        Budgets(latency, sram, None),
        out,
        trials=10**6,
        epochs=args.epochs,
        seed=args.seed,
        deadline_s=wall,
        recipe=plan_recipe(data),
    )


def _pct(v: float | None) -> str:
    return "-" if v is None else f"{100 * v:.1f}%"


def print_row(task: str, budget: str, r: dict) -> None:
    m, ref, mr, rnd = r["mcunas"], r["reference"], r["minirocket"], r.get("random") or {}
    fit = r["reference_fit"]
    ref_lat = "-" if ref.get("latency_ms") is None else f"{ref['latency_ms']:.1f}"
    lat = (
        "-"
        if m.get("latency_ms") is None
        else f"{m['latency_ms']:.2f}~±{m['latency_error_pct']:.0f}%"
    )
    print(
        f"{task:15}{budget:10}{_pct(m.get('test')):>8}{_pct(ref.get('test')):>8}"
        f"{_pct(fit.get('test')):>8}"
        f"{_pct(mr['test']):>8}{_pct(rnd.get('test')):>8}{lat:>15}"
        f"{m.get('sram_kb', 0):>8.1f}{m.get('flash_kb', 0):>8.1f}"
        f"{m['trained']:>5}/{m['drawn']:<4}{m['failed']:>4}{m['wall_s']:>8.0f}"
        f"{rnd.get('trials', 0):>6}{ref_lat:>10}",
        flush=True,
    )


def main() -> None:
    from mcunas.space.reference import LADDER

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", default=",".join(TASKS))
    parser.add_argument("--budgets", default=",".join(BUDGETS))
    parser.add_argument("--trials", type=int, default=8)
    parser.add_argument("--epochs", type=int, default=30)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-random", action="store_true", help="skip the random baseline")
    parser.add_argument("--out", default="runs/bench-tasks")
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    header = (
        f"{'task':15}{'budget':10}{'mcunas':>8}{'ref.':>8}{'ref.fit':>8}{'MiniR.':>8}{'random':>8}"
        f"{'latency ms':>15}{'SRAM KB':>8}{'flash':>8}{'trained/drawn':>14}{'fail':>4}"
        f"{'wall s':>8}{'rnd n':>6}{'ref. ms':>10}"
    )
    print("test accuracy (INT8 best/ on the test split) and the chosen model's figures\n" + header)
    for task in args.tasks.split(","):
        arrays = task_arrays(task)
        npz = out / f"{task}.npz"
        np.savez(npz, **arrays)
        mini = minirocket(arrays, args.seed)
        ref_arch = "ic-resnet8" if arrays["kind"] == "image" else "kws-dscnn"
        for name in args.budgets.split(","):
            budget, where = BUDGETS[name], out / f"{task}-{name}"
            row = {"task": task, "budget": name, "minirocket": mini}
            row["mcunas"] = mcunas_run(npz, where / "mcunas", budget, args)
            ref = {"seed_arch": ref_arch, "families": ("stages",), "strategy": "random"}
            row["reference"] = mcunas_run(  # trained whatever its cost: board limits only
                npz, where / "reference", (budget[0], None, None), args, **ref, max_trials=1,
                max_draws=1,
            )  # fmt: skip
            row["reference_fit"] = mcunas_run(  # the largest variant inside the budgets
                npz, where / "reference-fit", budget, args, **ref, max_trials=1,
                max_draws=len(LADDER),
            )  # fmt: skip
            if not args.no_random:
                row["random"] = random_run(
                    npz, where / "random", budget, args, row["mcunas"]["wall_s"]
                )
                row["random"].pop("points", None)
            rows.append(row)
            print_row(task, name, row)
            (out / "results.json").write_text(json.dumps(rows, indent=1, default=str))
    print(f"\n(latency and SRAM: simulator estimates; all rows in {out / 'results.json'})")


if __name__ == "__main__":
    main()
