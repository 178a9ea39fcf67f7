"""A strategy's jobs on a distributed search's workers: the chief's job board and service.

The chief runs the strategy's plan (the supernet's: its width choice, its
evolution, its choice of subnets to fine-tune, its store, report and
``best/``), but every piece of work goes to workers as a typed job on the
:class:`~mcunas.distributed.jobs.JobBoard`, converted by the strategy's
:class:`~mcunas.search.job_protocols.Wire`, which also says what this module
needs to know of the jobs:

- a job that *trains* the shared checkpoint (the supernet's ``train``): the
  worker sends the checkpoint after every epoch and the chief keeps it in the
  folder (``wire.checkpoint``) as a local search does, so a worker lost
  mid-training hands on from its last epoch, and a chief resumed with
  ``--resume`` trains on from there too;
- a job whose trial row *records its worker* (the supernet's ``finetune``).

Workers fetch the shared checkpoint once (by its hash) and write their trial
rows through the chief, which alone writes the store. A batch of jobs (the
evolution's population) runs on all workers at once.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from mcunas.distributed import checks
from mcunas.distributed.chief import ChiefService
from mcunas.distributed.jobs import Job, JobBoard
from mcunas.distributed.server import open_door
from mcunas.distributed.session import DEFAULT_WORKER_TIMEOUT_S, linger, serving, welcome
from mcunas.files import write_file
from mcunas.search.job_protocols import Epoch
from mcunas.search.run import SearchRun, Wire
from mcunas.search.settings.progress import Progress

__all__ = ["ChiefJobs", "SupernetService", "chief_jobs"]

POLL_S = 0.5


class SupernetService(ChiefService):
    """The chief's service with the job board's requests (see the module).

    Args:
        jobs: JobBoard the session submits to.
        wire: the strategy's wire (which job kinds train the checkpoint or name their worker).
        checkpoint: Path of the shared checkpoint the chief keeps.
        on_epoch: called with (epoch, loss, seconds) after each supernet epoch a
            worker reports; returns True to stop the training (time budget).
        others: as :class:`ChiefService` (no oracle, no per-trial hook).
    """

    def __init__(
        self,
        jobs: JobBoard,
        checkpoint: Path,
        on_epoch: Callable[[int, float, float], bool],
        *,
        wire: Wire,
        **others: Any,
    ) -> None:
        super().__init__(oracle=None, after_trial=None, **others)
        self.jobs, self.wire, self.checkpoint, self.on_epoch = jobs, wire, checkpoint, on_epoch

    def _op_next_job(self, payload: dict[str, Any]) -> dict[str, Any]:
        name = self._known(payload)
        if self.jobs.closed:
            return {"done": True}
        job = self.jobs.take(name)
        if job is None:
            return {"wait": POLL_S}
        for tid in job.tids:
            self.owner[tid] = name
        if self.wire.records_worker(job.kind):
            self.store.update(job.tids[0], worker=name)
        sent = {"id": job.id, "kind": job.kind, **job.payload}
        if self.wire.trains(job.kind) and self.checkpoint.is_file():
            sent["checkpoint"] = base64.b64encode(self.checkpoint.read_bytes()).decode()
        return {"job": sent}

    def _op_job_done(self, payload: dict[str, Any]) -> None:
        job = self.jobs.finish(self._known(payload), payload["job"], payload["result"])
        for tid in job.tids:
            self.owner.pop(tid, None)

    def _op_checkpoint(self, payload: dict[str, Any]) -> dict[str, Any]:
        self.jobs.owned(self._known(payload), payload["job"])
        data = checks.decoded(payload["data"], "checkpoint", checks.MAX_CHECKPOINT_BYTES)
        epoch = int(checks.finite(payload["epoch"], "epoch", 0, 1e6))
        loss = checks.finite(payload["loss"], "loss", -1e12, 1e12)
        seconds = checks.finite(payload["seconds"], "seconds")
        write_file(self.checkpoint, data, "supernet checkpoint", inside=self.out_dir)
        stop = self.on_epoch(epoch, loss, seconds)
        return {"stop": bool(stop)}

    def _op_supernet(self, payload: dict[str, Any]) -> dict[str, Any]:
        self._known(payload)
        data = self.checkpoint.read_bytes()
        return {"sha256": _sha(data), "data": base64.b64encode(data).decode()}

    def _take_back(self, name: str) -> list[str]:
        lost = self.jobs.release(name)
        if any(self.wire.trains(job.kind) for job in lost):
            done = self.wire.epochs_done(self.checkpoint)
            self.note(f"The supernet's training goes to the next worker, after epoch {done}.")
        return [tid for job in lost for tid in job.tids]

    def _waiting(self) -> list[str]:
        return [f"{job.kind} job {job.id}" for job in self.jobs.handed_back()]


class ChiefJobs:
    """Runs a strategy's typed jobs on the workers through the job board.

    Jobs go out and results come back as JSON, converted by the strategy's
    ``wire`` (:class:`mcunas.search.run.Wire`) here only.
    """

    def __init__(self, board: JobBoard, service: SupernetService, wire: Wire) -> None:
        self.board, self.service, self.wire = board, service, wire
        self.on_epoch: Callable[[Epoch], bool] = lambda epoch: False
        service.on_epoch = self._epoch

    def _epoch(self, epoch: int, loss: float, seconds: float) -> bool:
        return self.on_epoch(Epoch(epoch, loss, seconds, self.service.checkpoint))

    def run(
        self,
        jobs: Sequence[Any],
        *,
        on_done: Callable[[Any, Any], None] | None = None,
        on_epoch: Callable[[Any], bool] | None = None,
        progress: Progress | None = None,
    ) -> list[Any]:
        """Each job's result, in order (see :class:`mcunas.search.run.Jobs`)."""
        self.on_epoch = on_epoch or (lambda epoch: False)
        ids: dict[int, Any] = {}
        for job in jobs:
            data = self.wire.job_to_wire(job)
            kind = data.pop("kind")
            ids[self.board.submit(kind, data, tids=self.wire.trial_ids(job))] = job
        results: dict[int, Any] = {}

        def finished(done: Job) -> None:
            results[done.id] = self._result(done)
            if on_done is not None:
                on_done(ids[done.id], results[done.id])

        self._gather(list(ids), finished, progress)
        return [results[i] for i in ids]

    def _result(self, job: Job) -> Any:
        """The typed result of a finished board job; None if the time budget cancelled it."""
        data = dict(job.result or {})
        if data.get("cancelled"):
            return None
        if data.get("type") == "failed" and job.taken:
            data["worker"] = job.taken[-1]
        try:
            return self.wire.result_from_wire(data)
        except (TypeError, ValueError, KeyError, IndexError) as exc:  # a worker's bad value
            who = job.taken[-1] if job.taken else "a worker"
            return self.wire.failed(f"{who} sent a result that cannot be read ({exc})"[:300])

    def _gather(
        self, ids: list[int], finished: Callable[[Job], None], progress: Progress | None
    ) -> None:
        """Wait for every job of ``ids``, calling ``finished`` on each as it ends.

        Meanwhile silent workers lose their jobs to the others. With ``progress``,
        a time budget that runs out cancels the jobs no worker has taken yet;
        those running finish.
        """
        left = set(ids)
        while left:
            for job in self.board.wait(left, POLL_S):
                left.discard(job.id)
                finished(job)
            self.service.check_silence()
            if progress is not None and progress.time_up():
                self.board.cancel_waiting()


@contextlib.contextmanager
def chief_jobs(run: SearchRun, progress: Progress, wire: Wire) -> Iterator[ChiefJobs]:
    """Serve a job board (and the store) to the workers for the ``with`` block."""
    cfg, board = run.config, JobBoard()
    service = SupernetService(
        board,
        run.out_dir / wire.checkpoint,
        lambda epoch, loss, seconds: False,
        wire=wire,
        store=run.store,
        models_dir=run.out_dir / "models",
        welcome=welcome(cfg),
        note=progress.note,
        timeout_s=cfg.worker_timeout_s or DEFAULT_WORKER_TIMEOUT_S,
    )
    door = open_door(cfg, run.out_dir, service, progress.note)
    with serving(cfg.serve or "", service, progress, door=door):
        try:
            yield ChiefJobs(board, service, wire)
        finally:
            board.close()
            linger(service)


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()
