r"""Serving a distributed search's chief: the gRPC server, the welcome, the last words.

The chief's executor (:mod:`mcunas.distributed.executors`) serves its
services with :func:`serving` while the search runs, and :func:`linger`\ s
after the last trial so that connected workers hear the search is over.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator
from typing import Any

import grpc

import mcunas
from mcunas.distributed.auth import CHIEF_ONLY, is_loopback
from mcunas.distributed.chief import ChiefService
from mcunas.distributed.gate import Gate
from mcunas.distributed.server import Door, bind, build_server, patient_servicer
from mcunas.distributed.wire import MAX_MESSAGE_BYTES, SERVICE, identity_sha256, parse_address
from mcunas.errors import UserError
from mcunas.search.settings.config import IDENTITY
from mcunas.search.settings.progress import Progress

__all__ = ["DEFAULT_WORKER_TIMEOUT_S", "POLL_S", "linger", "serving", "welcome"]

DEFAULT_WORKER_TIMEOUT_S = 60.0
# After the last trial: how long the chief keeps answering so that workers hear "stop".
LINGER_S = 10.0
POLL_S = 0.5


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
