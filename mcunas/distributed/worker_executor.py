"""The worker's executor: the chief's trials or jobs, done here with the chief's store.

``mcunas worker`` runs the search's strategy with :class:`WorkerExecutor`: a
Keras Tuner strategy runs the same tuner as a local search with Keras Tuner's
``OracleClient`` for the oracle; a strategy that schedules its own jobs gets
them from the chief's job board, one at a time, and does them with the same
code as a local search. Every row goes to the chief through the
:class:`~mcunas.distributed.remote_store.RemoteStore`.
"""

from __future__ import annotations

import base64
import contextlib
import time
from collections.abc import Callable
from typing import Any

from mcunas.distributed.auth import use_channel
from mcunas.distributed.remote_store import RemoteStore
from mcunas.distributed.wire import RemoteError
from mcunas.errors import TrialTakenAway
from mcunas.search.job_protocols import Epoch
from mcunas.search.run import SearchRun, Strategy, Wire, Work, WorkerRole
from mcunas.search.settings.progress import Progress

__all__ = ["WorkerExecutor"]

POLL_S = 0.5  # how long to wait when the chief has no job yet and names no wait


class WorkerExecutor:
    """Where the work runs on a worker: here, with the chief's oracle or jobs and store.

    Its run's store is the chief's, as this worker writes it (a
    :class:`~mcunas.distributed.remote_store.RemoteStore`).
    """

    name = "worker"
    store: RemoteStore

    def execute(self, strategy: Strategy, run: SearchRun, progress: Progress) -> str | None:
        """The strategy's work, until the chief says the search is over."""
        if not isinstance(run.store, RemoteStore):
            raise TypeError("a worker's run writes the chief's store (a RemoteStore)")
        self.store = run.store
        strategy.work(run, self, progress)
        return None

    def tuner_options(self) -> dict[str, Any]:
        """The worker's tuner: the chief keeps the draw cap, time budget and failure streak."""
        return {
            "warm_start": False,  # parent weights stay on the worker that trained them
            "project_name": "worker",
            "overwrite": True,
        }

    def drive_tuner(
        self, run: SearchRun, tuner: Any, oracle: Any, progress: Progress
    ) -> str | None:
        """Keras Tuner's loop, with the chief's oracle (its ``OracleClient``).

        The oracle's calls go through this worker's one channel to the chief (its
        token on every call, TLS if the chief has it).
        """
        use_channel(tuner.oracle, self.store.channel)
        tuner.search()
        return None

    def serve_jobs(
        self,
        run: SearchRun,
        progress: Progress,
        make_work: Callable[[Callable[[], bytes] | None], Work],
        wire: Wire,
    ) -> None:
        """Ask for jobs and do them until the search is over."""
        work = make_work(self._fetch)
        try:
            while True:
                reply = self.store.request("next_job")
                if reply.get("done"):
                    return
                data = reply.get("job")
                if data is None:
                    time.sleep(float(reply.get("wait", POLL_S)))
                    continue
                result = wire.result_to_wire(self._do(work, wire, data, progress))
                # handed to another worker meanwhile, or a restarted chief's: it is redone there
                with contextlib.suppress(RemoteError, TrialTakenAway):
                    self.store.request("job_done", job=data["id"], result=result)
        finally:
            work.close()

    def retraining(self, run: SearchRun, families: tuple[str, ...] | None) -> None:
        """A worker finishes nothing: its chief re-scores and refits."""
        return None

    def _do(self, work: Work, wire: Wire, data: dict[str, Any], progress: Progress) -> Any:
        """One job from the wire, done; an unreadable one is a failure the chief records."""
        try:
            job = wire.job_from_wire(data)
        except (TypeError, ValueError) as exc:
            return wire.failed(str(exc))
        tids = wire.trial_ids(job)
        for tid in tids:
            self.store.begin(tid)

        def on_epoch(epoch: Epoch) -> bool:
            reply = self.store.request(
                "checkpoint",
                job=data["id"],
                epoch=epoch.epoch,
                loss=epoch.loss,
                seconds=epoch.seconds,
                data=base64.b64encode(epoch.checkpoint.read_bytes()).decode(),
            )
            return bool(reply.get("stop"))

        result = work.do(job, on_epoch)
        line = wire.done_line(job)
        if line is not None:
            progress.note(line)
        return result

    def _fetch(self) -> bytes:
        """The chief's shared model checkpoint (the trained supernet)."""
        return base64.b64decode(self.store.request("supernet")["data"])


_: type[WorkerRole] = WorkerExecutor  # checked against the protocol by type checkers
