"""The frontier bench's arithmetic: fronts, pairing, latency ratios and hypervolume.

Every model is a :class:`Model` (a name, its test accuracy in [0, 1] and its
latency in ms). Plain Python, no TensorFlow: ``tests/bench/test_bench_frontier.py``
checks it with made-up numbers.

- :func:`front`: the models no other is at least as accurate and as fast as
  (strictly better in one), fastest first.
- :func:`pair`: for each reference point, the most accurate searched model at
  no higher latency, and the accuracy difference (searched minus reference);
  the fastest searched model at no lower accuracy, and the latency ratio
  (reference over searched: 1.3 means the searched model is 1.3x faster).
  A searched model of the reference point's own design (the search seeds
  the reference curve's best points, so it holds some of them, trained
  again) is recorded beside the pair: the point is "not worse", whatever the
  retraining's noise says; :func:`summary` counts both.
- :func:`hypervolume`: the area dominated by a set of models in the box
  accuracy [0, 1] x latency [0, ``max_latency_ms``], as a share of the box.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["Model", "Pair", "front", "hypervolume", "markdown", "pair", "summary"]


# Accuracies closer than this are equal (float32 means of the same count of right answers).
EPS = 1e-6


@dataclass(frozen=True)
class Model:
    """One trained model: name, test accuracy (0-1) and estimated latency (ms)."""

    name: str
    accuracy: float
    latency_ms: float
    design: str | None = None  # a reference-grid design ("x1 /2"), None for a searched one


@dataclass(frozen=True)
class Pair:
    """A reference point and what the search found against it.

    Attributes:
        reference: the reference-grid model.
        at_latency: the most accurate searched model at no higher latency, or None.
        accuracy_gain: its accuracy minus the reference's (None without one).
        at_accuracy: the fastest searched model at no lower accuracy, or None.
        speedup: reference latency over that model's (None without one).
        same_design: a searched model of the reference point's own design (a
            seed of the search, trained again), or None.
    """

    reference: Model
    at_latency: Model | None
    accuracy_gain: float | None
    at_accuracy: Model | None
    speedup: float | None
    same_design: Model | None = None

    @property
    def dominated(self) -> bool:
        """A searched model is at no higher latency and no lower accuracy (as measured)."""
        return self.accuracy_gain is not None and self.accuracy_gain >= -EPS

    @property
    def not_worse(self) -> bool:
        """Dominated as measured, or the search holds the reference point's own design."""
        return self.dominated or self.same_design is not None


def _better_or_equal(a: Model, b: Model) -> bool:
    return a.accuracy >= b.accuracy and a.latency_ms <= b.latency_ms


def front(models: Sequence[Model]) -> list[Model]:
    """The non-dominated models, fastest first (ties in both kept once, by name)."""
    kept = []
    for m in models:
        beaten = any(
            _better_or_equal(o, m) and (o.accuracy > m.accuracy or o.latency_ms < m.latency_ms)
            for o in models
        )
        same = any((o.accuracy, o.latency_ms) == (m.accuracy, m.latency_ms) for o in kept)
        if not beaten and not same:
            kept.append(m)
    return sorted(kept, key=lambda m: (m.latency_ms, -m.accuracy))


def pair(reference: Sequence[Model], searched: Sequence[Model]) -> list[Pair]:
    """Each reference point against the searched models (see the module docstring)."""
    pairs = []
    for r in sorted(reference, key=lambda m: m.latency_ms):
        cheaper = [s for s in searched if s.latency_ms <= r.latency_ms]
        best = max(cheaper, key=lambda s: (s.accuracy, -s.latency_ms), default=None)
        good = [s for s in searched if s.accuracy >= r.accuracy - EPS and s.latency_ms > 0]
        fastest = min(good, key=lambda s: (s.latency_ms, -s.accuracy), default=None)
        pairs.append(
            Pair(
                r,
                best,
                None if best is None else best.accuracy - r.accuracy,
                fastest,
                None if fastest is None else r.latency_ms / fastest.latency_ms,
                next((s for s in searched if r.design and s.design == r.design), None),
            )
        )
    return pairs


