"""Each Keras Tuner internal mcunas relies on, checked against the installed keras-tuner.

A failure here after a keras-tuner upgrade names the one function of
``mcunas/search/tuner/kt_state.py`` to rewrite.
"""

from __future__ import annotations

import threading
from concurrent import futures

import grpc
import keras_tuner as kt
import pytest

from mcunas.search.tuner import kt_state


def _oracle(tmp_path, max_trials: int = 5) -> kt.Oracle:
    oracle = kt.oracles.RandomSearchOracle(
        objective=kt.Objective("score", "max"), max_trials=max_trials, seed=0
    )
    oracle._set_project_dir(str(tmp_path), "t")
    hp = kt.HyperParameters()
    hp.Int("a", 0, 9)
    oracle.update_space(hp)
    return oracle


def _reloaded_with_one_running(tmp_path) -> tuple[kt.Oracle, str]:
    first = _oracle(tmp_path)
    running = first.create_trial("w1")
    first.save()
    again = _oracle(tmp_path)
    again.reload()  # keras-tuner queues every unfinished trial for a retry
    return again, running.trial_id


def test_retry_queue_and_dequeue(tmp_path) -> None:
    oracle, tid = _reloaded_with_one_running(tmp_path)
    assert kt_state.retry_queue(oracle) == [tid]
    kt_state.dequeue(oracle, tid)
    assert kt_state.retry_queue(oracle) == []
    assert oracle.create_trial("w2").trial_id != tid  # not handed out again


def test_assign_gives_a_queued_trial_back_to_its_worker(tmp_path) -> None:
    oracle, tid = _reloaded_with_one_running(tmp_path)
    kt_state.assign(oracle, "w1", tid)
    assert kt_state.running(oracle)["w1"].trial_id == tid
    assert kt_state.retry_queue(oracle) == [] and "w1" in oracle.tuner_ids
    assert oracle.create_trial("w1").trial_id == tid  # keras-tuner hands w1 its own trial


def test_requeue_and_release(tmp_path) -> None:
    oracle = _oracle(tmp_path)
    trial = oracle.create_trial("w1")
    assert kt_state.requeue(oracle, "w1") == trial.trial_id
    assert kt_state.running(oracle) == {} and kt_state.retry_queue(oracle) == [trial.trial_id]
    assert kt_state.requeue(oracle, "w1") is None
    again = oracle.create_trial("w2")
    assert again.trial_id == trial.trial_id  # the next worker gets it
    kt_state.release(oracle, "w2")
    assert "w2" not in kt_state.running(oracle) and kt_state.retry_queue(oracle) == []


def test_the_seed_counter_and_the_random_draw(tmp_path) -> None:
    oracle = _oracle(tmp_path)
    first = kt_state.next_seed(oracle)
    assert kt_state.next_seed(oracle) == first + 1
    values = kt_state.random_values(oracle)
    assert set(values) == {"a"} and 0 <= values["a"] <= 9
    trial = oracle.create_trial("w1")
    assert kt_state.is_duplicate(oracle, dict(trial.hyperparameters.values))
    assert not kt_state.is_duplicate(oracle, {"a": 99})


class _Declared(kt_state.DeclaredSpace, kt.Tuner):
    declared = 0

    def declare_space(self) -> None:
        type(self).declared += 1
        kt_state.declare_space_default(self)

    def run_trial(self, trial, *args, **kwargs):
        return {"score": float(trial.hyperparameters.get("a"))}


def test_the_tuner_declares_its_space_through_the_hook(tmp_path) -> None:
    def build(hp):
        hp.Int("a", 0, 3)
        return None

    oracle = kt.oracles.RandomSearchOracle(
        objective=kt.Objective("score", "max"), max_trials=2, seed=0
    )
    tuner = _Declared(oracle, hypermodel=build, directory=str(tmp_path), project_name="p")
    tuner.search()
    assert _Declared.declared == 1
    assert [hp.name for hp in oracle.get_space().space] == ["a"]  # found by the default too


def test_set_debug_switches_keras_tuners_traceback_printing() -> None:
    from keras_tuner.src import config

    before = config.DEBUG
    try:
        kt_state.set_debug(False)
        assert config.DEBUG is False
        kt_state.set_debug(True)
        assert config.DEBUG is True
    finally:
        config.DEBUG = before


def test_synchronized_takes_the_oracles_lock(tmp_path) -> None:
    oracle, seen = _oracle(tmp_path), []

    @kt_state.synchronized
    def inside(oracle_: kt.Oracle) -> None:
        seen.append(threading.current_thread().name)

    inside(oracle)
    assert seen == [threading.current_thread().name]


def test_serve_oracle_adds_keras_tuners_service(tmp_path) -> None:
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    kt_state.serve_oracle(server, _oracle(tmp_path))
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        from keras_tuner.src import protos

        channel = grpc.insecure_channel(f"127.0.0.1:{port}")
        stub = protos.get_service_grpc().OracleStub(channel)
        reply = stub.GetSpace(protos.get_service().GetSpaceRequest(), timeout=10)
        space = kt.HyperParameters.from_proto(reply.hyperparameters)
        assert [hp.name for hp in space.space] == ["a"]
    finally:
        server.stop(0)


def test_a_servicer_subclass_answers_through_a_client_on_anothers_channel(
    tmp_path, monkeypatch
) -> None:
    monkeypatch.setenv("KERASTUNER_ORACLE_IP", "127.0.0.1")
    monkeypatch.setenv("KERASTUNER_ORACLE_PORT", "1")  # nothing listens: its own channel fails
    monkeypatch.setenv("KERASTUNER_TUNER_ID", "w1")
    monkeypatch.setattr("keras_tuner.src.distribute.oracle_client.TIMEOUT", 10)  # fail, not hang
    oracle = _oracle(tmp_path, max_trials=1)
    calls: list[str] = []

    class Counting(kt_state.oracle_servicer_class()):
        def CreateTrial(self, request, context):  # noqa: N802
            calls.append(request.tuner_id)
            return kt_state.create_trial_response(self.oracle.create_trial(request.tuner_id))

    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    kt_state.serve_oracle(server, oracle, Counting(oracle))
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        from keras_tuner.src.distribute.oracle_client import OracleClient

        client = OracleClient(oracle)
        kt_state.use_channel(client, grpc.insecure_channel(f"127.0.0.1:{port}"))
        trial = client.create_trial("w1")
        assert trial.status == kt_state.TrialStatus.RUNNING and calls == ["w1"]
    finally:
        server.stop(0)


@pytest.mark.parametrize("name", ["TrialStatus", "hp_module", "trial_module"])
def test_the_public_names_it_re_exports_exist(name) -> None:
    assert getattr(kt_state, name) is not None
