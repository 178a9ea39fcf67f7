"""A distributed ``--strategy supernet`` search: the chief plans, workers do the work.

The chief runs the supernet search of :mod:`mcunas.supernet.session` (its
width choice, its evolution, its choice of subnets to fine-tune, its store,
report and ``best/``), but every piece of work goes to workers as a job of
the :class:`~mcunas.distributed.jobs.JobBoard`:

- ``check``: one width probe, a subnet's cost check (board and budgets);
- ``train``: the supernet's training. The worker sends the checkpoint after
  every epoch and the chief keeps it in ``<out>/supernet/`` as a local search
  does, so a worker lost mid-training hands on from its last epoch, and a
  chief resumed with ``--resume`` trains on from there too;
- ``screen``: one subnet's cost check and inherited score (its trial row);
- ``finetune``: one subnet fine-tuned, converted, scored and measured.

Workers fetch the trained supernet once (by its hash) and write their trial
rows through the chief, which alone writes the store. A batch of the
evolution (up to a population) is screened on all workers at once.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mcunas.distributed.chief import ChiefService
from mcunas.distributed.jobs import Job, JobBoard
from mcunas.distributed.server import open_door
from mcunas.distributed.session import DEFAULT_WORKER_TIMEOUT_S, linger, serving, welcome
from mcunas.errors import FatalError
from mcunas.files import write_file
from mcunas.search.progress import Progress
from mcunas.search.store import TrialStatus
from mcunas.supernet.session import ORIGIN, SupernetSession, TimeUp, epoch_line
from mcunas.supernet.spec import Subnet, SupernetSpec, subnet_values
from mcunas.supernet.train import CHECKPOINT, checkpoint_epochs
from mcunas.supernet.trained import REFERENCE_ORIGIN

__all__ = ["SupernetChiefSession", "SupernetService"]

POLL_S = 0.5


class SupernetService(ChiefService):
    """The chief's service with the job board's requests (see the module).

    Args:
        jobs: JobBoard the session submits to.
        checkpoint: Path of the supernet checkpoint the chief keeps.
        on_epoch: called with (epoch, loss, seconds) after each supernet epoch a
            worker reports; returns True to stop the training (time budget).
        others: as :class:`ChiefService` (no oracle, no per-trial hook).
    """

    def __init__(
        self,
        jobs: JobBoard,
        checkpoint: Path,
        on_epoch: Callable[[int, float, float], bool],
        **others: Any,
    ) -> None:
        super().__init__(oracle=None, after_trial=None, **others)
        self.jobs, self.checkpoint, self.on_epoch = jobs, checkpoint, on_epoch

    def _op_next_job(self, payload: dict[str, Any]) -> dict[str, Any]:
        name = self._known(payload)
        if self.jobs.closed:
            return {"done": True}
        job = self.jobs.take(name)
        if job is None:
            return {"wait": POLL_S}
        for tid in job.tids:
            self.owner[tid] = name
        if job.kind == "finetune":
            self.store.update(job.tids[0], worker=name)
        sent = {"id": job.id, "kind": job.kind, **job.payload}
        if job.kind == "train" and self.checkpoint.is_file():
            sent["checkpoint"] = base64.b64encode(self.checkpoint.read_bytes()).decode()
        return {"job": sent}

    def _op_job_done(self, payload: dict[str, Any]) -> None:
        job = self.jobs.finish(self._known(payload), payload["job"], payload["result"])
        for tid in job.tids:
            self.owner.pop(tid, None)

    def _op_checkpoint(self, payload: dict[str, Any]) -> dict[str, Any]:
        self.jobs.owned(self._known(payload), payload["job"])
        write_file(self.checkpoint, base64.b64decode(payload["data"]))
        stop = self.on_epoch(int(payload["epoch"]), float(payload["loss"]), payload["seconds"])
        return {"stop": bool(stop)}

    def _op_supernet(self, payload: dict[str, Any]) -> dict[str, Any]:
        self._known(payload)
        data = self.checkpoint.read_bytes()
        return {"sha256": _sha(data), "data": base64.b64encode(data).decode()}

    def _take_back(self, name: str) -> list[str]:
        lost = self.jobs.release(name)
        if any(job.kind == "train" for job in lost):
            done = checkpoint_epochs(self.checkpoint)
            self.note(f"The supernet's training goes to the next worker, after epoch {done}.")
        return [tid for job in lost for tid in job.tids]

    def _waiting(self) -> list[str]:
        return [f"{job.kind} job {job.id}" for job in self.jobs.handed_back()]


@dataclass(frozen=True)
class _Trained:
    """The trained supernet, as workers fetch it: its checkpoint's hash."""

    sha256: str


