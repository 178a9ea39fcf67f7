"""Every searched choice explored early: the first population covers each choice's values.

A search started on the reference design trains its rungs first, all with the
values the reference carries (the fixed front end, its family, activation and
learning rate), and evolution then changes one hyperparameter at a time: a
choice of a few values (``--frontend-space search``'s frame/hop, mel bands,
PCAN and input length, ``--families``, any top-level choice the space
declares) can go untried for the whole of a short search. So while the first
:data:`FIRST_POPULATION` trials (or the population, if larger) are drawn,
each proposal of the oracle's own (a mutation or a random draw) also sets the
least-covered top-level choice to a value no trial has tried yet:

- *top-level*: a ``Choice`` or ``Boolean`` declared outside any conditional
  scope, with two values or more (a family's own hyperparameters are tried as
  soon as the family is);
- *least covered*: the fewest values tried so far; among equals the one with
  the fewest values (the cheapest to cover), then the first declared.

A mutation of a rung becomes the rung's child with that choice changed, so the
front end, say, is tried on the reference's own network. Both the first
population and what was tried count the trials not refused as infeasible (a
reference ladder stepping down through refused rungs does not use it up, and
a value only a refused draw had is tried again); the oracle gives up
covering after three draws per trial of the first population, so a value
that never fits is not drawn forever.

Example::

    name, untried = least_covered(space, tried)        # ("activation", ["relu6"])
    values = cover(space, values, tried, rng, draw)    # that choice set to an untried value
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence

from mcunas.search.results.record import HpValue, HpValues
from mcunas.search.tuner.kt_state import hp_module

__all__ = ["FIRST_POPULATION", "cover", "least_covered", "top_choices", "with_value"]

FIRST_POPULATION = 8  # trials (rungs included) during which untried choice values come first


def top_choices(space: Sequence[hp_module.HyperParameter]) -> list[tuple[str, list[HpValue]]]:
    """The space's unconditional choices of two values or more, in declaration order."""
    out: list[tuple[str, list[HpValue]]] = []
    for hp in space:
        if getattr(hp, "conditions", None):
            continue
        if isinstance(hp, hp_module.Boolean):
            out.append((hp.name, [False, True]))
        elif isinstance(hp, hp_module.Choice) and len(hp.values) > 1:
            out.append((hp.name, list(hp.values)))
    return out


def least_covered(
    space: Sequence[hp_module.HyperParameter], tried: Sequence[HpValues]
) -> tuple[str, list[HpValue]] | None:
    """The top-level choice to cover next and its untried values; None when all are covered."""
    best: tuple[tuple[int, int, int], str, list[HpValue]] | None = None
    for order, (name, values) in enumerate(top_choices(space)):
        seen = {t.get(name) for t in tried}
        untried = [v for v in values if v not in seen]
        if not untried:
            continue
        key = (len(values) - len(untried), len(values), order)
        if best is None or key < best[0]:
            best = (key, name, untried)
    return None if best is None else (best[1], best[2])


def with_value(
    space: Sequence[hp_module.HyperParameter],
    parent: HpValues,
    name: str,
    value: HpValue,
    draw: Callable[[hp_module.HyperParameter], HpValue],
) -> HpValues:
    """``parent`` with ``name`` set to ``value``; the active rest kept, newly active ones drawn.

    ``draw(hp)`` samples a hyperparameter that becomes active (the oracle's seeded draw).
    """
    hps = hp_module.HyperParameters()
    for hp in space:
        hps.merge([hp])
        if not hps.is_active(hp):
            continue
        if hp.name == name:
            hps.values[hp.name] = value
        elif hp.name in parent:
            hps.values[hp.name] = parent[hp.name]
        else:
            hps.values[hp.name] = draw(hp)
    return hps.values


def cover(
    space: Sequence[hp_module.HyperParameter],
    values: HpValues,
    tried: Sequence[HpValues],
    rng: random.Random,
    draw: Callable[[hp_module.HyperParameter], HpValue],
) -> HpValues:
    """``values`` with the least-covered choice set to an untried value (as is when all are).

    ``values`` that already bring an untried value of some top-level choice are kept.
    """
    for name, choices in top_choices(space):
        seen = {t.get(name) for t in tried}
        if values.get(name) in choices and values.get(name) not in seen:
            return values
    target = least_covered(space, tried)
    if target is None:
        return values
    name, untried = target
    return with_value(space, values, name, rng.choice(untried), draw)
