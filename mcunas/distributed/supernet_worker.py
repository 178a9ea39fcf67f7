"""A worker of a distributed ``--strategy supernet`` search: ask for jobs, do them, report.

The jobs are those of :mod:`mcunas.distributed.supernet_chief`. The work is
the local supernet session's own (its cost check, training, screening and
fine-tuning), with the chief's store: each trial row a job writes goes to the
chief. The trained supernet is fetched from the chief once per checkpoint.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import time
from typing import Any

from mcunas.distributed.remote_store import RemoteStore
from mcunas.distributed.wire import RemoteError
from mcunas.errors import FatalError, McunasError, TrialTakenAway, describe
from mcunas.files import write_file
from mcunas.search.progress import Progress
from mcunas.supernet.session import SupernetSession, TimeUp
from mcunas.supernet.spec import plan_supernet, subnet_from_values
from mcunas.supernet.train import CHECKPOINT

__all__ = ["SupernetWorkerSession"]


class SupernetWorkerSession(SupernetSession):
    """Runs the chief's jobs with the local session's code until the chief says stop.

    ``store`` is a :class:`~mcunas.distributed.remote_store.RemoteStore`.
    """

    @property
    def _remote(self) -> RemoteStore:
        return self.store  # type: ignore[return-value]

    def run(self, progress: Progress) -> str | None:
        """Ask for jobs and do them until the search is over."""
        self._load_data()
        self._scorer: tuple[str, Any] | None = None
        self.space, self.runner, close = self._components(("stages",))
        try:
            while True:
                reply = self._remote.request("next_job")
                if reply.get("done"):
                    return None
                job = reply.get("job")
                if job is None:
                    time.sleep(float(reply.get("wait", 0.5)))
                    continue
                result = self._do(job, progress)
                # handed to another worker meanwhile, or a restarted chief's: it is redone there
                with contextlib.suppress(RemoteError, TrialTakenAway):
                    self._remote.request("job_done", job=job["id"], result=result)
        finally:
            close()

    def _do(self, job: dict[str, Any], progress: Progress) -> dict[str, Any]:
        """One job's result; an error becomes ``{"error": ...}`` (the chief records it)."""
        d, kind = self.dataset, job["kind"]
        self.spec = spec = plan_supernet(d.input_shape, d.num_classes, float(job["width"]))
        try:
            if kind == "train":
                return self._train(job, progress)
            if kind == "reference":
                self._remote.begin(job["tid"])
                self._reference_rung(job["tid"], job["values"], int(job["rung"]))
                progress.note(f"Trained the reference design, trial {job['tid']}.")
                return {}
            net = subnet_from_values(spec, job["values"])
            if kind == "check":
                return {"fits": self._check(spec, net).status is None}
            self.scorer = self._scorer_for(job["sha"])
            if kind == "screen":
                return {"result": self._screen(net, job["tid"])}
            if kind == "finetune":
                self._remote.begin(job["tid"])
                self._finetune_one(job["tid"], net, int(job["epochs"]))
                progress.note(f"Fine-tuned subnet {job['tid']}.")
                return {}
            return {"error": f"unknown job {kind!r} (is this worker's mcunas older?)"}
        except TrialTakenAway:
            return {"dropped": True}
        except FatalError:
            raise
        except Exception as exc:  # noqa: BLE001 - the chief records the failure, work goes on
            return {"error": describe(exc)}

    def _train(self, job: dict[str, Any], progress: Progress) -> dict[str, Any]:
        """Train the supernet on from the chief's checkpoint, sending it after every epoch."""
        path = self.out_dir / CHECKPOINT
        if job.get("checkpoint"):
            write_file(path, base64.b64decode(job["checkpoint"]))
        else:
            path.unlink(missing_ok=True)
        epochs = int(job["epochs"])
        trainer = self._trainer(epochs)
        done = trainer.load()
        progress.note(f"Training the supernet from epoch {done + 1}/{epochs}.")

        def report(epoch: int, loss: float, took: float) -> None:
            reply = self._remote.request(
                "checkpoint",
                job=job["id"],
                epoch=epoch,
                loss=loss,
                seconds=took,
                data=base64.b64encode(path.read_bytes()).decode(),
            )
            if reply.get("stop"):
                raise TimeUp

        try:
            trainer.train(report)
        except TimeUp:
            return {"stopped": True}
        return {"epochs": trainer.epochs_done}

    def _scorer_for(self, sha256: str) -> Any:
        """The scorer of the chief's trained supernet (fetched once per checkpoint)."""
        from mcunas.supernet.subnets import SubnetScorer

        if self._scorer is not None and self._scorer[0] == sha256:
            return self._scorer[1]
        reply = self._remote.request("supernet")
        data = base64.b64decode(reply["data"])
        if hashlib.sha256(data).hexdigest() != sha256:
            raise McunasError("the chief's supernet changed while this worker fetched it")
        write_file(self.out_dir / CHECKPOINT, data)
        cfg = self.config
        epochs = cfg.supernet_plan[0]
        trainer = self._trainer(epochs)
        trainer.load()
        scorer = SubnetScorer(trainer.model, self.dataset, cfg.seed)
        self._scorer = (sha256, scorer)
        return scorer
