"""The supernet strategy's job board and the chief's job requests, without TensorFlow."""

import base64
import json
import random
import threading
import time

import pytest

from mcunas.distributed.jobs import JobBoard
from mcunas.distributed.supernet_chief import SupernetService
from mcunas.errors import McunasError
from mcunas.search.results.store import TrialStatus, TrialStore
from mcunas.supernet.jobs import WIRE
from tests.distributed.test_distributed import join_request, welcome


def test_jobs_go_oldest_first_and_a_result_counts_once():
    board = JobBoard()
    a = board.submit("screen", {"n": 1}, tids=("s0001",))
    b = board.submit("screen", {"n": 2}, tids=("s0002",))
    first, second = board.take("w1"), board.take("w2")
    assert (first.id, second.id) == (a, b) and board.take("w3") is None
    with pytest.raises(McunasError, match="handed to another worker"):
        board.finish("w2", a, {"result": None})  # not w2's job
    board.finish("w1", a, {"result": [0.9, 0.1]})
    with pytest.raises(McunasError):
        board.finish("w1", a, {"result": [0.5, 0.5]})  # already done: the first result stays
    assert [j.id for j in board.wait([a, b], 0.01)] == [a]
    assert board.jobs[a].result == {"result": [0.9, 0.1]}


def test_a_silent_workers_jobs_go_back_to_the_front():
    board = JobBoard()
    a, b, c = (board.submit("screen", {}) for _ in range(3))
    assert board.take("w1").id == a
    lost = board.release("w1")
    assert [j.id for j in lost] == [a]
    assert board.take("w2").id == a  # before b and c
    with pytest.raises(McunasError):
        board.finish("w1", a, {})  # the old owner's late result is refused
    assert board.cancel_waiting() == 2  # b and c: nobody took them
    assert {j.id for j in board.wait([b, c], 0.01)} == {b, c}
    assert board.jobs[b].result == {"cancelled": True} and board.take("w3") is None


@pytest.fixture
def chief(tmp_path):
    store = TrialStore.open(tmp_path, threads=True)
    notes, epochs = [], []
    board = JobBoard()

    def on_epoch(epoch, loss, seconds):
        epochs.append(epoch)
        return epoch >= 2  # "the time budget ran out" after the second

    svc = SupernetService(
        board,
        tmp_path / "supernet" / "checkpoint.npz",
        on_epoch,
        wire=WIRE,
        store=store,
        models_dir=tmp_path / "models",
        welcome=welcome(),
        note=notes.append,
        timeout_s=0.2,
    )
    svc.notes, svc.epochs = notes, epochs
    yield svc
    store.close()


def ask(svc, **payload):
    return json.loads(svc.handle(json.dumps(payload).encode()))


def test_workers_take_jobs_and_only_the_owner_writes_their_rows(chief):
    for name in ("w1", "w2"):
        assert ask(chief, **join_request(name))["ok"]
    job_id = chief.jobs.submit("screen", {"tid": "s0000", "values": {}}, tids=("s0000",))
    sent = ask(chief, op="next_job", worker="w1")["job"]
    assert sent == {"id": job_id, "kind": "screen", "tid": "s0000", "values": {}}
    assert ask(chief, op="next_job", worker="w2") == {"ok": True, "wait": 0.5}
    assert ask(chief, op="start_trial", worker="w1", tid="s0000", hyperparameters={})["ok"]
    for tid in ("s0000", "s0001"):  # w1's trial, and one no job named
        taken = ask(chief, op="start_trial", worker="w2", tid=tid, hyperparameters={})
        assert not taken["ok"] and "handed to another worker" in taken["error"]
    refused = ask(chief, op="update", worker="w2", tid="s0000", values={"macs": 1})
    assert not refused["ok"] and "handed to another worker" in refused["error"]
    done = ask(chief, op="finish_trial", worker="w1", tid="s0000", status="screened", values={})
    assert done["ok"] and chief.store.get("s0000").status == TrialStatus.SCREENED
    assert ask(chief, op="job_done", worker="w1", job=job_id, result={"result": [1, 0]})["ok"]
    assert not ask(chief, op="job_done", worker="w1", job=job_id, result={})["ok"]
    chief.jobs.close()
    assert ask(chief, op="next_job", worker="w2") == {"ok": True, "done": True}


