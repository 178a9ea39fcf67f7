"""The supernet's plan, subnet choices and evolutionary search (no TensorFlow)."""

from __future__ import annotations

import random

import pytest

from mcunas.errors import UserError
from mcunas.search.settings.config import SearchConfig
from mcunas.supernet.evolve import EvolutionSettings, each, evolve
from mcunas.supernet.spec import (
    DEPTHS,
    EXPANSIONS,
    PROBES,
    Subnet,
    choose_width,
    crossover,
    largest,
    mutate,
    plan_supernet,
    random_subnet,
    smallest,
    subnet_from_values,
    subnet_values,
)


def _sides(spec, resolution: int) -> list[tuple[int, int]]:
    """Map sizes after the stem and each stage, as the stage family builds them."""
    h, w = spec.input_shape[:2]
    h, w = (-(-s // resolution) if s >= 16 else s for s in (h, w))
    sizes = []
    for stride in (spec.stem_stride, *(s.stride for s in spec.stages)):
        h, w = -(-h // stride), -(-w // stride)
        sizes.append((h, w))
    return sizes


@pytest.mark.parametrize("shape", [(8, 8, 1), (150, 1, 1), (49, 10, 1), (96, 96, 3), (32, 1, 2)])
def test_the_plan_shares_only_what_every_resolution_can_build(shape) -> None:
    spec = plan_supernet(shape, 4)
    assert spec.resolutions[0] == 1 and len(spec.stages) == 4
    for f in spec.resolutions:
        sizes = _sides(spec, f)
        assert all(s == 1 or s >= 3 for size in sizes for s in size)  # no side of 2
        for stage, size in zip(spec.stages, sizes[1:], strict=True):
            long_sides = [s for s in size if s > 1]
            assert all(k <= min(long_sides, default=k) for k in stage.kernels)
    if shape[1] == 1:
        assert spec.stem_kernel == (3, 1)


def test_resolutions_that_change_nothing_or_shrink_too_far_are_not_offered() -> None:
    assert plan_supernet((8, 8, 1), 10).resolutions == (1,)  # sides under 16 are not pooled
    assert plan_supernet((150, 1, 1), 2).resolutions == (1, 2, 4)
    assert plan_supernet((32, 32, 3), 10).resolutions == (1,)  # /2 would leave 16 px


def test_an_input_side_of_two_is_refused_with_advice() -> None:
    with pytest.raises(UserError, match="strategy evolution"):
        plan_supernet((40, 2, 1), 3)


def test_subnets_are_points_of_the_stage_family_and_round_trip() -> None:
    spec = plan_supernet((150, 1, 1), 3)
    rng = random.Random(0)
    for net in [largest(spec), smallest(spec), *(random_subnet(spec, rng) for _ in range(20))]:
        values = subnet_values(spec, net)
        assert values["family"] == "stages" and values["st_stages"] == 4
        assert all(values[f"st_block_{i}"] == "mb" for i in range(4))
        assert subnet_from_values(spec, values) == net
    big, small = largest(spec), smallest(spec)
    assert big.depths == (max(DEPTHS),) * 4 and small.expansions == (min(EXPANSIONS),) * 4
    assert big.resolution == 1 and small.resolution == 4
    assert spec.space_size() == 3 * 36 * 36 * 24 * 12  # resolutions x per-stage choices


def test_mutation_and_crossover_stay_inside_the_space() -> None:
    spec = plan_supernet((49, 10, 1), 12)
    rng = random.Random(1)
    a, b = random_subnet(spec, rng), random_subnet(spec, rng)
    for child in [mutate(spec, a, rng, 0.5) for _ in range(50)] + [
        crossover(a, b, rng) for _ in range(50)
    ]:
        assert child.resolution in spec.resolutions
        assert all(k in s.kernels for k, s in zip(child.kernels, spec.stages, strict=True))
        assert set(child.depths) <= set(DEPTHS) and set(child.expansions) <= set(EXPANSIONS)
    assert mutate(spec, a, rng, 0.0) == a


def _toy_score(net: Subnet) -> float:
    """Accuracy that grows with depth and expansion, best at kernel 5."""
    return sum(net.depths) + sum(net.expansions) / 2 - sum(abs(k - 5) for k in net.kernels)


def test_evolution_beats_random_draws_and_never_scores_a_subnet_twice() -> None:
    spec = plan_supernet((150, 1, 1), 3)
    calls: list[Subnet] = []

    def evaluate(net: Subnet) -> tuple[float, float] | None:
        calls.append(net)
        if sum(net.depths) * max(net.expansions) > 40:  # a "budget"
            return None
        return _toy_score(net), 0.0

    seen = evolve(spec, each(evaluate), EvolutionSettings(subnets=120, population=20), seed=3)
    assert len(calls) == len(set(calls)) == len(seen)
    feasible = [n for n, r in seen.items() if r is not None]
    assert len(feasible) == 120
    rng = random.Random(3)
    draws = [random_subnet(spec, rng) for _ in range(400)]
    best_random = max(_toy_score(n) for n in draws if evaluate(n) is not None)
    assert max(_toy_score(n) for n in feasible) > best_random
    again = evolve(spec, each(evaluate), EvolutionSettings(subnets=120, population=20), seed=3)
    assert list(again) == list(seen)  # the same seed replays the same draws


def test_evolution_starts_from_the_given_subnets_and_walks_on_from_them() -> None:
    spec = plan_supernet((150, 1, 1), 3)
    tiny = smallest(spec)

    def evaluate(net: Subnet) -> tuple[float, float] | None:  # a budget only the tiny ones meet
        return (_toy_score(net), 0.0) if sum(net.depths) + sum(net.expansions) <= 14 else None

    settings = EvolutionSettings(subnets=6, population=4)
    seen = evolve(spec, each(evaluate), settings, seed=0, start=(tiny,))
    assert next(iter(seen)) == tiny
    assert sum(r is not None for r in seen.values()) == 6  # found by mutating from it


def test_evolution_stops_when_nothing_fits() -> None:
    spec = plan_supernet((8, 8, 1), 10)
    seen = evolve(spec, each(lambda net: None), EvolutionSettings(subnets=5, draws_per_subnet=4))
    assert 0 < len(seen) <= 20 and all(r is None for r in seen.values())


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"families": ("dsconv",)}, "stages' family only"),
        ({"seed_arch": "kws"}, "Unknown reference architecture 'kws'"),
        ({"subnets": 0}, "at least 1"),
        ({"finetune_epochs": -1}, "0 \\(none\\) or more"),
        ({"supernet_schedule": "shrink"}, "Unknown --supernet-schedule 'shrink'"),
    ],
)
def test_supernet_settings_that_cannot_work_are_one_line(changes, message) -> None:
    with pytest.raises(UserError, match=message):
        SearchConfig(board="esp32s3", strategy="supernet", **changes).validate()


