"""Proposal strategies: the stock Keras Tuner oracles and an aging-evolution oracle.

``--strategy`` picks one of:

- ``random``: :class:`keras_tuner.oracles.RandomSearchOracle`.
- ``bayesian``: :class:`keras_tuner.oracles.BayesianOptimizationOracle` (Gaussian
  process over the completed trials; an infeasible candidate completes with
  score 0, so the process learns where the board's limits are; failed trials
  are not part of its model).
- ``hyperband``: :class:`keras_tuner.oracles.HyperbandOracle` with ``max_epochs``
  = ``--epochs``; a promoted trial starts from its parent's weights and trains
  epochs ``tuner/initial_epoch`` to ``tuner/epochs`` (see
  :mod:`mcunas.search.tuner.tuner`; ``SearchConfig.warm_start`` off, e.g. by
  ``MCUNAS_WARM_START=0``, retrains from scratch).
  ``--max-trials`` caps it.
- ``evolution``: :class:`~mcunas.search.tuner.evolution.AgingEvolutionOracle` (Real
  et al., "Regularized Evolution for Image Classifier Architecture Search", AAAI 2019).
"""

from __future__ import annotations

from collections.abc import Callable

import keras_tuner

from mcunas.search.results.record import HpValues
from mcunas.search.tuner.evolution import AgingEvolutionOracle
from mcunas.search.tuner.kt_state import trial_module

__all__ = ["ORACLES", "AgingEvolutionOracle", "make_oracle", "start_with_reference"]


def _hyperband(max_trials: int, epochs: int, **common: object) -> keras_tuner.Oracle:
    oracle = keras_tuner.oracles.HyperbandOracle(max_epochs=max(2, epochs), factor=3, **common)
    oracle.max_trials = max_trials
    return oracle


def _evolution(
    max_trials: int,
    epochs: int,
    objective: keras_tuner.Objective | None = None,
    seed: int | None = None,
    max_consecutive_failed_trials: int = 3,
) -> keras_tuner.Oracle:
    population = max(4, min(10, max_trials // 3))
    return AgingEvolutionOracle(
        objective,
        max_trials,
        population_size=population,
        seed=seed,
        max_consecutive_failed_trials=max_consecutive_failed_trials,
    )


# --strategy name -> its oracle, made with (max_trials, epochs, **settings); the Keras
# Tuner strategy registers these names (mcunas.engine).
ORACLES: dict[str, Callable[..., keras_tuner.Oracle]] = {
    "random": lambda max_trials, epochs, **common: keras_tuner.oracles.RandomSearchOracle(
        max_trials=max_trials, **common
    ),
    "bayesian": lambda max_trials, epochs, **common: keras_tuner.oracles.BayesianOptimizationOracle(
        max_trials=max_trials, **common
    ),
    "hyperband": _hyperband,
    "evolution": _evolution,
}


def make_oracle(
    strategy: str,
    max_trials: int,
    seed: int,
    epochs: int,
    objective: keras_tuner.Objective | None = None,
) -> keras_tuner.Oracle:
    """The oracle for ``--strategy`` (:data:`ORACLES`); every one stops after ``max_trials``.

    Failed trials are recorded as FAILED trials (infeasible ones complete with
    score 0), so the limit on consecutive failures is lifted: the tuner applies
    its own guard.
    """
    objective = objective or keras_tuner.Objective("score", "max")
    # keras-tuner treats seed 0 as "pick a random seed": shift by one to stay reproducible.
    common = {"objective": objective, "seed": seed + 1, "max_consecutive_failed_trials": 10**9}
    if strategy not in ORACLES:
        raise ValueError(f"unknown strategy {strategy!r}; choose from {', '.join(ORACLES)}")
    return ORACLES[strategy](max_trials, epochs, **common)


def start_with_reference(oracle: keras_tuner.Oracle, ladder: list[HpValues]) -> None:
    """Start the oracle on the rungs of ``ladder`` (``--seed-arch``); later trials are its own.

    The rungs come in the order :func:`mcunas.space.rungs.next_rung` gives:
    the step-down ladder until one variant fits (the search's first trained
    model is the largest variant of the reference that fits), then the widest
    variant that fits at each other input resolution. While every trial so
    far was a rung, the next one is the next rung; after that the oracle draws
    (evolution mutates the rungs first, see :class:`AgingEvolutionOracle`).
    A resumed search picks up where its trials left off.
    """
    from mcunas.space.rungs import ACCEPTED, REFUSED, next_rung

    own = oracle.populate_space
    if isinstance(oracle, AgingEvolutionOracle):  # mutates the rungs first
        oracle.references = [dict(v) for v in ladder]

    def populate_space(trial_id: str) -> dict[str, object]:
        done = [oracle.trials[t] for t in sorted(oracle.trials, key=_creation_order)]
        rungs = [_rung_of(t, ladder) for t in done]
        if all(r is not None for r in rungs):  # every trial so far was a rung
            states = [REFUSED if _refused(t) else ACCEPTED for t in done]
            tried = list(zip(rungs, states, strict=True))
            rung = next_rung(ladder, tried)  # type: ignore[arg-type]
            if rung is not None:
                return {"status": trial_module.TrialStatus.RUNNING, "values": dict(ladder[rung])}
        return own(trial_id)  # past the ladder: the oracle's own draws

    oracle.populate_space = populate_space


def _rung_of(trial: trial_module.Trial, ladder: list[HpValues]) -> int | None:
    """The index of the rung ``trial`` drew, or None for a trial of the oracle's own."""
    values = trial.hyperparameters.values.items()
    return next((i for i, rung in enumerate(ladder) if values <= rung.items()), None)


def _creation_order(trial_id: str) -> tuple[int, str]:
    """Sort key of keras-tuner trial ids: by number ("0", "1", "02": padding grows)."""
    return (int(trial_id), trial_id) if trial_id.isdigit() else (10**9, trial_id)


def _refused(trial: trial_module.Trial) -> bool:
    """True for a completed trial scored 0 as infeasible (not a failure)."""
    if trial.status != trial_module.TrialStatus.COMPLETED:
        return False
    metrics = trial.metrics
    return metrics.exists("feasible") and metrics.get_last_value("feasible") == 0.0
