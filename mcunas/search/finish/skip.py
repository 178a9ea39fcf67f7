"""Whether re-scoring the finalists can change the choice; skipped, and said so, when not.

Re-scoring (:mod:`.rescore`) retrains every finalist several times: on a small
set about as long again as the search. It is worth that only when its means
could choose another trial than the validation split already does. The noise
it is weighed against is the binomial standard error of the difference of two
accuracies, :func:`~mcunas.search.finish.finalists.finalist_band` at
:data:`~mcunas.search.finish.finalists.FINALIST_Z` (2) standard errors:

- **separated**: the search's choice scores above every other finalist by
  more than that band on the validation split (each other finalist was let
  in only as the ``--seed-arch`` design, within its wider band);
- **tied with the reference**: the search's choice *is* the ``--seed-arch``
  design, every finalist is within the band of the top on the split, and the
  band is at most :data:`TIED_NOISE_MAX` (2 points): the most a tied finalist
  can plausibly be better by, too little to retrain them all for (the tie
  goes to the seed design). A wider band (a small validation split: 19
  points on 14 samples) is re-scored, where k-fold cross-validation measures
  on every sample and may find a better design the split cannot tell apart.

Otherwise the finalists are re-scored; ``--always-rescore`` re-scores them
whatever the scores. The decision is kept in the store (meta key
``rescore_skip``) and reported in the summary and its JSON.

Example::

    skip = rescore_skip(finalists, val_samples=360)
    skip.text if skip else "re-score"
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from mcunas.jsontext import JsonObject
from mcunas.search.finish.finalists import finalist_band
from mcunas.search.results.store import TrialOrigin, TrialRecord

__all__ = [
    "RESCORE_SKIP_META",
    "SEPARATED",
    "TIED",
    "TIED_NOISE_MAX",
    "RescoreSkip",
    "rescore_skip",
]

RESCORE_SKIP_META = "rescore_skip"  # the store's meta key for a skipped re-scoring
SEPARATED = "separated"
TIED = "tied with the reference"
# The widest split noise (2 standard errors of a difference, as a fraction) under which
# a tie held by the seed design is not re-scored.
TIED_NOISE_MAX = 0.02


@dataclass(frozen=True)
class RescoreSkip:
    """Re-scoring skipped: which case, the finalists' scores and the noise they were weighed by.

    ``noise`` is the band on the validation split (a fraction of one).
    """

    case: str
    finalists: tuple[str, ...]
    scores: tuple[float, ...]
    val_samples: int
    noise: float

    @property
    def text(self) -> str:
        """The summary's line."""
        scores = ", ".join(
            f"trial {t} {100 * s:.1f}%" for t, s in zip(self.finalists, self.scores, strict=True)
        )
        noise = (
            f"2 standard errors of the difference of two accuracies on {self.val_samples} "
            f"validation samples: {100 * self.noise:.1f} points"
        )
        if self.case == SEPARATED:
            return (
                f"Finalists not re-scored: trial {self.finalists[0]} leads the others "
                f"by more than the split's noise ({noise}): {scores}."
            )
        return (
            f"Finalists not re-scored: all within the split's noise ({noise}, at most "
            f"{100 * TIED_NOISE_MAX:g}) and the choice is the --seed-arch design, which "
            f"keeps a tie: {scores}."
        )

    def to_dict(self) -> JsonObject:
        """JSON-ready (the store's meta, the summary's ``rescore_skipped``)."""
        return {
            "case": self.case,
            "finalists": list(self.finalists),
            "scores": [round(s, 6) for s in self.scores],
            "val_samples": self.val_samples,
            "noise": round(self.noise, 6),
            "text": self.text,
        }

    @classmethod
    def from_dict(cls, data: object) -> RescoreSkip | None:
        """Inverse of :meth:`to_dict`; None for none."""
        if not isinstance(data, Mapping) or not data.get("finalists"):
            return None
        return cls(
            str(data["case"]),
            tuple(str(t) for t in data["finalists"]),
            tuple(float(s) for s in data["scores"]),
            int(data["val_samples"]),
            float(data["noise"]),
        )


def rescore_skip(finalists: Sequence[TrialRecord], val_samples: int) -> RescoreSkip | None:
    """The reason re-scoring ``finalists`` cannot change the choice, or None to re-score.

    Args:
        finalists: the finalists, the search's choice first
            (:func:`~mcunas.search.finish.finalists.pick_finalists`).
        val_samples: int, the validation split's size (the split's noise).
    """
    if len(finalists) < 2 or val_samples <= 0:
        return None
    scores = tuple(r.score or 0.0 for r in finalists)
    ids = tuple(r.trial_id for r in finalists)
    top = max(scores)
    noise = finalist_band(top, val_samples)
    if all(scores[0] - s > noise for s in scores[1:]):
        return RescoreSkip(SEPARATED, ids, scores, val_samples, noise)
    seed_chosen = finalists[0].origin == TrialOrigin.SEED
    if seed_chosen and top - min(scores) <= noise <= TIED_NOISE_MAX:
        return RescoreSkip(TIED, ids, scores, val_samples, noise)
    return None
