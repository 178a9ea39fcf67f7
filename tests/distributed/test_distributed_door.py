"""The chief's door on loopback: the token on every call, TLS, limits, a flood."""

import io
import json
import os
import shutil
import signal
import socket
import stat
import subprocess
import sys
import threading
import time

import grpc
import pytest

import mcunas
from mcunas.distributed.auth import TOKEN_ENV, TOKEN_FILE, chief_token, worker_token
from mcunas.distributed.chief import ChiefService
from mcunas.distributed.gate import Gate, peer_host
from mcunas.distributed.server import Door
from mcunas.distributed.session import serving
from mcunas.distributed.wire import (
    METHOD,
    ChiefUnreachable,
    Refused,
    RemoteError,
    call,
    identity_sha256,
    open_channel,
)
from mcunas.errors import UserError
from mcunas.search.results.store import TrialStore
from mcunas.search.settings.config import IDENTITY, SearchConfig
from mcunas.search.settings.progress import Progress

CONFIG = SearchConfig(board="esp32s3", max_trials=4, epochs=1)
TOKEN = "s3cret-token"


def welcome():
    return {
        "version": mcunas.__version__,
        "config": CONFIG.to_dict(),
        "identity_sha256": identity_sha256(CONFIG.to_dict(), IDENTITY),
        "dataset_sha256": "digits",
    }


def join(name="w1"):
    return {
        "op": "join",
        "worker": name,
        "version": mcunas.__version__,
        "identity_sha256": identity_sha256(CONFIG.to_dict(), IDENTITY),
        "dataset_sha256": "digits",
    }


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def chief(tmp_path):
    """A chief's service behind its door on 127.0.0.1, its printed lines in ``log``."""

    def start(door):
        address = f"127.0.0.1:{free_port()}"
        log = io.StringIO()
        store = TrialStore.open(tmp_path, threads=True)
        service = ChiefService(store, None, tmp_path / "models", welcome(), None, log.write, 60)
        ctx = serving(address, service, Progress(4, None, stream=log), door=door)
        ctx.__enter__()
        started.append((ctx, store))
        service.address, service.log = address, log
        service.stop = lambda: ctx.__exit__(None, None, None)
        return service

    started = []
    yield start
    for ctx, store in started:
        ctx.__exit__(None, None, None)
        store.close()


def test_a_worker_without_the_token_or_with_a_wrong_one_is_refused(chief):
    service = chief(Door(TOKEN, None, ""))
    for token, why in ((None, "no token"), ("guess", "wrong token")):
        channel = open_channel(service.address, token)
        with pytest.raises(Refused, match=f"refused this caller: {why}") as refused:
            call(channel, join(), timeout_s=5)
        assert "\n" not in str(refused.value) and TOKEN_ENV in str(refused.value)
        with pytest.raises(Refused):  # every request, not only the first
            call(channel, {"op": "trials", "worker": "w1"}, timeout_s=5)
    assert service.connected == 0 and service.store.trials() == []  # nothing stored
    lines = service.log.getvalue()
    assert "Refused a call from 127.0.0.1: no token." in lines
    assert "Refused a call from 127.0.0.1: wrong token" not in lines  # once a minute per address
    good = open_channel(service.address, TOKEN)
    assert call(good, {"op": "hello"}, timeout_s=5)["version"] == mcunas.__version__
    assert call(good, join(), timeout_s=5)["ok"] and service.connected == 1


def test_a_loopback_chief_without_a_token_takes_any_caller(chief):
    service = chief(Door(None, None, ""))
    assert call(open_channel(service.address, "anything"), join(), timeout_s=5)["ok"]


def test_a_flood_of_garbage_connections_and_calls_leaves_the_chief_serving(chief):
    service = chief(Door(TOKEN, None, ""))
    host, port = service.address.split(":")
    sockets = []
    for i in range(200):  # many connections: half send garbage, half say nothing
        s = socket.create_connection((host, int(port)), timeout=5)
        if i % 2:
            s.sendall(os.urandom(4096))
        sockets.append(s)
    errors = []

    def unauthenticated():
        channel = open_channel(service.address, None)
        stub = channel.unary_unary(METHOD)
        for _ in range(50):
            try:
                stub(b"\xff" * 1000, timeout=5)
            except grpc.RpcError as exc:
                errors.append(exc.code())

    threads = [threading.Thread(target=unauthenticated) for _ in range(6)]
    for t in threads:
        t.start()
    try:
        start = time.monotonic()
        good = open_channel(service.address, TOKEN)
        assert call(good, {"op": "hello"}, timeout_s=20)["ok"]  # served during the flood
        assert time.monotonic() - start < 20
    finally:
        for t in threads:
            t.join()
        for s in sockets:
            s.close()
    assert len(errors) == 300 and set(errors) <= {
        grpc.StatusCode.UNAUTHENTICATED,
        grpc.StatusCode.RESOURCE_EXHAUSTED,
    }
    assert service.store.trials() == [] and service.connected == 0
    assert call(good, join(), timeout_s=5)["ok"]
    assert service.log.getvalue().count("Refused a call") <= 2  # no line per call


