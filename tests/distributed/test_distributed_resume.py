"""A restarted chief (``--resume``) keeps each running trial for the worker that ran it."""

import keras_tuner as kt

from mcunas.distributed.chief_executor import hold_running
from mcunas.search.results.store import TrialStatus, TrialStore
from mcunas.search.tuner.strategy import reconcile


def oracle_in(folder):
    oracle = kt.oracles.RandomSearchOracle(
        objective=kt.Objective("score", "max"), max_trials=5, seed=0
    )
    oracle._set_project_dir(str(folder), "tuner")
    return oracle


def test_a_restarted_chief_holds_running_trials_for_their_workers(tmp_path):
    first = oracle_in(tmp_path)
    hp = kt.HyperParameters()
    hp.Int("a", 0, 9)
    first.update_space(hp)
    running, done = first.create_trial("w1"), first.create_trial("w2")
    first.update_trial(done.trial_id, {"score": 1.0})
    done.status = "COMPLETED"
    first.end_trial(done)
    first.save()

    again = oracle_in(tmp_path)
    again.reload()  # keras-tuner queues every unfinished trial for a retry
    assert again._retry_queue == [running.trial_id]

    store = TrialStore.open(tmp_path)
    store.start_trial(running.trial_id, {"a": 1}, worker="w1")
    store.start_trial(done.trial_id, {"a": 2}, worker="w2")
    store.finish_trial(done.trial_id, TrialStatus.OK, score=1.0)
    reconcile(store, again)  # as every resumed search does
    hold_running(store, again)  # the chief's part
    assert again.ongoing_trials["w1"].trial_id == running.trial_id
    assert again._retry_queue == [] and "w1" in again.tuner_ids
    assert store.get(running.trial_id).status == TrialStatus.RUNNING  # not failed: it goes on
    store.close()
