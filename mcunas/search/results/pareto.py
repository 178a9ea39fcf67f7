"""Pareto fronts and hypervolume over INT8 accuracy and the chosen costs.

Objectives (``--objectives``, default ``accuracy,latency,sram``): maximise INT8
accuracy, minimise latency (ms), peak SRAM (bytes), flash (bytes) and energy per
inference (uJ). Internally every objective is turned into one to minimise, in
the order given: e.g. ``(-accuracy, latency_ms, peak_sram_bytes)``.

Hypervolume: the volume dominated by the front inside the box between the
front and a reference point, computed exactly (slicing along the last
objective down to a 2-D sweep; O(n^(k-1) log n) for k objectives, fine for the
tens of trials of a search).
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
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mcunas.figures import Figures
    from mcunas.search.results.record import TrialRecord

__all__ = [
    "DEFAULT_OBJECTIVES",
    "OBJECTIVES",
    "Point",
    "check_objectives",
    "objectives_text",
    "record_point",
    "dominates",
    "front_test",
    "hypervolume",
    "non_dominated_sort",
    "normalized_hypervolume",
    "pareto_front",
    "reference_point",
]


# objective name -> the Point attribute it reads (accuracy is maximised, the rest minimised)
OBJECTIVES = {
    "accuracy": "accuracy",
    "latency": "latency_ms",
    "sram": "peak_sram_bytes",
    "flash": "flash_bytes",
    "energy": "energy_uj",
}
DEFAULT_OBJECTIVES = ("accuracy", "latency", "sram")


_LABELS = {
    "accuracy": "INT8 accuracy",
    "latency": "latency",
    "sram": "peak SRAM",
    "flash": "flash",
    "energy": "energy",
}


def objectives_text(objectives: Sequence[str]) -> str:
    """``INT8 accuracy vs latency vs peak SRAM`` for the given objectives."""
    return " vs ".join(_LABELS[o] for o in objectives)


def check_objectives(objectives: Sequence[str]) -> None:
    """Refuse an unknown, repeated or accuracy-less objective list (one line, exit 2)."""
    from mcunas.errors import UserError

    unknown = [o for o in objectives if o not in OBJECTIVES]
    if unknown or len(set(objectives)) != len(objectives) or "accuracy" not in objectives:
        raise UserError(
            f"--objectives {','.join(objectives)}: give accuracy and at least one of "
            f"{', '.join(o for o in OBJECTIVES if o != 'accuracy')}, each once "
            "(e.g. accuracy,latency,energy)"
        )
    if len(objectives) < 2:
        raise UserError("--objectives needs accuracy and at least one cost, e.g. accuracy,energy")


@dataclass(frozen=True)
class Point:
    """One candidate in objective space; ``key`` ties it back to a trial."""

    accuracy: float
    latency_ms: float
    peak_sram_bytes: float
    key: str = ""
    flash_bytes: float = 0.0
    energy_uj: float = 0.0
    objectives: tuple[str, ...] = DEFAULT_OBJECTIVES

    def minimised(self) -> tuple[float, ...]:
        """The objectives as a tuple where smaller is better in every place."""
        return tuple(
            -self.accuracy if o == "accuracy" else float(getattr(self, OBJECTIVES[o]))
            for o in self.objectives
        )


def record_point(record: TrialRecord, objectives: Sequence[str] = DEFAULT_OBJECTIVES) -> Point:
    """The point of a trial record."""
    return Point(
        getattr(record, "int8_accuracy", None) or 0.0,
        record.latency_ms or 0.0,
        record.peak_sram_bytes or 0,
        getattr(record, "trial_id", ""),
        flash_bytes=record.flash_bytes or 0,
        energy_uj=record.energy_uj or 0.0,
        objectives=tuple(objectives),
    )


def dominates(a: Point, b: Point) -> bool:
    """True if ``a`` is no worse than ``b`` everywhere and better somewhere."""
    fa, fb = a.minimised(), b.minimised()
    return all(x <= y for x, y in zip(fa, fb, strict=True)) and fa != fb


def front_test(
    feasible: Sequence[TrialRecord], accuracy: float, objectives: Sequence[str] = DEFAULT_OBJECTIVES
) -> Callable[[Figures], bool]:
    """A test of cost figures: would a candidate of ``accuracy`` with them join the front.

    ``feasible`` are the trials found so far (trial records); the test takes the
    candidate's figures (:class:`~mcunas.figures.Figures`), e.g. a simulated estimate
    before a board run.
    """
    front = [record_point(r, objectives) for r in feasible]

    def joins(cost: Figures) -> bool:
        cand = Point(
            accuracy,
            cost.latency_ms,
            cost.peak_sram_bytes,
            flash_bytes=cost.flash_bytes,
            energy_uj=cost.energy_uj or 0.0,
            objectives=tuple(objectives),
        )
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
    return sorted(front, key=lambda p: (-p.accuracy, *p.minimised()[1:]))


def _hv2d(pts: list[tuple[float, float]], ref: tuple[float, float]) -> float:
    """Area dominated by 2-D minimisation points inside the reference box."""
    area = 0.0
    best_y = ref[1]
    for x, y in sorted(pts):
        if y < best_y:
            area += (ref[0] - x) * (best_y - y)
            best_y = y
    return area


def _hv(pts: list[tuple[float, ...]], ref: tuple[float, ...]) -> float:
    """Volume dominated by minimisation points (all inside the box) up to ``ref``."""
    if len(ref) == 1:
        return ref[0] - min(p[0] for p in pts)
    if len(ref) == 2:
        return _hv2d([(p[0], p[1]) for p in pts], (ref[0], ref[1]))
    pts = sorted(pts, key=lambda p: p[-1])
    volume = 0.0
    for i, p in enumerate(pts):
        top = pts[i + 1][-1] if i + 1 < len(pts) else ref[-1]
        if top > p[-1]:
            volume += (top - p[-1]) * _hv([q[:-1] for q in pts[: i + 1]], ref[:-1])
    return volume


def hypervolume(points: Sequence[Point], ref: Point) -> float:
    """Exact hypervolume dominated by ``points`` up to the reference point ``ref``.

    Points not strictly better than ``ref`` in every objective add nothing.
    Units: the product of the objectives' units (accuracy x ms x bytes by default).
    """
    r = ref.minimised()
    pts = [p.minimised() for p in points]
    pts = [p for p in pts if all(v < rv for v, rv in zip(p, r, strict=True))]
    return _hv(pts, r) if pts else 0.0


def normalized_hypervolume(points: Sequence[Point], ref: Point) -> float:
    """Hypervolume as a fraction of the box from the ideal (accuracy 1, costs 0) to ``ref``."""
    box = 1.0
    for name, value in zip(ref.objectives, ref.minimised(), strict=True):
        box *= value + 1.0 if name == "accuracy" else value
    return hypervolume(points, ref) / box if box > 0 else 0.0


def _ref_value(budget: float | None, points: Sequence[Point], attr: str) -> float:
    """A budget, else 1.1x the largest of ``points`` (1.0 with none)."""
    if budget is not None:
        return float(budget)
    largest = max((float(getattr(p, attr)) for p in points), default=0.0)
    return 1.1 * largest if largest > 0 else 1.0


def reference_point(
    max_latency_ms: float | None,
    sram_budget_bytes: float,
    points: Sequence[Point] = (),
    *,
    flash_budget_bytes: float | None = None,
    max_energy_uj: float | None = None,
    objectives: Sequence[str] = DEFAULT_OBJECTIVES,
) -> Point:
    """The reference point mcunas uses: accuracy 0 and each cost's budget.

    A cost without a budget takes 1.1x the largest of ``points`` (or 1 with none).
    """
    return Point(
        0.0,
        _ref_value(max_latency_ms, points, "latency_ms"),
        float(sram_budget_bytes),
        key="reference",
        flash_bytes=_ref_value(flash_budget_bytes, points, "flash_bytes"),
        energy_uj=_ref_value(max_energy_uj, points, "energy_uj"),
        objectives=tuple(objectives),
    )
