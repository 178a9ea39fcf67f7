"""A worker's trial store: every write and read goes to the chief, which alone writes SQLite.

It has the methods of :class:`~mcunas.search.results.store.TrialStore` the tuner uses, so a
worker runs the same trial code as a local search. Each trial row it starts
carries the worker's name, and its finish adds the trial's wall time on this
worker. A call waits up to ``wait_s`` for a chief that is down (restarting with
``--resume``) before it gives up.
"""

from __future__ import annotations

import base64
import threading
import time
from pathlib import Path
from typing import Any

from mcunas.distributed.wire import RemoteError, call
from mcunas.errors import TrialTakenAway
from mcunas.figures import Figures
from mcunas.search.results.store import TrialRecord, TrialStatus, figure_columns, record_from_dict
from mcunas.search.results.trial_store import Store

__all__ = ["RemoteStore", "TrialTakenAway"]


class RemoteStore:
    """The chief's store, seen from a worker.

    Args:
        channel: grpc.Channel to the chief.
        name: str, this worker's name.
        address: str, the chief's address (for messages).
        wait_s: float, how long one call waits for the chief.
        rejoin: callable, run once when the chief no longer knows this worker
            (it restarted); the call is then retried.
    """

    def __init__(
        self, channel: Any, name: str, address: str, wait_s: float, rejoin: Any = None
    ) -> None:
        self.channel, self.name, self.address, self.wait_s = channel, name, address, wait_s
        self._rejoin = rejoin
        self._started: dict[str, float] = {}
        self._lock = threading.Lock()

    def request(self, op: str, **payload: Any) -> dict[str, Any]:
        """One request to the chief as this worker; rejoins once if the chief forgot it.

        Raises:
            TrialTakenAway: the trial was handed to another worker.
            RemoteError: the chief refused the request.
            ChiefUnreachable: the chief did not answer within the wait.
        """
        request = {"op": op, "worker": self.name, **payload}
        try:
            return call(self.channel, request, timeout_s=self.wait_s, address=self.address)
        except RemoteError as exc:
            text = str(exc)
            if "handed to another worker" in text:
                raise TrialTakenAway(text) from None
            if "unknown worker" not in text or self._rejoin is None:
                raise
        self._rejoin()
        return call(self.channel, request, timeout_s=self.wait_s, address=self.address)

    # -- writes ----------------------------------------------------------------
    def start_trial(self, trial_id: str, hyperparameters: dict[str, Any], **values: Any) -> None:
        """Start (or restart) a trial on the chief, as this worker's."""
        self.begin(trial_id)
        self.request("start_trial", tid=trial_id, hyperparameters=hyperparameters, values=values)

    def begin(self, trial_id: str) -> None:
        """Start the clock of ``trial_id``'s wall time on this worker (sent at its finish)."""
        with self._lock:
            self._started[trial_id] = time.monotonic()

    def update(self, trial_id: str, **values: Any) -> None:
        """Set some columns of one trial."""
        if values:
            self.request("update", tid=trial_id, values=_plain(values))

    def record_figures(
        self, trial_id: str, figures: Figures, *, before_training: bool = False
    ) -> None:
        """Record cost figures (see :meth:`TrialStore.record_figures`)."""
        self.update(trial_id, **figure_columns(figures, before_training=before_training))

    def record_model(
        self, trial_id: str, models_dir: Path, model_bytes: bytes, figures: Figures, **values: Any
    ) -> Path:
        """Send the trained model and its figures; the chief keeps the file."""
        columns = {**figure_columns(figures), **values}
        reply = self.request(
            "record_model",
            tid=trial_id,
            model=base64.b64encode(model_bytes).decode(),
            values=_plain(columns),
        )
        return Path(reply.get("path", ""))

    def finish_trial(self, trial_id: str, status: TrialStatus, **values: Any) -> None:
        """End a trial on the chief, with its wall time on this worker."""
        with self._lock:
            started = self._started.pop(trial_id, None)
        if started is not None:
            values["worker_wall_s"] = round(time.monotonic() - started, 3)
        self.request("finish_trial", tid=trial_id, status=str(status), values=_plain(values))

    # -- reads -----------------------------------------------------------------
    def get(self, trial_id: str) -> TrialRecord | None:
        """One trial, or None."""
        row = self.request("get", tid=trial_id).get("row")
        return None if row is None else record_from_dict(row)

    def trials(self, status: TrialStatus | None = None) -> list[TrialRecord]:
        """Every trial (or those of one status), in trial order."""
        rows = self.request("trials", status=None if status is None else str(status))["rows"]
        return [record_from_dict(r) for r in rows]


def _plain(values: dict[str, Any]) -> dict[str, Any]:
    """JSON-ready column values (statuses as text)."""
    return {k: str(v) if isinstance(v, TrialStatus) else v for k, v in values.items()}


_: type[Store] = RemoteStore  # a proxy of the chief's store, checked by type checkers
