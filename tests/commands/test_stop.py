"""A stop signal whose exception Python lost still stops the search after the trial."""

from __future__ import annotations

import io
import os
import signal

import pytest

from mcunas.commands.search import sigterm_as_interrupt
from mcunas.search.results.store import TrialRecord, TrialStatus
from mcunas.search.settings import stop
from mcunas.search.settings.progress import Progress


class _SignalsInDel:
    """An object whose finalizer sends the process SIGTERM (as TensorFlow's run any code)."""

    def __del__(self) -> None:
        os.kill(os.getpid(), signal.SIGTERM)
        for _ in range(1000):  # bytecode for the handler to run in, inside __del__
            pass


def _done(progress: Progress) -> str:
    rec = TrialRecord(trial_id="00", hyperparameters={}, status=TrialStatus.OK, train_s=1.0)
    return progress.trial_done(rec, 1, rec)


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_a_sigterm_lost_in_a_finalizer_stops_at_the_next_progress_line() -> None:
    out = io.StringIO()
    progress = Progress(3, None, stream=out)
    with sigterm_as_interrupt():
        obj = _SignalsInDel()
        del obj  # the handler's KeyboardInterrupt is raised inside __del__ and ignored
        assert stop.asked()
        with pytest.raises(KeyboardInterrupt):
            _done(progress)
    assert "trial 00 ok" in out.getvalue()  # the finished trial's line is still printed
    assert not stop.asked()  # the search is over: later work in this process goes on
    assert "trial 00" in _done(progress)


def test_handlers_are_restored_and_an_ignored_ctrl_c_stays_ignored() -> None:
    before_int, before_term = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    try:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # a background job of a script
        with sigterm_as_interrupt():
            assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
            assert signal.getsignal(signal.SIGTERM) not in (before_term, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        with sigterm_as_interrupt():
            assert signal.getsignal(signal.SIGINT) is not signal.default_int_handler
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
        assert signal.getsignal(signal.SIGTERM) == before_term
    finally:
        signal.signal(signal.SIGINT, before_int)
        stop.clear()
