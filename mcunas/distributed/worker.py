"""A distributed search's worker: join the chief, then run the trials its oracle hands out.

``mcunas worker --connect HOST:PORT`` asks the chief for the search's settings,
joins (the chief refuses another mcunas version or dataset), and runs the same
tuner as a local search with Keras Tuner's ``OracleClient`` for the oracle and a
:class:`~mcunas.distributed.remote_store.RemoteStore` for the store. It builds,
checks, trains, converts, evaluates and measures (simulator, its own board or
its own rack) and exits when the chief's oracle says the search is over.
"""

from __future__ import annotations

import _thread
import contextlib
import os
import signal
import socket
import tempfile
import threading
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import mcunas
from mcunas.distributed.alone import ChiefAbsence
from mcunas.distributed.auth import CHIEF_ONLY
from mcunas.distributed.checks import worker_name
from mcunas.distributed.remote_store import RemoteStore
from mcunas.distributed.wire import (
    ChiefUnreachable,
    RemoteError,
    call,
    identity_sha256,
    open_channel,
    parse_address,
)
from mcunas.errors import McunasError, UserError
from mcunas.search.run import Executor, SearchRun, Strategy
from mcunas.search.settings.config import IDENTITY, SearchConfig
from mcunas.search.settings.progress import Progress

__all__ = ["DEFAULT_WAIT_S", "ChiefConnection", "WorkerSettings", "default_name", "run_worker"]

DEFAULT_WAIT_S = 60.0  # joining: how long to wait for a chief that does not answer
CHIEF_RESTART_WAIT_S = 900.0  # a joined worker waits this long for a restarting chief


def default_name() -> str:
    """``<host>-<pid>``: unique on a cluster without configuration."""
    return f"{socket.gethostname().split('.')[0]}-{os.getpid()}"


class WorkerSettings:
    """What ``mcunas worker`` was given: the chief, a name, local data and hardware."""

    def __init__(
        self,
        connect: str,
        name: str | None = None,
        dataset: str | None = None,
        port: str | None = None,
        rack: str | None = None,
        wait_s: float = DEFAULT_WAIT_S,
        config: SearchConfig | None = None,
        token: str | None = None,
        tls_ca: bytes | None = None,
    ) -> None:
        parse_address(connect)
        self.token, self.tls_ca = token, tls_ca  # the chief's door: see mcunas.distributed.auth
        self.connect, self.name = connect, name or default_name()
        self.dataset, self.port, self.rack, self.wait_s = dataset, port, rack, wait_s
        self.config = config  # KERASTUNER_* mode: the worker's own settings, checked by the chief
        if "chief" in self.name:
            raise UserError(f"--name {self.name}: Keras Tuner reserves names containing 'chief'")
        try:
            worker_name(self.name)
        except McunasError:
            raise UserError(
                f"--name {self.name[:60]!r}: give letters, digits, '.', '@', '_' or '-' (at most "
                "64, starting with a letter or digit)"
            ) from None


class ChiefConnection:
    """The connection to the chief: join, rejoin after a chief restart, heartbeats.

    Every join carries this process's token, so the chief tells a rejoin
    (the heartbeat thread and a trial's store call may both rejoin after a chief
    restart, in either order) from a second process under the same name.
    """

    def __init__(self, settings: WorkerSettings, config: SearchConfig, dataset_sha: str) -> None:
        self.settings, self.config, self.dataset_sha = settings, config, dataset_sha
        self.token = uuid.uuid4().hex
        self.channel = open_channel(settings.connect, settings.token, settings.tls_ca)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.wait_s = CHIEF_RESTART_WAIT_S
        self.gone: str | None = None  # why the worker stops: its chief did not come back

    def join(self, timeout_s: float = CHIEF_RESTART_WAIT_S) -> dict[str, Any]:
        """Join (or rejoin) the chief; wait up to ``timeout_s`` for it to answer."""
        request = {
            "op": "join",
            "worker": self.settings.name,
            "token": self.token,
            "version": mcunas.__version__,
            "identity_sha256": identity_sha256(self.config.to_dict(), IDENTITY),
            "dataset_sha256": self.dataset_sha,
        }
        return call(self.channel, request, timeout_s=timeout_s, address=self.settings.connect)

    def start_heartbeat(self, every_s: float, note: Callable[[str], None]) -> None:
        """Beat every ``every_s`` s in a thread; a chief gone past ``wait_s`` interrupts main."""
        absence = ChiefAbsence(self.settings.name, self.settings.connect, self.wait_s, note)

        def beat() -> None:
            request = {"op": "heartbeat", "worker": self.settings.name}
            while not self._stop.wait(every_s):
                try:
                    try:
                        call(
                            self.channel, request, timeout_s=every_s, address=self.settings.connect
                        )
                    except RemoteError:  # the chief restarted and forgot this worker, or is
                        with contextlib.suppress(RemoteError):  # stopping: one short rejoin
                            self.join(timeout_s=every_s)
                except ChiefUnreachable:  # stopped or restarting: the trial goes on meanwhile
                    if absence.missed() and not self._stop.is_set():
                        self.gone = absence.gone_line()
                        _thread.interrupt_main()  # the main thread's calls wait longer
                        return
                    continue
                absence.answered()

        self._thread = threading.Thread(target=beat, name="mcunas-heartbeat", daemon=True)
        self._thread.start()

    def leave(self) -> None:
        """Stop the heartbeat and tell the chief (a chief already gone is not waited for)."""
        self._stop.set()
        with contextlib.suppress(RemoteError, ChiefUnreachable):
            leave = {"op": "leave", "worker": self.settings.name, "token": self.token}
            call(self.channel, leave, timeout_s=5)  # the chief hands this worker's trial on


