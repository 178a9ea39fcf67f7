"""Which feasible trial a search exports, and the words for why.

The rule: only trials on the Pareto front over the chosen ``--objectives``
compete, so the exported model is never dominated by another feasible trial;
among them the highest score wins, where scores within a tie (0.5 points, or
the standard error of the difference for re-scored finalists) go to the
``--seed-arch`` design if it is among them (not among re-scored finalists:
their means were measured on the same folds, the reference's too), then to
the lower INT8 validation loss, then to the cheaper model.

Example::

    best = choose_best(store.trials(), ("accuracy", "latency", "sram"))
    chosen_by(store.trials(), best)   # 'on the Pareto front; the most accurate'
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from mcunas.search.results.pareto import DEFAULT_OBJECTIVES, Point, pareto_front, record_point
from mcunas.search.results.store import TrialOrigin, TrialRecord, TrialStatus

__all__ = [
    "ACCURACY_TIE",
    "LOSS_TIE",
    "choice_reason",
    "choose_best",
    "chosen_by",
    "feasible_front",
    "front_of",
    "tie_width",
    "trial_points",
]

# Scores this close to the top count as a tie (0.5 percentage points is under two
# samples of digits' 360-sample validation split)...
ACCURACY_TIE = 0.005
# ...and among those, INT8 validation cross-entropies this close to the lowest (in
# nats: about 2% more probability on the right class). A small validation split
# often scores several candidates 100%; the loss still tells them apart.
LOSS_TIE = 0.02


def trial_points(
    records: Sequence[TrialRecord], objectives: Sequence[str] = DEFAULT_OBJECTIVES
) -> list[Point]:
    """Objective-space points of the feasible (``ok``) trials."""
    return [record_point(r, objectives) for r in records if r.status == TrialStatus.OK]


def front_of(
    records: Sequence[TrialRecord], objectives: Sequence[str] = DEFAULT_OBJECTIVES
) -> list[TrialRecord]:
    """The feasible trials on the Pareto front, most accurate first."""
    by_id = {r.trial_id: r for r in records}
    return [by_id[p.key] for p in pareto_front(trial_points(records, objectives))]


def choose_best(
    records: Sequence[TrialRecord],
    objectives: Sequence[str] = DEFAULT_OBJECTIVES,
    spread: Mapping[str, float] | None = None,
    prefer_seed: bool = True,
) -> TrialRecord | None:
    """The feasible trial to export: on the Pareto front, then the highest score.

    Only trials on the front over ``objectives`` compete, so the choice is never
    dominated by another feasible trial. Among them, scores within
    :data:`ACCURACY_TIE` of the top tie (or within the standard error of the
    difference, when ``spread`` gives each trial's standard error, as re-scored
    finalists have). If the ``--seed-arch`` design (or a smaller variant of it)
    is among the tied, the choice stays with it: a searched candidate has to beat
    the known design by more than validation noise, or be as good and cheaper on
    every axis (``prefer_seed`` False: no such preference, as for re-scored
    finalists, whose means were measured on the same folds). Among the rest, the
    ones whose INT8 validation loss is within :data:`LOSS_TIE` of the lowest
    stay tied (a trial without a recorded loss stays too); of these the lowest
    latency wins, then the lowest peak SRAM, then the higher score.
    """
    return min(
        _contenders(records, objectives, spread, prefer_seed),
        key=lambda r: (r.latency_ms or 0.0, r.peak_sram_bytes or 0, -(r.score or 0.0), r.trial_id),
        default=None,
    )


def _contenders(
    records: Sequence[TrialRecord],
    objectives: Sequence[str],
    spread: Mapping[str, float] | None,
    prefer_seed: bool = True,
) -> list[TrialRecord]:
    """The tied front trials the choice is made among (the cheapest of them wins).

    The seed design's trials among the tied if any (with ``prefer_seed``), else
    all of them; then those within :data:`LOSS_TIE` of the lowest loss.
    """
    near = _tied(records, objectives, spread)
    if prefer_seed:
        near = [r for r in near if r.origin == TrialOrigin.SEED] or near
    losses = [r.int8_loss for r in near if r.int8_loss is not None]
    if losses:
        near = [r for r in near if r.int8_loss is None or r.int8_loss <= min(losses) + LOSS_TIE]
    return near


def feasible_front(
    records: Sequence[TrialRecord], objectives: Sequence[str] = DEFAULT_OBJECTIVES
) -> list[TrialRecord]:
    """The feasible trials with a model, on the Pareto front over ``objectives``."""
    ok = [r for r in records if r.feasible and r.model_path]
    return front_of(ok, objectives)


def _top(front: Sequence[TrialRecord]) -> TrialRecord | None:
    """The highest-scoring trial of ``front`` (the faster one of equal scores)."""
    return max(front, key=lambda r: (r.score or 0.0, -(r.latency_ms or 0.0)), default=None)


def tie_width(a: str, b: str, spread: Mapping[str, float] | None) -> float:
    """How far apart two trials' scores may be and still tie.

    :data:`ACCURACY_TIE`, or the standard error of the difference of two means
    (``spread`` maps trial id to its standard error) when that is wider.
    """
    if not spread:
        return ACCURACY_TIE
    return max(ACCURACY_TIE, math.hypot(spread.get(a, 0.0), spread.get(b, 0.0)))


def _tied(
    records: Sequence[TrialRecord],
    objectives: Sequence[str],
    spread: Mapping[str, float] | None,
) -> list[TrialRecord]:
    """The front's trials that tie with its top score."""
    front = feasible_front(records, objectives)
    top = _top(front)
    if top is None:
        return []
    best = top.score or 0.0
    return [
        r for r in front if (r.score or 0.0) >= best - tie_width(top.trial_id, r.trial_id, spread)
    ]


