"""The search against the reference family: test accuracy against estimated latency.

Per task:

- **(a) the reference grid** (run by :mod:`frontier_runs`, as (b)): the
  reference design of the input kind (kws-dscnn for every series, even the
  long one-channel ones ``--seed-arch auto`` seeds with series-s4, so the
  tables stay comparable; otherwise auto's: ic-resnet8 for small images) at
  every width multiplier of ``--widths`` and input resolution of
  ``--resolutions``, each one trial of ``mcunas search`` (same recipe and
  epochs as the searches; no re-scoring, as there is nothing to choose),
  trained once with the board's memory as the only limit and then costed on
  each budget's board. A grid point counts under a
  budget when it fits it; the others are drawn, hollow.
- **(b) the searches**, per budget: the evolution search (every family,
  ``--time-budget`` equal to the grid's total wall time) and the supernet
  search (``--supernet-epochs``, ``--subnets`` scored, ``--finetuned``
  subnets fine-tuned; it has no wall-time limit, so its wall time is printed beside
  the grid's). Every ``ok`` trial of a search (feasible by
  construction) is a point, scored on the test split with the TFLite Micro
  kernels. Both searches start from that reference design (``--seed-arch``
  set to it).
- **(c) the pairing** (:mod:`frontier_figures`): per reference point inside the
  budget, the best searched model at no higher latency and its accuracy
  difference; the fastest at no lower accuracy and the latency ratio; the
  hypervolume of each set in accuracy [0, 1] x latency [0, budget].
- **(d)** ``frontier.png``: one panel per task and budget.

Latency and SRAM are simulator estimates (no boards here).

    scripts/bench frontier [--tasks mnist5k,spokendigits,osuleaf,japanesevowels]
        [--budgets esp32s3,nano33ble,tight] [--widths 0.25,0.5,0.75,1]
        [--resolutions 1,2,4] [--epochs 30] [--supernet-epochs N] [--subnets N]
        [--finetuned 5]
        [--no-evolution] [--no-supernet] [--reuse] [--out runs/bench-frontier]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the bench package

from frontier_runs import (  # noqa: E402
    BUDGETS,
    GRID_BOARD,
    TASKS,
    costed,
    design_name,
    exported_on_front,
    frontier_reference,
    grid,
    grid_point,
    searched_models,
    searches,
    seed_design,
    stored_wall_s,
)

__all__ = [
    "BUDGETS",
    "GRID_BOARD",
    "TASKS",
    "compare",
    "costed",
    "design_name",
    "exported_on_front",
    "frontier_reference",
    "grid",
    "grid_point",
    "headline",
    "plot",
    "print_rows",
    "searched_models",
    "searches",
    "seed_design",
    "stored_wall_s",
]


def compare(grid_rows: list[dict], found: dict, budget: tuple) -> dict:
    """Pairing, summary and hypervolume of the grid (inside the budget) and each search.

    ``beyond``: the same pairing against the searched models that are not a
    grid design (what the search found past its seeds).
    """
    from frontier_figures import Model, hypervolume, pair, summary

    def models(rows: list[dict]) -> list[Model]:
        return [
            Model(r["name"], r["test"], r["latency_ms"], r.get("design"))
            for r in rows
            if r.get("test")
        ]

    ref = models([r for r in grid_rows if r["fits"]])
    out = {"reference": {"hypervolume": hypervolume(ref, budget[1]), "points": len(ref)}}
    for name, run in found.items():
        mine = models(run["models"])
        pairs = pair(ref, mine)
        beyond = [m for m in mine if m.design is None]
        out[name] = summary(pairs) | {
            "hypervolume": hypervolume(mine, budget[1]),
            "models": len(mine),
            "pairs": [
                [p.reference.name, p.reference.accuracy, p.reference.latency_ms,
                 p.accuracy_gain, p.speedup, _label(p.at_latency), _label(p.at_accuracy),
                 _label(p.same_design)]
                for p in pairs
            ],
            "beyond": summary(pair(ref, beyond)) | {"models": len(beyond)},
            "wall_s": run["wall_s"],
            "exported": run.get("test"),
            "on_front": run.get("on_front"),
        }  # fmt: skip
    return out


def _label(m) -> str | None:  # noqa: ANN001
    """A searched model in the table: its name, latency and test accuracy."""
    if m is None:
        return None
    return f"{m.design or m.name}, {m.latency_ms:.2f} ms, {100 * m.accuracy:.1f}%"


def _f(v: float | None, fmt: str) -> str:
    return "-" if v is None else format(v, fmt)


def headline(task: str, name: str, search: str, s: dict) -> str:
    """What the search found past the grid's own designs, against the grid: the first line.

    Only the searched models that are not a grid design count (a seed rung, or a
    child equal to a grid design, is the grid's own model): grid points they
    dominate, and their mean accuracy difference at no higher latency.
    """
    b = s["beyond"]
    past = None if b["mean_gain"] is None else 100 * b["mean_gain"]
    return (
        f"{task:16}{name:10}{search:11}beyond the grid's designs ({b['models']} models): "
        f"{b['dominated']} of {b['points']} grid points dominated, "
        f"mean diff. {_f(past, '+.1f')} pt"
    )


def print_rows(task: str, name: str, grid_wall: float, result: dict) -> None:
    """Per search the line of what it found beyond the grid's designs, then the details.

    The details count every searched model, its seed rungs (the grid's own
    designs) included: dominated points, mean gain, speed-up, hypervolumes.
    """
    searches = [(k, result[k]) for k in ("evolution", "supernet") if result.get(k) is not None]
    for search, s in searches:
        print(headline(task, name, search, s), flush=True)
    ref = result["reference"]
    print(f"{task:16}{name:10}{'reference':11}{ref['points']:>4} points{'':28}"
          f"HV {ref['hypervolume']:.3f}  wall {grid_wall:.0f} s")  # fmt: skip
    for search, s in searches:
        gain = None if s["mean_gain"] is None else 100 * s["mean_gain"]
        print(
            f"{task:16}{name:10}{search:11}{s['dominated']:>2}/{s['points']:<2} dominated"
            f" ({s['not_worse']} not worse) with the seeds  gain {_f(gain, '+.1f'):>5} pt"
            f"  x{_f(s['geomean_speedup'], '.2f'):>5}   HV {s['hypervolume']:.3f}"
            f"  wall {s['wall_s']:.0f} s",
            flush=True,
        )


def plot(panels: list[dict], path: Path) -> None:
    """``frontier.png``: per task and budget, the grid and each search's points and fronts."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from frontier_figures import Model, front
    from matplotlib.ticker import NullFormatter, ScalarFormatter

    cols = min(3, len(panels))
    rows = (len(panels) + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(5 * cols, 4 * rows), squeeze=False)
    styles = {"reference": ("tab:gray", "o"), "evolution": ("tab:blue", "s"),
              "supernet": ("tab:orange", "^")}  # fmt: skip
    for ax, panel in zip(axes.flat, panels, strict=False):
        for label, pts in panel["sets"].items():
            color, marker = styles[label]
            ok = [p for p in pts if p.get("fits", True) and p.get("test") is not None]
            out = [p for p in pts if not p.get("fits", True) and p.get("test") is not None]
            ax.scatter([p["latency_ms"] for p in ok], [100 * p["test"] for p in ok],
                       color=color, marker=marker, label=label, alpha=0.8)  # fmt: skip
            if out:
                ax.scatter([p["latency_ms"] for p in out], [100 * p["test"] for p in out],
                           facecolors="none", edgecolors=color, marker=marker)  # fmt: skip
            line = front([Model("", p["test"], p["latency_ms"]) for p in ok])
            ax.step([m.latency_ms for m in line], [100 * m.accuracy for m in line],
                    where="post", color=color, alpha=0.6)  # fmt: skip
        ax.axvline(panel["max_latency_ms"], color="k", linestyle=":", linewidth=1)
        ax.set_xscale("log")
        ax.xaxis.set_major_formatter(ScalarFormatter())
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.set_title(f"{panel['task']} / {panel['budget']}")
        ax.set_xlabel("latency, ms (simulator estimate, log)")
        ax.set_ylabel("test accuracy, % (INT8, TFLM)")
        ax.legend(fontsize=8)
    for ax in list(axes.flat)[len(panels) :]:
        ax.axis("off")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", default=",".join(TASKS))
    parser.add_argument("--budgets", default=",".join(BUDGETS))
    parser.add_argument("--widths", default="0.25,0.5,0.75,1")
    parser.add_argument("--resolutions", default="1,2,4")
    parser.add_argument("--epochs", type=int, default=30)
    parser.add_argument("--supernet-epochs", type=int, default=None)
    parser.add_argument("--subnets", type=int, default=None, help="subnets the supernet scores")
    parser.add_argument("--finetuned", type=int, default=5, help="subnets the supernet fine-tunes")
    parser.add_argument(
        "--search-finalists",
        type=int,
        default=0,
        help="finalists each search re-scores before its export (0: none; its points are "
        "the trials' own, scored on the test split either way)",
    )
    parser.add_argument("--no-evolution", action="store_true")
    parser.add_argument("--no-supernet", action="store_true")
    parser.add_argument(
        "--reuse",
        action="store_true",
        help="take grid points and searches already finished in --out (wall time from the store)",
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=Path("runs/bench-frontier"))
    return parser


def main() -> None:
    from bench_datasets import write

    args = _parser().parse_args()
    args.trials = 1  # mcunas_run's default; every call here sets max_trials itself
    unknown = set(args.budgets.split(",")) - set(BUDGETS)
    if unknown:
        raise SystemExit(f"unknown budget {sorted(unknown)}; choose from {', '.join(BUDGETS)}")
    from frontier_figures import markdown

    results, panels, tables = [], [], []
    for task in args.tasks.split(","):
        npz = write(task, args.out / "data")
        grid_rows = grid(task, npz, args)
        grid_wall = sum(r["wall_s"] for r in grid_rows)
        for name in args.budgets.split(","):
            budget = BUDGETS[name]
            ref = costed(grid_rows, budget[0], budget)
            found = searches(task, npz, name, grid_wall, args)
            result = compare(ref, found, budget)
            print_rows(task, name, grid_wall, result)
            tables.append(markdown(task, name, result, grid_wall))
            (args.out / "results.md").write_text("\n\n".join(tables) + "\n")
            sets = {"reference": ref} | {k: v["models"] for k, v in found.items()}
            panels.append({"task": task, "budget": name, "max_latency_ms": budget[1], "sets": sets})
            results.append({"task": task, "budget": name, "grid_wall_s": grid_wall,
                            "result": result, "sets": sets})  # fmt: skip
            (args.out / "results.json").write_text(json.dumps(results, indent=1, default=str))
            plot(panels, args.out / "frontier.png")
    print(f"\n(latency: simulator estimates; rows in {args.out / 'results.json'}, "
          f"plot {args.out / 'frontier.png'})")  # fmt: skip


if __name__ == "__main__":
    main()
