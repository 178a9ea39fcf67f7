"""Re-score the search's finalists before export, so the choice does not hang on a few samples.

One step of the run's finish (:class:`~mcunas.search.finish.stage.FinishStage`,
:func:`rescore_here`, :func:`rescore_finalists`): the top
``--finalists`` trials (3 by default: the search's choice, then the highest
validation scores within the split's noise of the top, the ``--seed-arch``
design's largest fitting rung among them unless clearly worse,
:func:`~mcunas.search.finish.finalists.pick_finalists`; 0 or ``--no-rescore`` turns it
off) are re-trained with the search's own recipe, through the trial
pipeline's retraining entry (:meth:`~mcunas.search.trial.pipeline.TrialPipeline.retrain`:
the same build, training, INT8 conversion and INT8 accuracy with the TFLite
Micro kernels as every trial), and scored again:

- under :data:`~mcunas.search.finish.finalists.KFOLD_BELOW` training samples, by
  stratified k-fold cross-validation (k=5) over the training and validation
  samples together (the test split is never touched);
- from there on, over 3 training seeds on the search's own split.

Runs go round-robin (every finalist's first fold, then the second...), each
written to the store as it finishes, so ``--resume`` does not redo one and a
time budget that runs out leaves every finalist with as many runs as the
others. :func:`mcunas.search.finish.finalists.rescored_choice` then chooses among
the means.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from mcunas.search.finish.finalists import pick_finalists, plan_for
from mcunas.search.finish.records import RESCORE_META, Plan, Rescore, RescoreRun
from mcunas.search.finish.run_parts import FinishingRun, Parts
from mcunas.search.finish.skip import RESCORE_SKIP_META, rescore_skip
from mcunas.search.results.store import TrialRecord, TrialStore
from mcunas.search.settings.config import SearchConfig
from mcunas.search.settings.progress import Progress
from mcunas.search.trial.pipeline import CandidateRunner, TrialPipeline, training_seed
from mcunas.search.trial.retrain import Retraining, trial_hyperparameters

if TYPE_CHECKING:
    from mcunas.data.datasets import Dataset
    from mcunas.space.hypermodel import McuSearchSpace

__all__ = [
    "fold_splits",
    "rescore_finalists",
    "rescore_here",
    "splits_by_trial",
    "trial_hyperparameters",
]

SEED_STRIDE = 1000  # the seeds plan's run i trains with the design's seed + 1000 * (i + 1)
# Re-scoring starts no new run after this share of the search's own wall time, once
# every finalist has MIN_ROUNDS runs (a mean and a standard error). 3 finalists x 5 folds
# cost about as much again as a 15-trial search: capped, scripts/demo should stay under
# 10 minutes on 2 cores (an estimate). The remaining runs are done by a --resume.
TIME_SHARE = 0.25
MIN_ROUNDS = 2


def rescore_finalists(
    config: SearchConfig,
    store: TrialStore,
    space: McuSearchSpace,
    runner: CandidateRunner,
    dataset: Dataset,
    progress: Progress,
    pipeline: TrialPipeline | None = None,
) -> None:
    """Re-train and re-score the top finalists; the runs go into the store.

    Args:
        config: SearchConfig, ``finalists`` (0: off), ``objectives``, ``seed``, ``epochs``.
        store: TrialStore, the search's trials; runs are kept in its ``rescore`` meta.
        space: the search space the trials' hyperparameters belong to.
        runner: the search's candidate runner; ``runner.for_data(data, seed)`` gives one
            that trains on another split (:meth:`mcunas.search.trial.runner.KerasRunner.for_data`).
        dataset: Dataset, the search's data.
        progress: Progress, for one line per run and the time budget.
        pipeline: the trial pipeline over ``runner`` that retrains each finalist
            (default: one on ``store`` and ``config``'s budgets).
    """
    finalists = _finalists(config, store, dataset)
    if len(finalists) < 2 or not hasattr(runner, "for_data"):
        return
    if progress.time_up():
        progress.note("Finalists not re-scored: time budget reached (--resume re-scores them).")
        return
    plan = plan_for(len(dataset.y_train))
    if pipeline is None:
        models = Path(store.path).parent / "models"
        pipeline = TrialPipeline(runner, store, config.budgets, models, config.objectives)
    state = _state(store, plan, config.seed, finalists)
    splits = splits_by_trial(space, dataset, plan, config.seed)
    start = time.perf_counter()
    allowed = TIME_SHARE * store.checkpoint_wall()
    progress.note(
        f"Re-scoring {len(finalists)} finalists ({', '.join(r.trial_id for r in finalists)}) "
        f"by {plan.describe()}, each retrained with the search's recipe (at most "
        f"{allowed:.0f} s after {MIN_ROUNDS} rounds)."
    )
    for run in range(plan.runs):
        for rec in finalists:
            if state.done(rec.trial_id, run):
                continue
            if progress.time_up() or (run >= MIN_ROUNDS and _since(start) > allowed):
                why = (
                    "the time budget"
                    if progress.time_up()
                    else f"its share, {TIME_SHARE:.0%} of the search's time ({allowed:.0f} s)"
                )
                progress.note(f"Re-scoring stopped at {why}; --resume runs the rest.")
                return
            data = splits(rec)[run]
            state = _one_run(config, store, state, (space, pipeline), rec, data, run, progress)
    progress.note(f"Re-scoring done in {_since(start):.0f} s.")


def rescore_here(
    run: FinishingRun,
    progress: Progress,
    families: tuple[str, ...] | None = None,
    place: Callable[[], Parts] | None = None,
) -> None:
    """Re-score ``run``'s finalists in this process, with the runner ``place`` gives.

    The search space, the recipe, the plan and the stored runs are the
    search's (:func:`rescore_finalists`); nothing is built when there are fewer
    than two finalists, ``--finalists`` is 0 or the time budget is spent.
    Without ``place`` a runner is built here with no board connected
    (re-scoring scores with the TFLite Micro kernels on the host; it measures
    nothing), as for the searches whose trials were not trained by a runner
    here: the supernet search (each finalist's architecture trained from
    scratch) and a distributed chief (its workers trained the trials).

    Args:
        run: SearchRun, with its data loaded.
        progress: Progress, for the lines and the time budget.
        families: the space's families (the supernet's: ``("stages",)``).
        place: gives the (space, runner) to retrain with, when asked (the executor's
            place, :class:`~mcunas.search.finish.stage.FinishStage`).
    """
    cfg, data = run.config, run.dataset
    assert data is not None, "the run's data are loaded before it finishes"
    finalists = _finalists(cfg, run.store, data)
    if len(finalists) < 2 or _skipped(cfg, run.store, data, finalists, progress):
        return
    if progress.time_up():
        progress.note("Finalists not re-scored: time budget reached (--resume re-scores them).")
        return
    if place is not None:
        space, runner = place()
        rescore_finalists(cfg, run.store, space, runner, data, progress)
        return
    space, runner, close = run.components(families, measure=False)
    try:
        rescore_finalists(cfg, run.store, space, runner, data, progress)
    finally:
        close()


def splits_by_trial(
    space: McuSearchSpace, dataset: Dataset, plan: Plan, seed: int
) -> Callable[[TrialRecord], list[Dataset]]:
    """Each finalist's runs' data: the search's, or its own front end's when that is searched.

    Every front end's dataset holds the same samples in the same order, so the folds
    are the same samples whichever features they carry.
    """
    from mcunas.search.frontends.space import FrontendSpace

    if not isinstance(space, FrontendSpace):  # one front end (or none): the search's data
        same = fold_splits(dataset, plan, seed)
        return lambda rec: same
    made: dict[str, list[Dataset]] = {}

    def splits(rec: TrialRecord) -> list[Dataset]:
        key = space.frontend_key(rec.hyperparameters)
        if key not in made:
            made[key] = fold_splits(space.trial_dataset(rec.hyperparameters), plan, seed)
        return made[key]

    return splits


def _skipped(
    config: SearchConfig,
    store: TrialStore,
    dataset: Dataset,
    finalists: list[TrialRecord],
    progress: Progress,
) -> bool:
    """True when re-scoring cannot change the choice (:mod:`.skip`); the decision is stored.

    Never with ``--always-rescore``, nor when runs of these finalists are stored already.
    """
    state = Rescore.from_dict(store.get_meta(RESCORE_META))
    ran = state is not None and any(state.rescored(r.trial_id) for r in finalists)
    skip = None if config.always_rescore or ran else rescore_skip(finalists, len(dataset.y_val))
    store.set_meta(RESCORE_SKIP_META, {} if skip is None else skip.to_dict())
    if skip is not None:
        progress.note(skip.text + " (--always-rescore re-scores them.)")
    return skip is not None


def _since(start: float) -> float:
    return time.perf_counter() - start


def _one_run(
    config: SearchConfig,
    store: TrialStore,
    state: Rescore,
    parts: tuple[McuSearchSpace, TrialPipeline],
    rec: TrialRecord,
    data: Dataset,
    run: int,
    progress: Progress,
) -> Rescore:
    """Retrain and score one finalist on one split; the state with it (or its failure) kept."""
    space, pipeline = parts
    plan = state.plan
    seed = training_seed(config.seed, rec.hyperparameters)
    if plan.method == "seeds":
        seed += SEED_STRIDE * (run + 1)
    what = f"trial {rec.trial_id}, {'fold' if plan.method == 'kfold' else 'seed'} {run + 1}"
    done = pipeline.retrain(Retraining(space, rec.hyperparameters, data, seed, config.epochs))
    if not done.ok:  # a finalist that fails here keeps out of the choice
        state = state.with_failure(rec.trial_id, f"{what}: {done.error}")
        store.set_meta(RESCORE_META, state.to_dict())
        progress.note(f"Re-scoring {what}/{plan.runs} failed: {done.error}; it leaves the tie.")
        return state
    scores = done.evaluated
    loss = None if scores.loss is None else float(scores.loss)
    result = RescoreRun(float(scores.accuracy), loss, round(done.seconds, 3), len(data.y_val))
    state = state.with_run(rec.trial_id, run, result)
    store.set_meta(RESCORE_META, state.to_dict())
    progress.note(
        f"Re-scored {what}/{plan.runs}: INT8 {100 * scores.accuracy:.1f}% on "
        f"{len(data.y_val)} samples ({done.seconds:.0f} s)"
    )
    return state


def _finalists(config: SearchConfig, store: TrialStore, dataset: Dataset) -> list[TrialRecord]:
    """The finalists to re-score; with fewer than two, runs stored for others are dropped.

    The choice then goes without them (:func:`~mcunas.search.finish.finalists.rescored_choice`).
    """
    finalists = pick_finalists(
        store.trials(), config.objectives, config.finalists, len(dataset.y_val)
    )
    if len(finalists) < 2 and (store.get_meta(RESCORE_META) or {}).get("finalists"):
        store.set_meta(RESCORE_META, {})
    return finalists


def _state(store: TrialStore, plan: Plan, seed: int, finalists: list[TrialRecord]) -> Rescore:
    """The stored runs when they were made the same way (method, runs, seed), else a fresh start."""
    stored = Rescore.from_dict(store.get_meta(RESCORE_META))
    state = Rescore.fresh(stored, plan, seed, tuple(r.trial_id for r in finalists))
    store.set_meta(RESCORE_META, state.to_dict())
    return state


def fold_splits(dataset: Dataset, plan: Plan, seed: int) -> list[Dataset]:
    """The dataset of each run: k stratified folds of training + validation, or the split as is.

    Fold ``i`` validates on every k-th sample of each class (in a seeded order) and
    trains on the rest; the test split stays as it is.
    """
    if plan.method != "kfold":
        return [dataset] * plan.runs
    every = dataset.pooled()
    x, y = every.x_train, every.y_train
    rng = np.random.default_rng(seed)
    fold = np.empty(len(y), dtype=np.int64)
    for label in np.unique(y):
        members = rng.permutation(np.flatnonzero(y == label))
        fold[members] = (np.arange(len(members)) + int(label)) % plan.runs
    return [
        dataclasses.replace(
            dataset,
            x_train=x[fold != i],
            y_train=y[fold != i],
            x_val=x[fold == i],
            y_val=y[fold == i],
        )
        for i in range(plan.runs)
    ]
