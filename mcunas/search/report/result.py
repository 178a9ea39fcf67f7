"""A search's result, computed once from its trial store: front, chosen model, hypervolume.

The report (:mod:`mcunas.search.report.page`), the export of ``best/``, the
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

from mcunas.boards.catalog import BoardProfile
from mcunas.jsontext import JsonObject
from mcunas.search.finish.choice import (
    ACCURACY_TIE,
    LOSS_TIE,
    choice_reason,
    choose_best,
    chosen_by,
    front_of,
    tie_width,
    trial_points,
)
from mcunas.search.finish.finalists import RescoreSummary
from mcunas.search.finish.refit_records import Refit
from mcunas.search.finish.skip import RESCORE_SKIP_META, RescoreSkip
from mcunas.search.finish.standing import choice_of, chosen_trial, hypervolume_of
from mcunas.search.results.pareto import (
    objectives_text,
)
from mcunas.search.results.record import figure_columns
from mcunas.search.results.store import TrialRecord, TrialStatus, TrialStore
from mcunas.search.results.summary import (
    chosen_text,
    cost_split,
    estimate_note,
    figures_text,
    pareto_table,
    refit_text,
)
from mcunas.search.settings.config import SearchConfig
from mcunas.search.trial.nofit import no_feasible_message

__all__ = [
    "ACCURACY_TIE",
    "LOSS_TIE",
    "SearchResult",
    "choice_reason",
    "choose_best",
    "chosen_by",
    "chosen_trial",
    "compute_result",
    "front_of",
    "infeasible_train_s",
    "no_feasible_message",
    "tie_width",
    "trial_points",
]


def infeasible_train_s(records: Sequence[TrialRecord]) -> float:
    """Seconds of training spent on candidates that turned out infeasible."""
    return round(sum(r.train_s for r in records if r.status == TrialStatus.INFEASIBLE), 3)


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
    hypervolume: JsonObject
    wall_s: float  # every resume of this search (the first run counted)
    resume_wall_s: float | None = None  # this resume only
    resumes: int = 1
    stopped_reason: str | None = None
    message: str | None = None  # why nothing is feasible, when nothing is
    paths: dict[str, str] = field(default_factory=dict)
    test: JsonObject | None = None  # the chosen model on the dataset's test split
    layers: list[JsonObject] | None = None  # the chosen model's per-op rows
    chosen_by: str | None = None  # the rule that chose ``best``, in a few words
    rescore: RescoreSummary | None = None  # the re-scored finalists (search.finish.rescore)
    rescore_skipped: RescoreSkip | None = None  # re-scoring skipped, and why (search.finish.skip)
    refit: Refit | None = None  # the chosen design refitted, or averaged (search.finish.refit)

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

    def refit_text(self) -> str | None:
        """The line that says the exported model is the chosen design refitted, if it is."""
        refit = self.refit
        if not refit:
            return None
        own = refit.figures
        if own is not None:
            return (
                f"an average of {refit.members} members of the same design, "
                f"{refit_text(refit.to_dict())} each ({refit.seconds:.0f} s); "
                f"its own graph: {figures_text(figure_columns(own))}"
            )
        return (
            f"the same design {refit_text(refit.to_dict())} ({refit.seconds:.0f} s); "
            "its latency, SRAM and flash are the trial's (same graph)"
        )

    def finish_dict(self) -> JsonObject:
        """``rescore`` and ``refit`` as JSON (None for none): the summaries' and ``best.json``'s."""
        return {
            "rescore": None if self.rescore is None else self.rescore.to_dict(),
            "rescore_skipped": None
            if self.rescore_skipped is None
            else self.rescore_skipped.to_dict(),
            "refit": None if self.refit is None else self.refit.to_dict(),
        }

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

    def early_stop(self) -> JsonObject:
        """Candidates stopped on a rung and the optimizer steps saved (``--no-early-stop``: off)."""
        stopped = [r for r in self.trials if r.steps_saved]
        saved = sum(r.steps_saved or 0 for r in stopped)
        planned = saved + sum(r.steps or 0 for r in self.trials)
        return {
            "on": self.config.early_stop,
            "stopped": len(stopped),
            "trained": self.draws()["trained"],
            "steps_saved": saved,
            "steps_planned": planned,
        }

    def early_stop_text(self) -> str:
        """The summary's line on candidates stopped early (see :meth:`early_stop`)."""
        e = self.early_stop()
        if not e["on"]:
            return "Early stop: off (--no-early-stop): every candidate trained to its end"
        if not e["stopped"]:
            return (
                f"Early stop: none of {e['trained']} candidates stopped (each could still reach "
                "the front at its cost on its rungs)"
            )
        share = 100 * e["steps_saved"] / max(1, e["steps_planned"])
        return (
            f"Early stop: {e['stopped']} of {e['trained']} candidates stopped on a rung (their "
            "curves could not reach a trained trial that costs no more); "
            f"{e['steps_saved']:,} of {e['steps_planned']:,} optimizer steps saved ({share:.0f}%)"
        )

    def board_summary(self) -> JsonObject:
        """The board facts the report and ``best.json`` show."""
        return self.board_summary_of(self.board)

    @staticmethod
    def board_summary_of(board: BoardProfile) -> JsonObject:
        """The board facts the report and ``best.json`` show, for any board."""
        return {
            "name": board.name,
            "title": board.title,
            "clock_hz": board.clock_hz,
            "kernels": board.kernels,
            "sram_budget_bytes": board.usable_sram_bytes,
            "flash_budget_bytes": board.model_flash_budget_bytes,
        }

    def overview(self) -> JsonObject:
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
            "session_wall_s": round(self.resume_wall_s or 0.0, 2),
            "sessions": self.resumes,
            "infeasible_train_s": infeasible_train_s(self.trials),
            "stopped_reason": self.stopped_reason,
            "early_stop": self.early_stop(),
            "early_stop_text": self.early_stop_text(),
            "hypervolume": self.hypervolume,
            "best": None if self.best is None else self.best.to_dict(),
            "cost_split": None if self.best is None else cost_split(self.best),
            "chosen_by": self.chosen_by,
            **self.finish_dict(),
            "refit_text": self.refit_text(),
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
        if self.resumes > 1 and self.resume_wall_s is not None:
            wall += f" over {self.resumes} resumes (this one {self.resume_wall_s:.0f} s)"
        stopped = f" ({self.stopped_reason})" if self.stopped_reason else ""
        d = self.draws()
        drawn = (
            f" ({d['trained']} trained of {d['drawn']} drawn)" if d["drawn"] > d["trained"] else ""
        )
        lines = [
            f"\nSearch on {self.board.name}: {counts}{drawn} in {wall}{stopped}",
            self.early_stop_text(),
            f"\nPareto front ({objectives_text(self.config.objectives)}):",
            pareto_table(self.front),
            f"Hypervolume (normalised): {self.hypervolume['normalized']:.4f}",
        ]
        if self.best is not None:
            if self.rescore:
                lines.append("\n" + self.rescore.text)
            elif self.rescore_skipped:
                lines.append("\n" + self.rescore_skipped.text)
            lines.append("\n" + chosen_text(self.best, self.paths.get("best_dir"), self.chosen_by))
            if self.refit_text():
                lines.append(f"  exported model: {self.refit_text()}")
            if self.test_text():
                lines.append(self.test_text() or "")
        lines.append(f"Report: {self.paths.get('report_html')}")
        project = Path(self.paths.get("best_dir") or "") / "project"
        if self.paths.get("best_dir") and (project / "platformio.ini").is_file():
            lines.append(f"Deploy: cd {project} && pio run -t upload && pio device monitor")
        return "\n".join(lines)

    def to_dict(self) -> JsonObject:
        """Machine-readable summary."""
        return {
            "out_dir": str(self.out_dir),
            "board": self.board.name,
            "config": self.config.to_dict(),
            "counts": self.counts(),
            "draws": self.draws(),
            "best": None if self.best is None else self.best.to_dict(),
            "cost_split": None if self.best is None else cost_split(self.best),
            "chosen_by": self.chosen_by,
            **self.finish_dict(),
            "front": [r.to_dict() for r in self.front],
            "hypervolume": self.hypervolume,
            "infeasible_train_s": infeasible_train_s(self.trials),
            "early_stop": self.early_stop(),
            "wall_s": round(self.wall_s, 2),
            "session_wall_s": _round(self.resume_wall_s),
            "sessions": self.resumes,
            "stopped_reason": self.stopped_reason,
            "message": self.message,
            "test": self.test,
            "paths": self.paths,
        }


def compute_result(
    store: TrialStore, config: SearchConfig, board: BoardProfile, stopped: str | None
) -> SearchResult:
    """Read the store once and compute the front, the chosen model and the hypervolume.

    The wall time is the store's: every resume of this search, written back to it.
    """
    wall_s = store.checkpoint_wall()
    records = store.trials()
    best, rule, rescore = choice_of(store, records, config)
    return SearchResult(
        out_dir=Path(config.out or "."),
        board=board,
        config=config,
        trials=records,
        front=front_of(records, config.objectives),
        best=best,
        hypervolume=hypervolume_of(trial_points(records, config.objectives), config, board),
        wall_s=wall_s,
        resume_wall_s=wall_s - store.earlier_wall_s,
        resumes=max(1, store.resumes),
        stopped_reason=stopped,
        message=None if best else no_feasible_message(records, config, board),
        chosen_by=rule,
        rescore=rescore,
        rescore_skipped=None
        if rescore
        else RescoreSkip.from_dict(store.get_meta(RESCORE_SKIP_META)),
    )
