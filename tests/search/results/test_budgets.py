"""Budgets: hard limits, and --safe-latency's margin on estimated latencies."""

from __future__ import annotations

from mcunas.figures import Figures
from mcunas.search.results.budgets import Budgets, score, violations
from mcunas.search.settings.config import SearchConfig


def _cost(ms: float, error: float | None, estimated: bool = True) -> Figures:
    return Figures("test", estimated, ms, 10_000, 50_000, 200_000, latency_error_pct=error)


def test_latency_budget_checks_the_estimate_itself_by_default():
    assert violations(_cost(4.0, 50.0), Budgets(max_latency_ms=5)) == []
    assert score(0.9, _cost(4.0, 50.0), Budgets(max_latency_ms=5)) == 0.9


def test_safe_latency_adds_the_stated_error_to_estimates_only():
    safe = Budgets(max_latency_ms=5, safe_latency=True)
    (reason,) = violations(_cost(4.0, 50.0), safe)
    assert "estimated latency 4.00 ms (+50% stated error: 6.00 ms) > budget 5 ms" == reason
    assert score(0.9, _cost(4.0, 50.0), safe) == 0.0
    assert violations(_cost(4.0, 20.0), safe) == []  # 4.8 ms fits
    assert violations(_cost(4.0, 50.0, estimated=False), safe) == []  # measured: as it is
    assert "plus their stated error" in safe.describe()


def test_config_carries_safe_latency_into_the_budgets():
    config = SearchConfig(board="esp32s3", max_latency_ms=5, safe_latency=True)
    assert config.budgets.safe_latency
    assert SearchConfig.from_dict(config.to_dict()).budgets == config.budgets
    assert not SearchConfig.from_dict({"board": "esp32s3"}).safe_latency  # older stores
