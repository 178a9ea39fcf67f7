"""Distributed search on this machine: a chief with one worker against a chief with two.

Each worker is pinned to its own core (sched_setaffinity) with one TensorFlow
thread of each kind, so two workers have twice the compute of one. Both runs
search the same trials: random search with one seed draws the same candidates
in the same order whatever finishes first. First it times one plain training
alone and two at once (each pinned, one thread): the most two workers can
gain on this machine. Prints wall time, speed-up,
trial counts, and whether any trial ran twice or the two runs' candidates differ.

scripts/bench distributed                       # 24 trials of 3 epochs, digits (about 10 min)
scripts/bench distributed --trials 12 --epochs 5
scripts/bench distributed --strategy supernet --supernet-epochs 6 --subnets 200 --trials 4

With ``--strategy supernet`` the supernet's training runs on one worker (its
epochs are one serial chain), then subnet screening and fine-tuning spread
over the workers; ``--trials`` is the number of subnets fine-tuned.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PHASES = ("build_s", "check_s", "train_s", "convert_s", "eval_s", "measure_s")


def free_port() -> int:
    """A TCP port nobody listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _pin(core: int):  # noqa: ANN202 - a preexec_fn
    def pin() -> None:
        os.sched_setaffinity(0, {core})

    return pin


_TRAIN = """
import time, numpy as np, keras
from sklearn.datasets import load_digits
x, y = load_digits(return_X_y=True)
x = np.tile(x.reshape(-1, 8, 8, 1).astype('float32') / 16, (1, 2, 2, 1))
L = keras.layers
m = keras.Sequential([keras.Input((16, 16, 1)), L.Conv2D(32, 3, activation='relu'),
    L.DepthwiseConv2D(3, activation='relu'), L.Conv2D(64, 1, activation='relu'),
    L.GlobalAveragePooling2D(), L.Dense(10)])
m.compile('adam', keras.losses.SparseCategoricalCrossentropy(from_logits=True))
m.fit(x, y, epochs=1, verbose=0)
t = time.perf_counter(); m.fit(x, y, epochs=6, batch_size=32, verbose=0)
print(time.perf_counter() - t)
"""


def ceiling(env: dict) -> tuple[float, float]:
    """Seconds of one single-thread training alone, and of the slower of two at once.

    Two workers can at best be (2 x alone / together) times one: what two
    trainings sharing this machine's memory and caches allow.
    """
    cores = sorted(os.sched_getaffinity(0))

    def trainings(n: int) -> list[float]:
        procs = [
            subprocess.Popen(
                [sys.executable, "-c", _TRAIN],
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                preexec_fn=_pin(cores[i % len(cores)]),
                text=True,
            )  # fmt: skip
            for i in range(n)
        ]
        return [float(p.communicate()[0].strip().splitlines()[-1]) for p in procs]

    return trainings(1)[0], max(trainings(2))


def _env() -> dict:
    return {
        **os.environ,
        "TF_NUM_INTRAOP_THREADS": "1",
        "TF_NUM_INTEROP_THREADS": "1",
        "OMP_NUM_THREADS": "1",
        "TF_CPP_MIN_LOG_LEVEL": "3",
    }


