"""The chief's gate: every call shows the token, and no caller may flood the chief.

:class:`Gate` is a gRPC server interceptor, so one check covers Keras Tuner's
oracle service and mcunas's ``Search`` service alike. It refuses, before the
request is even read:

- a call without the token or with a wrong one (``UNAUTHENTICATED``, one line
  for the caller; the chief notes each refusing address at most once a minute);
- a caller address over its rate (a token bucket of :data:`RATE_PER_S` calls a
  second, bursts up to :data:`BURST`; ``RESOURCE_EXHAUSTED``, which a worker
  waits out).

The server's own limits (message sizes, concurrent calls, connections, the
time a connection has to finish its handshake) are in :data:`SERVER_OPTIONS`
and :func:`server_limits`.
"""

from __future__ import annotations

import hmac
import resource
import threading
import time
from collections.abc import Callable
from typing import Any

import grpc

from mcunas.distributed.auth import METADATA_KEY, TOKEN_ENV

__all__ = ["BURST", "MAX_CONCURRENT_RPCS", "RATE_PER_S", "Gate", "peer_host", "server_limits"]

RATE_PER_S = 100.0  # calls a second from one address (a worker makes about one)
BURST = 200.0  # calls one address may make at once before the rate applies
MAX_CONCURRENT_RPCS = 64  # beyond this the server answers RESOURCE_EXHAUSTED at once
THREADS = 16  # the server's handler threads
MAX_REQUEST_BYTES = 64 * 1024 * 1024  # a request's ceiling (models and checkpoints: a few MB)
HANDSHAKE_MS = 10_000  # a connection that does not finish its handshake by then is closed
IDLE_MS = 10 * 60_000  # a connection idle this long is closed (workers reconnect by themselves)
NOTE_EVERY_S = 60.0  # the chief notes one refusing address at most this often


def server_limits(max_send_bytes: int) -> list[tuple[str, Any]]:
    """The chief's gRPC server options: message sizes, connections, handshake time."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    connections = max(64, min(1024, (soft if soft > 0 else 1024) // 2))
    return [
        ("grpc.max_receive_message_length", MAX_REQUEST_BYTES),
        ("grpc.max_send_message_length", max_send_bytes),
        ("grpc.server_handshake_timeout_ms", HANDSHAKE_MS),
        ("grpc.max_connection_idle_ms", IDLE_MS),
        ("grpc.max_concurrent_streams", 32),
        ("grpc.max_allowed_incoming_connections", connections),
    ]


def peer_host(peer: str) -> str:
    """The address part of gRPC's peer text (``ipv4:10.0.0.7:5123`` gives ``10.0.0.7``)."""
    kind, _, rest = peer.partition(":")
    if kind in ("ipv4", "ipv6"):
        host, _, _ = rest.rpartition(":")
        return host.strip("[]") or rest
    return peer


class _Bucket:
    """A token bucket: ``rate`` a second, up to ``burst`` at once."""

    def __init__(self, rate: float, burst: float, now: float) -> None:
        self.rate, self.burst, self.level, self.at = rate, burst, burst, now

    def take(self, now: float) -> bool:
        self.level = min(self.burst, self.level + (now - self.at) * self.rate)
        self.at = now
        if self.level < 1.0:
            return False
        self.level -= 1.0
        return True


class Gate(grpc.ServerInterceptor):
    """Token check and per-address rate limit for every call (see the module).

    Args:
        token: str the callers must show, or None (a loopback chief without one).
        note: prints one line on the chief.
        rate_per_s, burst: float, each address's rate limit.
    """

    def __init__(
        self,
        token: str | None,
        note: Callable[[str], None],
        rate_per_s: float = RATE_PER_S,
        burst: float = BURST,
    ) -> None:
        self.token = token.encode() if token else None
        self.note, self.rate, self.burst = note, rate_per_s, burst
        self._lock = threading.Lock()
        self._buckets: dict[str, _Bucket] = {}
        self._noted: dict[str, tuple[float, int]] = {}  # address -> (last note, refused since)
        self.refused = 0

    def intercept_service(self, continuation: Any, details: Any) -> Any:
        """The method's handler if the call shows the token, else a refusal."""
        why = self._check(details.invocation_metadata or ())
        if why is not None:
            return grpc.unary_unary_rpc_method_handler(self._refuser(why))
        handler = continuation(details)
        if handler is None or handler.unary_unary is None:
            return handler
        inner = handler.unary_unary

        def limited(request: Any, context: grpc.ServicerContext) -> Any:
            if not self._allow(peer_host(context.peer())):
                context.abort(
                    grpc.StatusCode.RESOURCE_EXHAUSTED, "too many calls from this address"
                )
            return inner(request, context)

        return grpc.unary_unary_rpc_method_handler(
            limited,
            request_deserializer=handler.request_deserializer,
            response_serializer=handler.response_serializer,
        )

    def _check(self, metadata: Any) -> str | None:
        """Why a call with ``metadata`` is refused, or None."""
        if self.token is None:
            return None
        shown = [v for k, v in metadata if k == METADATA_KEY]
        if not shown:
            return "no token"
        value = shown[0].encode() if isinstance(shown[0], str) else bytes(shown[0])
        return None if hmac.compare_digest(value, self.token) else "wrong token"

    def _refuser(self, why: str) -> Callable[[bytes, grpc.ServicerContext], None]:
        def refuse(request: bytes, context: grpc.ServicerContext) -> None:
            host = peer_host(context.peer())
            self._noted_refusal(host, why)
            context.abort(
                grpc.StatusCode.UNAUTHENTICATED,
                f"the chief refused this caller: {why} (give the chief's token with "
                f"--token-file or {TOKEN_ENV})",
            )

        return refuse

    def _allow(self, host: str) -> bool:
        now = time.monotonic()
        with self._lock:
            bucket = self._buckets.get(host)
            if bucket is None:
                if len(self._buckets) > 10_000:  # many addresses: forget the full buckets
                    self._buckets = {
                        h: b for h, b in self._buckets.items() if b.level < b.burst - 1
                    }
                bucket = self._buckets[host] = _Bucket(self.rate, self.burst, now)
            allowed = bucket.take(now)
        if not allowed:
            self._noted_refusal(host, "too many calls")
        return allowed

    def _noted_refusal(self, host: str, why: str) -> None:
        """Count a refusal; note it at most once a minute per address."""
        now = time.monotonic()
        with self._lock:
            self.refused += 1
            last, since = self._noted.get(host, (-NOTE_EVERY_S, 0))
            if now - last < NOTE_EVERY_S:
                self._noted[host] = (last, since + 1)
                return
            self._noted[host] = (now, 0)
        more = f" ({since} more refused since the last note)" if since else ""
        self.note(f"Refused a call from {host}: {why}{more}.")
