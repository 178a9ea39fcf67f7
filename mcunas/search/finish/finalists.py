"""Re-scored finalists: which trials, how they are re-scored, and the choice among them.

A trial's score is its INT8 accuracy on one validation split, often a few
hundred samples or fewer: two candidates a point apart may differ by chance.
Before export the top finalists (the search's choice, then the highest
validation scores within the split's noise of the top, and the ``--seed-arch``
design's largest fitting rung unless clearly worse) are re-trained with the
search's own recipe (:mod:`mcunas.search.finish.rescore`) and scored again, by k-fold
cross-validation on small datasets and over several seeds on larger ones; the
choice then uses each finalist's mean and its standard error.

This module holds the plain part (no TensorFlow): the plan, the finalists,
the runs kept in the store (meta key ``rescore``, so ``--resume`` does not
redo a finished run) and the choice among the re-scored means.

Example::

    plan = plan_for(train_samples=1077)            # 5-fold cross-validation
    finalists = pick_finalists(store.trials(), ("accuracy", "latency", "sram"), 3)
    outcome = rescored_choice(store.trials(), objectives, store.get_meta("rescore"))
"""

from __future__ import annotations

import dataclasses
import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from mcunas.jsontext import JsonObject
from mcunas.search.finish.choice import choose_best, chosen_by, feasible_front
from mcunas.search.finish.records import RESCORE_META, Plan, Rescore, Rescored
from mcunas.search.results.pareto import DEFAULT_OBJECTIVES, dominates, record_point
from mcunas.search.results.store import TrialOrigin, TrialRecord

__all__ = [
    "KFOLD_BELOW",
    "REFERENCE_Z",
    "RESCORE_META",
    "Plan",
    "RescoreSummary",
    "Rescored",
    "finalist_band",
    "pick_finalists",
    "plan_for",
    "reference_trial",
    "rescored_choice",
    "rescored_of",
    "stand_in",
]

# Below this many training samples, cross-validation (k folds of training + validation
# data); from it on, several seeds on the search's own split (a larger validation set).
KFOLD_BELOW = 2000
DEFAULT_FOLDS = 5
DEFAULT_SEEDS = 3
# A trial is a finalist when its validation score is within this many standard errors
# of the difference of two accuracies on the validation split below the top score.
FINALIST_Z = 2.0
# The --seed-arch design's largest fitting rung stays a finalist within this many (a
# known design leaves the re-scored comparison only when clearly worse on the split).
REFERENCE_Z = 3.0


def plan_for(train_samples: int, folds: int = DEFAULT_FOLDS, seeds: int = DEFAULT_SEEDS) -> Plan:
    """k-fold cross-validation under :data:`KFOLD_BELOW` training samples, else seeds."""
    if train_samples < KFOLD_BELOW:
        return Plan("kfold", folds)
    return Plan("seeds", seeds)


def finalist_band(top_score: float, val_samples: int, z: float = FINALIST_Z) -> float:
    """How far below the top validation score a trial may be and still be a finalist.

    ``z`` (:data:`FINALIST_Z`) standard errors of the difference of two accuracies
    measured on ``val_samples`` samples, each taken as ``(correct + 1) /
    (samples + 2)`` so that a perfect score keeps its noise: 11 points for 95%
    on 41 samples, 38 for 100% on 6, 1.1 for 99.7% on 360.
    """
    if val_samples <= 0:
        return 1.0
    p = (top_score * val_samples + 1) / (val_samples + 2)
    return z * math.sqrt(2 * p * (1 - p) / val_samples)


