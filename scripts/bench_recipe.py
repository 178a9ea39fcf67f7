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

- ``default``: :data:`mcunas.search.training.recipe.MIN_STEPS_PER_EPOCH` (30) optimizer
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

import os
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

VARIANTS = ("default", "long", "long-aug", "long-mix", "capacity")
LONG_OPS = ("shift", "jitter", "noise", "slice", "warp")
MIXUP = 0.2


def variant_settings(name: str, factor: int) -> dict:
    """The recipe knobs of a variant: steps per epoch, series operations, mixup, budget lifted."""
    from mcunas.search.training import augment, recipe

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


def run_variant(npz: Path, out: Path, budget: tuple, settings: dict, args) -> dict:  # noqa: ANN001
    """One trial of the reference design under the variant's recipe."""
    from bench_training import one_trial, recipe_applied

    from mcunas.space.reference import LADDER

    limits = (budget[0], None, None) if settings["lifted"] else budget
    draws = 1 if settings["lifted"] else len(LADDER)
    with recipe_applied(settings):
        return one_trial(npz, out, limits, args, seed_arch="kws-dscnn", max_draws=draws)


def main() -> None:
    import bench_training as bt
    from bench_tasks import BUDGETS

    parser = bt.training_parser(
        __doc__.splitlines()[0], "osuleaf,japanesevowels,arrowhead", "runs/bench-recipe"
    )
    parser.add_argument("--variants", default=",".join(VARIANTS))
    args = parser.parse_args()
    epochs = bt.Column("epochs", 7, lambda r: str(r["epochs"]))
    columns = [bt.label("task", 15), bt.label("variant", 10), bt.accuracy_column(8)]
    columns += [bt.minirocket_column(8), bt.STEPS, epochs, bt.LATENCY, bt.TRAIN_S]
    cases = [
        bt.Case({"variant": name}, variant_settings(name, args.steps_factor))
        for name in args.variants.split(",")
    ]
    budget = BUDGETS[args.budget]
    bt.train_table(
        args,
        columns,
        cases,
        lambda npz, where, case: run_variant(npz, where, budget, case.settings, args),
    )


if __name__ == "__main__":
    main()
