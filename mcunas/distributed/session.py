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
from concurrent import futures
from typing import Any

import grpc

import mcunas
from mcunas.distributed.chief import ChiefService
from mcunas.distributed.wire import CHANNEL_OPTIONS, SERVICE, identity_sha256, parse_address
from mcunas.errors import UserError
from mcunas.search import kt_state
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
                tuner.after_trial(tid)
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
        for name, trial in kt_state.running(oracle).items():
            service.adopt(name, trial.trial_id)
        return service

    def _reconcile_running(self, oracle: Any) -> None:
        """After a chief restart: keep each running trial for the worker that ran it.

        Keras Tuner's reload queues every unfinished trial for a retry; a trial a
        worker was running goes back to that worker's name instead, so the worker
        can finish it when it reconnects (or it is handed on after the timeout).
        """
        self._reconcile(oracle)
        queue = kt_state.retry_queue(oracle)
        for rec in self.store.trials(TrialStatus.RUNNING):
            if rec.worker and rec.trial_id in queue and rec.worker not in kt_state.running(oracle):
                kt_state.assign(oracle, rec.worker, rec.trial_id)

    def _serve(self, service: ChiefService, oracle: Any, tuner: Any, progress: Progress) -> None:
        with serving(self.config.serve or "", service, progress, oracle):
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
                running = bool(kt_state.running(oracle))
                queued = bool(kt_state.retry_queue(oracle))
                full = len(oracle.trials) >= (oracle.max_trials or 0)
            if full and not running and (not queued or tuner.stopped_reason is not None):
                return


def welcome(config: Any) -> dict[str, Any]:
    """The chief's reply to ``hello``: what a worker must match to join."""
    return {
        "version": mcunas.__version__,
        "config": config.to_dict(),
        "identity_sha256": identity_sha256(config.to_dict(), IDENTITY),
        "dataset_sha256": config.dataset_sha256(),
    }


@contextlib.contextmanager
def serving(
    address: str, service: ChiefService, progress: Progress, oracle: Any = None
) -> Iterator[None]:
    """Serve ``service`` (and Keras Tuner's oracle, if given) on ``address`` meanwhile.

    Raises:
        UserError: the address cannot be listened on.
    """
    host, port = parse_address(address, "--serve")
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=16), options=CHANNEL_OPTIONS)
    if oracle is not None:
        kt_state.serve_oracle(server, oracle)
    handler = grpc.unary_unary_rpc_method_handler(service.handle)
    server.add_generic_rpc_handlers(
        (grpc.method_handlers_generic_handler(SERVICE, {"Call": handler}),)
    )
    try:
        bound = server.add_insecure_port(f"{host}:{port}")
    except RuntimeError:
        bound = 0
    if not bound:
        raise UserError(f"--serve {host}:{port}: cannot listen there (in use, or not this host)")
    # keras-tuner 1.4.8 prints a condition's value each time it serialises one (a
    # stray debug print in Parent.to_proto): keep the chief's output to its own lines.
    with open(os.devnull, "w") as null, contextlib.redirect_stdout(null):
        server.start()
        progress.note(
            f"Chief serving on {host}:{port}: start workers with "
            f"`mcunas worker --connect {host}:{port}` (they train; this process only records)."
        )
        try:
            yield
        finally:
            server.stop(grace=2).wait()


def linger(service: ChiefService) -> None:
    """Answer a little longer, so connected workers hear that the search is over."""
    deadline = time.monotonic() + LINGER_S
    while service.connected and time.monotonic() < deadline:
        time.sleep(POLL_S)
