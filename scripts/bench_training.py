"""Training tables: designs under recipes, each a one-trial search, against MiniRocket.

The shared part of ``scripts/bench recipe`` and ``scripts/bench series``: per
task, every case (a design under a recipe) is trained as a complete one-trial
``mcunas search`` (INT8 conversion, the budget check, TFLite Micro kernels, the
published test split) with the recipe's knobs of :mod:`mcunas.search.training.recipe`
set for that run only, and printed as one row of a fixed-width table beside
MiniRocket's test accuracy on the same split. Every row so far is kept in
``<out>/results.json``.

Example (inside a bench script)::

    columns = [label("task", 15), accuracy_column(8), minirocket_column(8), STEPS]
    cases = [Case({"design": "dil"}, settings)]
    train_table(args, columns, cases, lambda npz, where, case: one_trial(...))
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@contextmanager
def steps_applied(least: int, small: int | None = None) -> Iterator[None]:
    """Every set (small series sets too) trains at least ``least`` steps an epoch, in the block.

    ``small``: the small series sets' steps instead (default: ``least``).
    """
    from mcunas.search.training import recipe

    saved = recipe.MIN_STEPS_PER_EPOCH, recipe.SMALL_SERIES_STEPS_PER_EPOCH
    recipe.MIN_STEPS_PER_EPOCH = least
    recipe.SMALL_SERIES_STEPS_PER_EPOCH = least if small is None else small
    try:
        yield
    finally:
        recipe.MIN_STEPS_PER_EPOCH, recipe.SMALL_SERIES_STEPS_PER_EPOCH = saved


@contextmanager
def recipe_applied(settings: dict) -> Iterator[None]:
    """The recipe ``settings`` (a bench recipe's knobs) in force in the block, restored after.

    ``min_steps``, ``ops`` (series augmentation) and ``mixup`` are set; ``wd``
    (AdamW's weight decay for series) only where the settings give it.
    """
    from mcunas.search.training import recipe

    saved = recipe.SERIES_OPS, recipe.MIXUP_ALPHA, recipe.SERIES_WEIGHT_DECAY
    recipe.SERIES_OPS, recipe.MIXUP_ALPHA = settings["ops"], settings["mixup"]
    if "wd" in settings:
        recipe.SERIES_WEIGHT_DECAY = settings["wd"]
    try:
        with steps_applied(settings["min_steps"]):
            yield
    finally:
        recipe.SERIES_OPS, recipe.MIXUP_ALPHA, recipe.SERIES_WEIGHT_DECAY = saved


def one_trial(npz: Path, out: Path, limits: tuple, args: argparse.Namespace, **search: Any) -> dict:
    """One trained trial of the stage space: a random search of one trial, no finalists.

    ``search``: further search settings, at least ``seed_arch`` (the design trained)
    and ``max_draws`` (how far its ladder may step down to fit ``limits``). The
    design is exported alone (``ensemble`` "off"): a row is one network's accuracy.
    """
    from bench_tasks import mcunas_run

    stages = {
        "families": ("stages",),
        "strategy": "random",
        "max_trials": 1,
        "finalists": 0,
        "ensemble": "off",  # a row is one network
    }
    return mcunas_run(npz, out, limits, args, **(stages | search))


def planned_steps(npz: Path, settings: dict, epochs: int) -> int:
    """Optimizer steps of the full schedule under the recipe (before early stopping)."""
    from mcunas.data.datasets import load_dataset
    from mcunas.search.training import recipe

    with steps_applied(settings["min_steps"]):
        return recipe.plan_recipe(load_dataset(str(npz))).steps_per_epoch * epochs


def training_parser(description: str, tasks: str, out: str) -> argparse.ArgumentParser:
    """The options every training table takes (tasks, budget, epochs, steps, seed, out)."""
    from bench_tasks import BUDGETS

    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--tasks", default=tasks)
    parser.add_argument("--budget", default="nano33ble", choices=sorted(BUDGETS))
    parser.add_argument("--epochs", type=int, default=30)
    parser.add_argument("--steps-factor", type=int, default=4)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--trials", type=int, default=1)
    parser.add_argument("--out", default=out)
    return parser


@dataclass(frozen=True)
class Column:
    """One column of a training table: its title, width and the text of a row's cell."""

    title: str
    width: int
    cell: Callable[[dict], str]
    left: bool = False

    def text(self, value: str) -> str:
        """``value`` padded to the column's width."""
        return f"{value:{'<' if self.left else '>'}{self.width}}"


def label(key: str, width: int) -> Column:
    """A left-aligned column of the row's ``key`` (task, design, recipe, ...)."""
    return Column(key, width, lambda r: str(r[key]), left=True)


def accuracy_column(width: int) -> Column:
    """INT8 test accuracy of the trained model, % ("-" when no model was kept)."""
    return Column(
        "test", width, lambda r: "-" if r.get("test") is None else f"{100 * r['test']:.1f}"
    )


def minirocket_column(width: int) -> Column:
    """MiniRocket's test accuracy on the same split, %."""
    return Column("MiniR.", width, lambda r: f"{100 * r['minirocket']:.1f}")


STEPS = Column("steps", 7, lambda r: str(r["planned_steps"]))
LATENCY = Column("ms", 7, lambda r: f"{r.get('latency_ms') or 0:.1f}")
TRAIN_S = Column("train s", 8, lambda r: f"{r['wall_s']:.0f}")


def table_line(columns: Sequence[Column], row: dict | None = None) -> str:
    """The header (no ``row``) or one row, then the model's description."""
    if row is None:
        return "".join(c.text(c.title) for c in columns) + "  model"
    cells = "".join(c.text(c.cell(row)) for c in columns)
    return f"{cells}  {row.get('description', '-')}"


@dataclass(frozen=True)
class Case:
    """One row to train per task: its labels (they name its folder) and recipe settings."""

    labels: dict[str, str]
    settings: dict


def train_table(
    args: argparse.Namespace,
    columns: Sequence[Column],
    cases: Sequence[Case],
    run_case: Callable[[Path, Path, Case], dict],
) -> list[dict]:
    """Train every case on every task of ``--tasks``, printing and saving each row as it ends.

    ``run_case(npz, folder, case)`` trains one case on a task's ``.npz`` in ``folder``
    (``<out>/<task>-<labels...>``) and returns its row (see ``bench_tasks.mcunas_run``).
    """
    from bench_datasets import task_arrays, write
    from bench_tasks import minirocket

    out, rows = Path(args.out), []
    print(table_line(columns))
    for task in args.tasks.split(","):
        npz = write(task, out)
        mini = minirocket(task_arrays(task), args.seed)
        for case in cases:
            start = time.monotonic()
            row = run_case(npz, out / "-".join((task, *case.labels.values())), case)
            row |= {"task": task, **case.labels, "minirocket": mini["test"]}
            row |= {"budget": args.budget, "epochs": args.epochs}
            row["planned_steps"] = planned_steps(npz, case.settings, args.epochs)
            row["bench_s"] = time.monotonic() - start
            rows.append(row)
            print(table_line(columns, row), flush=True)
            (out / "results.json").write_text(json.dumps(rows, indent=1, default=str))
    return rows
