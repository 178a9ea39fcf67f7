"""How many architectures a search space holds, and its hyperparameters as rows.

Counting respects the conditions (a stage's hyperparameters only exist when
the stage does): it walks the hyperparameters in declaration order, branching
only on those that other hyperparameters depend on, with memoisation.
"""

from __future__ import annotations

from functools import cache
from typing import Any

import keras_tuner as kt

__all__ = ["choices", "hyperparameter_rows", "space_size"]


def choices(spec: Any) -> list[Any]:
    """Every value one hyperparameter can take (an Int range stepped, a Choice's values)."""
    values = getattr(spec, "values", None)
    if values is not None:
        return list(values)
    if isinstance(spec, kt.engine.hyperparameters.Boolean):
        return [False, True]
    step = getattr(spec, "step", None) or 1
    return list(range(spec.min_value, spec.max_value + 1, step))


def space_size(hp: kt.HyperParameters) -> int:
    """The number of distinct hyperparameter assignments (architectures and recipes)."""
    specs = list(hp.space)
    parents = {c.name for spec in specs for c in spec.conditions}

    @cache
    def count(i: int, assigned: frozenset) -> int:
        if i == len(specs):
            return 1
        spec, values = specs[i], dict(assigned)
        if not all(c.is_active(values) for c in spec.conditions):
            return count(i + 1, assigned)
        options = choices(spec)
        if spec.name not in parents:
            return len(options) * count(i + 1, assigned)
        return sum(count(i + 1, assigned | {(spec.name, v)}) for v in options)

    return count(0, frozenset())


def hyperparameter_rows(hp: kt.HyperParameters) -> list[dict[str, Any]]:
    """One row per hyperparameter: name, values, default and the condition it needs."""
    rows = []
    for spec in hp.space:
        values = choices(spec)
        shown = (
            values
            if len(values) <= 8
            else f"{values[0]}..{values[-1]} step {values[1] - values[0]}"
        )
        when = "; ".join(f"{c.name} in {list(c.values)}" for c in spec.conditions)
        rows.append({"name": spec.name, "values": shown, "default": spec.default, "when": when})
    return rows
