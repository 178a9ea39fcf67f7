"""Trials per CPU-hour and time to the exported model: the old training loop against today's.

Per task, the same search (same seed, trials, epochs, board) runs twice, one
after the other in one run of this script, each as its own ``mcunas search``
process:

- **before**: ``MCUNAS_PER_STEP_TRAINING=1`` (one optimizer step per call into
  TensorFlow, the training state built while the first step is traced,
  validation after every epoch) and ``--no-early-stop``: the old training;
- **after**: the defaults (an epoch per call, one trace, validation where it
  is looked at, hopeless candidates stopped on a rung).

For each it prints the wall and CPU time (the search process and its TFLM
worker), trained candidates per CPU-hour, the seconds from the start to the
exported trial's end, the exported model's INT8 accuracy on the test split
(the validation split where the data have none, as the built-in digits), and
the mean seconds per trained trial by stage (build, cost check, train,
convert, evaluate, measure). The finish (re-scoring, refit) is off: the bench
measures trials.

    scripts/bench datasets                       # runs/datasets/{mnist5k,spokendigits}.npz
    scripts/bench throughput [--tasks digits,mnist5k,spokendigits] [--trials 3]
                             [--epochs 12] [--board esp32s3] [--out runs/throughput]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

STAGES = ("build_s", "check_s", "train_s", "convert_s", "eval_s", "measure_s")
MODES = {
    "before": ({"MCUNAS_PER_STEP_TRAINING": "1"}, ["--no-early-stop"]),
    "after": ({"MCUNAS_PER_STEP_TRAINING": ""}, []),
}


def dataset_arg(task: str, data_dir: Path) -> list[str]:
    """The ``--dataset`` of a task (digits: the built-in one)."""
    if task == "digits":
        return []
    path = data_dir / f"{task}.npz"
    if not path.is_file():
        sys.exit(f"bench throughput: {path} is missing: run `scripts/bench datasets` first")
    return ["--dataset", str(path)]


def run_case(args: argparse.Namespace, task: str, mode: str) -> dict:
    """One search of ``task`` in ``mode``: its times, counts and exported accuracy."""
    env_extra, flags = MODES[mode]
    out = Path(args.out) / f"{task}-{mode}"
    cmd = [
        sys.executable, "-m", "mcunas", "search", "--board", args.board, "--out", str(out),
        "--max-trials", str(args.trials), "--epochs", str(args.epochs), "--seed", str(args.seed),
        "--no-rescore", "--refit", "off", "--ensemble", "off", "--json", "--overwrite",
        *dataset_arg(task, Path(args.data)), *flags,
    ]  # fmt: skip
    env = {**os.environ, **env_extra, "TF_CPP_MIN_LOG_LEVEL": "3"}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.time()
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    wall = time.time() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        sys.exit(f"bench throughput: {task} {mode} failed:\n{done.stderr[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    summary = json.loads(done.stdout[done.stdout.index("{") :])
    return {"task": task, "mode": mode, "wall_s": wall, "cpu_s": cpu, "start": start,
            **store_figures(out, summary)}  # fmt: skip


def store_figures(out: Path, summary: dict) -> dict:
    """Trained trials, mean stage seconds, the exported trial's end and accuracy."""
    with sqlite3.connect(out / "trials.sqlite") as db:
        cols = ", ".join(STAGES)
        rows = db.execute(f"SELECT {cols}, steps, steps_saved FROM trials WHERE train_s > 0")
        rows = rows.fetchall()
    trained = len(rows)
    stages = {s: sum(r[i] for r in rows) / max(1, trained) for i, s in enumerate(STAGES)}
    best = summary.get("best") or {}
    test = summary.get("test") or {}
    accuracy = test.get("int8_accuracy")
    return {
        "trained": trained,
        "stages": stages,
        "steps": sum(r[len(STAGES)] or 0 for r in rows),
        "steps_saved": sum(r[len(STAGES) + 1] or 0 for r in rows),
        "best_finished_at": best.get("finished_at"),
        "accuracy": accuracy if accuracy is not None else best.get("int8_accuracy"),
        "accuracy_split": "test" if accuracy is not None else "val",
    }


def line(case: dict) -> str:
    """One row of the table."""
    per_hour = case["trained"] / max(1e-9, case["cpu_s"]) * 3600
    to_best = (case["best_finished_at"] or case["start"]) - case["start"]
    stages = " ".join(f"{case['stages'][s]:5.1f}" for s in STAGES)
    acc = f"{100 * (case['accuracy'] or 0):5.1f}% {case['accuracy_split']}"
    return (
        f"{case['task']:<13} {case['mode']:<7} {case['trained']:>3} {case['wall_s']:7.0f} "
        f"{case['cpu_s']:7.0f} {per_hour:8.1f} {to_best:7.0f}  {acc}  {stages}  "
        f"{case['steps']:>6} {case['steps_saved']:>6}"
    )


HEADER = (
    f"{'task':<13} {'mode':<7} {'n':>3} {'wall s':>7} {'CPU s':>7} {'tr/CPU-h':>8} "
    f"{'to best':>7}  {'exported':<12}  build check train  conv  eval  meas   steps  saved"
)


def main() -> None:
    """Run every task before and after, print the table and the ratios."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", default="digits,mnist5k,spokendigits")
    parser.add_argument("--trials", type=int, default=3)
    parser.add_argument("--epochs", type=int, default=12)
    parser.add_argument("--board", default="esp32s3")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--data", default="runs/datasets")
    parser.add_argument("--out", default="runs/throughput")
    args = parser.parse_args()
    print(HEADER, flush=True)
    cases = []
    for task in args.tasks.split(","):
        pair = [run_case(args, task, mode) for mode in MODES]
        for case in pair:
            print(line(case), flush=True)
        cases.append(pair)
    print("\nratio after/before: trained candidates per CPU-hour, wall time")
    for old, new in cases:
        gain = (new["trained"] / new["cpu_s"]) / (old["trained"] / old["cpu_s"])
        wall = new["wall_s"] / old["wall_s"]
        print(f"{old['task']:<13} {gain:5.2f}x per CPU-hour, wall {wall:.2f}")
    Path(args.out).mkdir(parents=True, exist_ok=True)
    (Path(args.out) / "results.json").write_text(json.dumps(cases, indent=1))


if __name__ == "__main__":
    main()
