"""Re-scored finalists at their means, to judge whether a search's export is on its front.

``scripts/frontier_runs.py`` (``scripts/bench frontier``) asks whether another
finalist, at its re-scored mean, dominates the exported one
(docs/benchmarks/frontier.md).

Example::

    stand_ins = rescored_stand_ins(store.trials(), store.get_meta("rescore"))
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

# The product's own stand-in, so the bench judges each finalist as the choice does.
from mcunas.search.finish.finalists import stand_in
from mcunas.search.finish.records import Rescore
from mcunas.search.results.store import TrialRecord

__all__ = ["rescored_stand_ins"]


def rescored_stand_ins(
    records: Sequence[TrialRecord], state: Mapping[str, Any] | None
) -> dict[str, TrialRecord]:
    """Each re-scored finalist's record with its mean accuracy (and loss) in place of the split's.

    Keyed by trial id, in the stored finalists' order; empty when nothing was re-scored.
    """
    stored = Rescore.from_dict(state)
    if stored is None:
        return {}
    by_id = {r.trial_id: r for r in records}
    found = ((tid, stored.rescored(tid)) for tid in stored.finalists if tid in by_id)
    return {tid: stand_in(by_id[tid], s) for tid, s in found if s is not None}
