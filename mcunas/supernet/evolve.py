"""Evolutionary search over subnets (Once-for-All / MCUNet's, with the trial checks).

A population of feasible subnets is drawn at random; then, generation after
generation, the best quarter are kept as parents and the population is
refilled with half mutations (each choice redrawn with probability 0.1) and
half crossovers of two parents. Every candidate goes through ``evaluate``,
which checks its cost against the budgets first and scores it with inherited
weights only when it fits (None: infeasible). Evaluations are cached by
subnet, so a candidate drawn twice costs nothing the second time, and a
resumed search replays the same draws from its store in no time.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass

from mcunas.supernet.spec import Subnet, SupernetSpec, crossover, mutate, random_subnet

__all__ = ["EvolutionSettings", "each", "evolve", "fitness_key"]

RANDOM_DRAWS_PER_MEMBER = 5

# One evaluation: (accuracy, loss) of a feasible subnet, None for an infeasible one.
Evaluate = Callable[[Subnet], tuple[float, float] | None]
EvaluateMany = Callable[[list[Subnet]], list[tuple[float, float] | None]]


@dataclass(frozen=True)
class EvolutionSettings:
    """How many subnets to score and how the population evolves."""

    subnets: int = 300  # feasible subnets scored in all (the population's first included)
    population: int = 40
    parent_ratio: float = 0.25
    mutation_prob: float = 0.1
    draws_per_subnet: int = 20  # infeasible or repeated draws allowed per subnet scored

    def __post_init__(self) -> None:
        if self.subnets < 1 or self.population < 2:
            raise ValueError("subnets >= 1 and population >= 2 are needed")


def evolve(
    spec: SupernetSpec,
    evaluate: EvaluateMany,
    settings: EvolutionSettings,
    seed: int = 0,
    start: tuple[Subnet, ...] = (),
) -> dict[Subnet, tuple[float, float] | None]:
    """Search; return every subnet evaluated with its result (None: infeasible).

    ``evaluate`` takes a batch of new subnets and returns their results in
    order (a distributed search scores a batch on many workers at once; wrap a
    one-subnet function with :func:`each`). Batches are drawn so that the
    subnets drawn, and their order, are those of evaluating one at a time:
    each batch is as large as the feasible subnets still wanted, and the next
    batch makes up for the infeasible ones.

    ``start`` are evaluated first, then random draws fill the first population
    (the session starts from the smallest subnet: under a tight budget it may
    be the only one random draws would take long to hit, and mutation walks on
    from it). Stops after ``settings.subnets`` feasible subnets, or when the
    draws run out (budgets that few subnets meet).
    """
    rng = random.Random(seed)
    seen: dict[Subnet, tuple[float, float] | None] = {}
    draws = [settings.draws_per_subnet * settings.subnets]  # left

    def wanted(k: int) -> int:
        """At most ``k`` more draws: within the draws left and the subnets still wanted."""
        scored = sum(r is not None for r in seen.values())
        return max(0, min(k, draws[0], settings.subnets - scored))

    def consider(nets: list[Subnet]) -> list[Subnet]:
        """Evaluate the new ones of ``nets`` (each draw counts); the feasible, in order."""
        draws[0] -= len(nets)
        fresh = list(dict.fromkeys(n for n in nets if n not in seen))
        for net, result in zip(fresh, evaluate(fresh) if fresh else [], strict=True):
            seen[net] = result
        return [n for n in fresh if seen[n] is not None]

    population = consider(list(start))
    size = min(settings.population, settings.subnets)
    # Random draws fill the first population; where few fit, evolution takes over from
    # what was found after a bounded number of them (mutants of a fit subnet fit more often).
    fill_left = size * RANDOM_DRAWS_PER_MEMBER
    while (k := wanted(size - len(population))) and (fill_left > 0 or not population):
        k = min(k, fill_left) if population else k
        fill_left -= k
        population += consider([random_subnet(spec, rng) for _ in range(k)])
    while wanted(1) and population:
        ranked = sorted(population, key=lambda n: fitness_key(seen[n]))
        parents = ranked[: max(1, round(settings.parent_ratio * len(ranked)))]
        children: list[Subnet] = []
        while k := wanted(size - len(parents) - len(children)):
            children += consider([_child(spec, parents, rng, settings) for _ in range(k)])
        population = parents + children
    return seen


def each(evaluate: Evaluate) -> EvaluateMany:
    """A batch evaluation made of a one-subnet one."""
    return lambda nets: [evaluate(net) for net in nets]


def _child(
    spec: SupernetSpec, parents: list[Subnet], rng: random.Random, settings: EvolutionSettings
) -> Subnet:
    """Half mutations of one parent, half crossovers of two."""
    if rng.random() < 0.5 or len(parents) < 2:
        return mutate(spec, rng.choice(parents), rng, settings.mutation_prob)
    a, b = rng.sample(parents, 2)
    return crossover(a, b, rng)


def fitness_key(result: tuple[float, float] | None) -> tuple[float, float]:
    """The search's sort key of a subnet's (accuracy, loss): higher accuracy, then lower loss."""
    if result is None:
        return (1.0, 0.0)
    accuracy, loss = result
    return (-accuracy, loss)
