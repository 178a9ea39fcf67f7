"""Aging evolution: an oracle that mutates the best recent trials (``--strategy evolution``).

Real et al., "Regularized Evolution for Image Classifier Architecture Search", AAAI 2019.

The first ``population_size`` trials are random (a search started on the
reference mutates its rungs in two of three of them, see
:meth:`AgingEvolutionOracle.populate_space`). Among the first eight trials
not refused as infeasible (or the population, if larger) every proposal tries a value of a top-level
choice that no trial has tried yet, while one is left
(:mod:`~mcunas.search.tuner.coverage`): a mutation changes that choice.
After that, the population is the ``population_size`` most recently
*finished* feasible trials (infeasible and failed candidates never become
parents); draw ``sample_size`` of them at
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

import keras_tuner

from mcunas.jsontext import JsonObject
from mcunas.search.results.record import HpValue, HpValues
from mcunas.search.tuner.coverage import FIRST_POPULATION, cover, with_value
from mcunas.search.tuner.kt_state import (
    hp_module,
    is_duplicate,
    next_seed,
    random_values,
    trial_module,
)

__all__ = ["AgingEvolutionOracle", "step_choice", "trial_dominates"]

# Mutation attempts before falling back to a random candidate (duplicates).
MAX_MUTATION_ATTEMPTS = 20
# Coverage of the first population gives up after this many draws per trial of it.
COVER_DRAWS_PER_TRIAL = 3
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
        objective: keras_tuner.Objective | None = None,
        max_trials: int = 20,
        population_size: int = 8,
        sample_size: int = 3,
        seed: int | None = None,
        **kwargs: object,
    ) -> None:
        super().__init__(objective=objective, max_trials=max_trials, seed=seed, **kwargs)
        self.population_size = max(2, int(population_size))
        self.sample_size = max(1, min(int(sample_size), self.population_size))
        self.references: list[HpValues] = []  # the reference's rungs (start_with_reference)

    def _population(self) -> list[trial_module.Trial]:
        """The parents' pool: the most recently finished feasible trials.

        ``population_size`` of them, plus as many as the reference's rungs among
        them: the rungs are the first population of a search started on the
        reference, and with the window alone (a third of ``--max-trials``) the
        widest rungs, often the most accurate, would age out before any child of
        theirs was drawn (six rungs and a window of four in a 12-trial search).
        """
        done = [
            self.trials[t]
            for t in self.end_order
            if self.trials[t].status == trial_module.TrialStatus.COMPLETED
            and self.trials[t].score is not None
            and _feasible(self.trials[t])
        ]
        rungs = sum(self._has_reference([t]) for t in done)
        return done[-(self.population_size + rungs) :]

    def populate_space(self, trial_id: str) -> dict[str, object]:
        """Random values until the population is full, then a mutated tournament winner.

        A search started on the reference
        (:func:`~mcunas.search.tuner.oracles.start_with_reference`) fills its population
        with children of the reference's rungs as well: once a rung has a score, two
        trials in three of the filling are mutations, so a short search improves on the
        reference curve instead of spending its time on random draws.
        """
        population = self._population()
        filling = len(self.end_order) < self.population_size
        from_reference = (
            filling and self._has_reference(population) and len(self.end_order) % 3 != 2
        )
        if not population or (filling and not from_reference):
            return self._random_response()
        rng = random.Random(next_seed(self))
        sample = rng.sample(population, min(self.sample_size, len(population)))
        parent = self._winner(sample, rng)
        for _ in range(MAX_MUTATION_ATTEMPTS):
            values: HpValues | None = self._covered(parent.hyperparameters.values, rng)
            if values == parent.hyperparameters.values:  # every choice covered: mutate
                values = self._mutate(parent.hyperparameters.values, rng)
            if values is not None and not is_duplicate(self, values):
                return {"status": trial_module.TrialStatus.RUNNING, "values": values}
        return self._random_response()

    def _covered(self, values: HpValues, rng: random.Random) -> HpValues:
        """In the first population, ``values`` with an untried value of the least-covered choice.

        :mod:`~mcunas.search.tuner.coverage`: the first population and what was tried are
        counted in trials not refused as infeasible; past :data:`COVER_DRAWS_PER_TRIAL`
        draws per trial of it, coverage gives up (a value that never fits).
        """
        window = max(FIRST_POPULATION, self.population_size)
        kept = [t for t in self.trials.values() if _feasible(t)]
        if len(kept) >= window or len(self.trials) >= COVER_DRAWS_PER_TRIAL * window:
            return values
        tried = [t.hyperparameters.values for t in kept]
        return cover(self.hyperparameters.space, values, tried, rng, self._draw)

    def _draw(self, hp: hp_module.HyperParameter) -> HpValue:
        return hp.random_sample(next_seed(self))

    def _has_reference(self, population: list[trial_module.Trial]) -> bool:
        return any(
            t.hyperparameters.values.items() <= s.items()
            for t in population
            for s in self.references
        )

    def _winner(self, sample: list[trial_module.Trial], rng: random.Random) -> trial_module.Trial:
        """The tournament's parent: the best score, or (half the time) any front member.

        The front is the sample's accuracy/latency front, so children spread
        along the trade-off.
        """
        reverse = self.objective.direction == "max"
        best = sorted(sample, key=lambda t: t.score, reverse=reverse)[0]
        if not reverse or rng.random() < 0.5:
            return best
        front = [t for t in sample if not any(trial_dominates(o, t) for o in sample)]
        return rng.choice(front or [best])

    def _random_response(self) -> dict[str, object]:
        values = random_values(self)
        if values is None:
            return {"status": trial_module.TrialStatus.STOPPED, "values": None}
        covered = self._covered(values, random.Random(next_seed(self)))
        if not is_duplicate(self, covered):
            values = covered
        return {"status": trial_module.TrialStatus.RUNNING, "values": values}

    def _mutate(self, parent: HpValues, rng: random.Random) -> HpValues | None:
        """Change one active hyperparameter of ``parent``; fill in the rest consistently."""
        space = self.hyperparameters.space
        active = _active_names(space, parent)
        mutable = [hp for hp in space if hp.name in active and len(_choices(hp)) > 1]
        if not mutable:
            return None
        target = rng.choice(mutable)
        new_value = step_choice(_choices(target), parent.get(target.name), rng)
        return with_value(space, parent, target.name, new_value, self._draw)

    def get_state(self) -> JsonObject:
        """Oracle state plus the evolution settings."""
        state = super().get_state()
        state.update({"population_size": self.population_size, "sample_size": self.sample_size})
        return state

    def set_state(self, state: JsonObject) -> None:
        """Restore the state written by :meth:`get_state`."""
        super().set_state(state)
        self.population_size = state["population_size"]
        self.sample_size = state["sample_size"]


def step_choice(choices: list[HpValue], current: HpValue | None, rng: random.Random) -> HpValue:
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


def trial_dominates(a: trial_module.Trial, b: trial_module.Trial) -> bool:
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


def _active_names(space: list[hp_module.HyperParameter], values: HpValues) -> set[str]:
    hps = hp_module.HyperParameters()
    names = set()
    for hp in space:
        hps.merge([hp])
        if hps.is_active(hp):
            hps.values[hp.name] = values.get(hp.name, hp.default)
            names.add(hp.name)
    return names


def _choices(hp: hp_module.HyperParameter) -> list[HpValue]:
    """Candidate values of one hyperparameter (a grid for Int/Float ranges)."""
    vals = list(hp.values) if getattr(hp, "values", None) is not None else [hp.default]
    if all(isinstance(v, int | float) and not isinstance(v, bool) for v in vals):
        vals = sorted(vals)  # Float ranges without a step come as an unordered set
    if len(vals) > 64:  # a wide numeric range: mutate within a coarse grid
        step = len(vals) // 32
        vals = vals[::step]
    return vals
