"""The frontier bench's runs: the reference grid trained and costed, the searches run.

:mod:`bench_frontier` pairs, prints and plots what these return. Each grid point
is a one-trial ``mcunas search`` with the seed rung set to one width and
resolution of the reference design; each search is ``mcunas search`` under one
budget (``bench_tasks.mcunas_run``). Test accuracies are the INT8 models' on the
test split with the TFLite Micro kernels; latency and SRAM are simulator estimates.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

TASKS = ("mnist5k", "spokendigits", "osuleaf", "japanesevowels")
# (board, max latency ms, max peak SRAM KB); "tight": a quarter of the Nano's latency budget.
BUDGETS = {
    "esp32s3": ("esp32s3", 10.0, 128.0),
    "nano33ble": ("nano33ble", 20.0, 96.0),
    "tight": ("nano33ble", 5.0, 64.0),
}
GRID_BOARD = "esp32s3"  # the grid trains under this board's memory only, then is re-costed


def grid_point(npz: Path, out: Path, ref: str, res: int, width: float, args) -> dict:  # noqa: ANN001
    """One reference-grid model trained as a one-trial search: its row and model path."""
    from bench_tasks import mcunas_run

    from mcunas.space import rungs as seeds
    from mcunas.space.reference import reference_hyperparameters

    saved = seeds.reference_rungs
    seeds.reference_rungs = lambda name, shape: [
        reference_hyperparameters(name, shape) | {"st_resolution": res, "st_width_mult": width}
    ]
    try:
        if args.reuse and (out / "best" / "model.tflite").exists():
            models = searched_models(out, npz, GRID_BOARD)
            row = {"test": models[0]["test"] if models else None, "wall_s": stored_wall_s(out)}
        else:
            row = mcunas_run(
                npz, out, (GRID_BOARD, None, None), args, seed_arch=ref, families=("stages",),
                strategy="random", max_trials=1, max_draws=1, finalists=0,
            )  # fmt: skip
    finally:
        seeds.reference_rungs = saved
    row |= {"name": f"ref x{width:g} /{res}", "width": width, "resolution": res}
    row["design"] = design_name(res, width)
    row["model"] = str(out / "best" / "model.tflite")
    return row


def design_name(resolution: int, width: float) -> str:
    """The grid's name of the reference design at ``resolution`` and ``width``: "x0.5 /2"."""
    return f"x{width:g} /{resolution}"


def seed_design(rec) -> str | None:  # noqa: ANN001
    """The grid design a search trial drew (a seed rung or a child equal to one), or None."""
    if str(getattr(rec.origin, "value", rec.origin)) != "seed":
        return None
    hp = rec.hyperparameters
    return design_name(int(hp.get("st_resolution", 1)), float(hp.get("st_width_mult", 1.0)))


def frontier_reference(d) -> str:  # noqa: ANN001
    """The reference family of dataset ``d``: auto's, but the DS-CNN for every series.

    ``--seed-arch auto`` seeds long one-channel series with series-s4; the frontier
    compares against the DS-CNN there as before, so its tables stay comparable.
    """
    from mcunas.space.reference import auto_reference

    return "kws-dscnn" if d.kind == "series" else auto_reference(d.kind, d.input_shape)


def grid(task: str, npz: Path, args) -> list[dict]:  # noqa: ANN001
    """Every grid point of ``task`` (resolutions the input cannot take are left out)."""
    from mcunas.data.datasets import load_dataset
    from mcunas.space.stages import MIN_SIDE_TO_SHRINK

    d = load_dataset(str(npz))
    ref = frontier_reference(d)
    can_shrink = max(d.input_shape[:2]) >= MIN_SIDE_TO_SHRINK
    rows = []
    for res in (int(r) for r in args.resolutions.split(",")):
        if res > 1 and not can_shrink:
            continue
        for width in (float(w) for w in args.widths.split(",")):
            where = args.out / task / f"grid-w{width:g}-r{res}"
            rows.append(grid_point(npz, where, ref, res, width, args))
    return rows


def stored_wall_s(out: Path) -> float:
    """Seconds from the first trial's start to the last one's end in the store at ``out``."""
    from mcunas.search.results.store import TrialStore

    store = TrialStore.open(out)
    rows = [r for r in store.trials() if r.started_at and r.finished_at]
    store.close()
    return max(r.finished_at for r in rows) - min(r.started_at for r in rows) if rows else 0.0


def _run_or_reuse(npz: Path, out: Path, budget: tuple, args, **settings) -> dict:  # noqa: ANN001
    """A search (``mcunas_run``), or with ``--reuse`` the one already in ``out``."""
    from bench_tasks import mcunas_run

    if args.reuse and (out / "best").exists():
        return {"wall_s": stored_wall_s(out), "test": None, "reused": True}
    return mcunas_run(npz, out, budget, args, **settings)


