"""The supernet bench's rank check: inherited against stand-alone accuracy of random subnets.

One supernet trained on the task (at the width the search would choose for the
budget); random subnets inside the budgets, each scored with inherited weights,
fine-tuned as the search's finalists are, and trained from scratch over
``--rank-seeds`` seeds (cached in ``standalone.json``); :func:`rank` returns the
Kendall taus and seconds per subnet that :mod:`bench_supernet` prints and keeps.
"""

from __future__ import annotations

import argparse
import json
import random
import time
from pathlib import Path

import numpy as np
from bench_tasks import BUDGETS
from supernet_rank_figures import noise_ceiling, one_training_tau, proxy_taus, within_resolution

from mcunas.search.settings.config import SUPERNET_SCHEDULES


def _fits(worker, budgets):  # noqa: ANN001, ANN202
    """Whether a subnet passes the cost check against ``budgets`` (as the search checks)."""
    from mcunas.search.results.budgets import violations
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
    from mcunas.search.settings.config import default_finetune_epochs

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

    from mcunas.boards.catalog import load_board
    from mcunas.data.datasets import load_dataset
    from mcunas.search.results.budgets import Budgets
    from mcunas.search.training.recipe import plan_recipe
    from mcunas.search.trial.isolate import TflmWorker
    from mcunas.search.trial.runner import KerasRunner
    from mcunas.space import McuSearchSpace
    from mcunas.supernet.subnets import SubnetScorer

    board_name, latency, sram = chosen_budget(args)
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


def chosen_budget(args: argparse.Namespace) -> tuple:
    """(board, latency ms, SRAM KB): ``--budget``'s, with ``--max-latency-ms``/``--max-sram-kb``."""
    board, latency, sram = BUDGETS[args.budget]
    latency = latency if args.max_latency_ms is None else args.max_latency_ms
    return board, latency, sram if args.max_sram_kb is None else args.max_sram_kb