def test_the_training_job_carries_the_checkpoint_and_hands_on_after_silence(chief, tmp_path):
    for name in ("w1", "w2"):
        ask(chief, **join_request(name))
    job_id = chief.jobs.submit("train", {"width": 1.0, "epochs": 3})
    assert "checkpoint" not in ask(chief, op="next_job", worker="w1")["job"]
    data = base64.b64encode(b"epoch one").decode()
    reply = ask(
        chief, op="checkpoint", worker="w1", job=job_id, epoch=1, loss=0.5, seconds=1.0, data=data
    )
    assert reply == {"ok": True, "stop": False} and chief.checkpoint.read_bytes() == b"epoch one"
    fetched = ask(chief, op="supernet", worker="w2")
    assert base64.b64decode(fetched["data"]) == b"epoch one" and len(fetched["sha256"]) == 64
    time.sleep(0.3)
    ask(chief, op="heartbeat", worker="w2")
    chief.check_silence()  # w1 said nothing for 0.3 s
    assert any("supernet's training goes to the next worker" in n for n in chief.notes)
    again = ask(chief, op="next_job", worker="w2")["job"]
    assert again["id"] == job_id and base64.b64decode(again["checkpoint"]) == b"epoch one"
    ask(chief, **join_request("w1"))  # it comes back
    late = ask(
        chief, op="checkpoint", worker="w1", job=job_id, epoch=2, loss=0.4, seconds=1, data=data
    )
    assert not late["ok"]  # w1's late epoch does not overwrite w2's
    reply = ask(
        chief, op="checkpoint", worker="w2", job=job_id, epoch=2, loss=0.4, seconds=1.0, data=data
    )
    assert reply["stop"] is True and chief.epochs == [1, 2]


def test_the_chief_screens_a_batch_on_workers_and_records_what_one_could_not_do(tmp_path):
    from mcunas.distributed.supernet_chief import ChiefJobs
    from mcunas.search.settings.progress import Progress
    from mcunas.supernet.jobs import Screen, Screened
    from mcunas.supernet.spec import plan_supernet, random_subnet, smallest, subnet_values
    from mcunas.supernet.strategy import SupernetStrategy

    store = TrialStore.open(tmp_path, threads=True)
    board = JobBoard()
    service = SupernetService(
        board, tmp_path / "c.npz", lambda *a: False, wire=WIRE, store=store,
        models_dir=tmp_path, welcome=welcome(), note=print, timeout_s=60,
    )  # fmt: skip
    strategy = SupernetStrategy()
    strategy.run = type("Run", (), {"store": store})()
    spec = plan_supernet((8, 8, 1), 10)
    nets = [smallest(spec), *(random_subnet(spec, random.Random(i)) for i in (1, 2))]
    todo = [
        Screen(f"s{i:04d}", spec.width, subnet_values(spec, net), "x") for i, net in enumerate(nets)
    ]

    def worker(name):  # s0001 cannot be done; the others score 0.5 + their index / 10
        for _ in range(200):
            job = board.take(name)
            if job is None:
                time.sleep(0.01)
                continue
            screen = WIRE.job_from_wire({"kind": job.kind, **job.payload})
            i = int(screen.tid[1:])
            store.start_trial(screen.tid, screen.values, origin="supernet")
            result = WIRE.failed("out of memory") if i == 1 else Screened((0.5 + i / 10, 0.1))
            board.finish(name, job.id, WIRE.result_to_wire(result))

    threads = [threading.Thread(target=worker, args=(n,), daemon=True) for n in ("w1", "w2")]
    for t in threads:
        t.start()
    scored = []

    def done(job, result):
        strategy.record_failure(job, result)
        scored.append(result)

    jobs = ChiefJobs(board, service, WIRE)
    got = jobs.run(todo, on_done=done, progress=Progress(4, None, stream=None))
    assert [getattr(r, "score", None) for r in got] == [(0.5, 0.1), None, (0.7, 0.1)]  # in order
    assert len(scored) == 3
    failed = store.get("s0001")
    assert failed.status == TrialStatus.FAILED and "out of memory" in failed.reason
    assert failed.reason.startswith("on worker w")  # where it failed
    store.close()


def test_a_supernet_chief_with_a_lost_job_and_no_worker_stops(chief):
    from mcunas.distributed.alone import AloneWatch, NoWorkers

    chief.alone = AloneWatch(0.3, chief.notes.append, "mcunas search --out o --resume")
    ask(chief, **join_request("w1"))
    job_id = chief.jobs.submit("screen", {"tid": "s0003", "values": {}}, tids=("s0003",))
    chief.jobs.submit("screen", {"tid": "s0004", "values": {}}, tids=("s0004",))
    ask(chief, op="next_job", worker="w1")
    time.sleep(0.25)
    chief.check_silence()  # w1 lost: its job waits; the one nobody took is no lost work
    assert [j.id for j in chief.jobs.handed_back()] == [job_id]
    assert any(f"No worker connected, screen job {job_id} waiting" in n for n in chief.notes)
    time.sleep(0.35)
    with pytest.raises(NoWorkers, match="continue with: mcunas search --out o --resume"):
        chief.check_silence()
