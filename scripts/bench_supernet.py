"""Weight-sharing search: rank agreement, throughput and quality at equal wall time.

- **rank**: one supernet trained on the task (at the width the search would
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
import random
import sys
import time
from pathlib import Path

import numpy as np

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench_tasks import BUDGETS, mcunas_run, task_arrays  # noqa: E402
from supernet_rank_figures import (  # noqa: E402
    noise_ceiling,
    one_training_tau,
    proxy_taus,
    rank_line,
    within_resolution,
)

from mcunas.search.config import SUPERNET_SCHEDULES  # noqa: E402


def _fits(worker, budgets):  # noqa: ANN001, ANN202
    """Whether a subnet passes the cost check against ``budgets`` (as the search checks)."""
    from mcunas.search.budgets import violations
    from mcunas.supernet.costgraph import subnet_tflite

    return lambda spec, net: not violations(worker.profile(subnet_tflite(spec, net)), budgets)


def _plan(d, fits, seed: int):  # noqa: ANN001, ANN202
    """The supernet the search would train for these budgets (its width choice)."""
    from mcunas.supernet.spec import choose_width, plan_supernet

    width, tried = choose_width(
        d.input_shape, d.num_classes, lambda spec, nets: [fits(spec, n) for n in nets], seed
    )
    print(f"  supernet width x{width:g} ({tried})")
    return plan_supernet(d.input_shape, d.num_classes, width)


def _feasible_subnets(spec, fits, n: int, seed: int) -> list:  # noqa: ANN001
    from mcunas.supernet.spec import random_subnet

    rng, picks, seen = random.Random(seed), [], set()
    while len(picks) < n:
        net = random_subnet(spec, rng)
        if net not in seen:
            seen.add(net)
            if fits(spec, net):
                picks.append(net)
    return picks


def _test_accuracy(model, d) -> float:  # noqa: ANN001
    return _test_scores(model, d)[0]


def _test_scores(model, d) -> tuple[float, float]:  # noqa: ANN001
    """Test accuracy and mean cross-entropy of a softmax model."""
    probs = model.predict(d.x_test, batch_size=256, verbose=0).astype(np.float64)
    true = probs[np.arange(len(d.y_test)), d.y_test]
    accuracy = float(np.mean(np.argmax(probs, axis=-1) == d.y_test))
    return accuracy, float(-np.mean(np.log(true + 1e-12)))


def _finetuned(models, runner, d, args) -> tuple[list[float], int]:  # noqa: ANN001
    """Test accuracy of each extracted subnet fine-tuned as the search's last stage does,
    and the epochs (``--finetune-epochs``, else the search's default)."""
    from mcunas.search.config import default_finetune_epochs

    epochs, tuned = args.finetune_epochs or default_finetune_epochs(args.epochs), []
    for model in models:
        runner.train(model, epochs)
        tuned.append(_test_accuracy(model, d))
    return tuned, epochs


def _standalone(space, spec, net, runner, d, args, seed: int) -> float:  # noqa: ANN001
    """Test accuracy of ``net`` trained from scratch with one seed, the whole schedule.

    No early stopping: on a UCR set's 40-series validation split it stops anywhere
    between epoch 6 and 20, and that alone spread one subnet's accuracy by +/-5 points.
    """
    import keras

    from mcunas.supernet.spec import subnet_values

    keras.utils.set_random_seed(seed)
    model = space.build(space.hyperparameters(**subnet_values(spec, net)))
    model.optimizer.learning_rate.assign(0.003)  # a from-scratch rate, as the searches'
    runner.train(model, args.epochs, early_stop=False)
    return _test_accuracy(model, d)


class _Trainings:
    """Stand-alone test accuracies kept in a JSON file: they do not depend on the supernet,
    so a re-run (another supernet recipe, more seeds) trains only what is missing."""

    def __init__(self, path: Path, start_from: Path | None = None) -> None:
        self.path = path
        first = path if path.is_file() or start_from is None else start_from
        data = json.loads(first.read_text()) if first.is_file() else {}
        self.acc: dict[str, float] = data.get("accuracy", {})
        self.seconds: float = data.get("seconds_per_training", 0.0)
        self._start, self._new = time.monotonic(), 0

    def add(self, name: str, accuracy: float) -> None:
        """Record one training's accuracy and the mean seconds of this run's trainings."""
        self._new += 1
        self.acc[name] = accuracy
        self.seconds = (time.monotonic() - self._start) / self._new
        data = {"accuracy": self.acc, "seconds_per_training": self.seconds}
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.path.write_text(json.dumps(data, indent=1))


def _truth(nets, inherited, cache, space, spec, runner, d, args) -> list[list[float]]:  # noqa: ANN001
    """Each subnet's stand-alone test accuracies over ``--rank-seeds`` trainings (cached)."""
    runs_of, width = [], "" if spec.width == 1.0 else f" x{spec.width:g}"
    for i, net in enumerate(nets):
        runs = []
        for k in range(args.rank_seeds):
            seed = args.seed + 100 * k + i
            name = f"{net.key()}{width} epochs {args.epochs} full split {args.seed} seed {seed}"
            if name not in cache.acc:
                cache.add(name, _standalone(space, spec, net, runner, d, args, seed))
            runs.append(cache.acc[name])
        runs_of.append(runs)
        print(
            f"  {net.key()}: inherited {inherited[i]:.3f} stand-alone {np.mean(runs):.3f} "
            f"(+/-{np.std(runs):.3f} over {len(runs)} seeds)",
            flush=True,
        )
    return runs_of


def _supernet(spec, d, recipe, out: Path, args: argparse.Namespace) -> tuple:  # noqa: ANN001
    """The rank check's supernet, trained (or resumed) at ``--supernet-seed``, and that seed."""
    from mcunas.supernet.train import SupernetTrainer

    sn_seed = args.seed if args.supernet_seed is None else args.supernet_seed
    sn_out = out if sn_seed == args.seed else out / f"supernet-seed-{sn_seed}"
    if args.schedule != SUPERNET_SCHEDULES[0]:
        sn_out = out / f"supernet-{args.schedule}-seed-{sn_seed}"
    trainer = SupernetTrainer(
        spec, d, recipe, args.supernet_epochs, sn_out, sn_seed, schedule=args.schedule
    )
    trainer.load()
    trainer.train(lambda e, loss, s: print(f"  supernet {e}/{args.supernet_epochs} {s:.1f}s"))
    return trainer.model, sn_seed


def rank(task: str, npz: Path, out: Path, args: argparse.Namespace) -> dict:
    """Kendall tau of inherited vs stand-alone test accuracy on random feasible subnets."""
    from scipy.stats import kendalltau

    from mcunas.boards import load_board
    from mcunas.data import load_dataset
    from mcunas.search.budgets import Budgets
    from mcunas.search.candidate import KerasRunner
    from mcunas.search.isolate import TflmWorker
    from mcunas.search.recipe import plan_recipe
    from mcunas.space import McuSearchSpace
    from mcunas.supernet.subnets import SubnetScorer

    board_name, latency, sram = _budget(args)
    board, d = load_board(board_name), load_dataset(str(npz), seed=args.seed)
    recipe, worker = plan_recipe(d), TflmWorker(board)
    fits = _fits(worker, Budgets(latency, sram, None))
    spec = _plan(d, fits, args.seed)
    space = McuSearchSpace(d.input_shape, d.num_classes, ("stages",))
    runner = KerasRunner(space, d, board, worker, recipe=recipe, seed=args.seed)
    start = time.monotonic()
    model, sn_seed = _supernet(spec, d, recipe, out, args)
    supernet_s = time.monotonic() - start
    scorer = SubnetScorer(model, d, sn_seed)
    start = time.monotonic()  # what the search spends per subnet: cost checks and a score
    nets = _feasible_subnets(spec, fits, args.subnets, args.seed)
    scored = [scorer.score(n) for n in nets]
    inherited_s = (time.monotonic() - start) / len(nets)
    models = [scorer.extract(n, space) for n in nets]
    tests = [_test_scores(m, d) for m in models]
    inherited = [t[0] for t in tests]
    tuned, ft_epochs = _finetuned(models, runner, d, args)
    cache = _Trainings(out / "standalone.json", args.truth)
    runs = _truth(nets, inherited, cache, space, spec, runner, d, args)
    alone = [float(np.mean(r)) for r in runs]
    reliability, ceiling = noise_ceiling(runs)
    worker.close()
    tau = kendalltau(inherited, alone)
    return {
        "task": task,
        "tau": float(tau.statistic),
        "p": float(tau.pvalue),
        "subnets": len(nets),
        "seeds": args.rank_seeds,
        "alone_spread": float(np.mean([np.std(r) for r in runs])),
        "truth_reliability": reliability,
        "tau_ceiling": ceiling,
        "one_training_tau": one_training_tau(runs),
        **proxy_taus(nets, scored, tests, alone),
        "tau_finetuned": float(kendalltau(tuned, alone).statistic),
        "tau_within_resolution": within_resolution(nets, inherited, alone),
        "finetune_epochs": ft_epochs,
        "supernet_s": supernet_s,
        "inherited_s_per_subnet": inherited_s,
        "standalone_s_per_subnet": cache.seconds,
        "pairs": [
            [n.key(), t[0], b, t[1], v.accuracy, v.loss, f]
            for n, t, b, v, f in zip(nets, tests, alone, scored, tuned, strict=True)
        ],
    }


def _search_seconds(out: Path) -> tuple[int, float]:
    """Subnets scored and the seconds their checks and scores took, from the store."""
    from mcunas.search.store import TrialStore

    store = TrialStore.open(out)
    rows = [r for r in store.trials() if r.origin == "supernet"]
    store.close()
    scored = [r for r in rows if r.inherited_accuracy is not None]
    return len(scored), sum(r.check_s + (r.eval_s if r.train_s == 0 else 0) for r in rows)


def _best_subnet_test(out: Path, npz: Path, board_name: str, seed: int) -> float | None:
    """Test accuracy (INT8, TFLite Micro) of the subnet the search would choose among its
    fine-tuned subnets alone, the reference design's row left out."""
    from mcunas.boards import load_board
    from mcunas.data import load_dataset
    from mcunas.search.isolate import TflmWorker
    from mcunas.search.result import choose_best
    from mcunas.search.store import TrialStore

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
    budget = _budget(args)
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


def _budget(args: argparse.Namespace) -> tuple:
    """(board, latency ms, SRAM KB): ``--budget``'s, with ``--max-latency-ms``/``--max-sram-kb``."""
    board, latency, sram = BUDGETS[args.budget]
    latency = latency if args.max_latency_ms is None else args.max_latency_ms
    return board, latency, sram if args.max_sram_kb is None else args.max_sram_kb


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
        from mcunas.convert import import_tensorflow

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
