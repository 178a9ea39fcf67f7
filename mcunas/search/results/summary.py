"""The words of a search's result: the front as a table, the note on estimates, the chosen model.

The terminal summary, ``report.html`` and ``pareto.json`` all take their text
from here, so a figure is worded (and marked as an estimate) the same way
everywhere. Figures from the simulator are estimates and are marked ``~``
with the predictor's stated error; figures measured on a board carry the
simulator's error against that measurement.
"""

from __future__ import annotations

from collections.abc import Sequence

from mcunas.jsontext import JsonObject
from mcunas.search.results.store import TrialRecord, TrialStatus

__all__ = [
    "chosen_text",
    "cost_split",
    "energy_mark",
    "energy_text",
    "estimate_mark",
    "estimate_note",
    "estimate_tag",
    "figures_text",
    "pareto_table",
    "refit_text",
    "split_text",
]


def estimate_mark(rec: TrialRecord) -> str:
    """``~`` for a simulated figure, nothing for a measured one."""
    return "~" if rec.estimated else ""


def energy_mark(rec: TrialRecord) -> str:
    """``~`` for an estimated energy (power x latency), nothing for a power meter's."""
    return "" if (rec.energy_source or "").startswith("meter:") else "~"


def energy_text(rec: TrialRecord) -> str:
    """``123.4 uJ~`` (or ``-`` for a trial without an energy figure)."""
    if rec.energy_uj is None:
        return "-"
    return f"{rec.energy_uj:.1f} uJ{energy_mark(rec)}"


def cost_split(rec: TrialRecord) -> dict[str, JsonObject] | None:
    """Latency, peak SRAM, flash (and energy) as front end, model and total; None without one.

    The store keeps the totals and the front end's share; the model's is the difference.
    Energy is there when the store has the front end's share (an estimate: its latency
    x the board's active power).
    """
    if rec.frontend_latency_ms is None:
        return None
    total: JsonObject = {
        "latency_ms": rec.latency_ms,
        "peak_sram_bytes": rec.peak_sram_bytes,
        "flash_bytes": rec.flash_bytes,
    }
    front: JsonObject = {
        "latency_ms": rec.frontend_latency_ms,
        "peak_sram_bytes": rec.frontend_sram_bytes,
        "flash_bytes": rec.frontend_flash_bytes,
    }
    if rec.frontend_energy_uj is not None:  # stores of older versions lack it
        total["energy_uj"], front["energy_uj"] = rec.energy_uj, rec.frontend_energy_uj
    model = {k: _minus(total[k], front[k]) for k in total}
    return {"frontend": {**front, "source": rec.frontend_source}, "model": model, "total": total}


def _minus(total: float | None, part: float | None) -> float | None:
    return None if total is None or part is None else total - part


def split_text(rec: TrialRecord) -> str | None:
    """``front end 2.1 ms / 9.4 KB / 4.1 KB + model ...`` for a trial with a front end."""
    split = cost_split(rec)
    if split is None:
        return None

    def part(d: JsonObject) -> str:
        energy = f", {d['energy_uj']:.1f} uJ" if d.get("energy_uj") is not None else ""
        return (
            f"{d['latency_ms'] or 0:.2f} ms, {(d['peak_sram_bytes'] or 0) / 1024:.1f} KB SRAM, "
            f"{(d['flash_bytes'] or 0) / 1024:.1f} KB flash{energy}"
        )

    what = "estimate" if str(split["frontend"]["source"] or "").startswith("estimate") else ""
    return (
        f"front end {part(split['frontend'])}{f' ({what})' if what else ''} + "
        f"model {part(split['model'])} = {part(split['total'])}"
    )