def searched_models(out: Path, npz: Path, board: str) -> list[dict]:
    """Every ``ok`` trial of the search in ``out``: test accuracy (INT8, TFLM) and latency."""
    from mcunas.boards.catalog import load_board
    from mcunas.data.datasets import load_dataset
    from mcunas.search.results.store import TrialStatus, TrialStore
    from mcunas.search.trial.isolate import TflmWorker

    store = TrialStore.open(out)
    rows = [r for r in store.trials() if r.status == TrialStatus.OK and r.model_path]
    store.close()
    d, worker = load_dataset(str(npz)), TflmWorker(load_board(board))
    try:
        return [
            {
                "name": f"{out.name} {r.trial_id}",
                "test": float(
                    worker.int8_accuracy((out / r.model_path).read_bytes(), d.x_test, d.y_test)
                ),
                "latency_ms": r.latency_ms,
                "sram_kb": (r.peak_sram_bytes or 0) / 1024,
                "origin": str(getattr(r.origin, "value", r.origin) or "search"),
                "description": r.description,
                "design": seed_design(r),
            }  # fmt: skip
            for r in rows
        ]
    finally:
        worker.close()


def exported_on_front(out: Path) -> bool | None:
    """Whether the search's exported model is on its own front (validation accuracy, ms, SRAM).

    None when nothing was exported. No other ``ok`` trial may be as good on
    every default objective and better on one: another re-scored finalist at
    its re-scored mean, any other trial on the validation split.
    """
    from bench.rescore_check import rescored_stand_ins
    from mcunas.search.results.pareto import dominates, record_point
    from mcunas.search.results.store import TrialStatus, TrialStore

    best = out / "best" / "best.json"
    if not best.exists():
        return None
    chosen = json.loads(best.read_text())["trial"]["trial_id"]
    store = TrialStore.open(out)
    try:
        records = [r for r in store.trials() if r.status == TrialStatus.OK]
        rescored = rescored_stand_ins(records, store.get_meta("rescore"))
    finally:
        store.close()
    mine = next((r for r in records if r.trial_id == chosen), None)
    if mine is None:
        return False

    def judged(r: Any) -> bool:  # a finalist against the chosen finalist at their means
        return r.trial_id in rescored and chosen in rescored

    return not any(
        dominates(record_point(rescored[r.trial_id]), record_point(rescored[chosen]))
        if judged(r)
        else dominates(record_point(r), record_point(mine))
        for r in records
        if r.trial_id != chosen
    )


def costed(points: list[dict], board: str, budget: tuple) -> list[dict]:
    """The grid's models costed on ``board``: latency, SRAM and whether they fit ``budget``."""
    from mcunas.boards.catalog import load_board
    from mcunas.search.trial.isolate import TflmWorker

    worker, out = TflmWorker(load_board(board)), []
    try:
        for p in points:
            if p.get("test") is None or not Path(p["model"]).exists():
                continue
            f = worker.profile(Path(p["model"]).read_bytes())
            sram = (f.peak_sram_bytes or 0) / 1024
            fits = f.fits and f.latency_ms <= budget[1] and sram <= budget[2]
            out.append(p | {"latency_ms": f.latency_ms, "sram_kb": sram, "fits": bool(fits)})
    finally:
        worker.close()
    return out


def searches(task: str, npz: Path, name: str, wall_s: float, args) -> dict:  # noqa: ANN001
    """The evolution and supernet searches under budget ``name``: their models and wall times."""
    from mcunas.data.datasets import load_dataset

    budget, where, found = BUDGETS[name], args.out / task / name, {}
    ref = frontier_reference(load_dataset(str(npz)))
    if not args.no_evolution:
        run = _run_or_reuse(npz, where / "evolution", budget, args, strategy="evolution",
                            seed_arch=ref, max_trials=1000, time_budget_s=wall_s,
                            finalists=args.search_finalists)  # fmt: skip
        found["evolution"] = run | {
            "models": searched_models(where / "evolution", npz, budget[0]),
            "on_front": exported_on_front(where / "evolution"),
        }
    if not args.no_supernet:
        extra = {} if args.supernet_epochs is None else {"supernet_epochs": args.supernet_epochs}
        extra |= {} if args.subnets is None else {"subnets": args.subnets}
        run = _run_or_reuse(npz, where / "supernet", budget, args, strategy="supernet",
                            seed_arch=ref, max_trials=args.finetuned, **extra)  # fmt: skip
        found["supernet"] = run | {
            "models": searched_models(where / "supernet", npz, budget[0]),
            "on_front": exported_on_front(where / "supernet"),
        }
    return found
