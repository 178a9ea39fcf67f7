"""A distributed search always ends: workers stay while trials run, a lone chief stops."""

import json
import time

import pytest

from mcunas.distributed.alone import AloneWatch, ChiefAbsence, NoWorkers
from mcunas.distributed.chief import ChiefService
from mcunas.search.results.store import TrialStore
from tests.distributed.test_distributed import (
    FakeOracle,
    FakeTrial,
    free_port,
    join_request,
    welcome,
)


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def test_a_lone_chief_says_so_every_minute_then_stops_with_the_resume_line():
    clock, notes = Clock(), []
    watch = AloneWatch(300, notes.append, "mcunas search --out runs/x --resume", "h:1", clock)
    watch.check(connected=1, waiting=["trial 5"])  # a worker is there: nothing to say
    watch.check(connected=0, waiting=[])  # nothing waits: nothing to say
    assert notes == []
    for clock.now in (10.0, 40.0, 70.0, 130.0):
        watch.check(connected=0, waiting=["trial 5"])
    assert len(notes) == 3  # at 10, 70 and 130 s
    assert "No worker connected, trial 5 waiting: start `mcunas worker --connect h:1`" in notes[0]
    assert "stops in 5 min" in notes[0] and "--resume" in notes[0]
    clock.now = 200.0
    watch.check(connected=1, waiting=["trial 5"])  # a worker came: the clock starts over
    clock.now = 450.0
    watch.check(connected=0, waiting=["trial 5"])
    clock.now = 749.0
    watch.check(connected=0, waiting=["trial 5"])
    clock.now = 750.0
    with pytest.raises(NoWorkers) as stop:
        watch.check(connected=0, waiting=["trial 5"])
    line = str(stop.value)
    assert "no worker connected for 300 s with trial 5 waiting" in line and "\n" not in line
    assert line.endswith("continue with: mcunas search --out runs/x --resume")


@pytest.fixture
def service(tmp_path):
    store = TrialStore.open(tmp_path, threads=True)
    notes = []
    svc = ChiefService(store, FakeOracle(), tmp_path / "models", welcome(), None, notes.append, 0.1)
    svc.notes = notes
    yield svc
    store.close()


def test_the_chief_stops_when_a_killed_workers_trial_finds_no_worker(service):
    service.alone = AloneWatch(0.3, service.notes.append, "mcunas search --out o --resume", "h:1")
    json.loads(service.handle(json.dumps(join_request("w1")).encode()))
    service.oracle.ongoing_trials["w1"] = FakeTrial("5")
    time.sleep(0.15)
    service.check_silence()  # w1 silent: its trial goes back to the queue
    assert service.oracle._retry_queue == ["5"]
    assert any("No worker connected, trial 5 waiting" in n for n in service.notes)
    time.sleep(0.35)
    with pytest.raises(NoWorkers, match="trial 5 waiting"):
        service.check_silence()


def test_a_worker_says_once_that_it_waits_for_its_chief_and_gives_up_after_the_wait():
    clock, notes = Clock(), []
    absence = ChiefAbsence("w1", "h:1", 900, notes.append, clock)
    assert not absence.missed() and notes == []  # one miss: a busy chief, say nothing
    for clock.now in (2.0, 6.0, 10.0):
        assert not absence.missed()
    assert len(notes) == 1
    assert "w1: the chief at h:1 does not answer" in notes[0]
    assert "waits up to 15 min" in notes[0] and "Ctrl-C stops this worker" in notes[0]
    absence.answered()
    assert "answers again" in notes[1]
    clock.now = 20.0
    absence.missed()
    clock.now = 920.0
    assert absence.missed() and "did not come back within 15 min" in absence.gone_line()


def test_the_chiefs_interrupt_line_says_its_workers_wait():
    from mcunas.commands.search import workers_wait
    from mcunas.search.settings.config import SearchConfig

    assert workers_wait(SearchConfig(board="esp32s3")) == ""
    said = workers_wait(SearchConfig(board="esp32s3", serve="127.0.0.1:8470"))
    assert "workers wait up to 15 min" in said and "Ctrl-C" in said


class Oracle(FakeOracle):
    """A keras-tuner oracle with every trial handed out: create_trial says stopped."""

    def create_trial(self, tuner_id):
        from keras_tuner.src.engine import hyperparameters, trial

        space = hyperparameters.HyperParameters()
        return trial.Trial(space, trial_id="6", status=trial.TrialStatus.STOPPED)


def test_a_worker_stays_while_a_trial_runs_elsewhere():
    from keras_tuner.src.engine import trial as trial_module

    from mcunas.distributed.server import HOLD_S, patient_servicer

    class Request:
        tuner_id = "wB"

    oracle, notes = Oracle(), []
    oracle.ongoing_trials["wA"] = FakeTrial("5")
    servicer = patient_servicer(oracle, notes.append)
    start = time.monotonic()
    reply = servicer.CreateTrial(Request(), None)
    assert trial_module.TrialStatus.from_proto(reply.trial.status) == "IDLE"
    assert HOLD_S <= time.monotonic() - start < HOLD_S + 2  # held: its loop asks once a second
    assert "Worker wB stays" in notes[0] and "trial 5" in notes[0]
    del oracle.ongoing_trials["wA"]
    oracle._retry_queue.append("5")  # wA was silent: its trial waits in the queue
    assert servicer.CreateTrial(Request(), None).trial.status == reply.trial.status
    oracle._retry_queue.clear()  # nothing runs or waits anywhere: the search is over
    reply = servicer.CreateTrial(Request(), None)
    assert trial_module.TrialStatus.from_proto(reply.trial.status) == "STOPPED"


def test_the_chief_says_so_when_every_worker_left_between_two_trials(service):
    service.alone = AloneWatch(0.3, service.notes.append, "mcunas search --out o --resume", "h:1")
    service.oracle.trials, service.oracle.max_trials = {"0": FakeTrial("0")}, 3
    json.loads(service.handle(json.dumps(join_request("w1")).encode()))
    time.sleep(0.15)
    service.check_silence()  # w1 left after its trial: nothing running, two trials to go
    assert any("No worker connected, the next trial waiting" in n for n in service.notes)
    time.sleep(0.35)
    with pytest.raises(NoWorkers, match="the next trial waiting"):
        service.check_silence()


def test_a_chief_whose_trials_are_all_given_out_waits_for_nothing(service):
    service.alone = AloneWatch(0.0, service.notes.append, "mcunas search --out o --resume", "h:1")
    service.oracle.trials, service.oracle.max_trials = {"0": FakeTrial("0")}, 1
    service.check_silence()  # the search is done: no note, no stop
    assert service.notes == []


def test_a_chief_alone_from_the_start_keeps_the_folder_its_resume_line_names(tmp_path, capsys):
    from mcunas.commands.cli import main

    out = tmp_path / "chief"
    args = ["search", "--board", "esp32s3", "--serve", f"127.0.0.1:{free_port()}", "--wait", "1",
            "--max-trials", "2", "--epochs", "1", "--out", str(out)]  # fmt: skip
    with pytest.raises(SystemExit) as stop:
        main(args)
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert stop.value.code == 2 and f"--out {out} --resume" in err
    assert (out / "trials.sqlite").is_file()  # kept: the line it printed works
    with pytest.raises(SystemExit) as again:
        main([*args[:4], f"127.0.0.1:{free_port()}", *args[5:], "--resume"])
    assert again.value.code == 2 and "--resume" in capsys.readouterr().err
