"""Spend the latency budget a small chosen design leaves: average several refits of it.

On a small training set one training's luck moves test accuracy by several
points: refits of one design that differ only in their seed score apart on the
same test split. Averaging the softmax outputs of
independently initialised networks removes much of that spread, which is why
deep time-series classifiers are ensembled (Ismail Fawaz et al., "Deep neural
network ensembles for time series classification", 2019; InceptionTime
averages five networks). On a microcontroller an average of K networks costs
K times one network's latency, so it is a way to spend a budget, not a free
gain: ``--ensemble auto`` (the default) spends it only where the search
refits its choice (small training sets, :mod:`mcunas.search.finish.refit`) and the
user gave a latency budget, with as many members (up to :data:`MAX_MEMBERS`)
as that budget, and an energy budget if given, hold at the chosen trial's
figures. ``--ensemble N`` asks for N members, ``off`` for the design alone.

The members are the refit (member 0, its seed unchanged) and refits from
further seeds, each with its own initial weights, sample order and
augmentation. :func:`average` puts them side by side on one input, adds their
outputs and scales the sum by 1/K (ADD and MUL, which TFLite Micro runs in
INT8); the graph is converted and measured like any trial (board or simulator)
and must meet every budget, else it is rebuilt with one member fewer. Nothing
held out can score the average (every member trained on every sample), so the
accuracy estimate stays the chosen design's; the test split scores it.
What it gained is measured in docs/benchmarks/series.md.

Example::

    planned_members("auto", best, Budgets(max_latency_ms=20))   # 4 for a 4.6 ms design
"""

from __future__ import annotations

import functools
import math
from typing import TYPE_CHECKING

from mcunas.figures import Figures
from mcunas.search.results.budgets import Budgets
from mcunas.search.results.store import TrialRecord
from mcunas.search.settings.config import MAX_MEMBERS
from mcunas.search.settings.progress import Progress
from mcunas.search.trial.pipeline import Retrained, TrialPipeline

if TYPE_CHECKING:
    import keras

    from mcunas.search.finish.run_parts import FinishingRun

__all__ = ["average", "fitting_average", "member_seed", "planned_members", "with_frontend_of"]


def planned_members(mode: str, best: TrialRecord, budgets: Budgets) -> int:
    """How many refits of ``best``'s design ``--ensemble mode`` asks for (1: the design alone).

    ``auto``: the latency budget over the trial's latency (and the energy budget
    over its energy, when both are known), rounded down, at most
    :data:`MAX_MEMBERS`; 1 without a latency budget or a latency figure.
    """
    if mode == "off":
        return 1
    if mode != "auto":
        return max(1, min(MAX_MEMBERS, int(mode)))
    if budgets.max_latency_ms is None or not best.latency_ms:
        return 1
    room = budgets.max_latency_ms / best.latency_ms
    if budgets.max_energy_uj is not None and best.energy_uj:
        room = min(room, budgets.max_energy_uj / best.energy_uj)
    return max(1, min(MAX_MEMBERS, math.floor(room)))


def member_seed(seed: int, member: int) -> int:
    """Member ``member``'s training seed: the refit's own for member 0."""
    return (int(seed) + 7919 * int(member)) % 2**31


def average(models: list[keras.Model]) -> keras.Model:
    """One Keras model: ``models`` (same input) side by side, their outputs averaged.

    Each member keeps its weights; the outputs (softmax probabilities) are
    added and scaled by 1/K, so the INT8 graph has each member's ops, then
    K - 1 ADDs and a MUL.
    """
    import keras
    from keras import layers

    if len(models) == 1:
        return models[0]
    inputs = keras.Input(tuple(models[0].inputs[0].shape[1:]))
    outs = []
    for k, model in enumerate(models):
        model.name = f"member_{k}"
        outs.append(model(inputs))
    total = layers.Add(name="members_sum")(outs)
    return keras.Model(inputs, layers.Rescaling(1.0 / len(models), name="members_mean")(total))


def fitting_average(
    progress: Progress, pipeline: TrialPipeline, members: list[Retrained]
) -> tuple[bytes, Figures, int] | None:
    """The members' average that meets every budget, with the most members; None for none.

    Args:
        progress: Progress, for a note on each average that does not fit.
        pipeline: TrialPipeline over the search's runner, which measures, with the chosen
            trial's front end (:func:`with_frontend_of`) and the budgets.
        members: [Retrained], member 0 (the refit, whose runner converts) first.

    Returns:
        The average's INT8 bytes, its figures (front end included) and its member
        count; None when no average fits or one fails to convert or measure
        (a note says why), and member 0, the refit, is exported alone.
    """
    fit = members[0].runner
    models = [member.model for member in members]
    for k in range(len(models), 1, -1):
        done = pipeline.assess(fit, functools.partial(_average_of, models, k), evaluate=False)
        if not done.ok or done.cost is None:  # the refit alone is exported instead
            progress.note(f"An average of {k} members failed ({done.error}).")
            break
        if not done.violations:
            return done.model_bytes or b"", done.cost, k
        progress.note(f"An average of {k} members does not fit ({done.violations[0]}).")
    progress.note("No average of members is exported; the refit alone is.")
    return None


def _average_of(models: list[keras.Model], k: int) -> keras.Model:
    """The average of the first ``k`` members (:func:`average`, looked up when called)."""
    return average(models[:k])


def with_frontend_of(run: FinishingRun, best: TrialRecord, cost: Figures) -> Figures:
    """``cost`` with the chosen trial's front end added, as a trial's figures are."""
    if run.fronts is None:
        return cost
    from mcunas.cost.profile import with_frontend

    return with_frontend(cost, run.fronts.cost_of(run.data_of(best)), run.board)
