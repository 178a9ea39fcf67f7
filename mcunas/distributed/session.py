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
from concurrent import futures
from typing import Any

import grpc

import mcunas
import mcunas.search.kt_state as kt_state
from mcunas.distributed.chief import ChiefService
from mcunas.distributed.wire import CHANNEL_OPTIONS, SERVICE, identity_sha256, parse_address
from mcunas.errors import UserError
from mcunas.search.config import IDENTITY
from mcunas.search.progress import Progress

__all__ = ["DEFAULT_WORKER_TIMEOUT_S", "POLL_S", "linger", "serving", "welcome"]

DEFAULT_WORKER_TIMEOUT_S = 60.0
# After the last trial: how long the chief keeps answering so that workers hear "stop".
LINGER_S = 10.0
POLL_S = 0.5


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
