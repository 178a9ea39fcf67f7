"""Every use of Keras Tuner's internals, in one place (written against keras-tuner 1.4.8).

mcunas needs a few things Keras Tuner keeps private: the oracle's retry queue
and its map of running trials (a distributed chief hands a silent worker's
trial on, and a restarted chief gives a running trial back to its worker), the
oracle's seed counter and random draw (the evolution oracle), the lock that
keeps the oracle's state consistent, the gRPC servicer of the oracle, the
tuner's space-declaration step, and the switch for its traceback printing.
Each is reached only through this module, and ``tests/search/tuner/test_kt_state.py``
checks each against the installed version: upgrading the pin means reading
this file and running that test.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

import keras_tuner
from keras_tuner.engine import hyperparameters as hp_module
from keras_tuner.engine import trial as trial_module
from keras_tuner.src import config as kt_config

from mcunas.search.results.record import HpValues

if TYPE_CHECKING:
    import grpc

__all__ = [
    "DeclaredSpace",
    "TrialStatus",
    "assign",
    "create_trial_response",
    "declare_space_default",
    "dequeue",
    "hp_module",
    "is_duplicate",
    "next_seed",
    "oracle_servicer_class",
    "random_values",
    "release",
    "requeue",
    "retry_queue",
    "running",
    "serve_oracle",
    "set_debug",
    "synchronized",
    "trial_module",
    "use_channel",
]

F = TypeVar("F", bound=Callable[..., object])

TrialStatus = trial_module.TrialStatus


def synchronized(func: F) -> F:
    """Keras Tuner's oracle lock: ``func(oracle, ...)`` runs alone among the oracle's calls."""
    return keras_tuner.synchronized(func)


def set_debug(debug: bool) -> None:
    """Whether Keras Tuner prints a traceback for every failed trial (its ``config.DEBUG``)."""
    kt_config.DEBUG = bool(debug)


# ---------------------------------------------------------------- the oracle's queue
def retry_queue(oracle: keras_tuner.Oracle) -> list[str]:
    """A copy of the ids the oracle will hand out again before drawing new trials."""
    return list(oracle._retry_queue)  # noqa: SLF001 - keras-tuner keeps no public view


def dequeue(oracle: keras_tuner.Oracle, trial_id: str) -> None:
    """Take ``trial_id`` out of the retry queue (it is not to be run again)."""
    oracle._retry_queue.remove(trial_id)  # noqa: SLF001


def running(oracle: keras_tuner.Oracle) -> dict[str, trial_module.Trial]:
    """The oracle's running trials by tuner id (its own dict: hold the oracle's lock)."""
    return oracle.ongoing_trials


def assign(oracle: keras_tuner.Oracle, tuner_id: str, trial_id: str) -> None:
    """Make ``trial_id`` (from the retry queue) ``tuner_id``'s running trial again."""
    queue = oracle._retry_queue  # noqa: SLF001
    if trial_id in queue:
        queue.remove(trial_id)
    oracle.ongoing_trials[tuner_id] = oracle.trials[trial_id]
    oracle.tuner_ids.add(tuner_id)


@synchronized
def requeue(oracle: keras_tuner.Oracle, tuner_id: str) -> str | None:
    """Take ``tuner_id``'s running trial back into the retry queue; its id, or None."""
    trial = oracle.ongoing_trials.pop(tuner_id, None)
    oracle.tuner_ids.discard(tuner_id)
    if trial is None:
        return None
    oracle._retry_queue.append(trial.trial_id)  # noqa: SLF001
    oracle.save()
    return str(trial.trial_id)


@synchronized
def release(oracle: keras_tuner.Oracle, tuner_id: str) -> None:
    """Forget ``tuner_id``'s running trial without queueing it again (it is done)."""
    oracle.ongoing_trials.pop(tuner_id, None)


# ---------------------------------------------------------------- the oracle's draws
def next_seed(oracle: keras_tuner.Oracle) -> int:
    """The oracle's seed counter, advanced by one (its draws stay reproducible)."""
    seed = int(oracle._seed_state)  # noqa: SLF001
    oracle._seed_state += 1  # noqa: SLF001
    return seed


def random_values(oracle: keras_tuner.Oracle) -> HpValues | None:
    """A random, not yet tried point of the oracle's space; None when none is left."""
    return oracle._random_values()  # noqa: SLF001


def is_duplicate(oracle: keras_tuner.Oracle, values: HpValues) -> bool:
    """Whether the oracle has tried ``values`` already."""
    return bool(oracle._duplicate(values))  # noqa: SLF001


# ---------------------------------------------------------------- the tuner
class DeclaredSpace:
    """Mixin for a ``keras_tuner.Tuner``: its ``declare_space()`` declares the space.

    It replaces Keras Tuner's private step ``_populate_initial_space``, which
    runs once before the first trial.
    """

    def declare_space(self) -> None:
        """Declare every hyperparameter to the oracle (the subclass's own way)."""
        raise NotImplementedError

    def _populate_initial_space(self) -> None:
        self.declare_space()


def declare_space_default(tuner: keras_tuner.Tuner) -> None:
    """Keras Tuner's own way to find the space: build the model once per conditional scope."""
    keras_tuner.Tuner._populate_initial_space(tuner)  # noqa: SLF001


def oracle_is_remote() -> bool:
    """Keras Tuner's own test of a worker: its ``KERASTUNER_*`` variables name another chief.

    A tuner made then gets the chief's oracle through an ``OracleClient``.
    """
    from keras_tuner.src.distribute import utils

    return bool(utils.has_chief_oracle() and not utils.is_chief_oracle())


def is_oracle_client(oracle: keras_tuner.Oracle) -> bool:
    """Whether ``oracle`` is Keras Tuner's ``OracleClient``: a worker's proxy of the chief's."""
    from keras_tuner.src.distribute.oracle_client import OracleClient

    return isinstance(oracle, OracleClient)


# ---------------------------------------------------------------- the oracle service
def oracle_servicer_class() -> type:
    """Keras Tuner's ``OracleServicer`` (the chief's side of its service), to subclass."""
    from keras_tuner.src.distribute.oracle_chief import OracleServicer

    return OracleServicer


def create_trial_response(trial: trial_module.Trial) -> object:
    """The ``CreateTrial`` reply carrying ``trial`` (Keras Tuner's proto)."""
    from keras_tuner.src import protos

    return protos.get_service().CreateTrialResponse(trial=trial.to_proto())


def serve_oracle(
    server: grpc.Server, oracle: keras_tuner.Oracle, servicer: object | None = None
) -> None:
    """Add Keras Tuner's ``Oracle`` gRPC service for ``oracle`` (or ``servicer``) to ``server``."""
    from keras_tuner.src import protos

    servicer = servicer if servicer is not None else oracle_servicer_class()(oracle)
    protos.get_service_grpc().add_OracleServicer_to_server(servicer, server)


def use_channel(oracle: keras_tuner.Oracle, channel: grpc.Channel) -> None:
    """Send a worker's oracle calls through ``channel`` (a ``grpc.Channel``).

    Keras Tuner's ``OracleClient`` opens a plain channel of its own; this gives it
    a stub on the given channel instead. Every other oracle is left alone.
    """
    from keras_tuner.src import protos
    from keras_tuner.src.distribute.oracle_client import OracleClient

    if isinstance(oracle, OracleClient):
        oracle.stub = protos.get_service_grpc().OracleStub(channel)
