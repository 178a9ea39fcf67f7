"""What finishing a search keeps, as values: re-scoring's runs, the refit, the average.

The store keeps each in its meta as plain JSON (``rescore`` and ``refit``, the
shape older stores have, so they resume); :meth:`to_dict` writes that shape
and :meth:`from_dict` reads it, missing keys of older versions included. The
result, the summary, ``best.json`` and the export read these types.

Example::

    state = Rescore.from_dict(store.get_meta(RESCORE_META))
    state.rescored("06").mean if state else None
    refit = Refit.from_dict(store.get_meta(REFIT_META))
    refit.figures  # an average's own Figures, or None (the trial's stand)
"""

from __future__ import annotations

import dataclasses
import math
import statistics
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from mcunas.figures import Figures
from mcunas.search.results.record import figure_columns

__all__ = [
    "REFIT_META",
    "RESCORE_META",
    "Ensemble",
    "Plan",
    "Refit",
    "Rescore",
    "RescoreRun",
    "Rescored",
    "figures_of_columns",
]

RESCORE_META = "rescore"  # the store's meta key for the re-scoring runs
REFIT_META = "refit"  # the store's meta key for the chosen trial's refit


@dataclass(frozen=True)
class Plan:
    """How finalists are re-scored: ``kfold`` (``runs`` folds) or ``seeds`` (``runs`` seeds)."""

    method: str
    runs: int

    def describe(self) -> str:
        """``5-fold cross-validation`` or ``3 seeds``."""
        if self.method == "kfold":
            return f"{self.runs}-fold cross-validation"
        return f"{self.runs} training seeds"


