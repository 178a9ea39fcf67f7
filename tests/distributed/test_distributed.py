"""Distributed search without TensorFlow: the chief's service, the wire, refusals."""

import json
import socket
import subprocess
import sys
import time
from concurrent import futures

import grpc
import pytest

import mcunas
from mcunas.distributed.chief import ChiefService
from mcunas.distributed.wire import (
    SERVICE,
    ChiefUnreachable,
    RemoteError,
    call,
    identity_sha256,
    open_channel,
    parse_address,
)
from mcunas.errors import UserError
from mcunas.search.results.store import TrialStatus, TrialStore
from mcunas.search.settings.config import IDENTITY, SearchConfig

CONFIG = SearchConfig(board="esp32s3", max_trials=4, epochs=1)


class FakeTrial:
    def __init__(self, trial_id):
        self.trial_id = trial_id


class FakeOracle:
    """What the chief's requeue touches of a keras-tuner oracle."""

    def __init__(self):
        self.ongoing_trials, self.tuner_ids, self._retry_queue, self.saved = {}, set(), [], 0

    def save(self):
        self.saved += 1


def welcome():
    return {
        "version": mcunas.__version__,
        "config": CONFIG.to_dict(),
        "identity_sha256": identity_sha256(CONFIG.to_dict(), IDENTITY),
        "dataset_sha256": "digits",
    }


def join_request(name="w1", **changes):
    request = {
        "op": "join",
        "worker": name,
        "version": mcunas.__version__,
        "identity_sha256": identity_sha256(CONFIG.to_dict(), IDENTITY),
        "dataset_sha256": "digits",
    }
    return {**request, **changes}


@pytest.fixture
def service(tmp_path):
    store = TrialStore.open(tmp_path, threads=True)
    notes, done = [], []
    svc = ChiefService(
        store, FakeOracle(), tmp_path / "models", welcome(), done.append, notes.append, 0.2
    )
    svc.notes, svc.done = notes, done
    yield svc
    store.close()


def ask(svc, **payload):
    return json.loads(svc.handle(json.dumps(payload).encode()))


def hand(svc, worker, tid):
    """The chief's oracle hands trial ``tid`` to ``worker`` (what CreateTrial does)."""
    svc.oracle.ongoing_trials[worker] = FakeTrial(tid)
    svc.oracle.tuner_ids.add(worker)


def test_join_then_write_trials(service):
    assert ask(service, **join_request())["ok"]
    hand(service, "w1", "0")
    assert ask(service, op="start_trial", worker="w1", tid="0", hyperparameters={"a": 1})["ok"]
    assert ask(service, op="update", worker="w1", tid="0", values={"train_s": 2.5})["ok"]
    reply = ask(service, op="record_model", worker="w1", tid="0", model="AAEC", values={})
    assert reply["ok"] and reply["path"].endswith("trial_0.tflite")
    finish = {"op": "finish_trial", "worker": "w1", "tid": "0", "status": "ok"}
    assert ask(service, **finish, values={"worker_wall_s": 3.0})["ok"]
    rec = service.store.get("0")
    assert (rec.status, rec.worker, rec.worker_wall_s, rec.train_s) == ("ok", "w1", 3.0, 2.5)
    assert service.done == ["0"]  # the chief's bookkeeping ran once
    rows = ask(service, op="trials", worker="w1", status="ok")["rows"]
    assert [r["trial_id"] for r in rows] == ["0"]


@pytest.mark.parametrize(
    "changes, text",
    [
        ({"version": "0.0.1"}, "mcunas 0.0.1 there"),
        ({"identity_sha256": "x"}, "search settings differ"),
        ({"dataset_sha256": "y"}, "dataset's content differs"),
        ({"worker": "chief-2"}, "may not contain 'chief'"),
    ],
)
def test_refused_workers(service, changes, text):
    reply = ask(service, **join_request(**changes))
    assert not reply["ok"] and text in reply["error"] and "\n" not in reply["error"]
    assert any(text in n for n in service.notes)  # the chief says so too


def test_writes_need_a_joined_owner(service):
    unknown = ask(service, op="start_trial", worker="w9", tid="0", hyperparameters={})
    assert "unknown worker w9" in unknown["error"]
    ask(service, **join_request("w1"))
    ask(service, **join_request("w2"))
    hand(service, "w1", "0")
    ask(service, op="start_trial", worker="w1", tid="0", hyperparameters={})
    taken = ask(service, op="start_trial", worker="w2", tid="0", hyperparameters={})
    assert "handed to another worker" in taken["error"]  # not the trial the chief gave w2
    stolen = ask(service, op="update", worker="w2", tid="0", values={"train_s": 1.0})
    assert "handed to another worker" in stolen["error"]
    again = ask(service, **join_request("w1"))
    assert "already connected" in again["error"]


