"""Refit the chosen design on every training sample before export (small datasets).

A trial trains on the training split less its validation split, a fifth of
the data: on a small set that fifth is worth keeping. Once the choice is
made (and its finalists re-scored), :func:`refit_chosen` trains the chosen
design once more with the search's recipe and seed on the training and
validation samples together, for the whole ``--epochs`` cosine schedule (no
early stopping: nothing is held out to stop on; the recipe planned again for
the pooled samples, so about as many optimizer steps as a trial), converts it
to INT8 the same way, and keeps it as ``models/refit_<trial>.tflite``. ``best/`` then exports
it in place of the trial's model, and the test split scores it.

Its graph must be the trial's (the same ops on the same tensor shapes and
types, so the same arena, latency and flash within a few bytes): the trial's
latency, SRAM and flash figures stand for it, and a refit whose graph differs
is dropped with a note. Its accuracy estimate is the re-scoring's
cross-validated mean (each fold also trains on four fifths of all samples)
or, without re-scoring, the trial's own validation score, which the model
trained on fewer samples earned.

``--refit auto`` (the default) refits below
:data:`~mcunas.search.finish.finalists.KFOLD_BELOW` training samples, where the
validation split is small and its samples count; ``on`` always, ``off``
never. Each training (the refit, its members) goes through the trial
pipeline's retraining entry (:meth:`~mcunas.search.trial.pipeline.TrialPipeline.retrain`).
The refit is kept in the store as a
:class:`~mcunas.search.finish.refit_records.Refit` (meta key ``refit``): a ``--resume``
does not redo it while the choice stays the same. What refitting gains is
measured in docs/benchmarks/series.md.
"""

from __future__ import annotations

import dataclasses
import hashlib
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from mcunas.figures import Figures
from mcunas.files import plain_name, write_file
from mcunas.jsontext import JsonObject
from mcunas.search.finish.ensemble import (
    fitting_average,
    member_seed,
    planned_members,
    with_frontend_of,
)
from mcunas.search.finish.finalists import KFOLD_BELOW
from mcunas.search.finish.refit_check import refit_key, refit_of, same_graph, stored_refit
from mcunas.search.finish.refit_records import REFIT_META, Ensemble, Refit
from mcunas.search.finish.run_parts import FinishingRun, Parts
from mcunas.search.results.store import TrialRecord
from mcunas.search.results.summary import refit_text
from mcunas.search.settings.config import REFIT_CHOICES
from mcunas.search.settings.progress import Progress
from mcunas.search.trial.pipeline import TrialPipeline, training_seed
from mcunas.search.trial.retrain import Attempt, Retrained, Retraining, RetrainRunner

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

    from mcunas.data.datasets import Dataset
    from mcunas.search.training.recipe import Recipe

__all__ = [
    "REFIT_CHOICES",
    "REFIT_META",
    "refit_chosen",
    "refit_of",
    "refit_text",
    "refit_wanted",
    "same_graph",
    "stored_refit",
]


def refit_wanted(mode: str, samples: int) -> bool:
    """Whether ``--refit mode`` refits a search of ``samples`` training samples.

    ``samples`` counts the training split as re-scoring's plan does
    (:func:`~mcunas.search.finish.finalists.plan_for`): ``auto`` refits where it cross-validates.
    """
    if mode == "auto":
        return samples < KFOLD_BELOW
    return mode == "on"


def refit_chosen(
    run: FinishingRun,
    progress: Progress,
    place: Callable[[], Parts] | None = None,
    families: tuple[str, ...] | None = None,
) -> None:
    """Train the chosen trial's design on training + validation samples; keep it in the store.

    Nothing is done when ``--refit`` says no, no trial was chosen, or the stored
    refit is of the same trial, seed and epochs with its file intact. A refit
    that fails, or whose graph differs from the trial's, is noted (with why) and
    the trial's own model is exported.

    Args:
        run: FinishingRun, with its data loaded.
        progress: Progress, for its lines and the time budget.
        place: gives the (space, runner) to retrain with, when asked (the executor's
            place, :class:`~mcunas.search.finish.stage.FinishStage`); None: a runner is
            built for the refit (:meth:`FinishingRun.components`, no board) and closed.
        families: the space's families when a runner is built (the supernet's ``stages``).
    """
    from mcunas.search.finish.standing import chosen_trial

    cfg, store = run.config, run.store
    data = run.dataset
    if data is None or not refit_wanted(cfg.refit, len(data.y_train)):
        return
    best = chosen_trial(store, cfg)
    if best is None or refit_of(store, best, Path(run.out_dir), cfg) is not None:
        return
    if progress.time_up():
        progress.note("Chosen design not refitted: time budget reached (--resume refits it).")
        return
    if place is not None:
        _refit(run, progress, best, place())
        return
    space, runner, close = run.components(families, measure=False)
    try:
        _refit(run, progress, best, (space, runner))
    finally:
        close()


