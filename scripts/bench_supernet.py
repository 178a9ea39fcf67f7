"""Weight-sharing search: rank agreement, throughput and quality at equal wall time.

- **rank** (:mod:`supernet_rank`): one supernet trained on the task (at the width the search would
  choose for the budget); N random subnets inside the budgets, each scored
  with inherited weights (BatchNorm recalibrated) and trained from scratch
  with the search's recipe for all of ``--epochs`` (no early stopping: the
  reference is the fully trained subnet, as Once-for-All's; the mean of
  ``--rank-seeds`` trainings: one training's noise is larger than the
  differences between subnets on easy tasks); Kendall's tau between the two
  test accuracies (float, the task's test split: never used by either).
  Also the seconds per subnet of each way; the noise ceiling, the tau that
  even a perfect predictor would score against means of so few seeds (from
  the seeds' own spread); and the yardstick, the tau of one stand-alone
  training per subnet (each seed against the others' mean): how well the
  per-trial search, which trains each candidate once, ranks them. The
  stand-alone accuracies are kept in ``<out>/<task>/rank/standalone.json``:
  a re-run with another supernet recipe (or ``--supernet-seed``) trains only
  the subnets and seeds not in it. Beside inherited test accuracy, two other
  scores' tau: inherited test cross-entropy (not quantised to whole test
  samples) and the key the search sorts by (validation accuracy, then loss);
  and the tau of each subnet extracted and fine-tuned as the search's
  finalists are (``--finetune-epochs``, 20% of ``--epochs``), test accuracy.
- **quality**: ``mcunas search --strategy supernet`` on the task and budget,
  then the per-trial evolution search given the same wall time; test
  accuracy of each ``best/`` (INT8, TFLite Micro kernels) and what it is (a
  subnet, the reference design both searches train first, or a searched
  candidate), the test accuracy of the best fine-tuned subnet alone, and
  subnets scored per hour of the subnet search against trials trained per hour.

Tasks and budgets as ``scripts/bench tasks`` (aeon's UCR/UEA sets, digits).
Latency and SRAM are simulator estimates; hours are wall time on this machine.

    scripts/bench supernet [--part rank|quality|all] [--tasks digits,gunpoint,basicmotions]
                           [--budget esp32s3] [--max-latency-ms MS] [--max-sram-kb KB]
                           [--subnets 12] [--epochs 30]
                           [--supernet-epochs 60] [--schedule sandwich|progressive]
                           [--deterministic]
                           [--out runs/bench-supernet]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

import numpy as np

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench_tasks import BUDGETS, mcunas_run, task_arrays  # noqa: E402
from supernet_rank import chosen_budget, rank  # noqa: E402
from supernet_rank_figures import rank_line  # noqa: E402

from mcunas.search.settings.config import SUPERNET_SCHEDULES  # noqa: E402


def _search_seconds(out: Path) -> tuple[int, float]:
    """Subnets scored and the seconds their checks and scores took, from the store."""
    from mcunas.search.results.store import TrialStore

    store = TrialStore.open(out)
    rows = [r for r in store.trials() if r.origin == "supernet"]
    store.close()
    scored = [r for r in rows if r.inherited_accuracy is not None]
    return len(scored), sum(r.check_s + (r.eval_s if r.train_s == 0 else 0) for r in rows)


def _best_subnet_test(out: Path, npz: Path, board_name: str, seed: int) -> float | None:
    """Test accuracy (INT8, TFLite Micro) of the subnet the search would choose among its
    fine-tuned subnets alone, the reference design's row left out."""
    from mcunas.boards.catalog import load_board
    from mcunas.data.datasets import load_dataset
    from mcunas.search.report.result import choose_best
    from mcunas.search.results.store import TrialStore
    from mcunas.search.trial.isolate import TflmWorker

    store = TrialStore.open(out)
    best = choose_best([r for r in store.trials() if r.origin == "supernet"])
    store.close()
    if best is None:
        return None
    d, worker = load_dataset(str(npz), seed=seed), TflmWorker(load_board(board_name))
    try:
        model = (out / (best.model_path or "")).read_bytes()
        return float(worker.int8_accuracy(model, d.x_test, d.y_test))
    finally:
        worker.close()


def quality(task: str, npz: Path, out: Path, args: argparse.Namespace) -> dict:
    """The supernet search, then the per-trial evolution search given its wall time."""
    budget = chosen_budget(args)
    sn = mcunas_run(
        npz, out / "supernet", budget, args, strategy="supernet",
        supernet_epochs=args.supernet_epochs, subnets=args.search_subnets,
        supernet_schedule=args.schedule,
    )  # fmt: skip
    scored, search_s = _search_seconds(out / "supernet")
    sn["subnet_test"] = _best_subnet_test(out / "supernet", npz, budget[0], args.seed)
    evo = mcunas_run(
        npz, out / "evolution", budget, args, strategy="evolution", max_trials=1000,
        time_budget_s=sn["wall_s"],
    )  # fmt: skip
    return {
        "task": task,
        "supernet": sn,
        "evolution": evo,
        "subnets_per_hour": 3600 * scored / max(search_s, 1e-9),
        "trials_per_hour": 3600 * evo["trained"] / evo["wall_s"],
    }