class SupernetChiefSession(SupernetSession):
    """``--strategy supernet --serve``: the supernet search with its work on workers."""

    def run(self, progress: Progress) -> str | None:
        """Serve the job board while the supernet search runs; its stop reason, if any."""
        cfg = self.config
        self.progress, self.jobs = progress, JobBoard()
        self._epochs, self._seconds = cfg.supernet_plan[0], []
        self.service = SupernetService(
            self.jobs,
            self.out_dir / CHECKPOINT,
            self._epoch_done,
            store=self.store,
            models_dir=self.out_dir / "models",
            welcome=welcome(cfg),
            note=progress.note,
            timeout_s=cfg.worker_timeout_s or DEFAULT_WORKER_TIMEOUT_S,
        )
        door = open_door(cfg, self.out_dir, self.service, progress.note)
        with serving(cfg.serve or "", self.service, progress, door=door):
            try:
                return super().run(progress)
            finally:
                self.jobs.close()
                linger(self.service)

    def _components(self, families: tuple[str, ...] | None = None) -> tuple[Any, Any, Any]:
        """The search space only: the chief builds, trains and measures nothing."""
        from mcunas.space import McuSearchSpace

        d = self.dataset
        space = McuSearchSpace(d.input_shape, d.num_classes, families or ("stages",))
        return space, None, lambda: None

    # -- the stages' work, as jobs ---------------------------------------------------
    def _fit_flags(self, spec: SupernetSpec, nets: list[Subnet]) -> list[bool]:
        ids = [self.jobs.submit("check", self._about(spec, net)) for net in nets]
        results = self._gather(ids)
        return [bool(results[i].result.get("fits")) for i in ids]  # type: ignore[union-attr]

    def _supernet(self, epochs: int, progress: Progress) -> Any | None:
        path = self.out_dir / CHECKPOINT
        done = checkpoint_epochs(path)
        if done < epochs:
            if done:
                progress.note(f"Supernet: resumed after epoch {done}/{epochs}.")
            job = self.jobs.submit("train", {"width": self.spec.width, "epochs": epochs})
            result = self._gather([job], progress=progress)[job].result or {}
            if result.get("error"):
                raise FatalError(f"the supernet's training failed on a worker: {result['error']}")
            if result.get("stopped") or result.get("cancelled"):
                return None
        return _Trained(_sha(path.read_bytes()))

    def _reference_rung(self, tid: str, values: dict[str, Any], rung: int) -> None:
        about = {"width": 1.0, "tid": tid, "values": values, "rung": rung}
        job = self.jobs.submit("reference", {**about, "origin": REFERENCE_ORIGIN}, tids=(tid,))
        self._failed(self._gather([job], progress=self.progress)[job])

    def _epoch_done(self, epoch: int, loss: float, took: float) -> bool:
        epoch_line(self.progress, self._epochs, epoch, loss, took, self._seconds)
        return self.progress.time_up() and epoch < self._epochs

    def _screen_many(
        self,
        todo: list[tuple[Subnet, str]],
        scored: Callable[[tuple[float, float] | None], None],
        progress: Progress,
    ) -> list[tuple[float, float] | None]:
        if progress.time_up():
            raise TimeUp
        ids = {}
        for net, tid in todo:
            about = self._about(self.spec, net, sha=self.scorer.sha256, tid=tid)
            ids[self.jobs.submit("screen", about, tids=(tid,))] = tid
        results: dict[str, tuple[float, float] | None] = {}

        def finished(job: Job) -> None:
            tid, outcome = ids[job.id], job.result or {}
            value = outcome.get("result")
            results[tid] = None if value is None else (float(value[0]), float(value[1]))
            self._failed(job)
            scored(results[tid])

        if _cancelled(self._gather(list(ids), finished, progress)):
            raise TimeUp
        return [results[tid] for _, tid in todo]

    def _finetune_many(
        self,
        epochs: int,
        pending: list[tuple[str, Subnet]],
        done: Callable[[str], None],
        progress: Progress,
    ) -> str | None:
        ids = {}
        for tid, net in pending:
            about = self._about(self.spec, net, sha=self.scorer.sha256, tid=tid, epochs=epochs)
            ids[self.jobs.submit("finetune", about, tids=(tid,))] = tid

        def finished(job: Job) -> None:
            if not (job.result or {}).get("cancelled"):
                self._failed(job)
                done(ids[job.id])

        if _cancelled(self._gather(list(ids), finished, progress)):
            return "time budget reached while fine-tuning (--resume continues)"
        return None

    # -- waiting for workers ---------------------------------------------------------
    def _gather(
        self,
        ids: list[int],
        finished: Callable[[Job], None] | None = None,
        progress: Progress | None = None,
    ) -> dict[int, Job]:
        """Wait for every job of ``ids``, calling ``finished`` on each as it ends.

        Meanwhile silent workers lose their jobs to the others. With ``progress``,
        a time budget that runs out cancels the jobs no worker has taken yet
        (their result is ``{"cancelled": True}``); those running finish.
        """
        left, seen = set(ids), {}
        while left:
            for job in self.jobs.wait(left, POLL_S):
                left.discard(job.id)
                seen[job.id] = job
                if finished is not None:
                    finished(job)
            self.service.check_silence()
            if progress is not None and progress.time_up():
                self.jobs.cancel_waiting()
        return seen

    def _failed(self, job: Job) -> None:
        """A job a worker could not do: its trial rows end as failed, with why."""
        error = (job.result or {}).get("error")
        if not error:
            return
        open_ = (TrialStatus.RUNNING, TrialStatus.SCREENED if job.kind == "finetune" else None)
        for tid in job.tids:
            rec = self.store.get(tid)
            if rec is None:
                values, origin = job.payload.get("values") or {}, job.payload.get("origin", ORIGIN)
                self.store.start_trial(tid, values, origin=origin)
            if rec is None or rec.status in open_:
                self._end(tid, TrialStatus.FAILED, f"on worker {job.taken[-1]}: {error}")

    @staticmethod
    def _about(spec: SupernetSpec, net: Subnet, **more: Any) -> dict[str, Any]:
        return {"width": spec.width, "values": subnet_values(spec, net), **more}


def _cancelled(jobs: dict[int, Job]) -> bool:
    """Whether the time budget cancelled any of ``jobs``."""
    return any((job.result or {}).get("cancelled") for job in jobs.values())


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()
