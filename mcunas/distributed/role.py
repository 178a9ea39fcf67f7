"""Which part of a distributed search this process plays, from Keras Tuner's variables.

Keras Tuner's own convention: ``KERASTUNER_ORACLE_IP`` and
``KERASTUNER_ORACLE_PORT`` name the chief's address, and ``KERASTUNER_TUNER_ID``
this process (an id containing ``chief`` is the chief; any other is a worker of
that name). Without ``KERASTUNER_ORACLE_IP`` the search is local.

Example::

    role = role_from_env(os.environ)
    if role.kind == "worker":
        run_as_worker(role, config)
"""

from __future__ import annotations

import enum
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, TextIO

from mcunas.errors import UserError

if TYPE_CHECKING:
    from mcunas.search.settings.config import SearchConfig

__all__ = ["Role", "RoleKind", "apply_role", "role_from_env"]


class RoleKind(enum.StrEnum):
    """The part a process plays."""

    LOCAL = "local"
    CHIEF = "chief"
    WORKER = "worker"


@dataclass(frozen=True)
class Role:
    """A process's part: ``address`` is the chief's HOST:PORT, ``name`` the tuner id."""

    kind: RoleKind
    address: str = ""
    name: str = ""


def role_from_env(environ: Mapping[str, str]) -> Role:
    """The role Keras Tuner's variables give this process.

    Raises:
        UserError: ``KERASTUNER_ORACLE_IP`` is set without the port or the tuner id.
    """
    ip = environ.get("KERASTUNER_ORACLE_IP")
    if not ip:
        return Role(RoleKind.LOCAL)
    port = environ.get("KERASTUNER_ORACLE_PORT", "")
    tuner_id = environ.get("KERASTUNER_TUNER_ID", "")
    if not port or not tuner_id:
        raise UserError(
            "KERASTUNER_ORACLE_IP is set: also set KERASTUNER_ORACLE_PORT and KERASTUNER_TUNER_ID"
        )
    kind = RoleKind.CHIEF if "chief" in tuner_id else RoleKind.WORKER
    return Role(kind, f"{ip}:{port}", tuner_id)


def apply_role(
    role: Role,
    config: SearchConfig,
    stream: TextIO = sys.stderr,
    *,
    join: Callable[..., None],
) -> bool:
    """Play ``role`` for a search of ``config``; True when it was a worker's whole run.

    The chief serves on the role's address (unless ``--serve`` names one); a worker
    runs the chief's trials until the chief stops, its own settings checked against
    the chief's, with ``join(settings, stream=...)`` (:func:`mcunas.engine.run_worker`);
    a local search has nothing to do here.
    """
    if role.kind == RoleKind.CHIEF:
        config.serve = config.serve or role.address
    if role.kind != RoleKind.WORKER:
        return False
    import os

    from mcunas.distributed.auth import TLS_CA_ENV, read_pem, worker_token
    from mcunas.distributed.worker import WorkerSettings

    settings = WorkerSettings(
        role.address,
        role.name,
        config.dataset,
        config.port,
        config.rack,
        config=config,
        token=worker_token(config.token_file),  # or MCUNAS_TOKEN: the chief's door
        tls_ca=read_pem(os.environ.get(TLS_CA_ENV), TLS_CA_ENV),
    )
    join(settings, stream=stream)
    return True
