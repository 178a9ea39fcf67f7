"""The supernet search's work as typed jobs and results, and their one wire form.

The strategy (:mod:`mcunas.supernet.strategy`) hands these to an executor;
:class:`mcunas.supernet.work.SupernetWork` does them, in this process or on a
distributed search's worker. Between a chief and its workers they travel as
JSON, converted only by :data:`WIRE` (:class:`SupernetWire`).

Example::

    job = Screen(tid="s0001", width=1.0, values={...}, sha256="ab12...")
    WIRE.job_from_wire(WIRE.job_to_wire(job)) == job
"""

from __future__ import annotations

import base64
import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from mcunas.files import READ_ERRORS
from mcunas.search.job_protocols import Epoch
from mcunas.search.results.store import TrialOrigin

__all__ = [
    "CHECKPOINT",
    "WIRE",
    "Check",
    "checkpoint_epochs",
    "Done",
    "Epoch",
    "Failed",
    "Finetune",
    "Fits",
    "Job",
    "Reference",
    "Result",
    "Screen",
    "Screened",
    "SupernetWire",
    "Train",
    "Trained",
]


@dataclass(frozen=True)
class Check:
    """A subnet's cost check against the board and the budgets (a width probe)."""

    kind: ClassVar[str] = "check"
    width: float
    values: dict[str, Any]


@dataclass(frozen=True)
class Train:
    """Train the supernet of ``width`` on to ``epochs`` (from its checkpoint, if any).

    ``checkpoint`` is the chief's checkpoint as a worker receives it; ``from_chief``
    says the job came over the wire (no checkpoint then means: start afresh).
    """

    kind: ClassVar[str] = "train"
    width: float
    epochs: int
    checkpoint: bytes | None = field(default=None, repr=False)
    from_chief: bool = False


@dataclass(frozen=True)
class Reference:
    """Train and record one rung of the reference design (trial ``tid``)."""

    kind: ClassVar[str] = "reference"
    tid: str
    values: dict[str, Any]
    rung: int
    width: float = 1.0
    origin: str = TrialOrigin.SEED


@dataclass(frozen=True)
class Screen:
    """A subnet's cost check and inherited score (trial ``tid``), on supernet ``sha256``."""

    kind: ClassVar[str] = "screen"
    tid: str
    width: float
    values: dict[str, Any]
    sha256: str


@dataclass(frozen=True)
class Finetune:
    """Extract subnet ``tid`` from supernet ``sha256``, fine-tune, convert, score, measure."""

    kind: ClassVar[str] = "finetune"
    tid: str
    width: float
    values: dict[str, Any]
    sha256: str
    epochs: int


Job = Check | Train | Reference | Screen | Finetune


@dataclass(frozen=True)
class Fits:
    """A cost check's verdict (``reason``: why not, when it does not fit)."""

    fits: bool
    reason: str = ""


@dataclass(frozen=True)
class Trained:
    """The supernet's training: epochs done, or stopped by the time budget."""

    epochs: int = 0
    stopped: bool = False


@dataclass(frozen=True)
class Screened:
    """A screened subnet's (inherited accuracy, loss); None if it did not fit or failed."""

    score: tuple[float, float] | None


@dataclass(frozen=True)
class Done:
    """A job that recorded its own trial row (reference, fine-tuning); or one taken away."""

    dropped: bool = False


@dataclass(frozen=True)
class Failed:
    """A job that could not be done, and why (``worker``: where, on a distributed search)."""

    error: str
    worker: str | None = None


Result = Fits | Trained | Screened | Done | Failed


CHECKPOINT = "supernet/checkpoint.npz"  # the supernet's checkpoint in the search folder

_JOBS: dict[str, type[Any]] = {k.kind: k for k in (Check, Train, Reference, Screen, Finetune)}
_RESULTS: dict[str, type[Any]] = {
    "fits": Fits,
    "trained": Trained,
    "screened": Screened,
    "done": Done,
    "failed": Failed,
}


class SupernetWire:
    """Jobs and results to and from JSON (see :class:`mcunas.search.run.Wire`)."""

    def job_to_wire(self, job: Job) -> dict[str, Any]:
        """The job as JSON with its ``kind`` (a checkpoint as base64)."""
        data = {k: v for k, v in asdict(job).items() if k not in ("checkpoint", "from_chief")}
        if isinstance(job, Train) and job.checkpoint is not None:
            data["checkpoint"] = base64.b64encode(job.checkpoint).decode()
        return {"kind": job.kind, **data}

    def job_from_wire(self, data: dict[str, Any]) -> Job:
        """The typed job of ``data`` (from the chief).

        Raises:
            ValueError: a kind this version does not know.
        """
        data = dict(data)
        kind = data.pop("kind", None)
        data.pop("id", None)
        if kind not in _JOBS:
            raise ValueError(f"unknown job {kind!r} (is this worker's mcunas older?)")
        if kind == Train.kind:
            raw = data.pop("checkpoint", None)
            data.update(checkpoint=base64.b64decode(raw) if raw else None, from_chief=True)
        job: Job = _JOBS[kind](**data)
        return job

    def result_to_wire(self, result: Result) -> dict[str, Any]:
        """The result as JSON with its ``type``."""
        name = next(k for k, v in _RESULTS.items() if isinstance(result, v))
        return {"type": name, **asdict(result)}

    def result_from_wire(self, data: dict[str, Any]) -> Result:
        """The typed result of ``data`` (a worker's; an unknown one is a failure)."""
        data = dict(data)
        kind = _RESULTS.get(data.pop("type", ""))
        if kind is None:
            return Failed(str(data.get("error") or f"unreadable result {data!r}"))
        if kind is Screened and data.get("score") is not None:
            data["score"] = (float(data["score"][0]), float(data["score"][1]))
        result: Result = kind(**data)
        return result

    def failed(self, error: str) -> Failed:
        """The result of a job that could not be done."""
        return Failed(error)

    def trial_ids(self, job: Job) -> tuple[str, ...]:
        """The trial rows ``job`` writes."""
        tid = getattr(job, "tid", None)
        return () if tid is None else (tid,)

    checkpoint = CHECKPOINT  # the supernet's, in the search folder

    def trains(self, kind: str) -> bool:
        """A ``train`` job trains the supernet (the shared checkpoint)."""
        return kind == Train.kind

    def records_worker(self, kind: str) -> bool:
        """A fine-tuning's row names its worker (a screening's is seconds)."""
        return kind == Finetune.kind

    def epochs_done(self, checkpoint: Path) -> int:
        """The supernet epochs ``checkpoint`` holds."""
        return checkpoint_epochs(checkpoint)

    def done_line(self, job: Job) -> str | None:
        """The long jobs' line (a check or screen is seconds)."""
        if isinstance(job, Reference | Finetune):
            return f"Did the chief's {job.kind} job, trial {job.tid}."
        return None


def checkpoint_epochs(path: Path) -> int:
    """The epochs a supernet checkpoint file has done (0 if there is none or it is unreadable)."""
    from mcunas.errors import UserError
    from mcunas.inputs.formats import load_npz

    try:
        data = load_npz(path, "supernet checkpoint", kind="checkpoint")
        return int(json.loads(str(data["meta"]))["done"])
    except UserError:
        return 0
    except READ_ERRORS:
        return 0


WIRE = SupernetWire()
