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
        "--epochs", "1", "--seed-arch", "none", "--serve", address, "--worker-timeout", "5",
        log=logs["chief"],
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
    assert f"Worker w2 silent for 5 s: trial {killed_trial} goes to the next worker" in chief_log
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