def pick_finalists(
    records: Sequence[TrialRecord],
    objectives: Sequence[str],
    count: int,
    val_samples: int | None = None,
) -> list[TrialRecord]:
    """The search's choice first, then the highest-scoring others, ``count`` in all.

    With ``val_samples`` (the validation split's size) the others are the
    feasible trials whose score is within :func:`finalist_band` of the top,
    whether or not the Pareto front holds them: one lucky validation score
    lets a small model dominate a larger one that is better, and re-scoring
    is there to find out. Without it, the front's other trials by score.

    With ``val_samples``, the ``--seed-arch`` design's largest feasible rung
    (:func:`reference_trial`) takes the last place when no other holds it
    and its score is within :data:`REFERENCE_Z` standard errors of the top
    (a wider band: the known design leaves the comparison only when it is
    clearly worse). Re-scoring then weighs the search's finds against the
    hand-scaled reference on the same folds, where the re-scored means decide
    with no preference for the seed design among ties (ties go to the lower
    re-scored loss, then the cheaper: :func:`rescored_choice`).
    """
    if count <= 0:
        return []
    first = choose_best(records, objectives)
    if first is None:
        return []
    if val_samples is None:
        pool = [r for r in feasible_front(records, objectives) if r is not first]
        return [first, *_by_score(pool)][:count]
    ok = [r for r in records if r.feasible and r.model_path]
    top = max(r.score or 0.0 for r in ok)
    low = top - finalist_band(top, val_samples)
    pool = [r for r in ok if r is not first and (r.score or 0.0) >= low]
    picked = [first, *_by_score(pool)][:count]
    reference = reference_trial(ok)
    floor = top - finalist_band(top, val_samples, REFERENCE_Z)
    if count < 2 or reference is None or reference in picked or (reference.score or 0.0) < floor:
        return picked
    return [*picked[: count - 1], reference]


def _by_score(pool: Sequence[TrialRecord]) -> list[TrialRecord]:
    """Highest score first; equal scores by the lower latency, then the trial id."""
    return sorted(pool, key=lambda r: (-(r.score or 0.0), r.latency_ms or 0.0, r.trial_id))


def reference_trial(records: Sequence[TrialRecord]) -> TrialRecord | None:
    """The ``--seed-arch`` design's largest feasible rung: the hand-scaled reference.

    Among the feasible trials with a model that came from the seed design
    (origin ``seed``: the design itself or a narrower or lower-resolution rung
    of its ladder), the one with the highest latency, then the highest score.
    None without a seed design, or when none of its rungs fit.
    """
    seeds = [r for r in records if r.origin == TrialOrigin.SEED and r.feasible and r.model_path]
    return max(
        seeds,
        key=lambda r: (r.latency_ms or 0.0, r.score or 0.0, r.trial_id),
        default=None,
    )


def rescored_of(state: Rescore | JsonObject | None, trial_id: str) -> Rescored | None:
    """A finalist's finished runs from the store's ``rescore`` meta (None without any)."""
    stored = Rescore.from_dict(state)
    return None if stored is None else stored.rescored(trial_id)


@dataclass(frozen=True)
class RescoreSummary:
    """The re-scored finalists as the result reports them (``best.json``'s ``rescore``).

    ``chosen`` is the trial the means chose, ``search_choice`` the search's own
    choice on its split, ``reference`` the ``--seed-arch`` design's rung when it
    was re-scored.
    """

    plan: Plan
    finalists: tuple[Rescored, ...]
    chosen: str
    search_choice: str
    reference: str | None = None

    @property
    def seconds(self) -> float:
        """Seconds of every finalist's runs."""
        return round(sum(s.seconds for s in self.finalists), 2)

    @property
    def text(self) -> str:
        """The summary's line (:func:`rescore_text`)."""
        return rescore_text(self.plan, self.finalists, self.reference)

    def to_dict(self) -> JsonObject:
        """JSON-ready, as ``--json``, ``pareto.json`` and ``best.json`` keep it."""
        return {
            "method": self.plan.method,
            "runs_planned": self.plan.runs,
            "description": self.plan.describe(),
            "finalists": [s.to_dict() for s in self.finalists],
            "seconds": self.seconds,
            "chosen": self.chosen,
            "search_choice": self.search_choice,
            "reference": self.reference,
            "text": self.text,
        }


