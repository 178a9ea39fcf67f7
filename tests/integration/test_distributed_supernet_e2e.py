"""``--strategy supernet --serve``: a chief and two workers; the training worker is killed."""

import re
import signal
import sqlite3

import numpy as np
import pytest

from tests.integration.test_distributed_e2e import free_port, start, stop_all, wait_for

SUBNETS = 8


def waves(path):
    """Two classes of noisy sine waves (a small series task that trains in seconds)."""
    rng = np.random.default_rng(0)
    t = np.linspace(0, 1, 24, dtype=np.float32)
    y = rng.integers(0, 2, 64)
    x = np.sin(2 * np.pi * np.where(y == 0, 2.0, 5.0)[:, None] * t[None])
    x = (x + 0.1 * rng.normal(size=x.shape)).astype(np.float32)[..., None]
    np.savez(path, x_train=x, y_train=y, kind="series")
    return str(path)


def supernet_rows(store):
    with sqlite3.connect(f"file:{store}?mode=ro", uri=True, timeout=5) as db:
        query = "SELECT trial_id, status, worker, inherited_accuracy, origin FROM trials"
        return db.execute(query).fetchall()


@pytest.mark.slow
def test_a_distributed_supernet_search_survives_its_training_worker_killed(tmp_path):
    address = f"127.0.0.1:{free_port()}"
    out, data = tmp_path / "run", waves(tmp_path / "waves.npz")
    logs = {n: (tmp_path / f"{n}.log").open("w") for n in ("chief", "w1", "w2")}
    chief = start(
        "search", "--board", "nano33ble", "--out", str(out), "--dataset", data,
        "--strategy", "supernet", "--epochs", "1", "--supernet-epochs", "3",
        "--subnets", str(SUBNETS), "--max-trials", "2", "--finetune-epochs", "1", "--seed", "1",
        "--serve", address, "--worker-timeout", "15",
        "--no-rescore", "--refit", "off",  # both covered elsewhere; the subject is the handover
        log=logs["chief"],
    )  # fmt: skip
    procs = [chief]
    text = {n: lambda n=n: (tmp_path / f"{n}.log").read_text() for n in logs}
    try:
        for name in ("w1", "w2"):
            worker = ["worker", "--connect", address, "--name", name, "--dataset", data]
            procs.append(start(*worker, log=logs[name]))
        assert wait_for(lambda: "[supernet 1/3]" in text["chief"](), 300, 0.2), text["chief"]()
        trainer = next(n for n in ("w1", "w2") if "Training the supernet" in text[n]())
        procs[1 if trainer == "w1" else 2].send_signal(signal.SIGKILL)
        assert chief.wait(timeout=600) == 0, text["chief"]()[-3000:]
        survivor = "w2" if trainer == "w1" else "w1"
        assert procs[2 if trainer == "w1" else 1].wait(timeout=60) == 0
    finally:
        stop_all(procs, logs)
    chief_log = text["chief"]()
    handed = re.search(r"supernet's training goes to the next worker, after epoch (\d)", chief_log)
    assert handed and int(handed[1]) >= 1, chief_log  # not from scratch
    assert f"Training the supernet from epoch {int(handed[1]) + 1}/3" in text[survivor]()
    rows = supernet_rows(out / "trials.sqlite")
    assert len({r[0] for r in rows}) == len(rows) and not any(r[1] == "running" for r in rows)
    assert sum(r[3] is not None for r in rows) == SUBNETS  # every subnet scored, once
    assert sum(r[1] == "ok" and r[4] == "supernet" for r in rows) == 2
    reference = [r for r in rows if r[4] == "seed"]  # trained on a worker before the supernet
    assert reference and reference[-1][1] in ("ok", "failed") and reference[-1][2] in ("w1", "w2")
    assert {r[2] for r in rows} <= {"w1", "w2"}
    assert (out / "best" / "model.tflite").is_file() and (out / "report.html").is_file()
