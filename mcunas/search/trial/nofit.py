"""When nothing fits: refuse a budget no model can meet, and say what the smallest design needs.

Two places a search can learn that nothing fits:

- before it starts (:func:`check_budget_floor`): a peak SRAM or flash budget at
  or below the measurement firmware's own baseline (static RAM + stack, or its
  flash) leaves no room for any model, however small;
- at its end (:func:`no_feasible_message`): every candidate drawn was refused.
  The line names, for every budget no candidate met, the cheapest design tried
  against that budget, and what to relax.

Both end the command with one line and exit code 2 (the CLI raises the
message as a :class:`~mcunas.errors.UserError`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from mcunas.boards.catalog import BoardProfile
from mcunas.errors import UserError
from mcunas.search.results.budgets import Budgets
from mcunas.search.results.store import TrialRecord
from mcunas.search.settings.config import SearchConfig

__all__ = ["check_budget_floor", "no_feasible_message"]

# Characters of a design's description quoted in the message.
DESCRIPTION_CHARS = 60


def check_budget_floor(budgets: Budgets, board: BoardProfile) -> None:
    """Refuse an SRAM or flash budget that the firmware alone already fills.

    Raises:
        UserError: ``--max-sram-kb`` at or below the firmware's static RAM + stack,
            or ``--max-flash-kb`` at or below its flash, on this board.
    """
    ram = board.firmware_ram_bytes + board.firmware_stack_bytes
    if budgets.max_sram_kb is not None and budgets.max_sram_kb * 1024 <= ram:
        raise UserError(
            f"--max-sram-kb {budgets.max_sram_kb:g} leaves no room for a model on {board.name}: "
            f"the firmware alone takes {ram / 1024:.0f} KB (static RAM "
            f"{board.firmware_ram_bytes / 1024:.0f} KB + stack "
            f"{board.firmware_stack_bytes / 1024:.0f} KB, board profile). Give --max-sram-kb "
            f"above {math.ceil(ram / 1024)} (the smallest models need a few KB of arena more)."
        )
    flash = board.firmware_flash_bytes
    if budgets.max_flash_kb is not None and budgets.max_flash_kb * 1024 <= flash:
        raise UserError(
            f"--max-flash-kb {budgets.max_flash_kb:g} leaves no room for a model on "
            f"{board.name}: the firmware alone takes {flash / 1024:.0f} KB of flash (board "
            f"profile). Give --max-flash-kb above {math.ceil(flash / 1024)}."
        )


def _design(rec: TrialRecord) -> str:
    """``trial 6: stages: /4 x0.25 stem 64 10x1/s2 | ...`` (cut to a readable length)."""
    text = rec.description or rec.family or "design"
    if len(text) > DESCRIPTION_CHARS:
        text = text[: DESCRIPTION_CHARS - 3].rstrip() + "..."
    return f"trial {rec.trial_id}: {text}"


def _misses(
    seen: Sequence[TrialRecord], budgets: Budgets, board: BoardProfile
) -> list[tuple[str, str]]:
    """(what the cheapest design needs against a budget none met, what to relax) pairs."""
    limits = [
        ("latency_ms", budgets.max_latency_ms, "ms", 1.0, "latency", "--max-latency-ms"),
        (
            "peak_sram_bytes",
            budgets.max_sram_kb or board.usable_sram_bytes / 1024,
            "KB",
            1024.0,
            "peak SRAM",
            "--max-sram-kb" if budgets.max_sram_kb else "a board with more SRAM",
        ),
        (
            "flash_bytes",
            budgets.max_flash_kb or board.usable_flash_bytes / 1024,
            "KB",
            1024.0,
            "flash",
            "--max-flash-kb" if budgets.max_flash_kb else "a board with more flash",
        ),
        ("energy_uj", budgets.max_energy_uj, "uJ", 1.0, "energy", "--max-energy-uj"),
    ]
    out = []
    for attr, budget, unit, scale, label, option in limits:
        costed = [r for r in seen if getattr(r, attr) is not None]
        if budget is None or not costed:
            continue
        cheapest = min(costed, key=lambda r: getattr(r, attr))
        need = getattr(cheapest, attr) / scale
        if need <= budget:
            continue
        out.append(
            (
                f"the smallest {label} of any design tried is {need:.1f} {unit} "
                f"({_design(cheapest)}); the budget is {budget:g} {unit}",
                f"{option} {math.ceil(need * 1.1)}" if option.startswith("--") else option,
            )
        )
    return out


def no_feasible_message(
    records: Sequence[TrialRecord], cfg: SearchConfig, board: BoardProfile
) -> str:
    """Say that nothing was feasible, what the cheapest designs need, and what to relax.

    Args:
        records: every trial of the search.
        cfg: SearchConfig, the search's settings.
        board: BoardProfile, the board searched for.
    """
    budgets = cfg.budgets
    seen = [r for r in records if r.peak_sram_bytes is not None]
    head = f"No candidate met the limits ({budgets.describe()}; board {board.name})"
    if not seen:
        return head + ", and none got as far as a cost estimate: see the trial reasons."
    misses = _misses(seen, budgets, board)
    if not misses:  # each budget met by some design, never all by one
        return (
            f"{head}. Of {len(seen)} candidates costed, each met some budgets but none met all: "
            "relax one of them, or raise --max-draws to try more designs."
        )
    needs = "; ".join(need for need, _ in misses)
    relax = " or ".join(option for _, option in misses)
    return (
        f"{head}. Of {len(seen)} candidates costed, {needs}. Relax the budgets (e.g. {relax}), "
        "give a smaller input (fewer steps or pixels), or search smaller families."
    )