@dataclass(frozen=True)
class Rescored:
    """One finalist's re-scored runs: INT8 accuracies and losses, and the seconds they took."""

    trial_id: str
    accuracies: tuple[float, ...]
    losses: tuple[float, ...]
    seconds: float

    @property
    def mean(self) -> float:
        """Mean INT8 accuracy over the runs."""
        return statistics.fmean(self.accuracies)

    @property
    def stderr(self) -> float:
        """Standard error of the mean (0 with one run)."""
        n = len(self.accuracies)
        return statistics.stdev(self.accuracies) / math.sqrt(n) if n > 1 else 0.0

    def text(self, reference: bool = False) -> str:
        """``trial 06 97.8 +/- 0.6%`` (mean +/- standard error); ``trial 00 (reference) ...``."""
        name = f"trial {self.trial_id}" + (" (reference)" if reference else "")
        return f"{name} {100 * self.mean:.1f} +/- {100 * self.stderr:.1f}%"

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready summary of the runs."""
        return {
            "trial_id": self.trial_id,
            "mean_accuracy": round(self.mean, 6),
            "stderr": round(self.stderr, 6),
            "accuracies": [round(a, 6) for a in self.accuracies],
            "mean_loss": round(statistics.fmean(self.losses), 6) if self.losses else None,
            "seconds": round(self.seconds, 2),
        }


@dataclass(frozen=True)
class RescoreRun:
    """One finished run of one finalist: INT8 accuracy and loss, seconds, validation samples."""

    accuracy: float
    loss: float | None = None
    seconds: float = 0.0
    samples: int | None = None  # older stores did not keep it

    def to_dict(self) -> dict[str, Any]:
        """The run as the store keeps it."""
        out: dict[str, Any] = {"accuracy": self.accuracy, "loss": self.loss}
        out["seconds"] = self.seconds
        if self.samples is not None:
            out["samples"] = self.samples
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RescoreRun:
        """Inverse of :meth:`to_dict`."""
        loss, samples = data.get("loss"), data.get("samples")
        return cls(
            float(data["accuracy"]),
            None if loss is None else float(loss),
            float(data.get("seconds", 0.0)),
            None if samples is None else int(samples),
        )


@dataclass(frozen=True)
class Rescore:
    """Re-scoring as stored: its plan and seed, the finalists, their runs and failures.

    ``runs`` maps a trial id to its finished runs by run index (as text, as stored);
    ``failed`` a trial id to why it left the tie. Runs made another way (method,
    count, seed) are not carried over (:meth:`fresh`).
    """

    method: str
    planned: int
    seed: int
    finalists: tuple[str, ...] = ()
    runs: Mapping[str, Mapping[str, RescoreRun]] = field(default_factory=dict)
    failed: Mapping[str, str] = field(default_factory=dict)

    @property
    def plan(self) -> Plan:
        """The plan the runs follow."""
        return Plan(self.method, self.planned)

    @classmethod
    def fresh(
        cls, stored: Rescore | None, plan: Plan, seed: int, finalists: tuple[str, ...]
    ) -> Rescore:
        """These finalists' state: ``stored``'s runs when made the same way, else none."""
        same = stored is not None and (stored.method, stored.planned, stored.seed) == (
            plan.method,
            plan.runs,
            seed,
        )
        runs = dict(stored.runs) if same and stored else {}
        runs |= {tid: runs.get(tid, {}) for tid in finalists}
        failed = dict(stored.failed) if same and stored else {}
        return cls(plan.method, plan.runs, seed, finalists, runs, failed)

    def done(self, trial_id: str, run: int) -> bool:
        """Whether run ``run`` of ``trial_id`` is finished, or the trial left the tie."""
        return str(run) in self.runs.get(trial_id, {}) or trial_id in self.failed

    def with_run(self, trial_id: str, run: int, result: RescoreRun) -> Rescore:
        """The state with one more finished run."""
        runs = {**self.runs, trial_id: {**self.runs.get(trial_id, {}), str(run): result}}
        return dataclasses.replace(self, runs=runs)

    def with_failure(self, trial_id: str, why: str) -> Rescore:
        """The state with ``trial_id`` out of the tie, and why."""
        return dataclasses.replace(self, failed={**self.failed, trial_id: why})

    def rescored(self, trial_id: str) -> Rescored | None:
        """A finalist's finished runs (None without any)."""
        runs = self.runs.get(trial_id) or {}
        done = [runs[k] for k in sorted(runs, key=int)]
        if not done:
            return None
        return Rescored(
            trial_id,
            tuple(r.accuracy for r in done),
            tuple(r.loss for r in done if r.loss is not None),
            sum(r.seconds for r in done),
        )

    def to_dict(self) -> dict[str, Any]:
        """The store's ``rescore`` meta."""
        return {
            "method": self.method,
            "planned": self.planned,
            "seed": self.seed,
            "finalists": list(self.finalists),
            "runs": {
                tid: {k: r.to_dict() for k, r in runs.items()} for tid, runs in self.runs.items()
            },
            "failed": dict(self.failed),
        }

    @classmethod
    def from_dict(cls, data: Any) -> Rescore | None:
        """The stored state; None for none (or the empty one a dropped re-scoring leaves)."""
        if isinstance(data, Rescore):
            return data
        if not isinstance(data, Mapping) or not (data.get("finalists") or data.get("runs")):
            return None
        runs = {
            str(tid): {str(k): RescoreRun.from_dict(r) for k, r in (done or {}).items()}
            for tid, done in (data.get("runs") or {}).items()
        }
        return cls(
            str(data.get("method") or ""),
            int(data.get("planned") or 0),
            int(data.get("seed") or 0),
            tuple(str(t) for t in data.get("finalists") or ()),
            runs,
            {str(k): str(v) for k, v in (data.get("failed") or {}).items()},
        )


