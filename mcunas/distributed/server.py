"""The chief's gRPC server: both services behind the gate, TLS if asked, with limits.

One adapter for Keras Tuner's service too: :class:`PatientServicer` is its
``OracleServicer`` whose ``CreateTrial`` does not send a worker away while a
trial still runs elsewhere. Keras Tuner's oracle says "stopped" as soon as
every trial has been handed out, not when every trial has ended; a worker that
left then was missing when a killed worker's trial came back to the queue, and
the search waited for good. Instead the worker hears "idle" (Keras Tuner's own
status for "ask again"), after a short hold so its loop asks about once a
second, and takes the trial if it comes back. Its ``UpdateTrial`` and
``EndTrial`` take only a trial running on a worker: Keras Tuner's service
would take any of the oracle's trials from any caller.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent import futures
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc

from mcunas.distributed.alone import DEFAULT_WAIT_S, AloneWatch
from mcunas.distributed.auth import chief_token, server_credentials
from mcunas.distributed.gate import MAX_CONCURRENT_RPCS, THREADS, Gate, server_limits
from mcunas.distributed.wire import parse_address

__all__ = [
    "HOLD_S",
    "Door",
    "bind",
    "build_server",
    "open_door",
    "patient_servicer",
    "running_elsewhere",
]

HOLD_S = 1.0  # how long CreateTrial holds a worker that must wait before it says "idle"
POLL_S = 0.1


def running_elsewhere(oracle: Any, tuner_id: str) -> list[str]:
    """Trial ids running on tuners other than ``tuner_id``, or queued to run again."""
    from mcunas.search.tuner import kt_state

    @kt_state.synchronized
    def look(oracle: Any) -> list[str]:
        running = kt_state.running(oracle)
        others = [t.trial_id for k, t in running.items() if k != tuner_id]
        return others + kt_state.retry_queue(oracle)

    return look(oracle)


def patient_servicer(oracle: Any, note: Callable[[str], None] | None = None) -> Any:
    """Keras Tuner's ``OracleServicer`` for ``oracle``, keeping workers while trials run."""
    from mcunas.search.tuner import kt_state

    stopped, idle = kt_state.TrialStatus.STOPPED, kt_state.TrialStatus.IDLE

    class PatientServicer(kt_state.oracle_servicer_class()):  # type: ignore[misc]
        """``CreateTrial`` answers "idle" instead of "stopped" while others still run."""

        told: set[str] = set()

        def CreateTrial(self, request: Any, context: Any) -> Any:  # noqa: N802 - gRPC's name
            tuner_id, deadline = request.tuner_id, time.monotonic() + HOLD_S
            trial = self.oracle.create_trial(tuner_id)
            others = running_elsewhere(self.oracle, tuner_id)
            while trial.status == stopped and others and time.monotonic() < deadline:
                time.sleep(POLL_S)
                now = running_elsewhere(self.oracle, tuner_id)
                if now != others:  # one ended or came back to the queue: ask the oracle again
                    trial = self.oracle.create_trial(tuner_id)
                    now = running_elsewhere(self.oracle, tuner_id)
                others = now
            if trial.status == stopped and others:
                trial.status = idle  # a fresh trial object: the oracle keeps no stopped one
                if note is not None and request.tuner_id not in self.told:
                    self.told.add(request.tuner_id)
                    note(
                        f"Worker {request.tuner_id} stays: no new trial, but trial "
                        f"{others[0]} still runs elsewhere and may come back."
                    )
            else:
                self.told.discard(request.tuner_id)
            return kt_state.create_trial_response(trial)

        def UpdateTrial(self, request: Any, context: Any) -> Any:  # noqa: N802 - gRPC's name
            _running_only(self.oracle, request.trial_id, context)
            return super().UpdateTrial(request, context)

        def EndTrial(self, request: Any, context: Any) -> Any:  # noqa: N802 - gRPC's name
            _running_only(self.oracle, request.trial.trial_id, context)
            return super().EndTrial(request, context)

    return PatientServicer(oracle)


def _running_only(oracle: Any, trial_id: str, context: Any) -> None:
    """Refuse a Keras Tuner call about a trial no worker runs (a client's, not the oracle's).

    A worker's tuner reports only the trial it was handed; one taken back from it
    is dropped there (see ``on_trial_end``), so an update or end of a trial not
    running anywhere comes from no worker of this search.
    """
    from mcunas.search.tuner import kt_state

    ids = {str(t.trial_id) for t in kt_state.running(oracle).values()}
    if str(trial_id) not in ids:
        context.abort(
            grpc.StatusCode.FAILED_PRECONDITION,
            f"trial {str(trial_id)[:64]!r} is not running on any worker of this chief",
        )


def build_server(
    handlers: list[Any], gate: Gate, max_send_bytes: int, oracle_servicer: Any = None
) -> grpc.Server:
    """A server (not yet bound: see :func:`bind`) with the gate on every call and limits.

    Args:
        handlers: generic RPC handlers (mcunas's ``Search`` service).
        gate: the token check and rate limit.
        max_send_bytes: int, the largest reply.
        oracle_servicer: Keras Tuner's servicer to add, or None.
    """
    server = grpc.server(
        futures.ThreadPoolExecutor(max_workers=THREADS),
        interceptors=(gate,),
        options=server_limits(max_send_bytes),
        maximum_concurrent_rpcs=MAX_CONCURRENT_RPCS,
    )
    if oracle_servicer is not None:
        from mcunas.search.tuner import kt_state

        kt_state.serve_oracle(server, oracle_servicer.oracle, oracle_servicer)
    server.add_generic_rpc_handlers(tuple(handlers))
    return server


def bind(server: grpc.Server, host: str, port: int, tls: tuple[str, str] | None) -> int:
    """Listen on ``host:port`` (TLS with ``tls``); the port, or 0 if it cannot."""
    try:
        if tls is not None:
            return server.add_secure_port(f"{host}:{port}", server_credentials(*tls))
        return server.add_insecure_port(f"{host}:{port}")
    except RuntimeError:
        return 0


@dataclass(frozen=True)
class Door:
    """What a chief's callers must show: its token (or None) and TLS files (or None)."""

    token: str | None
    tls: tuple[str, str] | None
    where: str  # the line that says where the token is (empty without one)


def open_door(config: Any, out_dir: Path, service: Any, note: Callable[[str], None]) -> Door:
    """The chief's door from its settings; also sets ``service``'s watch for no workers.

    Raises:
        UserError: a token or TLS file that cannot be read or made.
    """
    host, _ = parse_address(config.serve or "", "--serve")
    token, where = chief_token(host, config.token_file, out_dir)
    tls = (config.tls_cert, config.tls_key) if config.tls_cert else None
    if tls is not None:
        server_credentials(*tls)  # unreadable files: one line now, not a failed bind
    resume = f"mcunas search --out {out_dir} --resume"
    service.alone = AloneWatch(config.wait_s or DEFAULT_WAIT_S, note, resume, config.serve or "")
    return Door(token, tls, where)
