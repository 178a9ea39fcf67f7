"""A chief and two workers as processes on 127.0.0.1; one worker is killed mid-trial."""

import os
import signal
import socket
import sqlite3
import subprocess
import sys
import time

import pytest

TRIALS = 3


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(*args, log):
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": "", "TF_CPP_MIN_LOG_LEVEL": "3"}
    return subprocess.Popen(
        [sys.executable, "-m", "mcunas", *args], stdout=log, stderr=subprocess.STDOUT, env=env
    )


def rows(store):
    if not store.exists():
        return []
    with sqlite3.connect(f"file:{store}?mode=ro", uri=True, timeout=5) as db:
        try:
            return db.execute("SELECT trial_id, status, worker, train_s FROM trials").fetchall()
        except sqlite3.OperationalError:
            return []


def ok_and_running(store):
    """The rows once one trial has finished and the next is running, else None."""
    now = rows(store)
    statuses = {r[1] for r in now}
    return now if {"ok", "running"} <= statuses else None


def stop_all(procs, logs):
    """Kill what still runs and close the logs (a failed test leaves no process behind)."""
    for p in procs:
        if p.poll() is None:
            p.kill()
    for log in logs.values():
        log.close()


def wait_for(what, timeout_s, every_s=0.5):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        got = what()
        if got:
            return got
        time.sleep(every_s)
    return None


@pytest.mark.slow
def test_chief_and_two_workers_survive_a_killed_worker(tmp_path):
    address = f"127.0.0.1:{free_port()}"
    out, store = tmp_path / "run", tmp_path / "run" / "trials.sqlite"
    logs = {n: (tmp_path / f"{n}.log").open("w") for n in ("chief", "w1", "w2")}
    chief = start(
        "search", "--board", "esp32s3", "--out", str(out), "--max-trials", str(TRIALS),
        "--epochs", "1", "--seed-arch", "none", "--serve", address, "--worker-timeout", "15",
        "--no-rescore", log=logs["chief"],
    )  # fmt: skip
    procs = [chief]
    try:
        procs.append(start("worker", "--connect", address, "--name", "w1", log=logs["w1"]))
        procs.append(start("worker", "--connect", address, "--name", "w2", log=logs["w2"]))
        running = wait_for(
            lambda: [r for r in rows(store) if r[1] == "running" and r[2] == "w2"], 300
        )
        assert running, (tmp_path / "chief.log").read_text()[-2000:]
        procs[2].send_signal(signal.SIGKILL)
        killed_trial = running[0][0]
        assert chief.wait(timeout=600) == 0, (tmp_path / "chief.log").read_text()[-3000:]
        assert procs[1].wait(timeout=60) == 0
    finally:
        stop_all(procs, logs)
    chief_log = (tmp_path / "chief.log").read_text()
    assert f"Worker w2 silent for 15 s: trial {killed_trial} goes to the next worker" in chief_log
    final = rows(store)
    trained = [r for r in final if r[1] == "ok" or r[3]]
    assert len(trained) == TRIALS  # the same trial count as asked, the killed one redone
    assert len({r[0] for r in final}) == len(final)  # no trial twice
    redone = next(r for r in final if r[0] == killed_trial)
    assert redone[1] != "running" and redone[2] == "w1"
    assert all(r[2] in ("w1", "w2") for r in final)  # every row names its worker
    assert (out / "best" / "model.tflite").is_file() and (out / "report.html").is_file()


