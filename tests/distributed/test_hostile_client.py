"""A client that sends what no worker would: refused, nothing written, and the search goes on.

Sent over the wire to a real chief service on 127.0.0.1 (no token on loopback:
any local process may call it): ``../`` and absolute trial ids, trials the chief
never handed out, columns only the chief fills, values of the wrong type, a
model over the size bound, and worker names that would break its lines.
"""

from __future__ import annotations

import base64
import io
import os

import pytest

from mcunas.distributed.checks import MAX_MODEL_BYTES
from mcunas.distributed.server import Door
from mcunas.distributed.session import serving
from mcunas.distributed.wire import RemoteError, call, open_channel
from mcunas.search.settings.progress import Progress
from tests.distributed.test_distributed import FakeTrial, free_port, join_request
from tests.distributed.test_distributed import service as service  # noqa: PLC0414 - the fixture

MODEL = base64.b64encode(b"TFL3" * 8).decode()
OUTSIDE = [
    "../../../../PWNED",
    "/tmp/PWNED",
    "..",
    "a/../../b",
    "x\nWorker w9 joined",
    "",
    "7" * 65,
]


@pytest.fixture
def wire(service, tmp_path):
    """Send one request to ``service`` over gRPC; the reply, or the chief's refusal."""
    address = f"127.0.0.1:{free_port()}"
    ctx = serving(
        address, service, Progress(4, None, stream=io.StringIO()), door=Door(None, None, "")
    )
    ctx.__enter__()
    channel = open_channel(address)

    def send(**payload):
        try:
            return call(channel, payload, timeout_s=5)
        except RemoteError as exc:
            return {"ok": False, "error": str(exc)}

    yield send
    ctx.__exit__(None, None, None)


def files_under(folder):
    return sorted(
        os.path.relpath(os.path.join(d, f), folder) for d, _, fs in os.walk(folder) for f in fs
    )


@pytest.mark.parametrize("tid", OUTSIDE)
def test_ids_that_leave_the_folder_are_refused_and_nothing_is_written(wire, service, tmp_path, tid):
    assert wire(**join_request("w1"))["ok"]
    service.oracle.ongoing_trials["w1"] = FakeTrial(tid)  # even a trial "handed out" so
    before = files_under(tmp_path.parent)
    for op, extra in (
        ("start_trial", {"hyperparameters": {}}),
        ("record_model", {"model": MODEL, "values": {}}),
        ("update", {"values": {"train_s": 1.0}}),
        ("finish_trial", {"status": "ok", "values": {}}),
        ("get", {}),
    ):
        reply = wire(op=op, worker="w1", tid=tid, **extra)
        assert not reply["ok"] and "\n" not in reply["error"], (op, reply)
    assert files_under(tmp_path.parent) == before  # nothing anywhere, inside --out or out
    assert service.store.trials() == []


def test_a_trial_the_chief_never_handed_out_is_refused(wire, service, tmp_path):
    assert wire(**join_request("w1"))["ok"]
    service.oracle.ongoing_trials["w1"] = FakeTrial("3")
    reply = wire(op="start_trial", worker="w1", tid="4", hyperparameters={})
    assert not reply["ok"] and "handed to another worker" in reply["error"]
    reply = wire(op="record_model", worker="w1", tid="3", model=MODEL, values={})
    assert not reply["ok"] and "handed to another worker" in reply["error"]  # not started
    assert service.store.trials() == [] and not (tmp_path / "models").exists()


@pytest.mark.parametrize(
    "values, word",
    [
        ({"model_path": "/etc/passwd"}, "columns"),
        ({"worker": "w2"}, "columns"),
        ({"trial_id": "9"}, "columns"),
        ({"drop": 1}, "columns"),
        ({"latency_ms": "fast"}, "latency_ms"),
        ({"latency_ms": float("nan")}, "latency_ms"),
        ({"arena_bytes": 1.5}, "arena_bytes"),
        ({"estimated": "yes"}, "estimated"),
        ({"reason": "x" * 20_000}, "reason"),
        ({"status": "pwned"}, "status"),
        ([1, 2], "column values"),
    ],
)
def test_columns_only_the_chief_fills_and_wrong_types_are_refused(wire, service, values, word):
    assert wire(**join_request("w1"))["ok"]
    service.oracle.ongoing_trials["w1"] = FakeTrial("3")
    assert wire(op="start_trial", worker="w1", tid="3", hyperparameters={})["ok"]
    reply = wire(op="update", worker="w1", tid="3", values=values)
    assert not reply["ok"] and word in reply["error"] and "\n" not in reply["error"], reply
    rec = service.store.get("3")
    assert rec.model_path is None and rec.worker == "w1" and rec.latency_ms is None


def test_sizes_are_bounded_and_the_search_goes_on(wire, service, tmp_path):
    assert wire(**join_request("w1"))["ok"]
    service.oracle.ongoing_trials["w1"] = FakeTrial("3")
    many = {f"h{i}": i for i in range(501)}
    reply = wire(op="start_trial", worker="w1", tid="3", hyperparameters=many)
    assert not reply["ok"] and "hyperparameters" in reply["error"]
    assert wire(op="start_trial", worker="w1", tid="3", hyperparameters={"units": 8})["ok"]
    big = "A" * ((MAX_MODEL_BYTES // 3 + 2) * 4)
    reply = wire(op="record_model", worker="w1", tid="3", model=big, values={})
    assert not reply["ok"] and "at most" in reply["error"]
    reply = wire(op="record_model", worker="w1", tid="3", model="not base64!", values={})
    assert not reply["ok"] and "base64" in reply["error"]
    for name in ("w\n2", "../w", "x" * 65, 7):
        reply = wire(**join_request(name))
        assert not reply["ok"] and "worker name" in reply["error"]
    # the same chief then takes a well-formed trial as before
    assert wire(op="record_model", worker="w1", tid="3", model=MODEL, values={"train_s": 1.0})["ok"]
    finish = {"op": "finish_trial", "worker": "w1", "tid": "3", "status": "ok"}
    assert wire(**finish, values={"worker_wall_s": 2.0})["ok"]
    rec = service.store.get("3")
    assert (rec.status, rec.model_path) == ("ok", os.path.join("models", "trial_3.tflite"))
    assert files_under(tmp_path / "models") == ["trial_3.tflite"]


class Aborted(Exception):
    pass


class Context:
    def abort(self, code, details):
        raise Aborted(f"{code.name}: {details}")


def test_keras_tuners_service_takes_updates_and_ends_of_running_trials_only():
    from types import SimpleNamespace

    from mcunas.distributed.server import patient_servicer
    from tests.distributed.test_distributed import FakeOracle

    oracle = FakeOracle()
    oracle.ongoing_trials["w1"] = FakeTrial("3")
    servicer = patient_servicer(oracle)
    for tid in ("4", "../../PWNED"):
        with pytest.raises(Aborted, match="FAILED_PRECONDITION: trial .* is not running"):
            servicer.EndTrial(SimpleNamespace(trial=SimpleNamespace(trial_id=tid)), Context())
        with pytest.raises(Aborted, match="not running"):
            servicer.UpdateTrial(SimpleNamespace(trial_id=tid), Context())
