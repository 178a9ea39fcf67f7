"""Re-scoring's runs as the store keeps them (the refit's: :mod:`.refit_records`).

The store keeps them in its meta as plain JSON (``rescore``, the shape older
stores have, so they resume); :meth:`to_dict` writes that shape and
:meth:`from_dict` reads it, missing keys of older versions included. The
result, the summary, ``best.json`` and the export read these types.

Example::

    state = Rescore.from_dict(store.get_meta(RESCORE_META))
    state.rescored("06").mean if state else None
"""

from __future__ import annotations

import dataclasses
import math
import statistics
from collections.abc import Mapping
from dataclasses import dataclass, field

from mcunas.jsontext import JsonObject

__all__ = [
    "RESCORE_META",
    "Plan",
    "Rescore",
    "RescoreRun",
    "Rescored",
]

RESCORE_META = "rescore"  # the store's meta key for the re-scoring runs


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

    def to_dict(self) -> JsonObject:
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

    def to_dict(self) -> JsonObject:
        """The run as the store keeps it."""
        out: JsonObject = {"accuracy": self.accuracy, "loss": self.loss}
        out["seconds"] = self.seconds
        if self.samples is not None:
            out["samples"] = self.samples
        return out

    @classmethod
    def from_dict(cls, data: JsonObject) -> RescoreRun:
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

    def shared_runs(self) -> frozenset[str]:
        """The runs every finalist still in the tie finished: where their means compare.

        A re-scoring stopped mid-round leaves some finalists one run ahead; their
        extra run waits for a ``--resume`` to give the others theirs.
        """
        sets = [
            frozenset(self.runs.get(tid) or {})
            for tid in self.finalists
            if tid not in self.failed and self.runs.get(tid)
        ]
        return frozenset.intersection(*sets) if sets else frozenset()

    def rescored(self, trial_id: str, only: frozenset[str] | None = None) -> Rescored | None:
        """A finalist's finished runs, or those of them in ``only`` (None without any)."""
        runs = self.runs.get(trial_id) or {}
        done = [runs[k] for k in sorted(runs, key=int) if only is None or k in only]
        if not done:
            return None
        return Rescored(
            trial_id,
            tuple(r.accuracy for r in done),
            tuple(r.loss for r in done if r.loss is not None),
            sum(r.seconds for r in done),
        )

    def to_dict(self) -> JsonObject:
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
    def from_dict(cls, data: object) -> Rescore | None:
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
