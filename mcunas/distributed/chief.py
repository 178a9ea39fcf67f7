"""The chief's side of a distributed search: who is connected, and the one store writer.

:class:`ChiefService` answers ``mcunas.Search/Call`` (see :mod:`.wire`). It admits a
worker only with the same mcunas version, search settings and dataset content;
writes every row a worker sends into the store (nothing else writes it), for a
trial it handed out to that worker only, with every value checked
(:mod:`.checks`: a worker is a client like any other); after each finished
trial runs the search's own bookkeeping (progress line, draw cap, time budget,
failure streak) on the chief's tuner; and hands the trial of a worker that
leaves (``leave``: Ctrl-C, a normal exit) or is silent for ``timeout_s``
(killed, stopped, cut off) back to Keras Tuner's oracle, which gives it to the
next worker that asks (Keras Tuner does not do this by itself).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import mcunas
from mcunas.distributed import checks
from mcunas.distributed.alone import AloneWatch
from mcunas.errors import McunasError
from mcunas.search.results.store import TrialStatus, TrialStore
from mcunas.search.tuner.kt_state import release, requeue, retry_queue, running

__all__ = ["HEARTBEAT_S", "ChiefService", "release", "requeue"]

HEARTBEAT_S = 2.0  # a worker says it is alive this often


class ChiefService:
    """The chief's request handler and worker registry (thread-safe).

    Args:
        store: TrialStore opened with ``threads=True``.
        oracle: the Keras Tuner oracle the chief serves (None: the supernet strategy's jobs).
        models_dir: where trained models are kept.
        welcome: dict, the ``hello`` reply: version, config, hashes.
        after_trial: called with a trial id after each finished trial (bookkeeping), or None.
        note: prints one progress line.
        timeout_s: float, seconds of silence after which a worker's trial is handed back.
    """

    def __init__(
        self,
        store: TrialStore,
        oracle: Any,
        models_dir: Any,
        welcome: dict[str, Any],
        after_trial: Callable[[str], None] | None,
        note: Callable[[str], None],
        timeout_s: float,
    ) -> None:
        self.store, self.oracle, self.models_dir = store, oracle, Path(models_dir)
        self.out_dir = self.models_dir.parent  # the search's folder: nothing is written outside
        self.welcome, self.after_trial, self.note = welcome, after_trial, note
        self.timeout_s = timeout_s
        self.lock = threading.RLock()
        self.seen: dict[str, float] = {}  # worker -> last heard from (monotonic)
        self.verified: set[str] = set()
        self.tokens: dict[str, str] = {}  # worker -> the token of the process that joined
        self.owner: dict[str, str] = {}  # running trial -> its worker
        self.alone: AloneWatch | None = None  # set by the session: stop if no worker comes

    # -- the gRPC method -----------------------------------------------------------
    def handle(self, request: bytes, context: Any = None) -> bytes:
        """One JSON request in, one JSON reply out; errors become ``ok: false``."""
        try:
            payload = json.loads(request)
            method = getattr(self, f"_op_{payload.get('op')}", None)
            if method is None:
                raise McunasError(f"unknown request {payload.get('op')!r}")
            with self.lock:
                reply = {"ok": True, **(method(payload) or {})}
        except McunasError as exc:
            reply = {"ok": False, "error": str(exc)}
        except (ValueError, KeyError, TypeError) as exc:
            reply = {"ok": False, "error": f"malformed request ({exc})"}
        return json.dumps(reply).encode()

    # -- joining -------------------------------------------------------------------
    def _op_hello(self, payload: dict[str, Any]) -> dict[str, Any]:
        return dict(self.welcome)

    def _op_join(self, payload: dict[str, Any]) -> dict[str, Any]:
        name = checks.worker_name(payload["worker"])
        why = self._refusal(payload)
        if why:
            self.note(f"Refused worker {name}: {why}")
            raise McunasError(f"the chief refused this worker: {why}")
        token = str(payload.get("token") or "")
        again = name in self.verified and name in self.seen  # the same process rejoining
        if again and (not token or self.tokens.get(name) != token):
            raise McunasError(f"a worker named {name} is already connected: give --name")
        self.seen[name] = time.monotonic()
        if not again:
            self.verified.add(name)
            self.tokens[name] = token
            self.note(f"Worker {name} joined ({len(self.verified)} connected).")
        return {"heartbeat_s": HEARTBEAT_S}

    def _refusal(self, payload: dict[str, Any]) -> str | None:
        mine = self.welcome
        if payload.get("version") != mcunas.__version__:
            return f"mcunas {payload.get('version')} there, {mcunas.__version__} here"
        if payload.get("identity_sha256") != mine["identity_sha256"]:
            return "its search settings differ from the chief's (board, strategy, budgets...)"
        if payload.get("dataset_sha256") != mine["dataset_sha256"]:
            return "its dataset's content differs from the chief's (hash)"
        if "chief" in str(payload.get("worker", "")):
            return "a worker name may not contain 'chief' (Keras Tuner reserves it)"
        return None

    def _op_heartbeat(self, payload: dict[str, Any]) -> None:
        self._known(payload)

    def _op_leave(self, payload: dict[str, Any]) -> None:
        name = self._known(payload)
        token = self.tokens.get(name)
        if token and payload.get("token") != token:
            raise McunasError(f"only the process that joined as {name} may leave as it")
        del self.seen[name]
        self.verified.discard(name)
        tids = self._hand_back(name)
        then = f": {_goes(tids)} to the next worker." if tids else "."
        self.note(f"Worker {name} left ({len(self.verified)} connected){then}")

    def _known(self, payload: dict[str, Any]) -> str:
        name = payload.get("worker")
        if not isinstance(name, str) or name not in self.verified:
            raise McunasError(f"unknown worker {name}: join first")
        self.seen[name] = time.monotonic()
        return name

    def adopt(self, name: str, trial_id: str) -> None:
        """A trial a worker ran when the chief stopped: kept for it while it may come back."""
        with self.lock:
            self.seen[name] = time.monotonic()
            self.owner[trial_id] = name

    # -- the store -----------------------------------------------------------------
    def _owned(self, payload: dict[str, Any]) -> str:
        name, tid = self._known(payload), checks.trial_id(payload["tid"])
        if self.owner.get(tid) != name:
            raise McunasError(f"trial {tid} was handed to another worker; dropping it here")
        return tid

    def _handed_out(self, name: str, tid: str) -> bool:
        """Whether the chief gave trial ``tid`` to worker ``name`` (its oracle, or a job)."""
        if self.oracle is None:
            return self.owner.get(tid) == name
        trial = running(self.oracle).get(name)
        return trial is not None and str(trial.trial_id) == tid

    def _op_start_trial(self, payload: dict[str, Any]) -> None:
        name, tid = self._known(payload), checks.trial_id(payload["tid"])
        if not self._handed_out(name, tid):
            raise McunasError(f"trial {tid} was handed to another worker (or never to {name})")
        hyper = checks.hyperparameters(payload.get("hyperparameters"))
        values = checks.client_columns(payload.get("values") or {})
        earlier = self.store.get(tid)
        if earlier is not None and earlier.status != TrialStatus.RUNNING:  # never redo one
            if self.oracle is not None:  # or the oracle would hand it to this worker again
                release(self.oracle, name)
            raise McunasError(f"trial {tid} was handed to another worker and has finished")
        self.owner[tid] = name
        self.store.start_trial(tid, hyper, worker=name, **values)

    def _op_update(self, payload: dict[str, Any]) -> None:
        tid = self._owned(payload)
        self.store.update(tid, **checks.client_columns(payload["values"]))

    def _op_record_model(self, payload: dict[str, Any]) -> dict[str, Any]:
        tid = self._owned(payload)
        model = checks.decoded(payload["model"], "model", checks.MAX_MODEL_BYTES)
        values = checks.client_columns(payload["values"])
        path = self.store.record_model(tid, self.models_dir, model, None, **values)
        return {"path": str(path)}

    def _op_finish_trial(self, payload: dict[str, Any]) -> None:
        tid = self._owned(payload)
        values = checks.client_columns({**payload["values"], "status": payload["status"]})
        self.store.finish_trial(tid, **values)
        self.owner.pop(tid, None)
        if self.after_trial is not None:
            self.after_trial(tid)

    def _op_get(self, payload: dict[str, Any]) -> dict[str, Any]:
        self._known(payload)
        rec = self.store.get(checks.trial_id(payload["tid"]))
        return {"row": None if rec is None else rec.to_dict()}

    def _op_trials(self, payload: dict[str, Any]) -> dict[str, Any]:
        self._known(payload)
        status = payload.get("status")
        rows = self.store.trials(None if status is None else TrialStatus(status))
        return {"rows": [r.to_dict() for r in rows]}

    # -- silence -------------------------------------------------------------------
    def check_silence(self) -> None:
        """Hand back the trial of every worker not heard from for ``timeout_s``."""
        now = time.monotonic()
        with self.lock:
            silent = [n for n, t in self.seen.items() if now - t > self.timeout_s]
            for name in silent:
                del self.seen[name]
                self.verified.discard(name)
                tids = self._hand_back(name)
                self.note(
                    f"Worker {name} silent for {self.timeout_s:g} s: "
                    + (f"{_goes(tids)} to the next worker." if tids else "dropped.")
                )
            if self.alone is not None:
                self.alone.check(len(self.verified), self._waiting())

    def _waiting(self) -> list[str]:
        """The work that waits for a worker: trials handed back ("trial 5"), else the next one.

        With nothing handed back and nothing running, a search whose oracle
        still has trials to give waits for its next worker too (every worker
        left between two trials): the chief says so rather than wait silently.
        """
        if self.oracle is None:
            return []
        queued = [f"trial {t}" for t in retry_queue(self.oracle)]
        if queued or running(self.oracle):
            return queued
        wanted = getattr(self.oracle, "max_trials", None) or 0
        left = wanted - len(getattr(self.oracle, "trials", {}))
        return ["the next trial"] if left > 0 else []

    def _hand_back(self, name: str) -> list[str]:
        """The trials ``name`` was running, handed back (it left, or fell silent)."""
        tids = self._take_back(name)
        for tid in tids:
            self.owner.pop(tid, None)
        return tids

    def _take_back(self, name: str) -> list[str]:
        """The trials ``name`` was running, handed back to be run again."""
        tid = requeue(self.oracle, name)
        return [] if tid is None else [tid]

    @property
    def connected(self) -> int:
        """Workers heard from within the timeout."""
        with self.lock:
            return len(self.verified)


def _goes(tids: list[str]) -> str:
    """The words "trial 5 goes", or "trials 5, 6 go"."""
    return f"trial {tids[0]} goes" if len(tids) == 1 else f"trials {', '.join(tids)} go"
