"""Every way a worker leaves hands its running trial back, and the search then ends.

A real chief service on 127.0.0.1 (Keras Tuner's oracle faked, as in
test_distributed.py) and a real ``mcunas worker`` process (``run_worker``, its
trial loop replaced by one that starts the trial it was handed and waits): the
worker is stopped with Ctrl-C, leaves, is killed, or goes silent (SIGSTOP).
"""

from __future__ import annotations

import io
import os
import signal
import subprocess
import sys
import textwrap
import time
from types import SimpleNamespace

import pytest

from mcunas.distributed.chief import ChiefService
from mcunas.distributed.chief_executor import _wait_done
from mcunas.distributed.server import Door
from mcunas.distributed.session import serving
from mcunas.search.results.store import TrialStatus, TrialStore
from mcunas.search.settings.progress import Progress
from tests.distributed.test_distributed import CONFIG, FakeOracle, FakeTrial, ask, free_port
from tests.distributed.test_distributed import join_request as plain_join
from tests.distributed.test_distributed import welcome as plain_welcome

TIMEOUT_S = 3.0  # the chief's --worker-timeout here (a worker beats every 2 s)

# A worker process: the real run_worker, whose trial loop starts the trial it was
# handed ("3") through the chief's store and then waits to be stopped.
WORKER = textwrap.dedent(
    """
    import sys, time
    import mcunas.engine  # the strategies, as `mcunas worker` registers them
    from mcunas.distributed import worker
    from mcunas.distributed.remote_store import RemoteStore

    def run_trials(settings, config, board, joined, parts, stream):
        store = RemoteStore(joined.channel, settings.name, settings.connect, 5.0, joined.join)
        store.start_trial("3", {"units": 8})
        print("started", flush=True)
        time.sleep(600)

    worker.run_trials = run_trials
    worker.run_worker(worker.WorkerSettings(sys.argv[1], name="w1"), lambda config: (None, None))
    """
)


def welcome():
    return {**plain_welcome(), "dataset_sha256": CONFIG.dataset_sha256()}


def join_request(name):
    return plain_join(name, dataset_sha256=CONFIG.dataset_sha256())


@pytest.fixture
def chief(tmp_path):
    """A chief's service on 127.0.0.1 with trial 3 handed to w1; its lines in ``notes``."""
    store = TrialStore.open(tmp_path, threads=True)
    oracle = FakeOracle()
    oracle.trials, oracle.max_trials = {"3": FakeTrial("3")}, 1
    oracle.ongoing_trials["w1"] = FakeTrial("3")  # what CreateTrial did for w1
    notes = []
    service = ChiefService(
        store, oracle, tmp_path / "models", welcome(), None, notes.append, TIMEOUT_S
    )
    service.notes, service.address = notes, f"127.0.0.1:{free_port()}"
    ctx = serving(
        service.address, service, Progress(1, None, stream=io.StringIO()), door=Door(None, None, "")
    )
    ctx.__enter__()
    yield service
    ctx.__exit__(None, None, None)
    store.close()


def start_worker(service, tmp_path):
    script = tmp_path / "worker.py"
    script.write_text(WORKER)
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": "", "TF_CPP_MIN_LOG_LEVEL": "3"}
    proc = subprocess.Popen(
        [sys.executable, str(script), service.address],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),  # Ctrl-C: Python's
    )
    line = proc.stdout.readline()
    assert line.strip() == "started", line + proc.stdout.read()[-2000:]
    rec = service.store.get("3")
    assert rec.status == TrialStatus.RUNNING and rec.worker == "w1"
    return proc


def handed_back(service, within_s):
    """Check the silence as the chief's loop does, until trial 3 is back in the queue."""
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        service.check_silence()
        if service.oracle._retry_queue == ["3"]:
            return True
        time.sleep(0.1)
    return False


def the_next_worker_finishes_and_the_search_ends(service):
    """w2 gets trial 3 (the patient servicer's assign), finishes it, and the chief stops."""
    from mcunas.search.tuner import kt_state

    assert "w1" not in service.oracle.ongoing_trials
    assert ask(service, **join_request("w2"))["ok"]
    kt_state.assign(service.oracle, "w2", "3")
    assert ask(service, op="start_trial", worker="w2", tid="3", hyperparameters={})["ok"]
    service.oracle.ongoing_trials.pop("w2")  # Keras Tuner's end_trial
    finish = {"op": "finish_trial", "worker": "w2", "tid": "3", "status": "ok", "values": {}}
    assert ask(service, **finish)["ok"]
    tuner = SimpleNamespace(stopped_reason=None)
    progress = SimpleNamespace(time_up=lambda: False)
    start = time.monotonic()
    _wait_done(service, service.oracle, tuner, progress)  # returns: the search is over
    assert time.monotonic() - start < 5
    rec = service.store.get("3")
    assert (rec.status, rec.worker) == ("ok", "w2")


def test_a_worker_stopped_with_ctrl_c_hands_its_trial_back(chief, tmp_path):
    proc = start_worker(chief, tmp_path)
    proc.send_signal(signal.SIGINT)
    assert proc.wait(timeout=20) != 0
    assert chief.oracle._retry_queue == ["3"]  # at once: no silence to wait for
    assert any(
        "Worker w1 left (0 connected): trial 3 goes to the next worker." in n for n in chief.notes
    )
    the_next_worker_finishes_and_the_search_ends(chief)


@pytest.mark.parametrize("how", ["kill", "stop"])
def test_a_killed_or_silent_worker_hands_its_trial_back_after_the_timeout(chief, tmp_path, how):
    proc = start_worker(chief, tmp_path)
    proc.send_signal(signal.SIGKILL if how == "kill" else signal.SIGSTOP)
    try:
        assert handed_back(chief, TIMEOUT_S + 5)
        said = f"Worker w1 silent for {TIMEOUT_S:g} s: trial 3 goes to the next worker."
        assert said in chief.notes
        the_next_worker_finishes_and_the_search_ends(chief)
    finally:
        proc.kill()
        if how == "stop":
            proc.send_signal(signal.SIGCONT)
        proc.wait(timeout=20)


def test_a_worker_that_leaves_hands_its_trial_back_and_no_one_else_may_leave_for_it(chief):
    assert ask(chief, **join_request("w1"), token="mine")["ok"]
    assert ask(chief, op="start_trial", worker="w1", tid="3", hyperparameters={})["ok"]
    spoofed = ask(chief, op="leave", worker="w1", token="not-mine")
    assert not spoofed["ok"] and "only the process that joined" in spoofed["error"]
    assert chief.oracle._retry_queue == [] and chief.connected == 1
    assert ask(chief, op="leave", worker="w1", token="mine")["ok"]
    assert chief.oracle._retry_queue == ["3"] and chief.connected == 0
    the_next_worker_finishes_and_the_search_ends(chief)
