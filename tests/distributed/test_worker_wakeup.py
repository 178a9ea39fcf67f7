"""A worker started with SIGINT ignored (``mcunas worker ... &`` in a script) still stops.

A non-interactive shell starts background jobs with SIGINT ignored, and
``_thread.interrupt_main`` (the heartbeat's wake-up when the chief is gone) does
nothing then. The worker sets its own handler for the run and restores the one it
inherited. No chief here: the chief's calls are faked.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

import mcunas.distributed.worker as worker
from mcunas.distributed.wire import ChiefUnreachable, RemoteError
from mcunas.distributed.worker import WorkerSettings, run_worker
from tests.distributed.test_distributed_door import CONFIG, TOKEN


@pytest.fixture
def inherited():
    """Set SIGINT's handler for one test, as a parent process would have; put it back after."""
    before = signal.getsignal(signal.SIGINT)
    yield lambda handler: signal.signal(signal.SIGINT, handler)
    signal.signal(signal.SIGINT, before)


@pytest.fixture
def gone_chief(monkeypatch):
    """A chief that answers the join, then stops answering; the worker waits 1 s for it."""
    answers = ["hello", "join"]  # then none: a rejoin finds no chief

    def call(channel, payload, *, timeout_s, address="chief"):
        if answers and payload["op"] == answers[0]:
            answers.pop(0)
            return {"ok": True, "heartbeat_s": 0.1}
        if payload["op"] == "heartbeat":
            raise RemoteError("chief at h:1: CANCELLED: shutting down")
        raise ChiefUnreachable("no mcunas chief answers at h:1")

    monkeypatch.setattr(worker, "call", call)
    monkeypatch.setattr(worker, "CHIEF_RESTART_WAIT_S", 1.0)
    return WorkerSettings("127.0.0.1:1", "w1", token=TOKEN, config=CONFIG)


@pytest.mark.parametrize("handler", [signal.SIG_IGN, signal.SIG_DFL])
def test_a_worker_whose_sigint_is_not_pythons_stops_when_its_chief_is_gone(
    monkeypatch, inherited, gone_chief, handler
):
    seen = []

    def work(*args):  # the trials: the main thread waits on the chief a long time
        seen.append(signal.getsignal(signal.SIGINT))
        if handler == signal.SIG_IGN:  # a real Ctrl-C is still ignored, as inherited
            os.kill(os.getpid(), signal.SIGINT)
        for _ in range(300):
            time.sleep(0.1)

    monkeypatch.setattr(worker, "run_trials", work)
    inherited(handler)
    start = time.monotonic()
    with pytest.raises(ChiefUnreachable, match="did not come back within 1 s"):
        run_worker(gone_chief, lambda config: None)
    assert time.monotonic() - start < 20  # woken by the heartbeat, not the 30 s wait
    assert seen and seen[0] not in (signal.SIG_IGN, signal.SIG_DFL)  # the worker's own
    assert signal.getsignal(signal.SIGINT) is handler  # restored


def test_a_worker_keeps_a_python_handler_it_finds(monkeypatch, inherited, gone_chief):
    seen = []

    def work(*args):
        seen.append(signal.getsignal(signal.SIGINT))
        for _ in range(300):
            time.sleep(0.1)

    monkeypatch.setattr(worker, "run_trials", work)
    inherited(signal.default_int_handler)
    with pytest.raises(ChiefUnreachable):
        run_worker(gone_chief, lambda config: None)
    assert seen == [signal.default_int_handler]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_a_background_job_of_a_script_starts_with_sigint_ignored() -> None:
    """Why the worker cannot count on Python's own handler (POSIX shells, no job control)."""
    code = "import signal; print(signal.getsignal(signal.SIGINT) == signal.SIG_IGN)"
    probe = f'{sys.executable} -c "{code}"'
    out = subprocess.run(
        ["sh", "-c", f"{probe} & wait"], capture_output=True, text=True, check=True, timeout=60
    ).stdout
    assert out.strip() == "True"
