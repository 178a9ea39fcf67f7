"""Stopping a hopeless candidate early: rungs of its schedule and a bound from finished curves.

As in ASHA (Li et al., "A System for Massively Parallel Hyperparameter
Tuning", 2020) a candidate is looked at on rungs, geometric fractions of its
schedule (reduction factor :data:`ETA`: epochs E/9 and E/3 of E, none for a
schedule under :data:`MIN_EPOCHS`). ASHA keeps the best third of each rung;
a hardware-aware search keeps anything that may join the front, so the test
here is the front's at the candidate's cost:

- **its best possible end**: its float validation accuracy on the rung plus
  the largest gain from that rung to the end any finished candidate of the
  same schedule made (its INT8 validation accuracy minus its accuracy on the
  rung), plus two binomial standard errors of the split (the noise of one
  score) and the choice's tie (:data:`TIE`);
- **the front at its cost**: a candidate stops only when a trained trial that
  costs no more in every cost objective (its checked figures against theirs)
  scores above that best possible end, i.e. it would be dominated even then;
- the gains of fewer than :data:`MIN_CURVES` finished candidates bound nothing
  (no stop); a stopped candidate's own curve never bounds another.

A stopped candidate is converted, evaluated and recorded as any other (its
score is what it reached); its row keeps the optimizer steps it did not train.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from mcunas.figures import Figures
from mcunas.search.results.pareto import front_test
from mcunas.search.results.record import TrialRecord, TrialStatus

__all__ = [
    "ETA",
    "MIN_CURVES",
    "MIN_EPOCHS",
    "TIE",
    "Curve",
    "CurveBound",
    "curve_of",
    "curve_text",
    "rung_epochs",
]

ETA = 3  # the rungs' reduction factor (ASHA's and Hyperband's default)
MIN_EPOCHS = 9  # a shorter schedule has no rung
MIN_CURVES = 3  # finished curves needed before a bound stops anything
TIE = 0.005  # the choice's tie (mcunas.search.finish.choice): half a point
Z = 2.0  # standard errors of the split's noise added to the bound

# A learning curve: epoch (1-based) -> float validation accuracy.
Curve = dict[int, float]


def rung_epochs(epochs: int) -> tuple[int, ...]:
    """The epochs (1-based) a candidate of an ``epochs``-epoch schedule is looked at on.

    >>> rung_epochs(30)
    (4, 10)
    >>> rung_epochs(8)
    ()
    """
    if epochs < MIN_EPOCHS:
        return ()
    return tuple(sorted({math.ceil(epochs / ETA**k) for k in (2, 1)}))


def curve_text(epochs: int, curve: Curve) -> str:
    """The store's text of a curve: ``{"epochs": 30, "acc": {"4": 0.91, ...}}``."""
    points = {str(e): round(float(a), 6) for e, a in sorted(curve.items())}
    return json.dumps({"epochs": int(epochs), "acc": points}, sort_keys=True)


def curve_of(record: TrialRecord) -> tuple[int, Curve] | None:
    """(schedule epochs, curve) of a trial's stored curve, or None (none stored)."""
    if not record.curve:
        return None
    try:
        data = json.loads(record.curve)
        return int(data["epochs"]), {int(e): float(a) for e, a in data["acc"].items()}
    except (ValueError, KeyError, TypeError):
        return None


@dataclass(frozen=True)
class CurveBound:
    """The stop test of one candidate (see the module).

    Args:
        trials: the store's trials so far.
        cost: the candidate's checked figures (front end included).
        epochs: its schedule's epochs.
        objectives: the front's objectives (``--objectives``).
    """

    trials: Sequence[TrialRecord]
    cost: Figures
    epochs: int
    objectives: tuple[str, ...]

    def gains(self, rung: int) -> list[float]:
        """Finished candidates' gains from ``rung`` to their INT8 score (same schedule)."""
        out = []
        for rec in self.trials:
            got = curve_of(rec)
            if got is None or rec.status != TrialStatus.OK or rec.steps_saved:
                continue
            epochs, curve = got
            if epochs == self.epochs and rung in curve and rec.int8_accuracy is not None:
                out.append(rec.int8_accuracy - curve[rung])
        return out

    def best_end(self, rung: int, accuracy: float, samples: int) -> float | None:
        """The highest score a candidate at ``accuracy`` on ``rung`` can reach; None: unbounded.

        ``samples``: the validation split's size (its noise).
        """
        gains = self.gains(rung)
        if len(gains) < MIN_CURVES:
            return None
        top = min(1.0, accuracy + max(gains))
        noise = Z * math.sqrt(max(top * (1 - top), 1e-4) / max(1, samples))
        return top + noise + TIE

    def stop(self, rung: int, accuracy: float, samples: int) -> str | None:
        """Why the candidate stops on ``rung`` at ``accuracy`` (None: it trains on).

        ``samples``: the validation split's size.
        """
        end = self.best_end(rung, accuracy, samples)
        if end is None or end >= 1.0:
            return None
        ok = [r for r in self.trials if r.status == TrialStatus.OK]
        joins: Callable[[Figures], bool] = front_test(ok, end, self.objectives)
        if joins(self.cost):
            return None
        return (
            f"stopped at epoch {rung} of {self.epochs}: validation accuracy "
            f"{100 * accuracy:.1f}% can reach {100 * end:.1f}% at most, below a trained "
            "trial that costs no more"
        )
