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

__all__ = ["EvolutionSettings", "evolve"]

RANDOM_DRAWS_PER_MEMBER = 5

# One evaluation: (accuracy, loss) of a feasible subnet, None for an infeasible one.
Evaluate = Callable[[Subnet], tuple[float, float] | None]


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
    evaluate: Evaluate,
    settings: EvolutionSettings,
    seed: int = 0,
    start: tuple[Subnet, ...] = (),
) -> dict[Subnet, tuple[float, float] | None]:
    """Search; return every subnet evaluated with its result (None: infeasible).

    ``start`` are evaluated first, then random draws fill the first population
    (the session starts from the smallest subnet: under a tight budget it may
    be the only one random draws would take long to hit, and mutation walks on
    from it). Stops after ``settings.subnets`` feasible subnets, or when the
    draws run out (budgets that few subnets meet).
    """
    rng = random.Random(seed)
    seen: dict[Subnet, tuple[float, float] | None] = {}
    draws_left = settings.draws_per_subnet * settings.subnets

    def feasible() -> list[Subnet]:
        return [n for n, r in seen.items() if r is not None]

    def consider(net: Subnet) -> bool:
        nonlocal draws_left
        draws_left -= 1
        if net in seen:
            return False
        seen[net] = evaluate(net)
        return seen[net] is not None

    population = [net for net in start if consider(net)]
    size = min(settings.population, settings.subnets)
    # Random draws fill the first population; where few fit, evolution takes over from
    # what was found after a bounded number of them (mutants of a fit subnet fit more often).
    fill_left = size * RANDOM_DRAWS_PER_MEMBER
    while len(population) < size and draws_left > 0 and (fill_left > 0 or not population):
        fill_left -= 1
        net = random_subnet(spec, rng)
        if consider(net):
            population.append(net)
    while len(feasible()) < settings.subnets and draws_left > 0 and population:
        ranked = sorted(population, key=lambda n: _rank(seen[n]))
        parents = ranked[: max(1, round(settings.parent_ratio * len(ranked)))]
        children: list[Subnet] = []
        while len(children) < size - len(parents) and draws_left > 0:
            if len(feasible()) >= settings.subnets:
                break
            if rng.random() < 0.5 or len(parents) < 2:
                child = mutate(spec, rng.choice(parents), rng, settings.mutation_prob)
            else:
                a, b = rng.sample(parents, 2)
                child = crossover(a, b, rng)
            if consider(child):
                children.append(child)
        population = parents + children
    return seen


def _rank(result: tuple[float, float] | None) -> tuple[float, float]:
    """Sort key: higher accuracy first, then lower loss."""
    if result is None:
        return (1.0, 0.0)
    accuracy, loss = result
    return (-accuracy, loss)
