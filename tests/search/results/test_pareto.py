from __future__ import annotations

import itertools
import random

import pytest

from mcunas.search.results.pareto import (
    Point,
    dominates,
    hypervolume,
    non_dominated_sort,
    normalized_hypervolume,
    pareto_front,
    reference_point,
)


def test_dominates_needs_better_somewhere() -> None:
    a = Point(0.9, 10, 1000)
    assert dominates(a, Point(0.8, 10, 1000))
    assert dominates(a, Point(0.9, 11, 1000))
    assert not dominates(a, a)
    assert not dominates(a, Point(0.95, 20, 1000))  # trade-off: neither dominates
    assert not dominates(Point(0.95, 20, 1000), a)


def test_non_dominated_sort_layers() -> None:
    a = Point(0.9, 10, 100, "a")
    b = Point(0.8, 5, 100, "b")  # trade-off with a
    c = Point(0.8, 10, 100, "c")  # dominated by a and b
    d = Point(0.7, 20, 200, "d")  # dominated by c
    fronts = non_dominated_sort([d, c, b, a])
    assert [sorted(p.key for p in f) for f in fronts] == [["a", "b"], ["c"], ["d"]]
    assert [p.key for p in pareto_front([d, c, b, a])] == ["a", "b"]
    assert pareto_front([]) == []


def test_hypervolume_single_point_is_a_box() -> None:
    ref = Point(0.0, 10.0, 100.0)
    # minimised: (-0.5, 4, 40) against (0, 10, 100): 0.5 * 6 * 60
    assert hypervolume([Point(0.5, 4, 40)], ref) == pytest.approx(180.0)


def test_hypervolume_two_points_hand_checked() -> None:
    ref = Point(0.0, 10.0, 10.0)
    p = Point(1.0, 5.0, 5.0)  # box 1 * 5 * 5 = 25
    q = Point(0.5, 2.0, 5.0)  # box 0.5 * 8 * 5 = 20, overlap with p: 0.5 * 5 * 5 = 12.5
    assert hypervolume([p, q], ref) == pytest.approx(25 + 20 - 12.5)
    # a dominated point adds nothing; a point outside the box adds nothing
    assert hypervolume([p, q, Point(0.4, 6, 6), Point(0.9, 12, 1)], ref) == pytest.approx(32.5)


def test_hypervolume_three_points_different_sram() -> None:
    ref = Point(0.0, 4.0, 4.0)
    pts = [Point(1, 3, 3), Point(1, 1, 3.5), Point(0.5, 3, 1)]
    # inclusion-exclusion over the three boxes (corners at minimised values)
    boxes = [(1, 1, 1), (1, 3, 0.5), (0.5, 1, 3)]  # (acc, lat-extent, sram-extent)
    vol = sum(a * b * c for a, b, c in boxes)
    vol -= 1 * 1 * 0.5 + 0.5 * 1 * 1 + 0.5 * 1 * 0.5  # pairwise overlaps
    vol += 0.5 * 1 * 0.5  # triple overlap
    assert hypervolume(pts, ref) == pytest.approx(vol)


def test_hypervolume_matches_monte_carlo_grid() -> None:
    rng = random.Random(3)
    pts = [Point(rng.random(), rng.uniform(0, 10), rng.uniform(0, 10)) for _ in range(6)]
    ref = Point(0.0, 10.0, 10.0)
    n = 24
    inside = 0
    for i, j, k in itertools.product(range(n), repeat=3):
        x = (-(i + 0.5) / n, (j + 0.5) * 10 / n, (k + 0.5) * 10 / n)
        if any(all(a <= b for a, b in zip(p.minimised(), x, strict=True)) for p in pts):
            inside += 1
    grid = inside / n**3 * (1 * 10 * 10)
    assert hypervolume(pts, ref) == pytest.approx(grid, rel=0.08)


def test_normalized_hypervolume_and_reference() -> None:
    ref = reference_point(10.0, 100.0)
    assert (ref.accuracy, ref.latency_ms, ref.peak_sram_bytes) == (0.0, 10.0, 100.0)
    assert normalized_hypervolume([Point(1.0, 0.0, 0.0)], ref) == pytest.approx(1.0)
    assert normalized_hypervolume([Point(0.5, 5.0, 50.0)], ref) == pytest.approx(0.125)
    auto = reference_point(None, 100.0, [Point(0.5, 20.0, 1.0)])
    assert auto.latency_ms == pytest.approx(22.0)