def test_the_rate_limit_refuses_a_burst_and_a_worker_waits_it_out(chief, monkeypatch):
    import functools

    import mcunas.distributed.session as session

    # a slow gate for the test: two calls a second from one address, bursts of three
    monkeypatch.setattr(session, "Gate", functools.partial(Gate, rate_per_s=2.0, burst=3.0))
    service = chief(Door(TOKEN, None, ""))
    channel = open_channel(service.address, TOKEN)
    stub = channel.unary_unary(METHOD)
    hello = json.dumps({"op": "hello"}).encode()
    codes = []
    for _ in range(6):
        try:
            stub(hello, timeout=5)
            codes.append("OK")
        except grpc.RpcError as exc:
            codes.append(exc.code().name)
    assert codes[:3] == ["OK"] * 3 and "RESOURCE_EXHAUSTED" in codes[3:]
    assert call(channel, {"op": "hello"}, timeout_s=10)["ok"]  # wire.call waits it out
    assert "Refused a call from 127.0.0.1: too many calls." in service.log.getvalue()
    assert peer_host("ipv4:10.1.2.3:5555") == "10.1.2.3"
    assert peer_host("ipv6:[::1]:5555") == "::1"


def tls_files(tmp_path):
    """A self-signed certificate for 127.0.0.1 made with openssl (skip without it)."""
    if shutil.which("openssl") is None:
        pytest.skip("openssl is not installed")
    cert, key = tmp_path / "chief.pem", tmp_path / "chief.key"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
         "-keyout", str(key), "-out", str(cert), "-subj", "/CN=127.0.0.1",
         "-addext", "subjectAltName=IP:127.0.0.1"],
        check=True, capture_output=True, timeout=60,
    )  # fmt: skip
    return cert, key


def test_tls_with_a_self_signed_certificate(chief, tmp_path):
    cert, key = tls_files(tmp_path)
    service = chief(Door(TOKEN, (str(cert), str(key)), ""))
    secure = open_channel(service.address, TOKEN, cert.read_bytes())
    assert call(secure, {"op": "hello"}, timeout_s=10)["ok"]
    with pytest.raises(Refused, match="no token"):  # TLS does not replace the token
        call(open_channel(service.address, None, cert.read_bytes()), join(), timeout_s=10)
    with pytest.raises(ChiefUnreachable, match="TLS"):  # a plain channel gets no answer
        call(open_channel(service.address, TOKEN), {"op": "hello"}, timeout_s=1)


def test_the_chief_makes_a_token_off_loopback_and_keeps_it(tmp_path, monkeypatch):
    monkeypatch.delenv(TOKEN_ENV, raising=False)
    assert chief_token("127.0.0.1", None, tmp_path) == (None, "")
    assert chief_token("localhost", None, tmp_path)[0] is None
    token, where = chief_token("0.0.0.0", None, tmp_path)
    path = tmp_path / TOKEN_FILE
    assert token and str(path) in where and "--token-file" in where
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert chief_token("10.0.0.5", None, tmp_path)[0] == token  # a resumed chief: the same
    assert worker_token(str(path)) == token
    mine = tmp_path / "sub" / "my.token"
    made, where = chief_token("0.0.0.0", str(mine), tmp_path)
    assert stat.S_IMODE(mine.stat().st_mode) == 0o600 and "Wrote a new token" in where
    assert chief_token("0.0.0.0", str(mine), tmp_path)[0] == made
    monkeypatch.setenv(TOKEN_ENV, "from-env")
    assert chief_token("0.0.0.0", None, tmp_path)[0] == "from-env"
    assert worker_token(None) == "from-env"


def test_bad_token_and_tls_settings_are_one_line(tmp_path, monkeypatch):
    empty = tmp_path / "empty.token"
    empty.write_text("\n")
    with pytest.raises(UserError, match="one token"):
        worker_token(str(empty))
    with pytest.raises(UserError, match="no such file"):
        worker_token(str(tmp_path / "missing"))
    monkeypatch.setenv(TOKEN_ENV, " ")
    with pytest.raises(UserError, match="empty"):
        worker_token(None)
    from mcunas.engine import check_search  # the chief's settings are checked there

    serve = dict(board="esp32s3", serve="127.0.0.1:8470")
    with pytest.raises(UserError, match="go together"):
        check_search(SearchConfig(**serve, tls_cert=str(empty)))
    with pytest.raises(UserError, match="not a PEM"):
        check_search(SearchConfig(**serve, tls_cert=str(empty), tls_key=str(empty)))
    with pytest.raises(UserError, match="only with --serve"):
        SearchConfig(board="esp32s3", token_file="t").validate()
    with pytest.raises(UserError, match="--wait"):
        check_search(SearchConfig(**serve, wait_s=float("nan")))


