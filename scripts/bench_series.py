"""Long series under a small budget: designs that cut the time axis early, against MiniRocket.

Per task, each design of ``--designs`` is trained as a complete one-trial
``mcunas search`` (INT8 conversion, the budget check on the profile's
estimate, TFLite Micro kernels, the published test split), under each recipe
of ``--recipes`` (those of ``scripts/bench recipe``: ``long`` is the default
for small series sets). A design that misses the budget steps down in
width (x0.75, x0.5, x0.25 at its own input resolution; the DS-CNN down the
width / input-resolution ladder of ``--seed-arch``), so every row is inside
the budget. The designs are points of the stage space:

- ``kws-dscnn``: the MLPerf Tiny DS-CNN, what ``--seed-arch auto`` starts from;
- ``dil``: input /4, a 7-step stem of 24 with stride 2, three
  depthwise-separable blocks (5, 5 and 3 steps, the first and last dilated
  by 2, the second strided), global average + max pooling;
- ``dil-avg``: ``dil`` without dilation and with the average-pooling head
  only (what the space could express before); ``dil-only`` and ``avgmax``
  add one of the two back, ``d4`` dilates by 4;
- ``hires``: input /2, three dilated blocks, two of them strided;
- ``res``: input /4, two ResNet basic blocks;
- ``wide``: input /4, a 10-step stem of 32 with stride 4 (a quarter of the
  steps left), two 48-wide and one 64-wide separable blocks dilated by 2,
  average + max pooling: fewer steps, more channels;
- ``stem4``: no input pooling, a 10-step stem of 16 with stride 4 (learned
  downsampling from every step), ds24 k5 s2, ds32 k5, ds48 k3 s2;
- ``p2s4``: input /2, the same stride-4 stem 24 wide, then ``dil-avg``'s blocks;
- variants of ``stem4`` (same stem of 16 with stride 4 unless said): ``s4k7``
  (block kernels 7, 7, 7), ``s4k7s`` (a 7-step stem, kernels 7, 7, 5),
  ``s4k7w`` (as ``s4k7s`` with a last block of 64), ``s4s8`` (ds32 k5 s2,
  ds48 k5 s2, ds64 k3: both strides early, wider), ``s4e`` (as ``s4s8``
  with a 7-step stem and kernels 7, 7, 5), ``s4b4t`` (a 7-step stem and a
  fourth block, ds64 k3 s2), ``s4two`` (two blocks: ds32 k7 s2, ds64 k5 s2);
  ``s4x2`` and ``s4x3``: stem4 two and three times as wide (43 and 79 ms on
  the Nano 33 BLE: with ``--max-latency-ms 100``, what a looser budget buys).

MiniRocket (aeon) on the same split is the target. One seed per row: on these
sets a test series is 0.4-0.6 points. ``--refits auto,off`` trains each row
both ways: refitted on training + validation samples after the trial (the
search's default on these sets), and the trial's own model.

    scripts/bench series [--tasks osuleaf,arrowhead] [--designs dil,wide] [--recipes long]
                         [--refits auto,off] [--budget nano33ble] [--max-latency-ms MS]
                         [--epochs 30]
                         [--out runs/bench-series]
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


def _stages(*spec: tuple[str, int, int, int, int]) -> dict:
    """Stage values from (block, width, kernel, stride, dilation) per stage, one repeat each."""
    values: dict = {"st_stages": len(spec)}
    for i, (block, width, kernel, stride, dilation) in enumerate(spec):
        values |= {
            f"st_block_{i}": block,
            f"st_width_{i}": width,
            f"st_repeats_{i}": 1,
            f"st_kernel_{i}": kernel,
            f"st_stride_{i}": stride,
            f"st_dilation_{i}": dilation,
        }
    return values


def _design(res: int, stem: tuple[int, int, int], head: str, *spec: tuple) -> dict:
    width, kernel, stride = stem
    return {
        "family": "stages",
        "activation": "relu",
        "st_resolution": res,
        "st_width_mult": 1.0,
        "st_stem_width": width,
        "st_stem_kh": kernel,
        "st_stem_kw": 1,
        "st_stem_stride": stride,
        "st_head": head,
        **_stages(*spec),
    }


DESIGNS = {
    "dil": _design(4, (24, 7, 2), "avgmax", ("ds", 32, 5, 1, 2), ("ds", 32, 5, 2, 1),
                   ("ds", 48, 3, 1, 2)),
    "dil-avg": _design(4, (24, 7, 2), "avg", ("ds", 32, 5, 1, 1), ("ds", 32, 5, 2, 1),
                       ("ds", 48, 3, 1, 1)),
    "dil-only": _design(4, (24, 7, 2), "avg", ("ds", 32, 5, 1, 2), ("ds", 32, 5, 2, 1),
                        ("ds", 48, 3, 1, 2)),
    "avgmax": _design(4, (24, 7, 2), "avgmax", ("ds", 32, 5, 1, 1), ("ds", 32, 5, 2, 1),
                      ("ds", 48, 3, 1, 1)),
    "stem4": _design(1, (16, 10, 4), "avg", ("ds", 24, 5, 2, 1), ("ds", 32, 5, 1, 1),
                     ("ds", 48, 3, 2, 1)),
    "p2s4": _design(2, (24, 10, 4), "avg", ("ds", 32, 5, 1, 1), ("ds", 32, 5, 2, 1),
                    ("ds", 48, 3, 1, 1)),
    "d4": _design(4, (24, 7, 2), "avgmax", ("ds", 32, 5, 1, 4), ("ds", 32, 5, 2, 1),
                  ("ds", 48, 3, 1, 4)),
    "hires": _design(2, (16, 7, 2), "avgmax", ("ds", 24, 5, 2, 2), ("ds", 32, 5, 1, 2),
                     ("ds", 48, 3, 2, 1)),
    "res": _design(4, (16, 7, 2), "avgmax", ("res", 16, 5, 1, 2), ("res", 24, 3, 2, 1)),
    "wide": _design(4, (32, 10, 4), "avgmax", ("ds", 48, 5, 1, 2), ("ds", 48, 5, 1, 2),
                    ("ds", 64, 3, 1, 2)),
    "s4k7": _design(1, (16, 10, 4), "avg", ("ds", 24, 7, 2, 1), ("ds", 32, 7, 1, 1),
                    ("ds", 48, 7, 2, 1)),
    "s4k7s": _design(1, (16, 7, 4), "avg", ("ds", 24, 7, 2, 1), ("ds", 32, 7, 1, 1),
                     ("ds", 48, 5, 2, 1)),
    "s4k7w": _design(1, (16, 7, 4), "avg", ("ds", 24, 7, 2, 1), ("ds", 32, 7, 1, 1),
                     ("ds", 64, 5, 2, 1)),
    "s4s8": _design(1, (16, 10, 4), "avg", ("ds", 32, 5, 2, 1), ("ds", 48, 5, 2, 1),
                    ("ds", 64, 3, 1, 1)),
    "s4e": _design(1, (16, 7, 4), "avg", ("ds", 32, 7, 2, 1), ("ds", 48, 7, 2, 1),
                   ("ds", 64, 5, 1, 1)),
    "s4b4t": _design(1, (16, 7, 4), "avg", ("ds", 24, 5, 2, 1), ("ds", 32, 5, 1, 1),
                     ("ds", 48, 3, 2, 1), ("ds", 64, 3, 2, 1)),
    "s4two": _design(1, (16, 10, 4), "avg", ("ds", 32, 7, 2, 1), ("ds", 64, 5, 2, 1)),
    "s4x2": _design(1, (32, 10, 4), "avg", ("ds", 48, 5, 2, 1), ("ds", 64, 5, 1, 1),
                    ("ds", 96, 3, 2, 1)),
    "s4x3": _design(1, (48, 10, 4), "avg", ("ds", 72, 5, 2, 1), ("ds", 96, 5, 1, 1),
                    ("ds", 144, 3, 2, 1)),
}  # fmt: skip
# two of them with the ppv head
DESIGNS["stem4p"] = DESIGNS["stem4"] | {"st_head": "ppv"}
DESIGNS["dil-avg-p"] = DESIGNS["dil-avg"] | {"st_head": "ppv"}


RECIPES = ("long", "long-aug", "long-mix", "long-wd", "longer", "longer-wd")
WEIGHT_DECAY = 0.05


def recipe_settings(name: str, factor: int) -> dict:
    """A recipe of ``scripts/bench recipe`` by name, or ``long-wd``, ``longer``, ``longer-wd``.

    ``-wd``: AdamW's weight decay :data:`WEIGHT_DECAY`; ``longer``: twice long's steps.
    """
    from bench_recipe import variant_settings

    if name not in RECIPES:
        raise SystemExit(f"unknown recipe {name!r}; choose from {', '.join(RECIPES)}")
    base = name.removesuffix("-wd").replace("longer", "long")
    settings = variant_settings(base, factor * (2 if name.startswith("longer") else 1))
    return settings | {"wd": WEIGHT_DECAY if name.endswith("-wd") else 0.0}


def register(name: str, shape: tuple[int, ...], classes: int) -> None:
    """Make ``name`` a ``--seed-arch`` for this process (the bench's designs are not shipped)."""
    from mcunas.space import reference

    if name in reference.REFERENCES:
        return
    values = DESIGNS[name]
    reference.REFERENCES[name] = reference.Reference(
        name, shape, classes, values, "", f"series design {name}"
    )


@contextmanager
def own_resolution(design: str) -> Iterator[None]:
    """A bench design keeps its own input resolution while it steps down: only the width does."""
    from mcunas.space import reference

    saved = reference.LADDER
    if design in DESIGNS:
        res = DESIGNS[design]["st_resolution"]
        reference.LADDER = tuple((res, m) for m in (1.0, 0.75, 0.5, 0.25))
    try:
        yield
    finally:
        reference.LADDER = saved


def run_design(
    npz: Path,
    out: Path,
    design: str,
    budget: tuple,
    settings: dict,
    args: argparse.Namespace,
    refit: str = "auto",
) -> dict:
    """One trial of ``design`` under the recipe ``settings`` (see ``scripts/bench recipe``).

    ``refit``: the search's ``--refit`` (``auto`` refits these small sets on every sample).
    """
    from bench_training import one_trial, recipe_applied

    from mcunas.data.datasets import load_dataset
    from mcunas.space import reference

    if design != "kws-dscnn":
        data = load_dataset(str(npz))
        register(design, data.input_shape, data.num_classes)
    with own_resolution(design), recipe_applied(settings):
        draws = len(reference.LADDER)
        return one_trial(npz, out, budget, args, seed_arch=design, max_draws=draws, refit=refit)


def main() -> None:
    import bench_training as bt
    from bench_tasks import BUDGETS

    parser = bt.training_parser(__doc__.splitlines()[0], "osuleaf,arrowhead", "runs/bench-series")
    parser.add_argument("--designs", default="kws-dscnn,dil,dil-avg,wide")
    parser.add_argument("--recipes", default="long")
    parser.add_argument(
        "--refits", default="auto", help="--refit of each row: auto (refitted), off, or both"
    )
    parser.add_argument(
        "--max-latency-ms",
        type=float,
        default=None,
        help="the latency budget instead of --budget's (what a looser one buys)",
    )
    args = parser.parse_args()
    sram = bt.Column("SRAM KB", 8, lambda r: f"{r.get('sram_kb') or 0:.1f}")
    columns = [bt.label("task", 15), bt.label("design", 10), bt.label("recipe", 9)]
    columns += [bt.label("refit", 6)]
    columns += [bt.accuracy_column(7), bt.minirocket_column(7), bt.STEPS, bt.LATENCY, sram]
    columns += [bt.TRAIN_S]
    cases = [
        bt.Case(
            {"design": design, "recipe": name, "refit": refit},
            recipe_settings(name, args.steps_factor),
        )
        for design in args.designs.split(",")
        for name in args.recipes.split(",")
        for refit in args.refits.split(",")
    ]
    board, latency_ms, sram_kb = BUDGETS[args.budget]
    budget = (board, args.max_latency_ms or latency_ms, sram_kb)

    def run_case(npz: Path, where: Path, case: bt.Case) -> dict:
        labels = case.labels
        return run_design(
            npz, where, labels["design"], budget, case.settings, args, labels["refit"]
        )

    bt.train_table(args, columns, cases, run_case)


if __name__ == "__main__":
    main()