def test_choose_best_prefers_faster_within_a_tie() -> None:
    from mcunas.search.report.result import choose_best
    from mcunas.search.results.store import TrialRecord, TrialStatus

    def rec(tid, score, lat, status=TrialStatus.OK):
        return TrialRecord(
            tid,
            status=status,
            score=score,
            int8_accuracy=score,
            latency_ms=lat,
            peak_sram_bytes=1000,
            model_path="m.tflite",
        )

    rows = [
        rec("a", 0.972, 145.0),
        rec("b", 0.969, 0.7),
        rec("c", 0.95, 0.1),
        rec("d", 0.99, 0.1, TrialStatus.INFEASIBLE),
    ]
    assert choose_best(rows).trial_id == "b"
    assert choose_best([rec("a", 0.972, 145.0), rec("c", 0.95, 0.1)]).trial_id == "a"
    assert choose_best([rows[3]]) is None
    # same architecture re-trained (a Hyperband round): same costs, the better one wins
    same = [rec("09", 0.9749, 2.16), rec("12", 0.9777, 2.16)]
    assert choose_best(same).trial_id == "12"


def test_choose_best_breaks_a_saturated_tie_on_validation_loss() -> None:
    from mcunas.search.report.result import LOSS_TIE, choose_best
    from mcunas.search.results.store import TrialRecord, TrialStatus

    def rec(tid, lat, loss, sram=1000):
        return TrialRecord(
            tid, status=TrialStatus.OK, score=1.0, int8_accuracy=1.0, int8_loss=loss,
            latency_ms=lat, peak_sram_bytes=sram, model_path="m.tflite",
        )  # fmt: skip

    # every candidate on the front scores 100% on a small split: the confident one wins...
    small = rec("small", 1.0, 0.60, sram=2000)
    assert choose_best([small, rec("big", 9.0, 0.25)]).trial_id == "big"
    # ...unless the losses tie too: then the faster one
    close = [rec("small", 1.0, 0.25 + LOSS_TIE / 2, sram=2000), rec("big", 9.0, 0.25)]
    assert choose_best(close).trial_id == "small"
    # a trial from before losses were recorded stays in the tie
    assert choose_best([rec("old", 0.5, None), rec("big", 9.0, 0.25)]).trial_id == "old"
    # a lower loss does not save a model that another is as accurate as and cheaper than
    assert choose_best([rec("small", 1.0, 0.60), rec("big", 9.0, 0.25)]).trial_id == "small"


def test_the_summary_says_why_a_lower_score_was_chosen() -> None:
    from mcunas.search.report.result import choice_reason, choose_best
    from mcunas.search.results.store import TrialRecord, TrialStatus

    def rec(tid, score, lat, loss):
        return TrialRecord(
            tid, status=TrialStatus.OK, score=score, int8_accuracy=score, int8_loss=loss,
            latency_ms=lat, peak_sram_bytes=1000, model_path="m.tflite",
        )  # fmt: skip

    top, calm = rec("11", 0.992, 5.65, 0.40), rec("13", 0.989, 6.40, 0.30)
    calm.peak_sram_bytes = 900  # smaller: on the front beside the top
    assert choose_best([top, calm]) is calm
    why = choice_reason([top, calm], calm)
    assert "tied with trial 11 (99.2%, within 0.5 points)" in why
    assert "lower INT8 validation loss (0.300 vs 0.400)" in why
    fast = rec("14", 0.99, 1.0, 0.41)
    assert "faster (1.00 vs 5.65 ms)" in choice_reason([top, fast], choose_best([top, fast]))
    assert choice_reason([top, calm], top) is None


def test_the_seed_design_is_kept_within_the_tie() -> None:
    from mcunas.search.report.result import choice_reason, choose_best
    from mcunas.search.results.store import TrialRecord, TrialStatus

    def rec(tid, score, lat, loss, origin=None):
        return TrialRecord(
            tid, status=TrialStatus.OK, score=score, int8_accuracy=score, int8_loss=loss,
            latency_ms=lat, peak_sram_bytes=1000, model_path="m.tflite", origin=origin,
        )  # fmt: skip

    seed, small = rec("0", 1.0, 2.3, 0.09, "seed"), rec("05", 1.0, 0.6, 0.07)
    small.peak_sram_bytes = 3000  # faster but larger: both on the front
    assert choose_best([seed, small]) is seed
    assert "the --seed-arch design, within 0.5 points of trial 05" in choice_reason(
        [seed, small], seed
    )
    better = rec("06", 1.0, 0.6, 0.07)
    assert choose_best([rec("0", 0.99, 2.3, 0.09, "seed"), better]) is better  # beaten by > 0.5