def figures_of_columns(columns: Mapping[str, Any]) -> Figures:
    """The :class:`Figures` a trial row's figure columns were written from.

    Inverse of :func:`mcunas.search.results.record.figure_columns` for the figures an
    average keeps (its front-end share back in ``details["cost_split"]``).
    """
    details: dict[str, Any] = {}
    if columns.get("frontend_latency_ms") is not None:
        front = {
            "latency_ms": columns["frontend_latency_ms"],
            "sram_bytes": columns.get("frontend_sram_bytes"),
            "flash_bytes": columns.get("frontend_flash_bytes"),
            "source": columns.get("frontend_source"),
        }
        if columns.get("frontend_energy_uj") is not None:
            front["energy_uj"] = columns["frontend_energy_uj"]
        details["cost_split"] = {"frontend": front}
    return Figures(
        source=str(columns.get("source") or ""),
        estimated=bool(columns.get("estimated")),
        latency_ms=float(columns["latency_ms"]),
        arena_bytes=int(columns["arena_bytes"]),
        peak_sram_bytes=int(columns["peak_sram_bytes"]),
        flash_bytes=int(columns["flash_bytes"]),
        latency_error_pct=columns.get("latency_error_pct"),
        sim_latency_ms=columns.get("sim_latency_ms"),
        macs=columns.get("macs"),
        energy_uj=columns.get("energy_uj"),
        energy_error_pct=columns.get("energy_error_pct"),
        energy_source=columns.get("energy_source") or "",
        details=details,
    )


@dataclass(frozen=True)
class Ensemble:
    """Refits of the chosen design averaged: how many, and the average's own figures.

    ``figures`` None: no average fitted, the refit alone (``members`` 1) is exported.
    """

    members: int
    figures: Figures | None = None

    def to_dict(self) -> dict[str, Any]:
        """Its part of the store's ``refit`` meta (the figures as a trial row's columns)."""
        if self.figures is None:
            return {"members": self.members}
        return {"members": self.members, "figures": figure_columns(self.figures)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Ensemble | None:
        """The ensemble part of a ``refit`` meta; None when no members were planned."""
        if data.get("members") is None:
            return None
        own = data.get("figures")
        return cls(int(data["members"]), figures_of_columns(own) if own else None)


@dataclass(frozen=True)
class Refit:
    """The chosen design refitted on every sample, as stored (see :mod:`.refit`).

    Its key (``trial_id``, ``seed``, ``epochs``, ``distill``, ``members_planned``)
    says which choice it is the refit of; ``ensemble`` is the average of members
    when more than one was planned.
    """

    trial_id: str
    seed: int
    epochs: int
    distill: bool
    members_planned: int
    model_path: str
    model_sha256: str
    samples: int
    steps: int = 0
    seconds: float = 0.0
    teacher: str | None = None
    ensemble: Ensemble | None = None

    @property
    def figures(self) -> Figures | None:
        """The exported graph's own figures (an average's); None: the trial's stand."""
        return None if self.ensemble is None else self.ensemble.figures

    @property
    def members(self) -> int:
        """How many refits the exported model averages (1: the refit alone)."""
        return 1 if self.ensemble is None else self.ensemble.members

    def to_dict(self) -> dict[str, Any]:
        """The store's ``refit`` meta (and ``best.json``'s ``refit``)."""
        out: dict[str, Any] = {
            "trial_id": self.trial_id,
            "seed": self.seed,
            "epochs": self.epochs,
            "distill": self.distill,
            "members_planned": self.members_planned,
            "model_path": self.model_path,
            "model_sha256": self.model_sha256,
            "samples": self.samples,
            "steps": self.steps,
            "seconds": self.seconds,
        }
        if self.ensemble is not None:
            out |= self.ensemble.to_dict()
        return out | {"teacher": self.teacher}

    @classmethod
    def from_dict(cls, data: Any) -> Refit | None:
        """The stored refit (keys an older version did not write take their defaults)."""
        if isinstance(data, Refit):
            return data
        if not isinstance(data, Mapping) or not data:
            return None
        return cls(
            trial_id=str(data.get("trial_id", "")),
            seed=int(data.get("seed") or 0),
            epochs=int(data.get("epochs") or 0),
            distill=bool(data.get("distill", False)),
            members_planned=int(data.get("members_planned") or 1),
            model_path=str(data.get("model_path", "")),
            model_sha256=str(data.get("model_sha256", "")),
            samples=int(data.get("samples") or 0),
            steps=int(data.get("steps") or 0),
            seconds=float(data.get("seconds") or 0.0),
            teacher=data.get("teacher"),
            ensemble=Ensemble.from_dict(data),
        )
