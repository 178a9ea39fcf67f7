"""Where the gap to MiniRocket comes from: capacity under the budget, or training.

Per task, one architecture is trained under several recipes, each a
complete one-trial ``mcunas search`` (the same pipeline as any trial: INT8
conversion, TFLite Micro kernels, test split):

- the architecture is the reference design's largest variant inside the
  budget (``--seed-arch kws-dscnn``, stepped down as a search's seed is):
  what the search starts from and often keeps;
- ``capacity``: the full reference design with the budget lifted (board
  memory only), under the longest recipe with augmentation: if it closes the
  gap and the budgeted one does not, the gap is capacity.

Variants (``--variants``):

- ``default``: :data:`mcunas.search.recipe.MIN_STEPS_PER_EPOCH` (30) optimizer
  steps an epoch at least, the recipe of every set before small series sets
  were given more;
- ``long``: ``--steps-factor`` times those steps per epoch (same epochs, the
  cosine schedule stretched over all of them; 4x is now the default for
  series sets under 500 training samples);
- ``long-aug``: long, and window slicing and time warping added to the series
  augmentation;
- ``long-mix``: long-aug, and mixup (alpha 0.2);
- ``capacity``: long-aug on the full reference design, budget lifted.

MiniRocket (aeon) on the same split is the target. Test accuracy is INT8 on
TFLite Micro's kernels, one seed: differences of one or two test series are
within run-to-run noise on sets this small.

    scripts/bench recipe [--tasks osuleaf,japanesevowels,arrowhead] [--budget nano33ble]
                         [--epochs 30] [--steps-factor 4] [--variants ...] [--out runs/bench-recipe]
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

VARIANTS = ("default", "long", "long-aug", "long-mix", "capacity")
LONG_OPS = ("shift", "jitter", "noise", "slice", "warp")
MIXUP = 0.2


def variant_settings(name: str, factor: int) -> dict:
    """The recipe knobs of a variant: steps per epoch, series operations, mixup, budget lifted."""
    from mcunas.search import augment, recipe

    base = {
        "min_steps": recipe.MIN_STEPS_PER_EPOCH,
        "ops": augment.DEFAULT_SERIES_OPS,
        "mixup": 0.0,
        "lifted": False,
    }
    if name == "default":
        return base
    long = base | {"min_steps": base["min_steps"] * factor}
    if name == "long":
        return long
    aug = long | {"ops": LONG_OPS}
    if name in ("long-aug", "capacity"):
        return aug | {"lifted": name == "capacity"}
    if name == "long-mix":
        return aug | {"mixup": MIXUP}
    raise SystemExit(f"unknown variant {name!r}; choose from {', '.join(VARIANTS)}")


def _steps_saved() -> tuple[int, int]:
    from mcunas.search import recipe

    return recipe.MIN_STEPS_PER_EPOCH, recipe.SMALL_SERIES_STEPS_PER_EPOCH


def _set_steps(least: int, small: int | None = None) -> None:
    """Every set (small series sets too) trains at least ``least`` steps an epoch."""
    from mcunas.search import recipe

    recipe.MIN_STEPS_PER_EPOCH = least
    recipe.SMALL_SERIES_STEPS_PER_EPOCH = least if small is None else small


def run_variant(npz: Path, out: Path, budget: tuple, settings: dict, args) -> dict:  # noqa: ANN001
    """One trial of the reference design under the variant's recipe."""
    from bench_tasks import mcunas_run

    from mcunas.search import recipe
    from mcunas.space.reference import LADDER

    saved = _steps_saved()
    saved_aug = (recipe.SERIES_OPS, recipe.MIXUP_ALPHA)
    _set_steps(settings["min_steps"])
    recipe.SERIES_OPS, recipe.MIXUP_ALPHA = settings["ops"], settings["mixup"]
    ref = {"seed_arch": "kws-dscnn", "families": ("stages",), "strategy": "random"}
    limits = (budget[0], None, None) if settings["lifted"] else budget
    draws = 1 if settings["lifted"] else len(LADDER)
    try:
        return mcunas_run(npz, out, limits, args, **ref, max_trials=1, max_draws=draws, finalists=0)
    finally:
        _set_steps(*saved)
        recipe.SERIES_OPS, recipe.MIXUP_ALPHA = saved_aug


def planned_steps(npz: Path, settings: dict, epochs: int) -> int:
    """Optimizer steps of the full schedule under the variant (before early stopping)."""
    from mcunas.data import load_dataset
    from mcunas.search import recipe

    saved = _steps_saved()
    _set_steps(settings["min_steps"])
    try:
        return recipe.plan_recipe(load_dataset(str(npz))).steps_per_epoch * epochs
    finally:
        _set_steps(*saved)


def main() -> None:
    from bench_datasets import task_arrays, write
    from bench_tasks import BUDGETS, minirocket

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", default="osuleaf,japanesevowels,arrowhead")
    parser.add_argument("--budget", default="nano33ble", choices=sorted(BUDGETS))
    parser.add_argument("--epochs", type=int, default=30)
    parser.add_argument("--steps-factor", type=int, default=4)
    parser.add_argument("--variants", default=",".join(VARIANTS))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--trials", type=int, default=1)
    parser.add_argument("--out", default="runs/bench-recipe")
    args = parser.parse_args()
    out, rows = Path(args.out), []
    print(f"{'task':15}{'variant':10}{'test':>8}{'MiniR.':>8}{'steps':>7}{'epochs':>7}"
          f"{'ms':>7}{'train s':>8}  model")  # fmt: skip
    for task in args.tasks.split(","):
        npz = write(task, out)
        mini = minirocket(task_arrays(task), args.seed)
        for name in args.variants.split(","):
            settings = variant_settings(name, args.steps_factor)
            start = time.monotonic()
            row = run_variant(npz, out / f"{task}-{name}", BUDGETS[args.budget], settings, args)
            row |= {"task": task, "variant": name, "minirocket": mini["test"]}
            row |= {"planned_steps": planned_steps(npz, settings, args.epochs)}
            row["bench_s"] = time.monotonic() - start
            rows.append(row)
            test = "-" if row.get("test") is None else f"{100 * row['test']:.1f}"
            print(
                f"{task:15}{name:10}{test:>8}{100 * mini['test']:>8.1f}"
                f"{row['planned_steps']:>7}{args.epochs:>7}{row.get('latency_ms') or 0:>7.1f}"
                f"{row['wall_s']:>8.0f}  {row.get('description', '-')}",
                flush=True,
            )
            (out / "results.json").write_text(json.dumps(rows, indent=1, default=str))


if __name__ == "__main__":
    main()
