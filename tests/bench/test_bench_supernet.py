"""scripts/supernet_rank_figures.py: the rank check's per-resolution figures (no training)."""

from __future__ import annotations

import pytest

from mcunas.supernet.spec import Subnet
from tests.script_helpers import loaded_script


@pytest.fixture(scope="module")
def figures():
    yield from loaded_script("supernet_rank_figures")


def net(resolution: int, depth: int) -> Subnet:
    return Subnet(resolution, (depth, 1), (3, 3), (2, 2))


def test_tau_inside_each_resolution_with_three_or_more(figures):
    nets = [net(4, 1), net(4, 2), net(4, 3), net(2, 1), net(2, 2), net(2, 3), net(1, 1)]
    inherited = [0.70, 0.72, 0.74, 0.80, 0.82, 0.84, 0.90]
    alone = [0.83, 0.82, 0.81, 0.85, 0.86, 0.87, 0.91]  # r4 reversed, r2 agrees
    within = figures.within_resolution(nets, inherited, alone)
    assert within == pytest.approx({"r2": 1.0, "r4": -1.0})  # r1 has one subnet: left out
    pairs = [[n.key(), i, a] for n, i, a in zip(nets, inherited, alone, strict=True)]
    text = figures.within_text({"tau_within_resolution": within, "pairs": pairs})
    assert text == "r2 1.00 (3 subnets), r4 -1.00 (3 subnets)"
    assert "no resolution" in figures.within_text({"pairs": pairs[:2]})


def test_noise_ceiling_and_one_training(figures):
    runs = [[0.80, 0.82], [0.85, 0.87], [0.90, 0.92]]  # seed noise far below the spread
    reliability, ceiling = figures.noise_ceiling(runs)
    assert reliability > 0.95 and 0.85 < ceiling <= 1.0
    assert figures.one_training_tau(runs) == pytest.approx(1.0)
    assert figures.noise_ceiling([[0.8], [0.9]]) == (None, None)  # one seed: no ceiling