def hypervolume(models: Sequence[Model], max_latency_ms: float) -> float:
    """Share of the box accuracy [0, 1] x latency [0, max_latency_ms] the models dominate.

    Models slower than ``max_latency_ms`` add nothing.
    """
    if max_latency_ms <= 0:
        raise ValueError("max_latency_ms must be positive")
    area, best = 0.0, 0.0
    inside = [m for m in front(models) if m.latency_ms < max_latency_ms]
    for i, m in enumerate(inside):  # fastest first; each holds until the next is faster
        best = max(best, m.accuracy)
        right = inside[i + 1].latency_ms if i + 1 < len(inside) else max_latency_ms
        area += (right - m.latency_ms) * best
    return area / max_latency_ms


def summary(pairs: Sequence[Pair]) -> dict:
    """Counts and means over the pairs: dominated share, mean gain, mean speed-up (geometric)."""
    gains = [p.accuracy_gain for p in pairs if p.accuracy_gain is not None]
    ratios = [p.speedup for p in pairs if p.speedup is not None]
    geo = None
    if ratios:
        product = 1.0
        for r in ratios:
            product *= r
        geo = product ** (1.0 / len(ratios))
    return {
        "points": len(pairs),
        "dominated": sum(p.dominated for p in pairs),
        "same_design": sum(p.same_design is not None for p in pairs),
        "not_worse": sum(p.not_worse for p in pairs),
        "with_model_at_latency": len(gains),
        "mean_gain": sum(gains) / len(gains) if gains else None,
        "with_model_at_accuracy": len(ratios),
        "geomean_speedup": geo,
    }


def pct(v: float | None, sign: str = "") -> str:
    """A fraction as points to one decimal (``sign="+"``: signed); rounding never shows -0.0."""
    return "-" if v is None else format(100 * v + 0.0, f"{sign}.1f").replace("-0.0", "+0.0")


def markdown(task: str, budget: str, result: dict, grid_wall_s: float) -> str:
    """The docs page's two tables for one task and budget (``compare``'s result in the bench).

    The summary: per set, points, then first what the models past the grid's
    designs dominate and their mean accuracy difference (a seed rung that is a
    grid design is the grid's own model), then with the seeds counted: reference
    points dominated as measured and not worse (the search's own retraining of a
    reference design counts), the mean accuracy difference at no higher latency,
    the geometric-mean latency ratio at no lower accuracy, hypervolume and wall
    time. Then one row per reference point.
    """
    ref = result["reference"]
    lines = [
        f"{task}, {budget}:",
        "",
        "| set | points | beyond the grid's designs: dominated, mean diff. "
        "| with the seeds: dominated (measured) | not worse (incl. same design) "
        "| mean acc. diff. at <= latency | latency ratio at >= acc. | hypervolume | wall s "
        "| exported on its front |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |",
        f"| reference grid | {ref['points']} | - | - | - | - | - | {ref['hypervolume']:.3f} "
        f"| {grid_wall_s:.0f} | - |",
    ]
    for name in ("evolution", "supernet"):
        s = result.get(name)
        if s is None:
            continue
        b = s["beyond"]
        ratio = "-" if s["geomean_speedup"] is None else f"{s['geomean_speedup']:.2f}"
        lines.append(
            f"| {name} | {s.get('models', '-')} | {b['dominated']} of {b['points']} "
            f"({b['models']} models), {pct(b['mean_gain'], '+')} pt "
            f"| {s['dominated']} of {s['points']} "
            f"| {s['not_worse']} of {s['points']} | {pct(s['mean_gain'], '+')} pt "
            f"| {ratio} | {s['hypervolume']:.3f} | {s['wall_s']:.0f} "
            f"| {_yes(s.get('on_front'))} |"
        )
    for name in ("evolution", "supernet"):
        s = result.get(name)
        if s is None:
            continue
        lines += [
            "",
            f"| reference point | test % | ms | {name}: best at <= ms | diff. "
            "| fastest at >= accuracy | ratio | same design |",
            "| --- | ---: | ---: | --- | ---: | --- | ---: | --- |",
        ]
        for rname, acc, ms, gain, speedup, at_lat, at_acc, same in s["pairs"]:
            ratio = "-" if speedup is None else f"{speedup:.2f}"
            lines.append(
                f"| {rname} | {100 * acc:.1f} | {ms:.2f} | {at_lat or 'none that fast'} "
                f"| {pct(gain, '+')} | {at_acc or 'none'} | {ratio} | {same or '-'} |"
            )
    return "\n".join(lines)


def _yes(flag: bool | None) -> str:
    return "-" if flag is None else ("yes" if flag else "**no**")