@pytest.mark.slow
def test_a_killed_chief_resumes_and_its_worker_finishes_the_running_trial(tmp_path):
    address = f"127.0.0.1:{free_port()}"
    out, store = tmp_path / "run", tmp_path / "run" / "trials.sqlite"
    logs = {n: (tmp_path / f"{n}.log").open("w") for n in ("chief", "chief2", "w1")}
    serve = ["--serve", address, "--worker-timeout", "60"]
    first = [
        "search", "--board", "esp32s3", "--out", str(out), "--max-trials", "3", "--epochs", "2",
        "--seed-arch", "none", *serve,
    ]  # fmt: skip
    chief = start(*first, log=logs["chief"])
    procs = [chief, start("worker", "--connect", address, "--name", "w1", log=logs["w1"])]
    try:
        before = wait_for(lambda: ok_and_running(store), 300, every_s=0.2)
        assert before, (tmp_path / "chief.log").read_text()[-2000:]
        chief.send_signal(signal.SIGKILL)
        chief.wait(timeout=30)
        resumed = start("search", "--out", str(out), "--resume", *serve, log=logs["chief2"])
        procs.append(resumed)
        assert resumed.wait(timeout=600) == 0, (tmp_path / "chief2.log").read_text()[-3000:]
        assert procs[1].wait(timeout=60) == 0  # the worker waited for the chief, then finished
    finally:
        stop_all(procs, logs)
    after = {r[0]: r for r in rows(store)}
    worker_log = (tmp_path / "w1.log").read_text()[-2000:]
    assert len(after) == 3, (after, worker_log)
    assert all(r[1] != "running" and r[2] == "w1" for r in after.values()), (after, worker_log)
    for tid, row in ((r[0], r) for r in before if r[1] == "ok"):
        assert after[tid] == row  # a finished trial kept as it was
    running = next(r[0] for r in before if r[1] == "running")
    assert after[running][1] == "ok"  # finished by the worker that was running it
    # the resumed chief re-scored the front's finalists itself, once the worker was done
    from mcunas.data.datasets import load_dataset
    from mcunas.search.finish.finalists import pick_finalists
    from mcunas.search.results.pareto import DEFAULT_OBJECTIVES
    from mcunas.search.results.store import TrialStore

    val_samples = len(load_dataset(None, seed=0).y_val)  # the built-in set, as the chief loads it
    trials = TrialStore.open(out)
    finalists = pick_finalists(trials.trials(), DEFAULT_OBJECTIVES, 3, val_samples)
    rescore = trials.get_meta("rescore")
    trials.close()
    assert (rescore is not None and len(rescore["runs"]) >= 2) == (len(finalists) >= 2)


def last_trial_running(store, trials):
    """(trial, worker) once every trial is handed out and one still runs, or None."""
    now = rows(store)
    running = [r for r in now if r[1] == "running"]
    if len(now) >= trials and len(running) == 1:
        return running[0][0], running[0][2]
    return None


@pytest.mark.slow
def test_a_worker_killed_on_the_last_trial_leaves_it_to_the_other_who_stays(tmp_path):
    """The other worker has nothing left to start but stays: the trial may come back to it.

    Through the chief's door too: a token file the chief makes, which the workers show
    on every call (Keras Tuner's oracle service and mcunas's store alike).
    """
    address = f"127.0.0.1:{free_port()}"
    out, store, token = tmp_path / "run", tmp_path / "run" / "trials.sqlite", tmp_path / "tok"
    logs = {n: (tmp_path / f"{n}.log").open("w") for n in ("chief", "w1", "w2")}
    chief = start(
        "search", "--board", "esp32s3", "--out", str(out), "--max-trials", "2",
        "--epochs", "1", "--seed-arch", "none", "--serve", address, "--worker-timeout", "10",
        "--token-file", str(token), "--wait", "120", "--no-rescore", log=logs["chief"],
    )  # fmt: skip
    procs = [chief]
    try:
        assert wait_for(token.exists, 120), (tmp_path / "chief.log").read_text()[-2000:]
        for name in ("w1", "w2"):
            worker = ("worker", "--connect", address, "--name", name, "--token-file", str(token))
            procs.append(start(*worker, log=logs[name]))
        held = wait_for(lambda: last_trial_running(store, 2), 400, every_s=0.2)
        assert held, (rows(store), (tmp_path / "chief.log").read_text()[-2000:])
        last, killed = held
        procs[1 if killed == "w1" else 2].send_signal(signal.SIGKILL)
        assert chief.wait(timeout=400) == 0, (tmp_path / "chief.log").read_text()[-3000:]
        other = procs[2 if killed == "w1" else 1]
        assert other.wait(timeout=60) == 0
    finally:
        stop_all(procs, logs)
    chief_log = (tmp_path / "chief.log").read_text()
    assert f"Worker {killed} silent for 10 s: trial {last} goes to the next worker" in chief_log
    assert f"stays: no new trial, but trial {last} still runs elsewhere" in chief_log
    final = {r[0]: r for r in rows(store)}
    assert final[last][1] == "ok" and final[last][2] != killed  # finished by the one who stayed
    assert all(r[1] != "running" for r in final.values())
    assert (out / "best" / "model.tflite").is_file() and (out / "report.html").is_file()