def run(workers: int, args: argparse.Namespace, out: Path) -> dict:
    """One distributed search with ``workers`` workers; its wall time and trial rows."""
    address = f"127.0.0.1:{free_port()}"
    env = _env()
    cmd = [sys.executable, "-m", "mcunas"]
    search = [
        *cmd, "search", "--board", "esp32s3", "--out", str(out), "--strategy", args.strategy,
        "--seed", "3", "--max-trials", str(args.trials), "--epochs", str(args.epochs),
        "--serve", address, "--json",
    ]  # fmt: skip
    if args.strategy == "supernet":
        search += ["--supernet-epochs", str(args.supernet_epochs), "--subnets", str(args.subnets)]
    else:
        search += ["--seed-arch", "none"]
    start, epoch = time.monotonic(), time.time()
    chief = subprocess.Popen(search, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    cores = sorted(os.sched_getaffinity(0))
    procs = [
        subprocess.Popen(
            [*cmd, "worker", "--connect", address, "--name", f"w{i}"],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            preexec_fn=_pin(cores[i % len(cores)]),
        )
        for i in range(workers)
    ]
    summary = json.loads(chief.communicate()[0])
    wall = time.monotonic() - start
    for p in procs:
        p.wait(timeout=120)
    with sqlite3.connect(out / "trials.sqlite") as db:
        rows = db.execute("SELECT trial_id, status, worker, hyperparameters FROM trials").fetchall()
        query = "SELECT worker, started_at, finished_at, worker_wall_s, trial_id FROM trials"
        times = [t for t in db.execute(query).fetchall() if t[1] and t[2]]
        phases = db.execute(f"SELECT trial_id, {', '.join(PHASES)} FROM trials").fetchall()
    busy: dict[str, float] = {}
    for worker, _, _, seconds, _ in times:
        busy[worker] = busy.get(worker, 0.0) + (seconds or 0.0)
    return {
        "wall_s": wall,
        "rows": rows,
        "best": summary.get("best") or {},
        "first_start_s": min(t[1] for t in times) - epoch,  # the processes' start-up
        "after_last_s": epoch + wall - max(t[2] for t in times),  # the tail's end to exit
        "busy_s": busy,
        "trial_s": {t[4]: t[3] for t in times if t[3]},
        "phase_s": {row[0]: dict(zip(PHASES, row[1:], strict=True)) for row in phases},
    }


def _phase_line(one: dict, two: dict, both: list[str]) -> str:
    """Each phase's share of the same trials' time with one worker, and its slowdown with two."""
    total = sum(one["trial_s"][t] for t in both) or 1e-9
    parts = []
    for phase in PHASES:
        a = sum(one["phase_s"][t][phase] or 0.0 for t in both)
        b = sum(two["phase_s"][t][phase] or 0.0 for t in both)
        if a > 0:
            parts.append(f"{phase[:-2]} {100 * a / total:.0f}% of it, {100 * (b / a - 1):+.0f}%")
    return "  by phase (share with one worker, change with two): " + "; ".join(parts)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--trials", type=int, default=24)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--strategy", choices=("random", "supernet"), default="random")
    parser.add_argument("--supernet-epochs", type=int, default=6)
    parser.add_argument("--subnets", type=int, default=200)
    args = parser.parse_args()
    alone, together = ceiling(_env())
    print(
        f"this machine: one single-thread training {alone:.1f} s alone, {together:.1f} s with "
        f"another beside it: two workers can at best be {2 * alone / together:.2f}x one"
    )
    with tempfile.TemporaryDirectory(prefix="mcunas-bench-dist-") as tmp:
        one = run(1, args, Path(tmp) / "one")
        two = run(2, args, Path(tmp) / "two")
    for name, r in (("1 worker ", one), ("2 workers", two)):
        by_worker = {}
        for _, _, worker, _ in r["rows"]:
            by_worker[worker] = by_worker.get(worker, 0) + 1
        print(
            f"chief + {name}: {r['wall_s']:6.1f} s wall, {len(r['rows'])} trials "
            f"({', '.join(f'{w}: {n}' for w, n in sorted(by_worker.items()))}), best INT8 "
            f"{100 * (r['best'].get('int8_accuracy') or 0):.1f}%"
        )
        print(
            f"  first trial started after {r['first_start_s']:.1f} s; exit {r['after_last_s']:.1f} "
            "s after the last finished; worker time in trials: "
            + ", ".join(f"{w} {b:.0f} s" for w, b in sorted(r["busy_s"].items()))
        )
    both = sorted(set(one["trial_s"]) & set(two["trial_s"]))
    slower = sum(two["trial_s"][t] for t in both) / max(sum(one["trial_s"][t] for t in both), 1e-9)
    print(
        f"the same {len(both)} trials took {100 * (slower - 1):+.1f}% in all on their worker "
        "with two workers running at once"
    )
    print(_phase_line(one, two, both))
    ids = [r[0] for r in two["rows"]]
    same = sorted(r[3] for r in one["rows"]) == sorted(r[3] for r in two["rows"])
    print(
        f"speed-up {one['wall_s'] / two['wall_s']:.2f}x (goal >= 1.8x); trial counts "
        f"{len(one['rows'])} and {len(two['rows'])}; a trial run twice: "
        f"{'yes' if len(ids) != len(set(ids)) else 'no'}; the same candidates: "
        f"{'yes' if same else 'no'}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
