"""The search's two plots, ``pareto.png`` and ``energy.png``, as PNG bytes.

INT8 accuracy against latency (colour: peak SRAM) and against energy per
inference, each with its stated error bars, the Pareto front labelled by trial
and the chosen model starred. :mod:`mcunas.search.report.page` writes them beside
``report.html``, which embeds them. Matplotlib is imported only when plotting.

Example::

    png = plot_pareto(result.trials, result.front, "esp32s3", result.best)
"""

from __future__ import annotations

import io
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from mcunas.search.results.store import TrialRecord, TrialStatus
from mcunas.search.results.summary import energy_mark

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = ["label_trials", "mark_chosen", "plot_energy", "plot_pareto"]


def plot_pareto(
    records: Sequence[TrialRecord],
    front: Sequence[TrialRecord],
    title: str,
    chosen: TrialRecord | None = None,
) -> bytes:
    """PNG of INT8 accuracy against latency, colour = peak SRAM, front joined by a line.

    The front's points are labelled with their trial, and ``chosen`` (the model
    exported to ``best/``) is a gold star.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ok = [r for r in records if r.status == TrialStatus.OK]
    fig, ax = plt.subplots(figsize=(7, 4.5), dpi=100)
    if ok:
        sc = ax.scatter(
            [r.latency_ms or 0.0 for r in ok],
            [100 * (r.int8_accuracy or 0) for r in ok],
            c=[(r.peak_sram_bytes or 0) / 1024 for r in ok],
            cmap="viridis",
            s=36,
            edgecolors="none",
            label="feasible trials",
        )
        fig.colorbar(sc, ax=ax, label="peak SRAM (KB)")
        _error_bars(ax, ok)
        _front_line(ax, front, chosen, lambda r: r.latency_ms)
        ax.legend(loc="lower right")
        lats = [r.latency_ms for r in ok if r.latency_ms]
        if lats and max(lats) > 20 * min(lats):  # latencies span orders of magnitude
            ax.set_xscale("log")
    else:
        ax.text(0.5, 0.5, "no feasible candidate", ha="center", transform=ax.transAxes)
    est = any(r.estimated for r in ok)
    return _png(fig, ax, "latency (ms)" + (", simulator estimate" if est else ""), title)


def plot_energy(
    records: Sequence[TrialRecord],
    front: Sequence[TrialRecord],
    title: str,
    chosen: TrialRecord | None = None,
) -> bytes:
    """PNG of INT8 accuracy against energy per inference, with each estimate's stated band.

    The front's points are labelled with their trial; ``chosen`` is a gold star.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ok = [r for r in records if r.status == TrialStatus.OK and r.energy_uj]
    fig, ax = plt.subplots(figsize=(7, 4.5), dpi=100)
    if ok:
        acc = [100 * (r.int8_accuracy or 0) for r in ok]
        err = [(r.energy_uj or 0) * (r.energy_error_pct or 0) / 100 for r in ok]
        uj = [r.energy_uj or 0.0 for r in ok]  # every one set: ok holds trials with energy
        ax.errorbar(uj, acc, xerr=err, fmt="none", ecolor="grey", alpha=0.5)
        ax.scatter(uj, acc, s=36, label="feasible trials")
        _front_line(ax, [r for r in front if r.energy_uj], chosen, lambda r: r.energy_uj)
        ax.legend(loc="best")
        energies = [r.energy_uj or 0 for r in ok]
        if max(energies) > 20 * min(energies):
            ax.set_xscale("log")
    else:
        ax.text(0.5, 0.5, "no feasible candidate", ha="center", transform=ax.transAxes)
    estimated = any(energy_mark(r) for r in ok)
    return _png(fig, ax, "energy per inference (uJ)" + (", estimate" if estimated else ""), title)


def _front_line(
    ax: Axes,
    front: Sequence[TrialRecord],
    chosen: TrialRecord | None,
    x: Callable[[TrialRecord], float | None],
) -> None:
    """The front as a dashed red line along ``x``, its trials labelled, the chosen one starred."""
    on_front = sorted(front, key=lambda r: x(r) or 0.0)
    ax.plot(
        [x(r) or 0.0 for r in on_front],
        [100 * (r.int8_accuracy or 0) for r in on_front],
        "o--",
        mfc="none",
        mec="red",
        color="red",
        ms=10,
        label="Pareto front",
    )
    label_trials(ax, on_front, x)
    mark_chosen(ax, chosen, x(chosen) if chosen else None)


def label_trials(
    ax: Axes, front: Sequence[TrialRecord], x: Callable[[TrialRecord], float | None]
) -> None:
    """Write each front point's trial id beside it."""
    for r in front:
        ax.annotate(
            r.trial_id,
            (x(r), 100 * (r.int8_accuracy or 0)),
            textcoords="offset points",
            xytext=(5, 4),
            fontsize=8,
        )


def mark_chosen(ax: Axes, chosen: TrialRecord | None, x: float | None) -> None:
    """The model exported to ``best/`` as a gold star (nothing when it has no such figure)."""
    if chosen is None or not x:
        return
    ax.scatter(
        [x],
        [100 * (chosen.int8_accuracy or 0)],
        marker="*",
        s=320,
        c="gold",
        edgecolors="black",
        linewidths=0.8,
        zorder=5,
        label=f"chosen: trial {chosen.trial_id}",
    )


def _png(fig: Figure, ax: Axes, xlabel: str, title: str) -> bytes:
    """Label a plot of INT8 accuracy against ``xlabel`` and return it as PNG bytes."""
    import matplotlib.pyplot as plt

    ax.set_xlabel(xlabel)
    ax.set_ylabel("INT8 accuracy (%)")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    buf = io.BytesIO()
    fig.tight_layout()
    fig.savefig(buf, format="png")
    plt.close(fig)
    return buf.getvalue()


def _error_bars(ax: object, ok: Sequence[TrialRecord]) -> None:
    """Each point's stated latency error as a horizontal bar (simulator estimates)."""
    rows = [r for r in ok if r.latency_ms and r.latency_error_pct]
    if not rows:
        return
    ax.errorbar(  # type: ignore[attr-defined]
        [r.latency_ms for r in rows],
        [100 * (r.int8_accuracy or 0) for r in rows],
        xerr=[(r.latency_ms or 0) * (r.latency_error_pct or 0) / 100 for r in rows],
        fmt="none",
        ecolor="grey",
        alpha=0.5,
        capsize=2,
        label="stated latency error",
    )
