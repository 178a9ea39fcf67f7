"""scripts/bench_supernet.py: the rank check's per-resolution figures (no training)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from mcunas.supernet.spec import Subnet

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "bench_supernet.py"


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("bench_supernet", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_supernet"] = module
    spec.loader.exec_module(module)
    yield module
    sys.modules.pop("bench_supernet", None)


def net(resolution: int, depth: int) -> Subnet:
    return Subnet(resolution, (depth, 1), (3, 3), (2, 2))


def test_tau_inside_each_resolution_with_three_or_more(bench):
    nets = [net(4, 1), net(4, 2), net(4, 3), net(2, 1), net(2, 2), net(2, 3), net(1, 1)]
    inherited = [0.70, 0.72, 0.74, 0.80, 0.82, 0.84, 0.90]
    alone = [0.83, 0.82, 0.81, 0.85, 0.86, 0.87, 0.91]  # r4 reversed, r2 agrees
    within = bench._within_resolution(nets, inherited, alone)
    assert within == pytest.approx({"r2": 1.0, "r4": -1.0})  # r1 has one subnet: left out
    pairs = [[n.key(), i, a] for n, i, a in zip(nets, inherited, alone, strict=True)]
    text = bench._within_text({"tau_within_resolution": within, "pairs": pairs})
    assert text == "r2 1.00 (3 subnets), r4 -1.00 (3 subnets)"
    assert "no resolution" in bench._within_text({"pairs": pairs[:2]})
