"""The user's budgets, the check of a candidate's figures against them, and the score.

Scoring (documented choice): **hard limits**. A candidate is feasible when it
runs on the board (op audit, arena, SRAM and flash within the board's model
budget) and meets every budget the user gave (``--max-latency-ms``,
``--max-sram-kb`` against peak SRAM, ``--max-flash-kb``). Infeasible
candidates are never trained, so every scored trial is feasible and its score
is simply its INT8 accuracy on the validation split (MnasNet's hard-constraint
variant: reward = accuracy when latency <= target). The model exported to
``best/`` is the top scorer, where scores within 0.5 percentage points tie,
the INT8 validation loss breaks the tie, and near-equal losses go to the lower
latency (:func:`mcunas.search.report.result.choose_best`);
the Pareto front shows the rest of the latency/SRAM trade-off instead of
folding it into one number with an arbitrary exponent.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from mcunas.figures import Figures
from mcunas.jsontext import JsonObject

__all__ = ["Budgets", "score", "violations"]


@dataclass(frozen=True)
class Budgets:
    """Limits given by the user; None means "only the board's own limits"."""

    max_latency_ms: float | None = None
    max_sram_kb: float | None = None
    max_flash_kb: float | None = None
    # check an *estimated* latency's (and energy's) upper bound (estimate + its stated error)
    safe_latency: bool = False
    max_energy_uj: float | None = None

    def to_dict(self) -> JsonObject:
        """Plain dict for JSON output."""
        return asdict(self)

    def describe(self) -> str:
        """One line such as ``latency <= 50 ms, peak SRAM <= 256 KB``."""
        parts = []
        if self.max_latency_ms is not None:
            upper = " (estimates: plus their stated error)" if self.safe_latency else ""
            parts.append(f"latency <= {self.max_latency_ms:g} ms{upper}")
        if self.max_sram_kb is not None:
            parts.append(f"peak SRAM <= {self.max_sram_kb:g} KB")
        if self.max_flash_kb is not None:
            parts.append(f"flash <= {self.max_flash_kb:g} KB")
        if self.max_energy_uj is not None:
            parts.append(f"energy <= {self.max_energy_uj:g} uJ per inference")
        return ", ".join(parts) or "board limits only"


def violations(cost: Figures, budgets: Budgets) -> list[str]:
    """Every reason ``cost`` is infeasible: the board's own, then the user's budgets."""
    reasons = list(cost.reasons)
    what = "estimated" if cost.estimated else "measured"
    latency, margin = cost.latency_ms, ""
    if budgets.safe_latency and cost.estimated and cost.latency_error_pct:
        latency = cost.latency_ms * (1.0 + cost.latency_error_pct / 100.0)
        margin = f" (+{cost.latency_error_pct:.0f}% stated error: {latency:.2f} ms)"
    if budgets.max_latency_ms is not None and latency > budgets.max_latency_ms:
        reasons.append(
            f"{what} latency {cost.latency_ms:.2f} ms{margin} > budget "
            f"{budgets.max_latency_ms:g} ms"
        )
    if budgets.max_sram_kb is not None and cost.peak_sram_bytes > budgets.max_sram_kb * 1024:
        reasons.append(
            f"{what} peak SRAM {cost.peak_sram_bytes / 1024:.1f} KB > budget "
            f"{budgets.max_sram_kb:g} KB"
        )
    if budgets.max_flash_kb is not None and cost.flash_bytes > budgets.max_flash_kb * 1024:
        reasons.append(
            f"{what} flash {cost.flash_bytes / 1024:.1f} KB > budget {budgets.max_flash_kb:g} KB"
        )
    reasons += _energy_violation(cost, budgets)
    return reasons


def _energy_violation(cost: Figures, budgets: Budgets) -> list[str]:
    """The energy budget's reason, if broken (with --safe-latency: the estimate's upper bound)."""
    if budgets.max_energy_uj is None or cost.energy_uj is None:
        return []
    energy, margin = cost.energy_uj, ""
    measured = cost.energy_source.startswith("meter:")
    if budgets.safe_latency and not measured and cost.energy_error_pct:
        energy = cost.energy_uj * (1.0 + cost.energy_error_pct / 100.0)
        margin = f" (+{cost.energy_error_pct:.0f}% stated error: {energy:.1f} uJ)"
    if energy <= budgets.max_energy_uj:
        return []
    what = "measured" if measured else "estimated"
    return [f"{what} energy {cost.energy_uj:.1f} uJ{margin} > budget {budgets.max_energy_uj:g} uJ"]


def score(int8_accuracy: float, cost: Figures, budgets: Budgets) -> float:
    """The objective the oracle maximises: INT8 accuracy, 0 if any limit is broken."""
    return 0.0 if violations(cost, budgets) else float(int8_accuracy)