def test_the_chief_sends_workers_no_paths_of_its_secrets():
    from mcunas.distributed.session import welcome as chief_welcome

    config = SearchConfig(board="esp32s3", serve="0.0.0.0:1", token_file="/k/t", tls_key="/k/k")
    sent = chief_welcome(config)["config"]
    assert "token_file" not in sent and "tls_key" not in sent
    assert json.loads(json.dumps(sent))["board"] == "esp32s3"


def test_a_refused_worker_is_one_line_and_exit_2(chief, tmp_path):
    service = chief(Door(TOKEN, None, ""))
    wrong = tmp_path / "wrong.token"
    wrong.write_text("nope\n")
    proc = subprocess.run(
        [sys.executable, "-m", "mcunas", "worker", "--connect", service.address,
         "--token-file", str(wrong), "--wait", "10"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 2, proc.stderr
    assert "refused this caller: wrong token" in proc.stderr
    assert proc.stderr.strip().count("\n") == 0
    assert "Refused a call from 127.0.0.1: wrong token." in service.log.getvalue()
    with pytest.raises(RemoteError):  # Refused is a RemoteError: old handlers still catch it
        call(open_channel(service.address, "nope"), {"op": "hello"}, timeout_s=5)


@pytest.fixture
def ctrl_c():
    """Ctrl-C raises KeyboardInterrupt in this process, whatever SIGINT setting it inherited.

    pytest started as a background job of a script inherits SIGINT ignored, and
    ``_thread.interrupt_main`` then does nothing (``run_worker`` handles this itself,
    see tests/distributed/test_worker_wakeup.py; these tests drive ``ChiefConnection`` directly).
    """
    previous = signal.getsignal(signal.SIGINT)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


def test_a_worker_whose_chief_stops_says_it_waits_then_stops(chief, ctrl_c):
    from mcunas.distributed.worker import ChiefConnection, WorkerSettings

    service = chief(Door(TOKEN, None, ""))
    joined = ChiefConnection(WorkerSettings(service.address, "w1", token=TOKEN), CONFIG, "digits")
    assert joined.join()["ok"]
    joined.wait_s, notes = 8.0, []
    joined.start_heartbeat(0.5, notes.append)
    time.sleep(1.5)
    assert notes == [] and service.connected == 1  # heartbeats through the door
    service.stop()  # the chief stops (Ctrl-C)
    with pytest.raises(KeyboardInterrupt):  # the heartbeat ends the main thread's wait
        for _ in range(600):
            time.sleep(0.1)  # (a gRPC call, as a worker's main thread makes, is woken alike)
    assert len(notes) == 1 and "w1: the chief at" in notes[0] and "does not answer" in notes[0]
    assert "waits up to 8 s" in notes[0] and "Ctrl-C stops this worker now" in notes[0]
    assert "did not come back within 8 s" in joined.gone


def test_a_request_over_the_size_limit_is_refused_at_once(chief, monkeypatch):
    import mcunas.distributed.gate as gate

    monkeypatch.setattr(gate, "MAX_REQUEST_BYTES", 4096)
    service = chief(Door(TOKEN, None, ""))
    channel = open_channel(service.address, TOKEN)
    start = time.monotonic()
    with pytest.raises(RemoteError, match="RESOURCE_EXHAUSTED"):  # not waited out as "busy"
        call(channel, {"op": "hello", "pad": "x" * 10_000}, timeout_s=30)
    assert time.monotonic() - start < 10
    assert call(channel, {"op": "hello"}, timeout_s=5)["ok"]  # and the chief serves on


def test_a_chief_that_stops_mid_heartbeat_is_not_waited_for_beyond_the_workers_wait(
    monkeypatch, ctrl_c
):
    """A heartbeat the stopping chief answers with an error: the rejoin is short, not 15 min."""
    import mcunas.distributed.worker as worker
    from mcunas.distributed.worker import ChiefConnection, WorkerSettings

    def call(channel, payload, *, timeout_s, address="chief"):
        if payload["op"] == "heartbeat":  # the chief is shutting down: an error, not silence
            raise RemoteError("chief at h:1: CANCELLED: shutting down")
        if timeout_s > 30:  # a long rejoin: the chief is gone, this would hang the heartbeat
            time.sleep(600)
        raise ChiefUnreachable("no mcunas chief answers at h:1")

    monkeypatch.setattr(worker, "call", call)
    joined = ChiefConnection(WorkerSettings("127.0.0.1:1", "w1", token=TOKEN), CONFIG, "digits")
    joined.wait_s, notes = 1.0, []
    joined.start_heartbeat(0.1, notes.append)
    with pytest.raises(KeyboardInterrupt):  # the heartbeat ends the main thread's wait
        for _ in range(300):
            time.sleep(0.1)
    assert "did not come back within 1 s" in joined.gone
