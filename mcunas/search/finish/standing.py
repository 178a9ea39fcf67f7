"""Where a search stands, from its store: the trial it chooses now, its front's hypervolume.

With ``--finalists`` and re-scored runs in the store, the finalists compete with
their means (:func:`~mcunas.search.finish.finalists.rescored_choice`); else the
front's rule chooses (:func:`~mcunas.search.finish.choice.choose_best`).
"""

from __future__ import annotations

from collections.abc import Sequence

from mcunas.boards.catalog import BoardProfile
from mcunas.jsontext import JsonObject
from mcunas.search.finish.choice import choose_best, chosen_by
from mcunas.search.finish.finalists import RescoreSummary, rescored_choice
from mcunas.search.finish.records import RESCORE_META
from mcunas.search.results.pareto import (
    Point,
    hypervolume,
    normalized_hypervolume,
    reference_point,
)
from mcunas.search.results.store import TrialRecord, TrialStore
from mcunas.search.settings.config import SearchConfig

__all__ = ["choice_of", "chosen_trial", "hypervolume_of"]


def chosen_trial(store: TrialStore, config: SearchConfig) -> TrialRecord | None:
    """The trial the search chooses now (re-scored finalists included), or None."""
    return choice_of(store, store.trials(), config)[0]


def choice_of(
    store: TrialStore, records: Sequence[TrialRecord], config: SearchConfig
) -> tuple[TrialRecord | None, str | None, RescoreSummary | None]:
    """The chosen trial, the rule that chose it, and the re-scored finalists (if any)."""
    best = choose_best(records, config.objectives)
    if best is None:
        return None, None, None
    if config.finalists > 0:
        rescored = rescored_choice(records, config.objectives, store.get_meta(RESCORE_META))
        if rescored is not None:
            return rescored
    return best, chosen_by(records, best, config.objectives), None


def hypervolume_of(points: list[Point], config: SearchConfig, board: BoardProfile) -> JsonObject:
    """The front's hypervolume (and normalized) against the budgets' (or the board's) box."""
    sram_ref = config.max_sram_kb * 1024 if config.max_sram_kb else board.usable_sram_bytes
    flash_ref = config.max_flash_kb * 1024 if config.max_flash_kb else board.usable_flash_bytes
    ref = reference_point(
        config.max_latency_ms,
        sram_ref,
        points,
        flash_budget_bytes=flash_ref,
        max_energy_uj=config.max_energy_uj,
        objectives=config.objectives,
    )
    return {
        "value": hypervolume(points, ref),
        "normalized": round(normalized_hypervolume(points, ref), 6),
        "objectives": list(config.objectives),
        "reference": {
            "accuracy": ref.accuracy,
            "latency_ms": ref.latency_ms,
            "peak_sram_bytes": ref.peak_sram_bytes,
            "flash_bytes": ref.flash_bytes,
            "energy_uj": ref.energy_uj,
        },
    }