def _pct(v: float | None) -> str:
    return "-" if v is None else f"{100 * v:.1f}"


def _parser() -> argparse.ArgumentParser:
    """The bench's options (the rank check's own in :func:`_rank_options`)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--part", choices=("rank", "quality", "all"), default="all")
    parser.add_argument("--tasks", default="digits,gunpoint,basicmotions")
    parser.add_argument("--rank-tasks", default="digits")
    parser.add_argument("--budget", default="esp32s3", choices=sorted(BUDGETS))
    parser.add_argument(
        "--max-latency-ms", type=float, default=None,
        help="the latency budget instead of --budget's (e.g. a looser one, so the rank "
        "check's random subnets span every input resolution)",
    )  # fmt: skip
    parser.add_argument(
        "--max-sram-kb", type=float, default=None, help="the SRAM budget instead of --budget's"
    )
    parser.add_argument("--search-subnets", type=int, default=300)
    parser.add_argument("--epochs", type=int, default=30)
    parser.add_argument("--supernet-epochs", type=int, default=60)
    parser.add_argument("--trials", type=int, default=8, help="fine-tuned subnets")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--schedule",
        choices=SUPERNET_SCHEDULES,
        default=SUPERNET_SCHEDULES[0],
        help="the supernet's training schedule (rank and quality)",
    )
    parser.add_argument(
        "--deterministic", action="store_true",
        help="TensorFlow's op determinism: a re-run at the same seeds trains the same "
        "weights bit for bit (unpinned, two runs' weights differ in the last bits)",
    )  # fmt: skip
    parser.add_argument("--out", default="runs/bench-supernet")
    _rank_options(parser)
    return parser


def _rank_options(parser: argparse.ArgumentParser) -> None:
    """Options of the rank check alone."""
    parser.add_argument("--subnets", type=int, default=12, help="subnets in the rank check")
    parser.add_argument(
        "--rank-seeds", type=int, default=3, help="stand-alone trainings averaged per subnet"
    )
    parser.add_argument(
        "--truth", type=Path, default=None,
        help="stand-alone accuracies to start the rank check's cache from (a "
        "standalone.json of an earlier run, e.g. scripts/data/rank-osuleaf-esp32s3.json)",
    )  # fmt: skip
    parser.add_argument(
        "--finetune-epochs", type=int, default=None,
        help="the rank check's fine-tuning of each subnet (default: 20%% of --epochs)",
    )  # fmt: skip
    parser.add_argument(
        "--supernet-seed", type=int, default=None,
        help="the rank check's supernet seed (default --seed); the subnets and their "
        "stand-alone trainings stay those of --seed, so their cache is reused",
    )  # fmt: skip


def _quality_line(task: str, q: dict, budget: str) -> str:
    """The quality check's summary line."""
    sn, evo = q["supernet"], q["evolution"]
    return (
        f"QUALITY {task} {budget}: test supernet {_pct(sn.get('test'))} "
        f"(best subnet {_pct(sn.get('subnet_test'))}, chose {sn.get('origin')}) vs "
        f"evolution {_pct(evo.get('test'))} (chose {evo.get('origin')}) in "
        f"{sn['wall_s']:.0f} s; "
        f"{q['subnets_per_hour']:.0f} subnets/h vs {q['trials_per_hour']:.0f} trials/h "
        f"({q['subnets_per_hour'] / max(q['trials_per_hour'], 1e-9):.0f}x)"
    )


def main() -> None:
    """Run the parts asked for on each task; print a line per result, keep results.json."""
    args = _parser().parse_args()
    if args.deterministic:
        from mcunas.tflite.convert import import_tensorflow

        import_tensorflow().config.experimental.enable_op_determinism()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    results: dict = {"rank": [], "quality": []}
    tasks = args.rank_tasks if args.part == "rank" else args.tasks
    for task in dict.fromkeys(tasks.split(",") + args.rank_tasks.split(",")):
        npz = out / f"{task}.npz"
        np.savez(npz, **task_arrays(task))
        if args.part in ("rank", "all") and task in args.rank_tasks.split(","):
            r = rank(task, npz, out / task / "rank", args)
            results["rank"].append(r)
            print(rank_line(task, r), flush=True)
        if args.part in ("quality", "all") and task in args.tasks.split(","):
            q = quality(task, npz, out / task, args)
            results["quality"].append(q)
            print(_quality_line(task, q, args.budget), flush=True)
        (out / "results.json").write_text(json.dumps(results, indent=1, default=str))


if __name__ == "__main__":
    main()
