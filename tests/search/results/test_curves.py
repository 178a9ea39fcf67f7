"""Rungs and the curve bound that stops a hopeless candidate early."""

from __future__ import annotations

from mcunas.figures import Figures
from mcunas.search.results.curves import (
    MIN_CURVES,
    CurveBound,
    curve_of,
    curve_text,
    rung_epochs,
)
from mcunas.search.results.record import TrialRecord, TrialStatus


def _cost(latency_ms: float, sram: int) -> Figures:
    return Figures(
        source="simulator:test",
        estimated=True,
        latency_ms=latency_ms,
        arena_bytes=sram // 2,
        peak_sram_bytes=sram,
        flash_bytes=100_000,
    )


def _trial(tid: str, curve: dict[int, float], final: float, latency_ms: float, sram: int, **kw):
    return TrialRecord(
        tid,
        status=kw.pop("status", TrialStatus.OK),
        int8_accuracy=final,
        latency_ms=latency_ms,
        peak_sram_bytes=sram,
        flash_bytes=100_000,
        curve=curve_text(kw.pop("epochs", 30), curve),
        **kw,
    )


def _finished(n: int = MIN_CURVES) -> list[TrialRecord]:
    """``n`` cheap trials that reached 0.95 from 0.80 at epoch 4 and 0.90 at epoch 10."""
    return [_trial(str(i), {4: 0.80, 10: 0.90}, 0.95, 1.0, 10_000) for i in range(n)]


def test_rungs_are_ashas_thirds_of_the_schedule() -> None:
    assert rung_epochs(30) == (4, 10)
    assert rung_epochs(9) == (1, 3)
    assert rung_epochs(81) == (9, 27)
    assert rung_epochs(8) == ()


def test_a_curve_survives_the_store_and_a_bad_one_is_none() -> None:
    rec = TrialRecord("1", curve=curve_text(30, {4: 0.5, 10: 0.75}))
    assert curve_of(rec) == (30, {4: 0.5, 10: 0.75})
    assert curve_of(TrialRecord("2", curve="{not json")) is None
    assert curve_of(TrialRecord("3")) is None


def test_a_candidate_dominated_even_at_its_best_end_stops() -> None:
    costly = _cost(5.0, 50_000)  # costs more than every finished trial
    bound = CurveBound(_finished(), costly, 30, ("accuracy", "latency", "sram"))
    # 0.50 + the largest gain 0.15 (+ noise and tie) stays far below 0.95
    reason = bound.stop(4, 0.50, 1000)
    assert reason is not None and "epoch 4 of 30" in reason
    # near the finished ones' own rung accuracy it may still reach them: trains on
    assert bound.stop(4, 0.80, 1000) is None


def test_a_candidate_cheaper_somewhere_is_never_stopped() -> None:
    faster = _cost(0.5, 50_000)  # faster than all of them: any accuracy joins the front
    bound = CurveBound(_finished(), faster, 30, ("accuracy", "latency", "sram"))
    assert bound.stop(4, 0.10, 1000) is None


def test_too_few_curves_bound_nothing() -> None:
    bound = CurveBound(_finished(MIN_CURVES - 1), _cost(5.0, 50_000), 30, ("accuracy", "latency"))
    assert bound.stop(4, 0.10, 1000) is None


def test_only_finished_curves_of_the_same_schedule_bound() -> None:
    others = [
        _trial("s", {4: 0.10}, 0.10, 1.0, 10_000, steps_saved=900),  # stopped: never bounds
        _trial("e", {4: 0.10}, 0.99, 1.0, 10_000, epochs=20),  # another schedule
        _trial("f", {4: 0.10}, 0.99, 1.0, 10_000, status=TrialStatus.FAILED),
    ]
    bound = CurveBound(_finished() + others, _cost(5.0, 50_000), 30, ("accuracy", "latency"))
    assert bound.gains(4) == [0.95 - 0.80] * MIN_CURVES


def test_a_small_split_widens_the_bound() -> None:
    bound = CurveBound(_finished(), _cost(5.0, 50_000), 30, ("accuracy", "latency", "sram"))
    small, large = bound.best_end(10, 0.78, 30), bound.best_end(10, 0.78, 3000)
    assert small is not None and large is not None and small > large > 0.78 + 0.05
