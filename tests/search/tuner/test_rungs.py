"""The seed rungs: step down until one fits, the widest fit per resolution, the cheap end."""

from __future__ import annotations

import random

from mcunas.space.reference import LADDER
from mcunas.space.rungs import ACCEPTED, REFUSED, WIDTHS, next_rung, reference_rungs


def _corners(ladder: list[dict]) -> list[tuple[int, float]]:
    return [(v["st_resolution"], v["st_width_mult"]) for v in ladder]


def _walk(ladder: list[dict], fits) -> list[tuple[int, float]]:  # noqa: ANN001
    """The rungs proposed until seeding ends, when ``fits(res, width)`` decides each."""
    tried: list[tuple[int, str]] = []
    while (i := next_rung(ladder, tried)) is not None:
        r, w = _corners([ladder[i]])[0]
        tried.append((i, ACCEPTED if fits(r, w) else REFUSED))
    return [_corners([ladder[i]])[0] for i, _ in tried]


def test_rungs_are_the_ladder_then_the_other_grid_corners() -> None:
    rungs = reference_rungs("kws-dscnn", (49, 10, 1))
    corners = _corners(rungs)
    assert corners[: len(LADDER)] == list(LADDER)
    assert set(corners) == {(r, w) for r in (1, 2, 4) for w in (1.0, 0.75, 0.5, 0.25)}
    assert len(corners) == len(set(corners)) == 12
    short = _corners(reference_rungs("ic-resnet8", (8, 8, 1)))  # too short to downsample
    assert short == [(1, 1.0), (1, 0.75), (1, 0.5), (1, 0.25)]


def test_after_the_first_fit_each_other_resolution_gets_its_widest_fit() -> None:
    ladder = reference_rungs("kws-dscnn", (49, 10, 1))
    # a budget in MACs: roughly width^2 / resolution; 0.6 lets x0.75 in at /1, x1 at /2
    seen = _walk(ladder, lambda r, w: w * w / r <= 0.6)
    assert seen[:4] == [(1, 1.0), (1, 0.75), (2, 1.0), (4, 1.0)]


def test_last_the_cheap_end_every_narrower_width_at_the_coarsest_resolution() -> None:
    ladder = reference_rungs("kws-dscnn", (49, 10, 1))
    seen = _walk(ladder, lambda r, w: w * w / r <= 0.6)
    assert seen[4:] == [(4, 0.75), (4, 0.5), (4, 0.25)]
    # where a width is refused at the coarsest resolution, only the narrower ones follow
    low = _walk(ladder, lambda r, w: w * w / r <= 0.07)
    assert low[-1] == (4, 0.25) and low.count((4, 0.25)) == 1
    assert (4, 0.75) not in [c for c in low if c[1] ** 2 / c[0] <= 0.07]


def test_a_refused_width_rules_out_the_wider_ones_at_its_resolution() -> None:
    ladder = reference_rungs("kws-dscnn", (49, 10, 1))
    # x0.5 /2 is refused while stepping down, so /2 resumes below it, never at x1 or x0.75
    seen = _walk(ladder, lambda r, w: w * w / r <= 0.07)
    assert seen[:6] == [(1, 1.0), (1, 0.75), (1, 0.5), (2, 0.5), (1, 0.25), (2, 0.25)]
    assert (2, 1.0) not in seen and (2, 0.75) not in seen
    assert seen[6:9] == [(4, 1.0), (4, 0.75), (4, 0.5)]  # /4: widest first, down to a fit
    assert seen[9:] == [(4, 0.25)]  # then the cheap end: the narrower widths at /4


def test_nothing_fits_walks_every_rung_once_then_stops() -> None:
    ladder = reference_rungs("kws-dscnn", (49, 10, 1))
    seen = _walk(ladder, lambda r, w: False)
    assert seen == _corners(ladder)


def test_a_running_rung_counts_as_accepted_and_a_later_refusal_resumes_its_resolution() -> None:
    ladder = reference_rungs("kws-dscnn", (49, 10, 1))
    idx = {c: i for i, c in enumerate(_corners(ladder))}
    # two workers: rung 0 still running, so the other one gets the widest at /2
    assert next_rung(ladder, [(idx[(1, 1.0)], ACCEPTED)]) == idx[(2, 1.0)]
    # rung 0 then refused, /2 running: the next worker steps down at /1
    tried = [(idx[(1, 1.0)], REFUSED), (idx[(2, 1.0)], ACCEPTED)]
    assert next_rung(ladder, tried) == idx[(1, 0.75)]


def test_walk_never_repeats_a_rung_under_random_budgets() -> None:
    ladder = reference_rungs("kws-dscnn", (49, 10, 1))
    rng = random.Random(0)
    for _ in range(50):
        limit = rng.random()
        seen = _walk(ladder, lambda r, w, limit=limit: w * w / r <= limit)
        assert len(seen) == len(set(seen))
        fits = [c for c in seen if c[1] ** 2 / c[0] <= limit and c[0] < 4]
        assert len({r for r, _ in fits}) == len(fits)  # one trained per finer resolution
        # the cheap end: every width that fits at the coarsest resolution
        assert all((4, w) in seen for w in WIDTHS if w * w / 4 <= limit)


def test_a_narrow_fit_from_the_ladder_still_gets_its_wider_neighbours_tried() -> None:
    ladder = reference_rungs("ic-resnet8", (28, 28, 1))
    # only a quarter of the input fits, up to x0.5: the ladder reaches /4 at x0.25 only
    seen = _walk(ladder, lambda r, w: r == 4 and w <= 0.5)
    assert seen[: len(LADDER)] == list(LADDER)
    assert seen[len(LADDER) :] == [(4, 1.0), (4, 0.75), (4, 0.5)]
