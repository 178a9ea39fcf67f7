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
- ``evolution``: :class:`AgingEvolutionOracle` below (Real et al., "Regularized
  Evolution for Image Classifier Architecture Search", AAAI 2019).

Aging evolution: the first ``population_size`` trials are random (a seeded
search mutates its seeds in two of three of them, see
:meth:`AgingEvolutionOracle.populate_space`). After that, the population is
the ``population_size`` most recently *finished* feasible trials (infeasible
and failed candidates never become parents); draw ``sample_size`` of them at
random and take as the parent the best-scoring one or, half the time, any one
of the sample's accuracy/latency front (a multi-objective tournament, so the
children spread along the trade-off the Pareto front reports). The child
changes one active hyperparameter of the parent: a numeric one moves one step
up or down three times in four (any other value otherwise); newly activated
conditional hyperparameters are sampled at random, deactivated ones dropped.
Old trials leave the population as new ones finish, which is the "aging" that
keeps the search from over-exploiting one lucky early model. All randomness
comes from the oracle's seed, and all state lives in the trials and the
oracle's JSON, so ``--resume`` works as for the stock oracles.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import keras_tuner

from mcunas.search.tuner.kt_state import (
    hp_module,
    is_duplicate,
    next_seed,
    random_values,
    trial_module,
)

__all__ = ["ORACLES", "AgingEvolutionOracle", "make_oracle", "start_with_reference"]

# Mutation attempts before falling back to a random candidate (duplicates).
MAX_MUTATION_ATTEMPTS = 20
# Share of numeric mutations that move one step (up or down) rather than anywhere.
LOCAL_STEP_SHARE = 0.75