def _refit(run: FinishingRun, progress: Progress, best: TrialRecord, parts: Parts) -> None:
    """Train, convert, check and keep the refit of ``best`` (or note why not).

    With ``--ensemble`` members planned (:func:`~mcunas.search.finish.ensemble.planned_members`)
    each is trained from its own seed and their average is kept if it meets the budgets.
    """
    cfg = run.config
    space, runner = parts
    pipeline = TrialPipeline(
        runner,
        run.store,
        cfg.budgets,
        Path(run.out_dir) / "models",
        cfg.objectives,
        frontend=lambda cost: with_frontend_of(run, best, cost),
    )
    data = run.data_of(best).pooled()
    planned = planned_members(cfg.ensemble, best, cfg.budgets)
    began = time.perf_counter()
    recipe = _replanned(run, data)
    targets, teacher = (
        _teacher(run, progress, runner, data, recipe) if cfg.distill else (None, None)
    )
    progress.note(
        f"Refitting trial {best.trial_id}'s design on all {len(data.y_train)} training and "
        f"validation samples ({cfg.epochs} epochs, no early stopping"
        f"{f', taught by {teacher}' if teacher else ''}"
        f"{f'; {planned} members from {planned} seeds, averaged' if planned > 1 else ''}; "
        "--refit off skips it)."
    )
    job = Retraining(
        space, best.hyperparameters, data, training_seed(cfg.seed, best.hyperparameters),
        cfg.epochs, recipe=recipe, targets=targets, early_stop=False,
    )  # fmt: skip
    members = _members(pipeline, job, planned, progress, began)
    if isinstance(members, str):
        progress.note(f"Refit failed ({members}); trial {best.trial_id}'s model is exported.")
        return
    kept = _checked(run, progress, best, pipeline, members)
    if kept is None:
        return
    model_bytes, averaged = kept
    ensemble = None
    if planned > 1:
        ensemble = Ensemble(averaged[2], averaged[1]) if averaged else Ensemble(1)
    refit = Refit(
        **refit_key(best, cfg),
        **_kept(run, best, model_bytes),
        samples=len(data.y_train),
        steps=int(getattr(members[0].trained, "steps", 0) or 0),
        seconds=round(time.perf_counter() - began, 3),
        teacher=teacher,
        ensemble=ensemble,
    )
    run.store.set_meta(REFIT_META, refit.to_dict())
    progress.note(f"Refitted in {refit.seconds:.0f} s ({refit_text(refit.to_dict())}).")


def _members(
    pipeline: TrialPipeline, job: Retraining, planned: int, progress: Progress, began: float
) -> list[Retrained] | str:
    """The members trained (member 0 the refit itself), or why one failed.

    Each member has its own seed for its initial weights, sample order and
    augmentation (:func:`~mcunas.search.finish.ensemble.member_seed`), so members
    are independent trainings; none is converted yet.
    """
    members = []
    for k in range(planned):
        done = pipeline.retrain(
            dataclasses.replace(job, seed=member_seed(job.seed, k)), convert=False
        )
        if not done.ok:
            return str(done.error)
        members.append(done)
        if planned > 1:
            elapsed = time.perf_counter() - began
            progress.note(f"Member {k + 1} of {planned} trained ({elapsed:.0f} s so far).")
    return members


def _checked(
    run: FinishingRun,
    progress: Progress,
    best: TrialRecord,
    pipeline: TrialPipeline,
    members: list[Retrained],
) -> tuple[bytes, tuple[bytes, Figures, int] | None] | None:
    """The model to keep and the average it is (or None); None to export the trial's own.

    The refit (member 0) is converted and its graph compared with the trial's; with
    more members, the average that meets every budget replaces it
    (:func:`~mcunas.search.finish.ensemble.fitting_average`).
    """
    from mcunas.search.finish.export import trial_model_bytes

    refit = members[0]
    first = pipeline.assess(refit.runner, lambda: refit.model, evaluate=False, measure=False)
    model_bytes, check = first.model_bytes or b"", Attempt(stage="check")
    differs = None
    if first.ok:
        with check.guard():
            differs = same_graph(trial_model_bytes(best, Path(run.out_dir)), model_bytes)
    error = first.error or check.error
    if error is not None:
        progress.note(f"Refit failed ({error}); trial {best.trial_id}'s model is exported.")
        return None
    if differs is not None:
        progress.note(f"Refit dropped: {differs}; trial {best.trial_id}'s model is exported.")
        return None
    averaged = fitting_average(progress, pipeline, members) if len(members) > 1 else None
    return (model_bytes if averaged is None else averaged[0]), averaged


def _kept(run: FinishingRun, best: TrialRecord, model_bytes: bytes) -> JsonObject:
    """Write the refit's model; where it is and its hash."""
    path = Path("models") / f"refit_{plain_name(best.trial_id, 'trial id')}.tflite"
    write_file(Path(run.out_dir) / path, model_bytes, "refit model", inside=Path(run.out_dir))
    return {"model_path": str(path), "model_sha256": hashlib.sha256(model_bytes).hexdigest()}


def _teacher(
    run: FinishingRun, progress: Progress, runner: RetrainRunner, data: Dataset, recipe: Recipe
) -> tuple[NDArray[np.float32] | None, str | None]:
    """The teacher's soft targets for the refit and its name; (None, None) if it failed."""
    from mcunas.search.finish.distill import teacher_name, teacher_targets

    cfg = run.config
    name = teacher_name(data.kind, data.input_shape)
    progress.note(
        f"Training the refit's teacher: {name} at full size on {len(data.y_train)} samples "
        "(it never runs on the board)."
    )
    attempt = Attempt(stage="teacher")
    with attempt.guard():
        targets, name = teacher_targets(runner, data, recipe, cfg.seed, cfg.epochs)
    if attempt.error is not None:  # the refit trains on the labels alone
        progress.note(f"Teacher failed ({attempt.error}); the refit learns from the labels.")
        return None, None
    progress.note(f"Teacher trained in {time.perf_counter() - attempt.began:.0f} s.")
    return targets, name


def _replanned(run: FinishingRun, data: Dataset) -> Recipe:
    """The search's recipe planned again for the pooled samples.

    The passes per epoch are planned from the sample count, so a refit trains
    about as many optimizer steps as a trial (on 200 samples, not a quarter
    more than on a trial's 160); the batch size and class
    weights follow the same rules as the search's.
    """
    from mcunas.search.training.recipe import plan_recipe

    cfg = run.config
    return plan_recipe(data, cfg.batch_size, cfg.augment)