def test_supernet_defaults_follow_the_epochs() -> None:
    cfg = SearchConfig(board="esp32s3", strategy="supernet", epochs=30)
    assert cfg.supernet_plan == (60, 6)
    cfg = SearchConfig(board="esp32s3", strategy="supernet", supernet_epochs=5, finetune_epochs=0)
    assert cfg.supernet_plan == (5, 0)


def test_choose_width_takes_the_largest_width_enough_of_whose_subnets_fit():
    seen = []

    def fits(spec, nets):  # noqa: ANN001, ANN202
        seen.append((spec.width, nets[0] == smallest(spec), len(nets)))
        return [spec.width <= 0.5] * len(nets)

    width, tally = choose_width((32, 32, 3), 10, fits, seed=0)
    assert width == 0.5
    assert tally == f"x1 0/{PROBES}, x0.75 0/{PROBES}, x0.5 {PROBES}/{PROBES}"
    assert seen == [(1.0, True, PROBES), (0.75, True, PROBES), (0.5, True, PROBES)]


def test_choose_width_without_enough_fits_takes_the_width_most_fit():
    def one_each(spec, nets):  # noqa: ANN001, ANN202
        return [i == 0 for i in range(len(nets))]  # only the smallest subnet fits

    assert choose_width((32, 32, 3), 10, one_each, seed=0)[0] == 1.0  # a tie: the larger
    two_at_half = {1.0: 0, 0.75: 1, 0.5: 2, 0.25: 1}

    def some(spec, nets):  # noqa: ANN001, ANN202
        return [i < two_at_half[spec.width] for i in range(len(nets))]

    width, tally = choose_width((32, 32, 3), 10, some, seed=0)
    assert width == 0.5 and tally.endswith(f"x0.25 1/{PROBES}")
