"""The chief's search session: serve the oracle and the store until the search is done.

``mcunas search --serve HOST:PORT`` runs this in place of the local session. The
chief builds the same oracle and search space as a local search (so ``--resume``
and ``--seed-arch`` work as there), trains nothing, and serves Keras Tuner's
``Oracle`` service and mcunas's ``Search`` service on one port until every
trial is done; then it writes the report and ``best/`` like a local search.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable, Iterator
from typing import Any

import grpc

import mcunas
from mcunas.distributed.auth import CHIEF_ONLY, is_loopback
from mcunas.distributed.chief import ChiefService
from mcunas.distributed.gate import Gate
from mcunas.distributed.server import Door, bind, build_server, open_door, patient_servicer
from mcunas.distributed.wire import MAX_MESSAGE_BYTES, SERVICE, identity_sha256, parse_address
from mcunas.errors import UserError
from mcunas.search.config import IDENTITY
from mcunas.search.progress import Progress
from mcunas.search.session import SearchSession
from mcunas.search.store import TrialStatus

__all__ = ["DEFAULT_WORKER_TIMEOUT_S", "ChiefSession", "linger", "serving", "welcome"]

DEFAULT_WORKER_TIMEOUT_S = 60.0
# After the last trial: how long the chief keeps answering so that workers hear "stop".
LINGER_S = 10.0
POLL_S = 0.5


class ChiefSession(SearchSession):
    """A search whose trials run on workers (see :mod:`mcunas.distributed`)."""

    def run(self, progress: Progress) -> str | None:
        """Serve until the oracle has no trial left to give and none is running."""
        from mcunas.search.oracles import make_oracle
        from mcunas.search.tuner import SearchFatal
        from mcunas.space import FAMILIES, McuSearchSpace

        cfg = self.config
        d = self._load_data()
        space = McuSearchSpace(d.input_shape, d.num_classes, cfg.families or FAMILIES)
        oracle = make_oracle(cfg.strategy, cfg.max_trials, cfg.seed, cfg.epochs)
        seed = self._seed_name(space)
        seeds = self._seed(oracle, space, seed) if seed else []
        tuner = self._tuner(oracle, space, None, progress, seeds)  # the chief trains nothing
        tuner.save()  # keras-tuner's tuner file: what a --resume of the chief reloads
        self._reconcile_running(oracle)
        fatal: list[BaseException] = []

        def after_trial(tid: str) -> None:
            try:
                tuner._after_trial(tid)  # noqa: SLF001 - the local search's own bookkeeping
            except SearchFatal as exc:
                fatal.append(exc.error)
                tuner.stopped_reason = str(exc.error)
                oracle.max_trials = len(oracle.trials)

        service = self._service(oracle, after_trial, progress)
        self._serve(service, oracle, tuner, progress)
        if fatal:
            raise fatal[0]
        return tuner.stopped_reason

    def _service(
        self, oracle: Any, after_trial: Callable[[str], None], progress: Progress
    ) -> ChiefService:
        cfg = self.config
        service = ChiefService(
            self.store,
            oracle,
            self.out_dir / "models",
            welcome(cfg),
            after_trial=after_trial,
            note=progress.note,
            timeout_s=cfg.worker_timeout_s or DEFAULT_WORKER_TIMEOUT_S,
        )
        for name, trial in oracle.ongoing_trials.items():
            service.adopt(name, trial.trial_id)
        return service

    def _reconcile_running(self, oracle: Any) -> None:
        """After a chief restart: keep each running trial for the worker that ran it.

        Keras Tuner's reload queues every unfinished trial for a retry; a trial a
        worker was running goes back to that worker's name instead, so the worker
        can finish it when it reconnects (or it is handed on after the timeout).
        """
        self._reconcile(oracle)
        queue = oracle._retry_queue  # noqa: SLF001 - keras-tuner keeps no public view
        for rec in self.store.trials(TrialStatus.RUNNING):
            if rec.worker and rec.trial_id in queue and rec.worker not in oracle.ongoing_trials:
                queue.remove(rec.trial_id)
                trial = oracle.trials[rec.trial_id]
                oracle.ongoing_trials[rec.worker] = trial
                oracle.tuner_ids.add(rec.worker)

    def _serve(self, service: ChiefService, oracle: Any, tuner: Any, progress: Progress) -> None:
        door = open_door(self.config, self.out_dir, service, progress.note)
        with serving(self.config.serve or "", service, progress, oracle, door):
            self._wait_done(service, oracle, tuner, progress)
            linger(service)

    def _wait_done(
        self, service: ChiefService, oracle: Any, tuner: Any, progress: Progress
    ) -> None:
        while True:
            time.sleep(POLL_S)
            service.check_silence()
            if progress.time_up() and tuner.stopped_reason is None:
                tuner.stopped_reason = "time budget reached"
            if tuner.stopped_reason is not None:
                oracle.max_trials = len(oracle.trials)  # create_trial now says STOPPED
            with service.lock:
                running = bool(oracle.ongoing_trials)
                queued = bool(oracle._retry_queue)  # noqa: SLF001
                full = len(oracle.trials) >= (oracle.max_trials or 0)
            if full and not running and (not queued or tuner.stopped_reason is not None):
                return


def welcome(config: Any) -> dict[str, Any]:
    """The chief's reply to ``hello``: what a worker must match to join."""
    settings = {k: v for k, v in config.to_dict().items() if k not in CHIEF_ONLY}
    return {
        "version": mcunas.__version__,
        "config": settings,
        "identity_sha256": identity_sha256(config.to_dict(), IDENTITY),
        "dataset_sha256": config.dataset_sha256(),
    }


@contextlib.contextmanager
def serving(
    address: str,
    service: ChiefService,
    progress: Progress,
    oracle: Any = None,
    door: Door | None = None,
) -> Iterator[None]:
    """Serve ``service`` (and Keras Tuner's oracle, if given) on ``address`` meanwhile.

    Every call passes the door's gate (token, rate limit); TLS if the door has it.

    Raises:
        UserError: the address cannot be listened on.
    """
    host, port = parse_address(address, "--serve")
    door = door or Door(None, None, "")
    gate = Gate(door.token, progress.note)
    servicer = None if oracle is None else patient_servicer(oracle, progress.note)
    handler = grpc.unary_unary_rpc_method_handler(service.handle)
    generic = grpc.method_handlers_generic_handler(SERVICE, {"Call": handler})
    server = build_server([generic], gate, MAX_MESSAGE_BYTES, servicer)
    if not bind(server, host, port, door.tls):
        raise UserError(f"--serve {host}:{port}: cannot listen there (in use, or not this host)")
    # keras-tuner 1.4.8 prints a condition's value each time it serialises one (a
    # stray debug print in Parent.to_proto): keep the chief's output to its own lines.
    with open(os.devnull, "w") as null, contextlib.redirect_stdout(null):
        server.start()
        progress.note(
            f"Chief serving on {host}:{port}{' (TLS)' if door.tls else ''}: start workers with "
            f"`mcunas worker --connect {host}:{port}` (they train; this process only records)."
        )
        if door.where:
            progress.note(door.where)
        elif not is_loopback(host):
            progress.note("No token: anyone who reaches this port may join.")
        if door.token and not door.tls and not is_loopback(host):
            progress.note("Without --tls-cert/--tls-key the token and data travel unencrypted.")
        try:
            yield
        finally:
            server.stop(grace=2).wait()


def linger(service: ChiefService) -> None:
    """Answer a little longer, so connected workers hear that the search is over."""
    deadline = time.monotonic() + LINGER_S
    while service.connected and time.monotonic() < deadline:
        time.sleep(POLL_S)
