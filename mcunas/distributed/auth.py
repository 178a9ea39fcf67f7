"""The door of a chief: a shared token, TLS, and who may reach the store.

A chief serving on an address other than loopback requires a shared token on
every call (gRPC metadata ``x-mcunas-token``, compared with
:func:`hmac.compare_digest`), for Keras Tuner's oracle service and mcunas's own
``Search`` service alike. The token comes from ``--token-file`` (created with
mode 0600 if the file does not exist yet) or ``MCUNAS_TOKEN``; without either,
the chief makes one in its search folder and says where. TLS uses gRPC's own
credentials: ``--tls-cert/--tls-key`` on the chief, ``--tls-ca`` on workers.

Example::

    token, note = chief_token("0.0.0.0", None, Path("runs/big"))
    channel = client_channel("10.0.0.5:8470", token, ca=None)
"""

from __future__ import annotations

import collections
import ipaddress
import math
import os
import secrets
from pathlib import Path
from typing import Any

import grpc

from mcunas.errors import UserError
from mcunas.inputs.opener import read_input, read_input_text
from mcunas.limits import READ_BOUNDS

__all__ = [
    "CHIEF_ONLY",
    "METADATA_KEY",
    "TOKEN_ENV",
    "TOKEN_FILE",
    "check_door",
    "chief_token",
    "client_channel",
    "is_loopback",
    "read_pem",
    "server_credentials",
    "use_channel",
    "worker_token",
]

TOKEN_ENV = "MCUNAS_TOKEN"
TLS_CA_ENV = "MCUNAS_TLS_CA"  # a Keras Tuner-style worker (`mcunas search` with KERASTUNER_*)
TOKEN_FILE = "serve.token"  # in the search's folder, when the chief made the token itself
METADATA_KEY = "x-mcunas-token"
TOKEN_BYTES = 32  # 256 bits: guessing is hopeless; the rate limit keeps floods cheap
# The chief's settings that stay on the chief (paths of its secrets): not sent to workers.
CHIEF_ONLY = ("token_file", "tls_cert", "tls_key", "wait_s")


def is_loopback(host: str) -> bool:
    """True for ``localhost`` and loopback IP addresses (127.0.0.0/8, ::1)."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _read_token(path: Path, option: str) -> str:
    """The token in ``path``: a regular file of at most ``READ_BOUNDS["token"]`` bytes."""
    token = read_input_text(path, "token", option).strip()
    if not token or any(c.isspace() for c in token):
        raise UserError(f"{option} {path}: the file should hold one token (one line, no spaces)")
    return _printable(token, f"{option} {path}")


def _printable(token: str, where: str) -> str:
    """A token gRPC can send as metadata: printable ASCII, at most the token file's bound."""
    if len(token) > READ_BOUNDS["token"][0]:
        raise UserError(f"{where}: the token is {len(token):,} characters: at most 4096.")
    if not all(" " < c <= "~" for c in token):
        raise UserError(
            f"{where}: the token holds characters other than printable ASCII, which gRPC "
            "cannot send: make a new one (e.g. python -c 'import secrets; "
            "print(secrets.token_urlsafe(32))')"
        )
    return token


def _new_token(path: Path) -> str:
    """Write a fresh token to ``path`` (created, mode 0600) and return it."""
    token = secrets.token_urlsafe(TOKEN_BYTES)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except OSError as exc:
        raise UserError(f"cannot write a new token to {path} ({exc.strerror})") from None
    with os.fdopen(fd, "w") as f:
        f.write(token + "\n")
    return token


def _env_token() -> str | None:
    token = os.environ.get(TOKEN_ENV)
    if token is None:
        return None
    if not token.strip():
        raise UserError(f"{TOKEN_ENV} is set but empty: give the token, or unset it")
    return _printable(token.strip(), TOKEN_ENV)


def chief_token(host: str, token_file: str | None, out_dir: Path) -> tuple[str | None, str]:
    """The token a chief on ``host`` requires, and one line saying where it is.

    ``--token-file`` first (made if missing), then ``MCUNAS_TOKEN``; a chief on a
    non-loopback address without either makes ``<out>/serve.token`` (kept, so a
    resumed chief takes the same workers back). A loopback chief needs none.

    Raises:
        UserError: the token file cannot be read or written, or is empty.
    """
    if token_file:
        path = Path(token_file).expanduser()
        if path.exists():
            return _read_token(path, "--token-file"), f"Workers need the token in {path}."
        return _new_token(path), f"Wrote a new token to {path} (mode 0600): give it to workers."
    env = _env_token()
    if env is not None:
        return env, f"Workers need the token in {TOKEN_ENV}."
    if is_loopback(host):
        return None, ""
    path = out_dir / TOKEN_FILE
    if path.exists():
        token = _read_token(path, "token")
        return token, f"Workers need the token in {path} (--token-file, or {TOKEN_ENV})."
    token = _new_token(path)
    return token, (
        f"Wrote a new token to {path} (mode 0600): copy it to each worker and start it "
        f"with --token-file, or set {TOKEN_ENV}."
    )


