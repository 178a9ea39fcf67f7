"""Which variants of the reference design a search starts from (``--seed-arch``).

The reference design scaled by hand (width multiplier x input resolution) is
the curve a search has to beat, so a search starts on that curve's best
points under the budgets, not on one of them:

1. **Step down** :data:`mcunas.space.reference.LADDER` (largest first) until
   one variant passes the cost check: the search's first trained model is the
   largest variant of the reference that fits.
2. **Then the widest fit per input resolution**: at every resolution the
   input can take, the widest variant that fits (widths of :data:`WIDTHS`,
   widest first; a width refused at a resolution rules out the wider ones
   there, one accepted the narrower ones). Full width at half the input
   resolution is often as accurate as the full design at a fraction of its
   latency, and the plain ladder never tries it.
3. **Then the cheap end**: every narrower width at the coarsest input
   resolution, widest first. The search is a Pareto search as much as a
   search for the most accurate fit, and the grid's cheapest points are
   there: at equal latency a narrow network on the full input often loses to a
   wider one on a coarser input (docs/benchmarks/frontier.md). These
   rungs put points along the bottom of the budget's latency range from the
   start, each at a fraction of the widest variant's cost, and evolution's
   parents (picked along the front) step up from them.

A refused variant costs one cost check (no training), so the rungs that miss
the budgets are cheap. After the last rung the oracle draws its own trials
(evolution mutates the rungs first; see :mod:`mcunas.search.tuner.oracles`).
"""

from __future__ import annotations

from collections.abc import Sequence

from mcunas.space.values import HpValues

__all__ = ["ACCEPTED", "REFUSED", "RESOLUTIONS", "WIDTHS", "next_rung", "reference_rungs"]

# The grid a reference curve is drawn on: width multipliers and input resolutions (1/r).
WIDTHS = (1.0, 0.75, 0.5, 0.25)
RESOLUTIONS = (1, 2, 4)
REFUSED, ACCEPTED = "refused", "accepted"  # a tried rung: missed the budgets / trained or running


def reference_rungs(name: str, input_shape: tuple[int, ...]) -> list[HpValues]:
    """The reference's rungs: the step-down ladder, then the other grid corners the input allows.

    Raises:
        UserError: no such reference.
    """
    from mcunas.space.reference import reference_ladder

    ladder = reference_ladder(name, input_shape)
    resolutions = sorted({int(v["st_resolution"]) for v in ladder})
    if max(resolutions) > 1:  # the input can be downsampled: every resolution of the grid
        resolutions = list(RESOLUTIONS)
    have = {_corner(v) for v in ladder}
    extra = [
        ladder[0] | {"st_resolution": r, "st_width_mult": w}
        for r in resolutions
        for w in WIDTHS
        if (r, w) not in have
    ]
    return ladder + extra


def _corner(values: HpValues) -> tuple[int, float]:
    return int(values.get("st_resolution", 1)), float(values.get("st_width_mult", 1.0))


def next_rung(ladder: Sequence[HpValues], tried: Sequence[tuple[int, str]]) -> int | None:
    """The index of the rung to propose next, or None when the ladder is done.

    Args:
        ladder: the rungs (:func:`reference_rungs`' values, or any values with
            ``st_resolution`` and ``st_width_mult``; missing keys count as 1).
        tried: ``(rung index, REFUSED or ACCEPTED)`` per trial so far; a trial
            still running counts as ACCEPTED.

    Until a rung is accepted, the next untried rung in order (the step-down
    ladder). After that, per resolution (finest first), its widest untried
    rung narrower than every refused one there and wider than every accepted
    one there: at a resolution the ladder reached with a narrow rung that fit,
    the wider ones it skipped are tried too. Last, the cheap end: at the
    coarsest resolution, each untried width narrower than every refused one
    there, widest first.
    """
    done = {i for i, _ in tried}
    if not any(state == ACCEPTED for _, state in tried):
        return next((i for i in range(len(ladder)) if i not in done), None)
    corners = [_corner(v) for v in ladder]
    widest = _widest_fit(corners, tried, done)
    return widest if widest is not None else _cheap_end(corners, tried, done)


def _widest_fit(
    corners: list[tuple[int, float]], tried: Sequence[tuple[int, str]], done: set[int]
) -> int | None:
    """Per resolution, the widest untried rung between its refused and accepted widths."""
    for res in sorted({r for r, _ in corners}):
        below = _refused_width(corners, tried, res)
        accepted = [corners[i][1] for i, s in tried if corners[i][0] == res and s == ACCEPTED]
        above = max(accepted, default=float("-inf"))
        left = [
            i
            for i, (r, w) in enumerate(corners)
            if i not in done and r == res and above < w < below
        ]
        if left:
            return max(left, key=lambda i: (corners[i][1], -i))
    return None


def _cheap_end(
    corners: list[tuple[int, float]], tried: Sequence[tuple[int, str]], done: set[int]
) -> int | None:
    """At the coarsest resolution, the widest untried rung narrower than every refused one."""
    res = max(r for r, _ in corners)
    below = _refused_width(corners, tried, res)
    left = [i for i, (r, w) in enumerate(corners) if r == res and w < below and i not in done]
    return max(left, key=lambda i: (corners[i][1], -i), default=None)


def _refused_width(
    corners: list[tuple[int, float]], tried: Sequence[tuple[int, str]], res: int
) -> float:
    """The narrowest width refused at resolution ``res`` (infinite when none was)."""
    refused = [corners[i][1] for i, s in tried if corners[i][0] == res and s == REFUSED]
    return min(refused, default=float("inf"))