def run_worker(
    settings: WorkerSettings,
    plan: Callable[[SearchConfig], tuple[Strategy, Executor]],
    stream: Any = None,
) -> None:
    """Join the chief at ``settings.connect`` and run trials until the search is over.

    ``plan`` gives the search's strategy (from its settings, the chief's) and
    the worker's executor (see :func:`mcunas.engine.run_worker`).

    Raises:
        ChiefUnreachable: no chief answered within ``settings.wait_s``.
        RemoteError: the chief refused this worker (version, settings or data differ).
        UserError: bad local settings (dataset missing, port and rack both given).
    """
    from mcunas.search.api import check_search

    channel = open_channel(settings.connect, settings.token, settings.tls_ca)
    hello = call(channel, {"op": "hello"}, timeout_s=settings.wait_s, address=settings.connect)
    config = settings.config or SearchConfig.from_dict(hello["config"])
    config = _local(config, settings)
    board = check_search(config)
    joined = ChiefConnection(settings, config, config.dataset_sha256())
    reply = joined.join()
    say = Progress(config.max_trials, None, stream=stream).note
    try:
        with _wakeable(joined):
            joined.start_heartbeat(float(reply.get("heartbeat_s", 2.0)), say)  # TF is slow
            run_trials(settings, config, board, joined, plan(config), stream)
    except KeyboardInterrupt:
        if joined.gone is None:
            raise
        raise ChiefUnreachable(joined.gone) from None
    finally:
        joined.leave()


@contextlib.contextmanager
def _wakeable(joined: ChiefConnection) -> Iterator[None]:
    """Let the heartbeat's wake-up reach the main thread even where SIGINT is not Python's.

    The heartbeat ends the main thread's wait with ``_thread.interrupt_main``, which
    does nothing while SIGINT is ignored or default: a worker started in the
    background by a non-interactive shell (``mcunas worker ... &`` in a script)
    inherits SIGINT ignored and would wait on a gone chief. In the block, SIGINT
    gets a handler that raises ``KeyboardInterrupt`` for the wake-up and, for a
    real SIGINT, does what the inherited setting did (ignore it, or stop); the
    inherited setting is restored after. A Python handler already set is kept.
    """
    previous = signal.getsignal(signal.SIGINT)
    main = threading.current_thread() is threading.main_thread()
    if previous not in (signal.SIG_IGN, signal.SIG_DFL) or not main:
        yield
        return

    def wake(signum: int, frame: Any) -> None:
        if joined.gone is not None or previous == signal.SIG_DFL:
            raise KeyboardInterrupt

    signal.signal(signal.SIGINT, wake)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def run_trials(
    settings: WorkerSettings,
    config: SearchConfig,
    board: Any,
    joined: ChiefConnection,
    parts: tuple[Strategy, Executor],
    stream: Any,
) -> None:
    """Run the chief's trials (or the supernet strategy's jobs) until the search is over."""
    from mcunas.tflite.convert import import_tensorflow

    import_tensorflow()
    host, port = parse_address(settings.connect)
    os.environ.update(
        KERASTUNER_TUNER_ID=settings.name,
        KERASTUNER_ORACLE_IP=host,
        KERASTUNER_ORACLE_PORT=str(port),
    )
    store = RemoteStore(
        joined.channel, settings.name, settings.connect, CHIEF_RESTART_WAIT_S, joined.join
    )
    progress = Progress(config.max_trials, None, stream=stream)
    progress.note(f"Worker {settings.name} joined the chief at {settings.connect}.")
    # keras-tuner 1.4.8 prints a condition's value each time it serialises one
    with open(os.devnull, "w") as null, contextlib.redirect_stdout(null):
        with tempfile.TemporaryDirectory(prefix="mcunas-worker-") as work:
            run = SearchRun(config, board, Path(work), store, *parts)  # type: ignore[arg-type]
            run.run(progress)
    progress.note(f"Worker {settings.name}: the search is over.")


def _local(config: SearchConfig, settings: WorkerSettings) -> SearchConfig:
    """The chief's settings with this worker's data path and hardware."""
    data = config.to_dict()
    data.update(resume=False, serve=None, out=None, time_budget_s=None)
    data.update(dict.fromkeys(CHIEF_ONLY))  # the chief's door and wait, not this worker's
    if settings.dataset is not None:
        data["dataset"] = settings.dataset
    if settings.port or settings.rack:
        if data.get("measure") == "simulator":
            raise UserError(
                "--port and --rack measure on boards, but the chief's search uses the "
                "simulator: drop them, or start the chief with --measure board"
            )
        data.update(port=settings.port, rack=settings.rack)
    return SearchConfig.from_dict(data)
