"""The tuner's accounting: what keras-tuner hears of a trial, the draw cap, the failure guard.

A candidate refused before training (infeasible or failed at the check) is a
draw, not a trial: :func:`draw_cap` lets the oracle draw again for each, up to
the cap. :func:`failure_streak` stops a search whose candidates keep failing.
"""

from __future__ import annotations

import keras_tuner

from mcunas.errors import FatalError
from mcunas.search.results.store import TrialRecord, TrialStatus
from mcunas.search.trial.pipeline import Outcome, TrainResult

__all__ = [
    "MAX_CONSECUTIVE_FAILURES",
    "cumulative_steps",
    "draw_cap",
    "failure_streak",
    "trial_metrics",
    "untrained",
]

# Failed (not infeasible) candidates in a row before the setup is deemed broken.
MAX_CONSECUTIVE_FAILURES = 5


def draw_cap(rows: list[TrialRecord], wanted: int, max_draws: int) -> tuple[int, str | None]:
    """The oracle's ``max_trials`` (one more draw per refused one, up to ``max_draws``).

    With it, why the search stops when the cap is reached short of ``wanted``
    trained candidates (None: it goes on).
    """
    refused = sum(untrained(r) for r in rows)
    extra = min(refused, max_draws - wanted)
    if len(rows) >= max_draws and len(rows) - refused < wanted:
        return wanted + extra, (
            f"draw cap reached: {len(rows)} candidates drawn, {refused} refused before "
            f"training (cap {max_draws}; raise --max-draws or relax the budgets)"
        )
    return wanted + extra, None


def failure_streak(rows: list[TrialRecord]) -> FatalError | None:
    """The error that stops a search whose last candidates all failed; None to go on."""
    streak = 0
    for r in rows:
        streak = streak + 1 if r.status == TrialStatus.FAILED else 0
    if streak < MAX_CONSECUTIVE_FAILURES:
        return None
    return FatalError(
        f"{streak} candidates in a row failed (last: {rows[-1].reason}). The setup "
        "looks broken; see the trial table (mcunas search --resume continues)."
    )


def trial_metrics(outcome: Outcome) -> dict[str, float]:
    """Keras Tuner's view of a trial: a failure raises, a refusal scores 0, ``ok`` its figures.

    An infeasible candidate completes with score 0 (so Bayesian optimisation
    models the limits); a failed one is a failed trial.
    """
    if outcome.status == TrialStatus.FAILED:
        raise keras_tuner.errors.FailedTrialError(f"{outcome.status}: {outcome.reason}")
    if outcome.status != TrialStatus.OK or outcome.cost is None:
        return {"score": 0.0, "feasible": 0.0}  # the oracle learns where the limits are
    return {
        "score": float(outcome.score or 0.0),
        "int8_accuracy": float(outcome.accuracy or 0.0),
        "latency_ms": float(outcome.cost.latency_ms),
        "peak_sram_bytes": float(outcome.cost.peak_sram_bytes),
        "feasible": 1.0,
    }


def untrained(rec: TrialRecord) -> bool:
    """True for a finished trial that never reached training (a draw, not a trial)."""
    return rec.status in (TrialStatus.INFEASIBLE, TrialStatus.FAILED) and not rec.train_s


def cumulative_steps(trained: TrainResult, epochs_before: int) -> int | None:
    """Optimizer steps of a warm-started trial: its parent's epochs at this recipe's rate, too."""
    if trained.steps is None or not trained.epochs_run:
        return trained.steps
    return trained.steps + epochs_before * (trained.steps // trained.epochs_run)
