"""A search's result, computed once from its trial store: front, chosen model, hypervolume.

The report (:mod:`mcunas.search.report`), the export of ``best/``, the
``--json`` summary and the terminal summary all read one :class:`SearchResult`;
nothing downstream recomputes the front.

Example::

    result = compute_result(store, config, board, stopped=None)
    result.front, result.best, result.hypervolume["normalized"]
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mcunas.boards import BoardProfile
from mcunas.search.config import SearchConfig
from mcunas.search.pareto import (
    DEFAULT_OBJECTIVES,
    Point,
    hypervolume,
    normalized_hypervolume,
    objectives_text,
    pareto_front,
    record_point,
    reference_point,
)
from mcunas.search.store import TrialRecord, TrialStatus, TrialStore
from mcunas.search.summary import chosen_text, estimate_note, pareto_table

__all__ = [
    "ACCURACY_TIE",
    "LOSS_TIE",
    "SearchResult",
    "choice_reason",
    "choose_best",
    "compute_result",
    "front_of",
    "infeasible_train_s",
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


def choose_best(records: Sequence[TrialRecord]) -> TrialRecord | None:
    """The feasible trial with the highest score.

    Scores within :data:`ACCURACY_TIE` of the top tie. If the ``--seed-arch``
    design (or a smaller variant of it) is among them, the choice stays with it:
    a searched candidate has to beat the known design by more than validation
    noise. Among the rest, the ones whose INT8 validation loss is within
    :data:`LOSS_TIE` of the lowest stay tied (a trial without a recorded loss
    stays too); of these the lowest latency wins, then the lowest peak SRAM,
    then the higher score (a Hyperband round often re-trains the same
    architecture: same costs, better accuracy).
    """
    ok = [r for r in records if r.feasible and r.model_path]
    if not ok:
        return None
    top = max(r.score or 0.0 for r in ok)
    near = [r for r in ok if (r.score or 0.0) >= top - ACCURACY_TIE]
    near = [r for r in near if r.origin == "seed"] or near
    losses = [r.int8_loss for r in near if r.int8_loss is not None]
    if losses:
        near = [r for r in near if r.int8_loss is None or r.int8_loss <= min(losses) + LOSS_TIE]
    return min(
        near,
        key=lambda r: (r.latency_ms or 0.0, r.peak_sram_bytes or 0, -(r.score or 0.0), r.trial_id),
    )


def choice_reason(records: Sequence[TrialRecord], best: TrialRecord) -> str | None:
    """Why ``best`` was chosen over a higher-scoring trial, or None if it scored highest."""
    ok = [r for r in records if r.feasible and r.model_path]
    top = max(ok, key=lambda r: (r.score or 0.0, -(r.latency_ms or 0.0)), default=None)
    if top is None or top is best:
        return None
    tied = f"within {100 * ACCURACY_TIE:g} points of trial {top.trial_id} "
    tied += f"({100 * (top.score or 0):.1f}%)"
    if best.origin == "seed":
        return f"the --seed-arch design, {tied}: a candidate must beat it by more"
    if (top.score or 0.0) <= (best.score or 0.0):
        return None
    why = f"tied with trial {top.trial_id} ({100 * (top.score or 0):.1f}%, within "
    why += f"{100 * ACCURACY_TIE:g} points)"
    if (
        best.int8_loss is not None
        and top.int8_loss is not None
        and best.int8_loss < top.int8_loss - LOSS_TIE
    ):
        return f"{why}; lower INT8 validation loss ({best.int8_loss:.3f} vs {top.int8_loss:.3f})"
    return f"{why}; faster ({best.latency_ms or 0:.2f} vs {top.latency_ms or 0:.2f} ms)"


def infeasible_train_s(records: Sequence[TrialRecord]) -> float:
    """Seconds of training spent on candidates that turned out infeasible."""
    return round(sum(r.train_s for r in records if r.status == TrialStatus.INFEASIBLE), 3)


def _hypervolume(points: list[Point], config: SearchConfig, board: BoardProfile) -> dict:
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


def _round(seconds: float | None) -> float | None:
    return None if seconds is None else round(seconds, 2)


@dataclass
class SearchResult:
    """What a search found; ``to_dict()`` is the ``--json`` summary."""

    out_dir: Path
    board: BoardProfile
    config: SearchConfig
    trials: list[TrialRecord]
    front: list[TrialRecord]
    best: TrialRecord | None
    hypervolume: dict[str, Any]
    wall_s: float  # every session of this search (first run and resumes)
    session_wall_s: float | None = None  # this session only
    sessions: int = 1
    stopped_reason: str | None = None
    message: str | None = None  # why nothing is feasible, when nothing is
    paths: dict[str, str] = field(default_factory=dict)
    test: dict[str, Any] | None = None  # the chosen model on the dataset's test split
    layers: list[dict[str, Any]] | None = None  # the chosen model's per-op rows

    def test_text(self) -> str | None:
        """The chosen model's test accuracy line, when the dataset has a test split."""
        if not self.test:
            return None
        if self.test.get("int8_accuracy") is None:
            n, error = self.test["samples"], self.test["error"]
            return f"Test split ({n} samples): not evaluated, {error}"
        return (
            f"Test split ({self.test['samples']} samples, never used for selection): "
            f"INT8 accuracy {100 * self.test['int8_accuracy']:.1f}% (TFLite Micro kernels)"
        )

    def counts(self) -> dict[str, int]:
        """Trials per status."""
        return {
            s.value: sum(r.status == s for r in self.trials)
            for s in TrialStatus
            if any(r.status == s for r in self.trials)
        }

    def draws(self) -> dict[str, int]:
        """Candidates trained, candidates drawn (refused ones included), and the draw cap."""
        trained = sum(bool(r.train_s) or r.status == TrialStatus.OK for r in self.trials)
        return {"trained": trained, "drawn": len(self.trials), "cap": self.config.draw_cap}

    def board_summary(self) -> dict[str, Any]:
        """The board facts the report and ``best.json`` show."""
        return self.board_summary_of(self.board)

    @staticmethod
    def board_summary_of(board: BoardProfile) -> dict[str, Any]:
        """The board facts the report and ``best.json`` show, for any board."""
        return {
            "name": board.name,
            "title": board.title,
            "clock_hz": board.clock_hz,
            "kernels": board.kernels,
            "sram_budget_bytes": board.usable_sram_bytes,
            "flash_budget_bytes": board.model_flash_budget_bytes,
        }

    def overview(self) -> dict[str, Any]:
        """The summary the report pages and ``pareto.json`` are written from."""
        cfg = self.config
        return {
            "board": self.board_summary(),
            "budgets": cfg.budgets.to_dict(),
            "budgets_text": cfg.budgets.describe(),
            "strategy": cfg.strategy,
            "dataset": cfg.dataset or "digits (built-in)",
            "counts": self.counts(),
            "draws": self.draws(),
            "wall_s": round(self.wall_s, 2),
            "session_wall_s": round(self.session_wall_s or 0.0, 2),
            "sessions": self.sessions,
            "infeasible_train_s": infeasible_train_s(self.trials),
            "stopped_reason": self.stopped_reason,
            "hypervolume": self.hypervolume,
            "best": None if self.best is None else self.best.to_dict(),
            "estimate_note": estimate_note(self.trials),
            "test": self.test,
            "test_text": self.test_text(),
            "layers": self.layers,
            "pareto_table": pareto_table(self.front),
        }

    def text(self) -> str:
        """The terminal summary: counts and time, the front, the hypervolume, the choice."""
        counts = ", ".join(f"{v} {k}" for k, v in self.counts().items())
        wall = f"{self.wall_s:.0f} s"
        if self.sessions > 1 and self.session_wall_s is not None:
            wall += f" over {self.sessions} sessions (this session {self.session_wall_s:.0f} s)"
        stopped = f" ({self.stopped_reason})" if self.stopped_reason else ""
        d = self.draws()
        drawn = (
            f" ({d['trained']} trained of {d['drawn']} drawn)" if d["drawn"] > d["trained"] else ""
        )
        lines = [
            f"\nSearch on {self.board.name}: {counts}{drawn} in {wall}{stopped}",
            f"\nPareto front ({objectives_text(self.config.objectives)}):",
            pareto_table(self.front),
            f"Hypervolume (normalised): {self.hypervolume['normalized']:.4f}",
        ]
        if self.best is not None:
            reason = choice_reason(self.trials, self.best)
            lines.append("\n" + chosen_text(self.best, self.paths.get("best_dir"), reason))
            if self.test_text():
                lines.append(self.test_text() or "")
        lines.append(f"Report: {self.paths.get('report_html')}")
        project = Path(self.paths.get("best_dir") or "") / "project"
        if self.paths.get("best_dir") and (project / "platformio.ini").is_file():
            lines.append(f"Deploy: cd {project} && pio run -t upload && pio device monitor")
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        """Machine-readable summary."""
        return {
            "out_dir": str(self.out_dir),
            "board": self.board.name,
            "config": self.config.to_dict(),
            "counts": self.counts(),
            "draws": self.draws(),
            "best": None if self.best is None else self.best.to_dict(),
            "front": [r.to_dict() for r in self.front],
            "hypervolume": self.hypervolume,
            "infeasible_train_s": infeasible_train_s(self.trials),
            "wall_s": round(self.wall_s, 2),
            "session_wall_s": _round(self.session_wall_s),
            "sessions": self.sessions,
            "stopped_reason": self.stopped_reason,
            "message": self.message,
            "test": self.test,
            "paths": self.paths,
        }