def test_a_restarted_chief_takes_a_rejoin_from_both_threads_of_one_worker(service):
    """After a chief restart the heartbeat and a trial's store call both rejoin, either first."""
    service.adopt("w1", "1")  # the trial w1 ran when the chief stopped
    update = {"op": "update", "worker": "w1", "tid": "1", "values": {"train_s": 1.0}}
    assert "unknown worker" in ask(service, **update)["error"]  # the store call: rejoin
    assert ask(service, **join_request("w1", token="s1"))["ok"]  # the heartbeat got there first
    assert ask(service, **join_request("w1", token="s1"))["ok"]  # the store call's rejoin
    assert ask(service, **update)["ok"] and service.connected == 1
    other = ask(service, **join_request("w1", token="s2"))  # another process, same name
    assert "already connected" in other["error"]
    assert sum("joined" in n for n in service.notes) == 1


def test_a_finished_trial_is_never_started_again(service):
    ask(service, **join_request("w1"))
    hand(service, "w1", "0")
    ask(service, op="start_trial", worker="w1", tid="0", hyperparameters={})
    ask(service, op="finish_trial", worker="w1", tid="0", status="ok", values={})
    service.oracle.ongoing_trials["w1"] = FakeTrial("0")
    again = ask(service, op="start_trial", worker="w1", tid="0", hyperparameters={})
    assert "has finished" in again["error"] and "w1" not in service.oracle.ongoing_trials
    assert service.store.get("0").status == TrialStatus.OK


def test_a_silent_workers_trial_goes_back_to_the_queue(service):
    ask(service, **join_request("w1"))
    hand(service, "w1", "3")
    ask(service, op="start_trial", worker="w1", tid="3", hyperparameters={})
    time.sleep(0.3)
    service.check_silence()
    assert service.oracle._retry_queue == ["3"] and service.oracle.saved == 1
    assert "w1" not in service.oracle.tuner_ids and service.connected == 0
    assert any("trial 3 goes to the next worker" in n for n in service.notes)
    late = ask(service, op="finish_trial", worker="w1", tid="3", status="ok", values={})
    assert "unknown worker" in late["error"]  # its late result is not written


def test_heartbeats_keep_a_worker(service):
    ask(service, **join_request("w1"))
    for _ in range(3):
        time.sleep(0.1)
        assert ask(service, op="heartbeat", worker="w1")["ok"]
        service.check_silence()
    assert service.connected == 1


def test_malformed_requests_are_answered(service):
    assert "unknown request" in ask(service, op="drop_tables")["error"]
    assert "malformed" in json.loads(service.handle(b'{"op": "join"}'))["error"]


@pytest.mark.parametrize("text", ["localhost", "host:0", "host:99999", ":80", "a b:1"])
def test_bad_addresses(text):
    with pytest.raises(UserError):
        parse_address(text)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_wire_over_a_real_server(service):
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    handler = grpc.unary_unary_rpc_method_handler(service.handle)
    server.add_generic_rpc_handlers(
        (grpc.method_handlers_generic_handler(SERVICE, {"Call": handler}),)
    )
    port = server.add_insecure_port(f"127.0.0.1:{free_port()}")
    server.start()
    try:
        channel = open_channel(f"127.0.0.1:{port}")
        assert call(channel, {"op": "hello"}, timeout_s=5)["version"] == mcunas.__version__
        with pytest.raises(RemoteError, match="dataset's content differs"):
            call(channel, join_request(dataset_sha256="other"), timeout_s=5)
    finally:
        server.stop(0)


def test_no_chief_is_one_line_and_exit_2_after_the_wait():
    start = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "mcunas", "worker", "--connect", f"127.0.0.1:{free_port()}",
         "--wait", "1"],
        capture_output=True,
        text=True,
        timeout=60,
    )  # fmt: skip
    assert proc.returncode == 2, proc.stderr
    assert "no mcunas chief answers at 127.0.0.1" in proc.stderr
    assert proc.stderr.strip().count("\n") == 0
    assert time.monotonic() - start < 30
    with pytest.raises(ChiefUnreachable):
        call(open_channel(f"127.0.0.1:{free_port()}"), {"op": "hello"}, timeout_s=0.5)


def test_trial_status_round_trip():
    from mcunas.search.results.store import TrialRecord, record_from_dict

    rec = TrialRecord("7", {"a": 1}, status=TrialStatus.OK, worker="w1", energy_uj=2.0)
    assert record_from_dict(json.loads(json.dumps(rec.to_dict()))) == rec