def pareto_table(front: Sequence[TrialRecord]) -> str:
    """A plain-text table of the front for the terminal."""
    if not front:
        return "No feasible candidate: the Pareto front is empty."
    head = f"{'trial':>6}  {'family':<12} {'INT8 acc':>8}  {'latency':>11}  {'peak SRAM':>11}  "
    head += f"{'flash':>10}  {'energy':>12}  source"
    fronted = any(r.frontend_latency_ms is not None for r in front)
    if fronted:
        head = head.replace("  source", "  front end ms  source")
    lines = [head, "-" * len(head)]
    for r in front:
        mark = estimate_mark(r)
        share = f"{r.frontend_latency_ms or 0:11.2f}~  " if fronted else ""
        lines.append(
            f"{r.trial_id:>6}  {(r.family or '-'):<12} {100 * (r.int8_accuracy or 0):7.1f}%  "
            f"{r.latency_ms or 0:8.2f} ms{mark:1}  "
            f"{(r.peak_sram_bytes or 0) / 1024:7.1f} KB{mark:1}  "
            f"{(r.flash_bytes or 0) / 1024:7.1f} KB{mark:1}  {energy_text(r):>12}  "
            f"{share}{r.source or ''}"
        )
    if fronted:
        lines.append(
            "latency, peak SRAM and flash are audio front end + model (per inference window)"
        )
    if any(r.estimated for r in front):
        lines.append("~ simulator estimate (see report.html for the predictor's error)")
    elif any(r.energy_uj is not None and energy_mark(r) for r in front):
        lines.append("~ energy estimate: supply V x the board's active current x latency")
    return "\n".join(lines)


def estimate_tag(best: JsonObject) -> str:
    """' (simulator estimates, +/-E%)' for a simulated best model, else its source."""
    if best.get("estimated"):
        err = best.get("latency_error_pct")
        return " (simulator estimates" + (f", latency +/-{err:g}%" if err else "") + ")"
    return f" (measured on {best.get('source', 'a board')})"


def estimate_note(trials: Sequence[TrialRecord]) -> str:
    """What the ``~`` marks and the 'error %' column mean for these trials."""
    ok = [r for r in trials if r.status == TrialStatus.OK]
    errs = sorted({r.latency_error_pct for r in ok if r.estimated and r.latency_error_pct})
    measured = [r for r in ok if not r.estimated]
    note = "Latency, arena, peak SRAM and flash marked ~ are simulator estimates"
    if errs:
        lo, hi = errs[0], errs[-1]
        span = f"{lo:.0f}-{hi:.0f}%" if hi - lo >= 1 else f"{hi:.1f}%"
        note += (
            f" (predictor's stated latency error +/-{span} by model: the measured error "
            "of each op kind on this board, 50% for kinds no measurement covers; "
            "see the 'error %' column)."
        )
    else:
        note += "."
    if measured:
        note += (
            f" {len(measured)} trial(s) were measured on a board; their 'error %' column "
            "is the simulator's latency error against that measurement."
        )
    return note


def chosen_text(best: TrialRecord, where: str | None, reason: str | None = None) -> str:
    """Lines on the chosen model: figures, why (if not the top score), where it went."""
    mark = estimate_mark(best)
    why = f"  chosen: {reason}\n" if reason else ""
    split = split_text(best)
    why += f"  {split}\n" if split else ""
    if best.steps:
        why += f"  trained {best.steps} optimizer steps ({best.epochs_run} epochs)\n"
    return (
        f"Chosen: trial {best.trial_id} {best.description or best.family or ''}\n{why}"
        f"  INT8 accuracy {100 * (best.int8_accuracy or 0):.1f}%, "
        f"{_cost_text(best.latency_ms, best.peak_sram_bytes, best.flash_bytes, mark)}, "
        f"energy {energy_text(best)} per inference\n"
        f"  exported to {where}"
    )


def figures_text(own: JsonObject) -> str:
    """``latency 18.40 ms~, peak SRAM 58.0 KB~, flash 231.0 KB~ (simulator estimates)``."""
    mark = "~" if own.get("estimated") else ""
    cost = _cost_text(own["latency_ms"], own["peak_sram_bytes"], own["flash_bytes"], mark)
    return cost + estimate_tag(own)


def _cost_text(latency_ms: float | None, sram: int | None, flash: int | None, mark: str) -> str:
    """``latency 18.40 ms~, peak SRAM 58.0 KB~, flash 231.0 KB~`` (None reads as 0)."""
    return (
        f"latency {latency_ms or 0:.2f} ms{mark}, peak SRAM {(sram or 0) / 1024:.1f} KB{mark}, "
        f"flash {(flash or 0) / 1024:.1f} KB{mark}"
    )


def refit_text(info: JsonObject) -> str:
    """``refitted on all 200 training samples, 3750 optimizer steps`` (the refit's line)."""
    steps = f", {info['steps']} optimizer steps" if info.get("steps") else ""
    teacher = f", taught by {info['teacher']}" if info.get("teacher") else ""
    return f"refitted on all {info['samples']} training samples{steps}{teacher}"