def rescored_choice(
    records: Sequence[TrialRecord],
    objectives: Sequence[str] = DEFAULT_OBJECTIVES,
    state: Rescore | JsonObject | None = None,
) -> tuple[TrialRecord, str, RescoreSummary] | None:
    """The choice among the re-scored finalists: the chosen trial, the rule, a summary.

    The finalists compete with their mean accuracy (and mean loss) in place of
    the single split's, under the same front and tie rule as the search's own
    choice (:func:`mcunas.search.finish.choice.choose_best`), ties being as wide as
    the standard error of the difference, but with no preference for the seed
    design: every finalist, the reference included, was measured on the same
    folds, so a tie goes to the lower mean loss, then to the cheaper. The finalists are the highest
    validation scores (:func:`pick_finalists`), so no other trial scored higher
    on the split (but one the reference design took the last place from); a
    finalist that did and was chosen over is named in the rule (re-scoring
    overturned it). None when nothing was re-scored.
    """
    stored = Rescore.from_dict(state)
    if stored is None or not stored.finalists:
        return None
    scored = _scored(records, stored)
    if not scored:
        return None
    by_id = {r.trial_id: r for r in records}
    stand_ins = [stand_in(by_id[s.trial_id], s) for s in scored]
    spread = {s.trial_id: s.stderr for s in scored}
    best = choose_best(stand_ins, objectives, spread, prefer_seed=False)
    if best is None:
        return None
    reference = reference_trial(records)
    ref_id = reference.trial_id if reference and reference.trial_id in spread else None
    overturned = _overturned(records, by_id[best.trial_id], stand_ins, objectives)
    front = "the re-scored finalists' front" if overturned else "the Pareto front"
    rule = chosen_by(stand_ins, best, objectives, spread, front, prefer_seed=False)
    rule = f"re-scored by {stored.plan.describe()}: {rule}{overturned}"
    summary = RescoreSummary(stored.plan, tuple(scored), best.trial_id, stored.finalists[0], ref_id)
    return by_id[best.trial_id], rule, summary


def _scored(records: Sequence[TrialRecord], state: Rescore) -> list[Rescored]:
    """The re-scored runs of the stored finalists among ``records``, on the runs all share."""
    ids, shared = {r.trial_id for r in records}, state.shared_runs()
    found = (
        state.rescored(tid, None if tid in state.failed else shared)
        for tid in state.finalists
        if tid in ids
    )
    return [s for s in found if s is not None]


def _overturned(
    records: Sequence[TrialRecord],
    best: TrialRecord,
    stand_ins: Sequence[TrialRecord],
    objectives: Sequence[str],
) -> str:
    """Words for a choice the validation split's own front did not hold, else ''.

    Names the finalists that dominated it on the split, with their re-scored means.
    """
    if best in feasible_front(records, objectives):
        return ""
    means = {r.trial_id: r.score or 0.0 for r in stand_ins}
    mine = record_point(best, objectives)
    above = [
        f"trial {r.trial_id} ({100 * (r.score or 0):.1f}% there, re-scored "
        f"{100 * means[r.trial_id]:.1f}%)"
        for r in records
        if r.trial_id in means and dominates(record_point(r, objectives), mine)
    ]
    if not above:
        return ""
    return "; off the validation split's front, overturned by re-scoring: " + ", ".join(above)


def rescore_text(plan: Plan, scored: Sequence[Rescored], reference: str | None = None) -> str:
    """One line for the summary: the method, the time, each finalist's mean +/- error.

    ``reference`` (a trial id) is named as such: the ``--seed-arch`` design's
    largest fitting rung, the hand-scaled design the search's finds are weighed against.
    """
    seconds = sum(s.seconds for s in scored)
    runs = min(len(s.accuracies) for s in scored)
    partial = f" ({runs} of {plan.runs} runs each)" if runs < plan.runs else ""
    return (
        f"Finalists re-scored by {plan.describe()}{partial} in {seconds:.0f} s "
        f"(INT8, TFLite Micro kernels): "
        + ", ".join(s.text(s.trial_id == reference) for s in scored)
    )


def stand_in(rec: TrialRecord, scored: Rescored) -> TrialRecord:
    """The trial with its re-scored mean accuracy and loss in place of the single split's."""
    loss = statistics.fmean(scored.losses) if scored.losses else None
    return dataclasses.replace(rec, score=scored.mean, int8_accuracy=scored.mean, int8_loss=loss)
