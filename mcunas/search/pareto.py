"""Pareto fronts and hypervolume over (INT8 accuracy, latency, peak SRAM).

Objectives: maximise INT8 accuracy, minimise latency (ms), minimise peak
SRAM (bytes). Internally every objective is turned into one to minimise:
``(-accuracy, latency_ms, peak_sram_bytes)``.

Hypervolume: the volume dominated by the front inside the box between the
front and a reference point, computed exactly (slicing along SRAM, then a
2-D sweep per slice; O(n^2 log n), fine for the tens of trials of a search).
The reference point used by mcunas reports (:func:`reference_point`) is
accuracy 0, the latency budget (or, without one, 1.1x the slowest feasible
trial seen) and the board's SRAM budget for the model (or the SRAM budget the
user gave). :func:`normalized_hypervolume` divides by the volume of the box
``[0, 1] x [0, ref latency] x [0, ref SRAM]`` so fronts compare as a
fraction in [0, 1].
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "Point",
    "dominates",
    "front_test",
    "hypervolume",
    "non_dominated_sort",
    "normalized_hypervolume",
    "pareto_front",
    "reference_point",
]


@dataclass(frozen=True)
class Point:
    """One candidate in objective space; ``key`` ties it back to a trial."""

    accuracy: float
    latency_ms: float
    peak_sram_bytes: float
    key: str = ""

    def minimised(self) -> tuple[float, float, float]:
        """The objectives as a tuple where smaller is better in every place."""
        return (-self.accuracy, self.latency_ms, self.peak_sram_bytes)


def dominates(a: Point, b: Point) -> bool:
    """True if ``a`` is no worse than ``b`` everywhere and better somewhere."""
    fa, fb = a.minimised(), b.minimised()
    return all(x <= y for x, y in zip(fa, fb, strict=True)) and fa != fb


def front_test(feasible: Sequence[Any], accuracy: float) -> Callable[[Any], bool]:
    """A test of cost figures: would a candidate of ``accuracy`` with them join the front.

    ``feasible`` are the trials found so far (``int8_accuracy``, ``latency_ms``,
    ``peak_sram_bytes``); the test takes the candidate's figures (``latency_ms``,
    ``peak_sram_bytes``), e.g. a simulated estimate before a board run.
    """
    front = [
        Point(r.int8_accuracy or 0.0, r.latency_ms or 0.0, r.peak_sram_bytes or 0) for r in feasible
    ]

    def joins(cost: Any) -> bool:
        cand = Point(accuracy, cost.latency_ms, cost.peak_sram_bytes)
        return not any(dominates(p, cand) for p in front)

    return joins


def non_dominated_sort(points: Sequence[Point]) -> list[list[Point]]:
    """Sort into fronts (NSGA-II's fast non-dominated sort): front 0 is Pareto-optimal."""
    n = len(points)
    dominated_by: list[list[int]] = [[] for _ in range(n)]
    counts = [0] * n
    for i in range(n):
        for j in range(i + 1, n):
            if dominates(points[i], points[j]):
                dominated_by[i].append(j)
                counts[j] += 1
            elif dominates(points[j], points[i]):
                dominated_by[j].append(i)
                counts[i] += 1
    fronts: list[list[Point]] = []
    current = [i for i in range(n) if counts[i] == 0]
    while current:
        fronts.append([points[i] for i in current])
        nxt = []
        for i in current:
            for j in dominated_by[i]:
                counts[j] -= 1
                if counts[j] == 0:
                    nxt.append(j)
        current = sorted(nxt)
    return fronts


def pareto_front(points: Sequence[Point]) -> list[Point]:
    """The non-dominated points, most accurate first."""
    if not points:
        return []
    front = non_dominated_sort(points)[0]
    return sorted(front, key=lambda p: (-p.accuracy, p.latency_ms, p.peak_sram_bytes))


def _hv2d(pts: list[tuple[float, float]], ref: tuple[float, float]) -> float:
    """Area dominated by 2-D minimisation points inside the reference box."""
    area = 0.0
    best_y = ref[1]
    for x, y in sorted(pts):
        if y < best_y:
            area += (ref[0] - x) * (best_y - y)
            best_y = y
    return area


def hypervolume(points: Sequence[Point], ref: Point) -> float:
    """Exact hypervolume dominated by ``points`` up to the reference point ``ref``.

    Points not strictly better than ``ref`` in every objective add nothing.
    Units: accuracy x ms x bytes.
    """
    r = ref.minimised()
    pts = [p.minimised() for p in points]
    pts = [p for p in pts if all(v < rv for v, rv in zip(p, r, strict=True))]
    if not pts:
        return 0.0
    pts.sort(key=lambda p: p[2])
    volume = 0.0
    for i, p in enumerate(pts):
        top = pts[i + 1][2] if i + 1 < len(pts) else r[2]
        depth = top - p[2]
        if depth <= 0:
            continue
        volume += depth * _hv2d([(q[0], q[1]) for q in pts[: i + 1]], (r[0], r[1]))
    return volume


def normalized_hypervolume(points: Sequence[Point], ref: Point) -> float:
    """Hypervolume as a fraction of the box ``[0, 1] x [0, ref.latency] x [0, ref.sram]``."""
    box = 1.0 * ref.latency_ms * ref.peak_sram_bytes
    return hypervolume(points, ref) / box if box > 0 else 0.0


def reference_point(
    max_latency_ms: float | None, sram_budget_bytes: float, points: Sequence[Point] = ()
) -> Point:
    """The reference point mcunas uses: accuracy 0, latency budget, SRAM budget.

    Without a latency budget, 1.1x the slowest of ``points`` (or 1 ms with none).
    """
    if max_latency_ms is None:
        slowest = max((p.latency_ms for p in points), default=0.0)
        max_latency_ms = 1.1 * slowest if slowest > 0 else 1.0
    return Point(0.0, float(max_latency_ms), float(sram_budget_bytes), key="reference")
