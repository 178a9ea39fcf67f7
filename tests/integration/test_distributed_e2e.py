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
        for p in procs:
            if p.poll() is None:
                p.kill()
        for log in logs.values():
            log.close()
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