def compute_result(
    store: TrialStore, config: SearchConfig, board: BoardProfile, stopped: str | None
) -> SearchResult:
    """Read the store once and compute the front, the chosen model and the hypervolume.

    The wall time is the store's: every session of this search, written back to it.
    """
    wall_s = store.checkpoint_wall()
    records = store.trials()
    best = choose_best(records)
    return SearchResult(
        out_dir=Path(config.out or "."),
        board=board,
        config=config,
        trials=records,
        front=front_of(records, config.objectives),
        best=best,
        hypervolume=_hypervolume(trial_points(records, config.objectives), config, board),
        wall_s=wall_s,
        session_wall_s=wall_s - store.earlier_wall_s,
        sessions=max(1, store.sessions),
        stopped_reason=stopped,
        message=None if best else no_feasible_message(records, config, board),
    )


def no_feasible_message(
    records: Sequence[TrialRecord], cfg: SearchConfig, board: BoardProfile
) -> str:
    """Say that nothing was feasible, and what the smallest candidates seen need."""
    seen = [r for r in records if r.peak_sram_bytes is not None]
    head = f"No candidate met the limits ({cfg.budgets.describe()}; board {board.name})"
    if not seen:
        return head + ", and none got as far as a cost estimate: see the trial reasons."
    lat = min(seen, key=lambda r: r.latency_ms or 0.0)
    sram = min(seen, key=lambda r: r.peak_sram_bytes or 0)
    flash = min(seen, key=lambda r: r.flash_bytes or 0)
    return (
        f"{head}. Of {len(seen)} candidates costed, the smallest need "
        f"{lat.latency_ms:.2f} ms latency (trial {lat.trial_id}), "
        f"{(sram.peak_sram_bytes or 0) / 1024:.1f} KB peak SRAM (trial {sram.trial_id}), "
        f"{(flash.flash_bytes or 0) / 1024:.1f} KB flash (trial {flash.trial_id}). "
        "Relax the budgets or search smaller families."
    )