def worker_token(token_file: str | None) -> str | None:
    """The token a worker sends: ``--token-file``, else ``MCUNAS_TOKEN``, else none."""
    if token_file:
        path = Path(token_file).expanduser()
        if not path.is_file():
            raise UserError(f"--token-file {path}: no such file (copy the chief's token there)")
        return _read_token(path, "--token-file")
    return _env_token()


def read_pem(path: str | None, option: str) -> bytes | None:
    """A PEM file's bytes (certificate or key), or None without a path.

    Raises:
        UserError: missing, unreadable, or not PEM.
    """
    if not path:
        return None
    file = Path(path).expanduser()
    data = read_input(file, "pem", option)
    if b"-----BEGIN " not in data:
        raise UserError(f"{option} {file}: not a PEM file (expected '-----BEGIN ...')")
    return data


def server_credentials(cert: str, key: str) -> grpc.ServerCredentials:
    """The chief's TLS credentials (gRPC's own) from its certificate and key files.

    Raises:
        UserError: either file unreadable or not PEM, or the key not the certificate's.
    """
    pair = (read_pem(key, "--tls-key") or b"", read_pem(cert, "--tls-cert") or b"")
    _check_pair(cert, key)
    return grpc.ssl_server_credentials([pair])


def _check_pair(cert: str, key: str) -> None:
    """Refuse a key that does not belong to its certificate (gRPC would fail to listen)."""
    import ssl

    try:
        ssl.create_default_context(ssl.Purpose.CLIENT_AUTH).load_cert_chain(
            Path(cert).expanduser(), Path(key).expanduser()
        )
    except ssl.SSLError as exc:
        words = "does not belong to" if "mismatch" in str(exc).lower() else "cannot be used with"
        raise UserError(
            f"--tls-key {key} {words} --tls-cert {cert} ({exc.reason or exc}): give the "
            "key the certificate was made for."
        ) from None
    except OSError as exc:
        raise UserError(f"--tls-cert/--tls-key: cannot read them ({exc.strerror})") from None


def check_door(config: Any) -> None:
    """Refuse door settings that cannot work (one line, exit 2)."""
    door = [n for n in ("token_file", "tls_cert", "tls_key", "wait_s") if getattr(config, n)]
    if config.serve is None and door:
        names = ", ".join("--" + n.replace("_", "-").removesuffix("-s") for n in door)
        raise UserError(f"{names}: only with --serve (the chief's options)")
    wait = config.wait_s
    if wait is not None and not (math.isfinite(wait) and wait > 0):
        raise UserError("--wait must be a finite number of seconds above 0")
    if bool(config.tls_cert) != bool(config.tls_key):
        raise UserError("--tls-cert and --tls-key go together: give both, or neither")
    read_pem(config.tls_cert, "--tls-cert")
    read_pem(config.tls_key, "--tls-key")


class _Details(
    collections.namedtuple(
        "_Details",
        ("method", "timeout", "metadata", "credentials", "wait_for_ready", "compression"),
    ),
    grpc.ClientCallDetails,
):
    """A call's details with the token added (grpc.ClientCallDetails is abstract)."""


class _TokenSender(grpc.UnaryUnaryClientInterceptor):
    """Adds the token to every call of a channel."""

    def __init__(self, token: str) -> None:
        self.token = token

    def intercept_unary_unary(self, continuation: Any, details: Any, request: Any) -> Any:
        """The call, with ``x-mcunas-token`` in its metadata."""
        metadata = [*(details.metadata or ()), (METADATA_KEY, self.token)]
        new = _Details(
            details.method,
            details.timeout,
            metadata,
            details.credentials,
            details.wait_for_ready,
            details.compression,
        )
        return continuation(new, request)


def client_channel(
    target: str, token: str | None, ca: bytes | None, options: list[tuple[str, Any]]
) -> grpc.Channel:
    """A channel to the chief at ``target`` (``host:port``): TLS with ``ca``, token on calls."""
    if ca is not None:
        channel = grpc.secure_channel(target, grpc.ssl_channel_credentials(ca), options=options)
    else:
        channel = grpc.insecure_channel(target, options=options)
    if token:
        channel = grpc.intercept_channel(channel, _TokenSender(token))
    return channel


def use_channel(oracle: Any, channel: grpc.Channel) -> None:
    """Send a worker's Keras Tuner oracle calls through ``channel`` (its token, its TLS).

    Keras Tuner's ``OracleClient`` opens a plain channel of its own; this gives it
    a stub on the worker's channel instead (:func:`mcunas.search.tuner.kt_state.use_channel`).
    Any other oracle is left alone.
    """
    from mcunas.search.tuner import kt_state

    kt_state.use_channel(oracle, channel)
