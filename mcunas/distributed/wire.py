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
import time
from typing import Any

import grpc

from mcunas.errors import UserError

__all__ = [
    "CHANNEL_OPTIONS",
    "METHOD",
    "ChiefUnreachable",
    "Refused",
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
BUSY_PAUSE_S = 0.5  # a call the chief refused as too many waits this long and tries again
CHANNEL_OPTIONS = [
    ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
    ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
]
_ADDRESS = re.compile(r"^(?P<host>\[[0-9A-Fa-f:]+\]|[A-Za-z0-9_.-]+):(?P<port>\d{1,5})$")


class ChiefUnreachable(UserError):
    """No chief answered at the address within the wait (one line, exit 2)."""


class RemoteError(UserError):
    """The chief refused a request (a worker of another search, a stale trial...)."""


class Refused(RemoteError):
    """The chief's gate refused this caller: no token, or a wrong one."""


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


def open_channel(address: str, token: str | None = None, ca: bytes | None = None) -> grpc.Channel:
    """A channel to the chief: TLS if ``ca`` (its CA's PEM), ``token`` on every call."""
    from mcunas.distributed.auth import client_channel

    host, port = parse_address(address)
    return client_channel(f"{host}:{port}", token, ca, CHANNEL_OPTIONS)


def call(
    channel: grpc.Channel, payload: dict[str, Any], *, timeout_s: float, address: str = "chief"
) -> dict[str, Any]:
    """Send one request and return the reply; wait up to ``timeout_s`` for the chief.

    Raises:
        ChiefUnreachable: no answer within ``timeout_s``.
        RemoteError: the chief answered with an error.
    """
    stub, request = channel.unary_unary(METHOD), json.dumps(payload).encode()
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            left = max(0.01, deadline - time.monotonic())
            raw = stub(request, timeout=left, wait_for_ready=True)
            break
        except grpc.RpcError as exc:
            code = exc.code()
            busy = code == grpc.StatusCode.RESOURCE_EXHAUSTED and "larger than" not in str(
                exc.details()
            )  # the chief's rate or call limit, not a message over the size limit
            if busy and time.monotonic() < deadline:
                time.sleep(BUSY_PAUSE_S)
                continue
            if code in (grpc.StatusCode.DEADLINE_EXCEEDED, grpc.StatusCode.UNAVAILABLE):
                raise ChiefUnreachable(
                    f"no mcunas chief answers at {address} (waited {timeout_s:g} s): is "
                    "`mcunas search --serve` running there, the port reachable, and TLS "
                    "given on both sides or neither (--tls-cert there, --tls-ca here)?"
                ) from None
            if code == grpc.StatusCode.UNAUTHENTICATED:
                raise Refused(f"chief at {address}: {exc.details()}") from None
            raise RemoteError(f"chief at {address}: {code.name}: {exc.details()}") from None
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
    from mcunas.distributed.auth import check_door

    check_door(config)  # token and TLS files, --wait
    if config.worker_timeout_s is not None and config.worker_timeout_s <= 0:
        raise UserError("--worker-timeout must be > 0 seconds")
