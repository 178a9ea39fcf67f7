"""scripts/bench_series.py: every named design is a point of the stage space (no training)."""

from __future__ import annotations

import pytest

from mcunas.space import McuSearchSpace
from tests.script_helpers import loaded_script


@pytest.fixture(scope="module")
def bench_series():
    yield from loaded_script("bench_series")


def test_every_design_is_a_point_of_the_stage_space(bench_series) -> None:
    space = McuSearchSpace((427, 1, 1), 6, ("stages",))  # OSULeaf's input
    for name, values in bench_series.DESIGNS.items():
        hp = space.hyperparameters(**values)  # raises on a value the space does not hold
        assert hp.values["family"] == "stages", name
        assert len(space.describe(hp)) > 0, name