def choice_reason(
    records: Sequence[TrialRecord],
    best: TrialRecord,
    objectives: Sequence[str] = DEFAULT_OBJECTIVES,
    spread: Mapping[str, float] | None = None,
    prefer_seed: bool = True,
) -> str | None:
    """Why ``best`` was chosen over a higher-scoring trial, or None if it scored highest."""
    top = _top(feasible_front(records, objectives))
    if top is None or top is best:
        return None
    width = tie_width(top.trial_id, best.trial_id, spread)
    tied = f"within {100 * width:.2g} points of trial {top.trial_id} "
    tied += f"({100 * (top.score or 0):.1f}%)"
    if best.origin == TrialOrigin.SEED and prefer_seed:
        return f"the --seed-arch design, {tied}: a candidate must beat it by more"
    if (top.score or 0.0) <= (best.score or 0.0):
        return None
    why = f"tied with trial {top.trial_id} ({100 * (top.score or 0):.1f}%, within "
    why += f"{100 * width:.2g} points)"
    if (
        best.int8_loss is not None
        and top.int8_loss is not None
        and best.int8_loss < top.int8_loss - LOSS_TIE
    ):
        return f"{why}; lower INT8 validation loss ({best.int8_loss:.3f} vs {top.int8_loss:.3f})"
    return f"{why}; faster ({best.latency_ms or 0:.2f} vs {top.latency_ms or 0:.2f} ms)"


def chosen_by(
    records: Sequence[TrialRecord],
    best: TrialRecord,
    objectives: Sequence[str] = DEFAULT_OBJECTIVES,
    spread: Mapping[str, float] | None = None,
    front: str = "the Pareto front",
    prefer_seed: bool = True,
) -> str:
    """The rule that chose ``best``, in a few words (``best.json``'s ``chosen_by``).

    ``front`` names the front ``records`` make (re-scored finalists make their own);
    ``prefer_seed`` as :func:`choose_best` chose.
    """
    on = f"on {front}"
    reason = choice_reason(records, best, objectives, spread, prefer_seed)
    if reason is not None:
        return f"{on}; {reason}"
    tied = [r for r in _contenders(records, objectives, spread, prefer_seed) if r is not best]
    if best.origin == TrialOrigin.SEED and tied and prefer_seed:
        return f"{on}; the most accurate, and the --seed-arch design"
    if tied:
        return (
            f"{on}; the most accurate (tied with "
            + ", ".join(f"trial {r.trial_id}" for r in tied[:3])
            + "; the cheapest of the tie)"
        )
    return f"{on}; the most accurate"