class AgingEvolutionOracle(keras_tuner.Oracle):
    """Aging (regularized) evolution over a Keras Tuner search space.

    Args:
        objective: keras_tuner.Objective, the score to maximise or minimise.
        max_trials: int, the number of trials to run at most.
        population_size: int, default 8: random trials first, then the
            population window.
        sample_size: int, default 3: tournament size among the population.
        seed: int | None, the random seed.
        **kwargs: passed to :class:`keras_tuner.Oracle`.

    Example::

        oracle = AgingEvolutionOracle(keras_tuner.Objective("score", "max"), 20, seed=1)
    """

    def __init__(
        self,
        objective: Any = None,
        max_trials: int = 20,
        population_size: int = 8,
        sample_size: int = 3,
        seed: int | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(objective=objective, max_trials=max_trials, seed=seed, **kwargs)
        self.population_size = max(2, int(population_size))
        self.sample_size = max(1, min(int(sample_size), self.population_size))
        self.seeds: list[dict[str, Any]] = []  # set by start_with_reference

    def _population(self) -> list[trial_module.Trial]:
        done = [
            self.trials[t]
            for t in self.end_order
            if self.trials[t].status == trial_module.TrialStatus.COMPLETED
            and self.trials[t].score is not None
            and _feasible(self.trials[t])
        ]
        return done[-self.population_size :]

    def populate_space(self, trial_id: str) -> dict[str, Any]:
        """Random values until the population is full, then a mutated tournament winner.

        A seeded search (:func:`start_with_reference`) fills its population with
        children of the seeds as well: once a seed has a score, two trials in
        three of the filling are mutations, so a short search improves on the
        reference curve instead of spending its time on random draws.
        """
        population = self._population()
        filling = len(self.end_order) < self.population_size
        seeded = filling and self._has_seed(population) and len(self.end_order) % 3 != 2
        if not population or (filling and not seeded):
            return self._random_response()
        rng = random.Random(next_seed(self))
        sample = rng.sample(population, min(self.sample_size, len(population)))
        parent = self._winner(sample, rng)
        for _ in range(MAX_MUTATION_ATTEMPTS):
            values = self._mutate(parent.hyperparameters.values, rng)
            if values is not None and not is_duplicate(self, values):
                return {"status": trial_module.TrialStatus.RUNNING, "values": values}
        return self._random_response()

    def _has_seed(self, population: list[trial_module.Trial]) -> bool:
        return any(
            t.hyperparameters.values.items() <= s.items() for t in population for s in self.seeds
        )

    def _winner(self, sample: list[trial_module.Trial], rng: random.Random) -> Any:
        """The tournament's parent: the best score, or (half the time) any front member.

        The front is the sample's accuracy/latency front, so children spread
        along the trade-off.
        """
        reverse = self.objective.direction == "max"
        best = sorted(sample, key=lambda t: t.score, reverse=reverse)[0]
        if not reverse or rng.random() < 0.5:
            return best
        front = [t for t in sample if not any(_dominates(o, t) for o in sample)]
        return rng.choice(front or [best])

    def _random_response(self) -> dict[str, Any]:
        values = random_values(self)
        if values is None:
            return {"status": trial_module.TrialStatus.STOPPED, "values": None}
        return {"status": trial_module.TrialStatus.RUNNING, "values": values}

    def _mutate(self, parent: dict[str, Any], rng: random.Random) -> dict[str, Any] | None:
        """Change one active hyperparameter of ``parent``; fill in the rest consistently."""
        space = self.hyperparameters.space
        active = _active_names(space, parent)
        mutable = [hp for hp in space if hp.name in active and len(_choices(hp)) > 1]
        if not mutable:
            return None
        target = rng.choice(mutable)
        new_value = _step(_choices(target), parent.get(target.name), rng)
        hps = hp_module.HyperParameters()
        for hp in space:
            hps.merge([hp])
            if not hps.is_active(hp):
                continue
            if hp.name == target.name:
                hps.values[hp.name] = new_value
            elif hp.name in parent:
                hps.values[hp.name] = parent[hp.name]
            else:
                hps.values[hp.name] = hp.random_sample(next_seed(self))
        return hps.values

    def get_state(self) -> dict[str, Any]:
        """Oracle state plus the evolution settings."""
        state = super().get_state()
        state.update({"population_size": self.population_size, "sample_size": self.sample_size})
        return state

    def set_state(self, state: dict[str, Any]) -> None:
        """Restore the state written by :meth:`get_state`."""
        super().set_state(state)
        self.population_size = state["population_size"]
        self.sample_size = state["sample_size"]


def _step(choices: list[Any], current: Any, rng: random.Random) -> Any:
    """A new value for a mutated hyperparameter.

    For an ordered (numeric) choice, one step up or down three times in four;
    else any other value.
    """
    others = [v for v in choices if v != current]
    numeric = all(isinstance(v, int | float) and not isinstance(v, bool) for v in choices)
    if numeric and current in choices and rng.random() < LOCAL_STEP_SHARE:
        i = choices.index(current)
        near = [choices[j] for j in (i - 1, i + 1) if 0 <= j < len(choices)]
        return rng.choice(near)
    return rng.choice(others)


def _dominates(a: trial_module.Trial, b: trial_module.Trial) -> bool:
    """``a`` is at least as accurate and as fast as ``b``, and better in one."""
    sa, sb = a.score or 0.0, b.score or 0.0
    la, lb = _latency(a), _latency(b)
    return sa >= sb and la <= lb and (sa > sb or la < lb)


def _latency(trial: trial_module.Trial) -> float:
    if trial.metrics.exists("latency_ms"):
        return float(trial.metrics.get_last_value("latency_ms"))
    return float("inf")


def _feasible(trial: trial_module.Trial) -> bool:
    """False for a candidate the tuner found infeasible (completed with ``feasible`` 0)."""
    if not trial.metrics.exists("feasible"):
        return True  # stores from before the metric: only feasible trials completed
    return bool(trial.metrics.get_last_value("feasible"))


def _active_names(space: list[Any], values: dict[str, Any]) -> set[str]:
    hps = hp_module.HyperParameters()
    names = set()
    for hp in space:
        hps.merge([hp])
        if hps.is_active(hp):
            hps.values[hp.name] = values.get(hp.name, hp.default)
            names.add(hp.name)
    return names


def _choices(hp: Any) -> list[Any]:
    """Candidate values of one hyperparameter (a grid for Int/Float ranges)."""
    vals = list(hp.values) if getattr(hp, "values", None) is not None else [hp.default]
    if all(isinstance(v, int | float) and not isinstance(v, bool) for v in vals):
        vals = sorted(vals)  # Float ranges without a step come as an unordered set
    if len(vals) > 64:  # a wide numeric range: mutate within a coarse grid
        step = len(vals) // 32
        vals = vals[::step]
    return vals


def _hyperband(max_trials: int, epochs: int, **common: Any) -> keras_tuner.Oracle:
    oracle = keras_tuner.oracles.HyperbandOracle(max_epochs=max(2, epochs), factor=3, **common)
    oracle.max_trials = max_trials
    return oracle


def _evolution(max_trials: int, epochs: int, **common: Any) -> keras_tuner.Oracle:
    population = max(4, min(10, max_trials // 3))
    return AgingEvolutionOracle(max_trials=max_trials, population_size=population, **common)


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
    strategy: str, max_trials: int, seed: int, epochs: int, objective: Any = None
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


def start_with_reference(oracle: keras_tuner.Oracle, ladder: list[dict[str, Any]]) -> None:
    """Start the oracle on the rungs of ``ladder`` (``--seed-arch``); later trials are its own.

    The rungs come in the order :func:`mcunas.search.tuner.rungs.next_rung` gives:
    the step-down ladder until one variant fits (the search's first trained
    model is the largest variant of the seed that fits), then the widest
    variant that fits at each other input resolution. While every trial so
    far was a rung, the next one is the next rung; after that the oracle draws
    (evolution mutates the seeds first, see :class:`AgingEvolutionOracle`).
    A resumed search picks up where its trials left off.
    """
    from mcunas.search.tuner.rungs import ACCEPTED, REFUSED, next_rung

    own = oracle.populate_space
    if isinstance(oracle, AgingEvolutionOracle):  # mutates the seeds first
        oracle.seeds = [dict(v) for v in ladder]

    def populate_space(trial_id: str) -> dict[str, Any]:
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


def _rung_of(trial: Any, ladder: list[dict[str, Any]]) -> int | None:
    """The index of the rung ``trial`` drew, or None for a trial of the oracle's own."""
    values = trial.hyperparameters.values.items()
    return next((i for i, rung in enumerate(ladder) if values <= rung.items()), None)


def _creation_order(trial_id: str) -> tuple[int, str]:
    """Sort key of keras-tuner trial ids: by number ("0", "1", "02": padding grows)."""
    return (int(trial_id), trial_id) if trial_id.isdigit() else (10**9, trial_id)


def _refused(trial: Any) -> bool:
    """True for a completed trial scored 0 as infeasible (not a failure)."""
    if trial.status != trial_module.TrialStatus.COMPLETED:
        return False
    metrics = trial.metrics
    return metrics.exists("feasible") and metrics.get_last_value("feasible") == 0.0
