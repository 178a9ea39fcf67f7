"""What chief and workers say to each other: JSON messages over one gRPC method.

The chief serves two gRPC services on one port: Keras Tuner's own ``Oracle``
service (trials: create, update, end) and ``mcunas.Search/Call``, whose
requests and replies are JSON objects (``{"op": ..., ...}``; a reply has
``"ok"`` and, when false, a one-line ``"error"``). Model files travel base64-
encoded inside them (a search's models are kilobytes to a few megabytes).

Example::

    channel = open_channel("10.0.0.5:8470")
    reply = call(channel, {"op": "hello"}, timeout_s=30)
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

import grpc

from mcunas.errors import UserError

__all__ = [
    "CHANNEL_OPTIONS",
    "METHOD",
    "ChiefUnreachable",
    "RemoteError",
    "call",
    "check_serve",
    "identity_sha256",
    "open_channel",
    "parse_address",
]

SERVICE = "mcunas.Search"
METHOD = f"/{SERVICE}/Call"
MAX_MESSAGE_BYTES = 256 * 1024 * 1024
CHANNEL_OPTIONS = [
    ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
    ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
]
_ADDRESS = re.compile(r"^(?P<host>\[[0-9A-Fa-f:]+\]|[A-Za-z0-9_.-]+):(?P<port>\d{1,5})$")


class ChiefUnreachable(UserError):
    """No chief answered at the address within the wait (one line, exit 2)."""


class RemoteError(UserError):
    """The chief refused a request (a worker of another search, a stale trial...)."""


def parse_address(text: str, option: str = "--connect") -> tuple[str, int]:
    """``(host, port)`` of ``HOST:PORT``.

    Raises:
        UserError: not of that form, or a port outside 1-65535.
    """
    match = _ADDRESS.match(text.strip())
    port = int(match["port"]) if match else 0
    if match is None or not 0 < port < 65536:
        raise UserError(f"{option} {text!r}: give HOST:PORT, e.g. 10.0.0.5:8470")
    return match["host"], port


def open_channel(address: str) -> grpc.Channel:
    """An insecure channel to the chief (a private network: see docs/guide/distributed.md)."""
    host, port = parse_address(address)
    return grpc.insecure_channel(f"{host}:{port}", options=CHANNEL_OPTIONS)


def call(
    channel: grpc.Channel, payload: dict[str, Any], *, timeout_s: float, address: str = "chief"
) -> dict[str, Any]:
    """Send one request and return the reply; wait up to ``timeout_s`` for the chief.

    Raises:
        ChiefUnreachable: no answer within ``timeout_s``.
        RemoteError: the chief answered with an error.
    """
    stub = channel.unary_unary(METHOD)
    try:
        raw = stub(json.dumps(payload).encode(), timeout=timeout_s, wait_for_ready=True)
    except grpc.RpcError as exc:
        if exc.code() in (grpc.StatusCode.DEADLINE_EXCEEDED, grpc.StatusCode.UNAVAILABLE):
            raise ChiefUnreachable(
                f"no mcunas chief answers at {address} (waited {timeout_s:g} s): is "
                "`mcunas search --serve` running there, and the port reachable?"
            ) from None
        raise RemoteError(f"chief at {address}: {exc.code().name}: {exc.details()}") from None
    reply = json.loads(raw)
    if not reply.get("ok"):
        raise RemoteError(str(reply.get("error") or "the chief refused the request"))
    return reply


def identity_sha256(config: dict[str, Any], identity: tuple[str, ...]) -> str:
    """Hash of the settings that must match between chief and worker (not the data path)."""
    fields = {k: config.get(k) for k in identity if k != "dataset"}
    return hashlib.sha256(json.dumps(fields, sort_keys=True).encode()).hexdigest()


def check_serve(config: Any) -> None:
    """Refuse what a chief cannot do (one line, exit 2)."""
    if config.measure != "simulator" and (config.port or config.rack):
        raise UserError(
            "--port and --rack belong on the workers (mcunas worker --port/--rack): the chief "
            "measures nothing."
        )
    parse_address(config.serve or "", "--serve")
    if config.worker_timeout_s is not None and config.worker_timeout_s <= 0:
        raise UserError("--worker-timeout must be > 0 seconds")
