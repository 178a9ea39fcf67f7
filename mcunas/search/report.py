"""What a search leaves behind: ``pareto.json``, ``pareto.png`` and ``report.html``.

Written from one :class:`~mcunas.search.result.SearchResult`; the wording of
figures and estimates comes from :mod:`mcunas.search.summary`.
"""

from __future__ import annotations

import base64
import html
import io
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from string import Template
from typing import Any

from mcunas.files import write_file
from mcunas.jsontext import dumps
from mcunas.search.pareto import DEFAULT_OBJECTIVES
from mcunas.search.result import SearchResult, choice_reason
from mcunas.search.store import TrialRecord, TrialStatus, record_from_dict
from mcunas.search.summary import energy_mark, estimate_mark, estimate_tag, split_text

__all__ = ["plot_energy", "plot_pareto", "write_report"]


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
        fr = sorted(front, key=lambda r: r.latency_ms or 0)
        ax.plot(
            [r.latency_ms or 0.0 for r in fr],
            [100 * (r.int8_accuracy or 0) for r in fr],
            "o--",
            mfc="none",
            mec="red",
            color="red",
            ms=10,
            label="Pareto front",
        )
        _label_trials(ax, fr, lambda r: r.latency_ms)
        _mark_chosen(ax, chosen, chosen.latency_ms if chosen else None)
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
        on_front = sorted((r for r in front if r.energy_uj), key=lambda r: r.energy_uj or 0)
        ax.plot(
            [r.energy_uj or 0.0 for r in on_front],
            [100 * (r.int8_accuracy or 0) for r in on_front],
            "o--",
            mfc="none",
            color="red",
            ms=10,
            label="Pareto front",
        )
        _label_trials(ax, on_front, lambda r: r.energy_uj)
        _mark_chosen(ax, chosen, chosen.energy_uj if chosen else None)
        ax.legend(loc="best")
        energies = [r.energy_uj or 0 for r in ok]
        if max(energies) > 20 * min(energies):
            ax.set_xscale("log")
    else:
        ax.text(0.5, 0.5, "no feasible candidate", ha="center", transform=ax.transAxes)
    estimated = any(energy_mark(r) for r in ok)
    return _png(fig, ax, "energy per inference (uJ)" + (", estimate" if estimated else ""), title)


def _label_trials(ax: Any, front: Sequence[TrialRecord], x: Any) -> None:
    """Write each front point's trial id beside it."""
    for r in front:
        ax.annotate(
            r.trial_id,
            (x(r), 100 * (r.int8_accuracy or 0)),
            textcoords="offset points",
            xytext=(5, 4),
            fontsize=8,
        )


def _mark_chosen(ax: Any, chosen: TrialRecord | None, x: float | None) -> None:
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


def _png(fig: Any, ax: Any, xlabel: str, title: str) -> bytes:
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


def write_report(result: SearchResult) -> dict[str, str]:
    """Write ``pareto.json``, ``pareto.png`` and ``report.html``; return their paths."""
    out_dir = Path(result.out_dir)
    summary = result.overview()
    keys = ("board", "budgets", "hypervolume", "wall_s", "session_wall_s", "sessions")
    pareto = {**{k: summary.get(k) for k in keys}, "front": [r.to_dict() for r in result.front]}
    paths = {"pareto_json": write_file(out_dir / "pareto.json", dumps(pareto))}
    name, best = result.board.name, result.best
    png = plot_pareto(result.trials, result.front, f"{name}: feasible candidates", best)
    paths["pareto_png"] = write_file(out_dir / "pareto.png", png)
    energy_png = plot_energy(result.trials, result.front, f"{name}: energy", best)
    paths["energy_png"] = write_file(out_dir / "energy.png", energy_png)
    images = [base64.b64encode(p).decode() for p in (png, energy_png)]
    why = None if best is None else choice_reason(result.trials, best)
    page = _html(summary, result.trials, result.front, images, why)
    paths["report_html"] = write_file(out_dir / "report.html", page)
    return {k: str(v) for k, v in paths.items()}


NO_TEST = "No test split: the accuracies above are on the validation split."

_COLUMNS = [
    ("trial", lambda r: r.trial_id),
    ("family", lambda r: r.family or ""),
    ("status", lambda r: str(r.status)),
    ("inherited acc", lambda r: _pct(r.inherited_accuracy)),  # --strategy supernet
    ("float acc", lambda r: _pct(r.float_accuracy)),
    ("INT8 acc", lambda r: _pct(r.int8_accuracy)),
    ("latency ms", lambda r: _num(r.latency_ms, 2) + estimate_mark(r)),
    ("error %", lambda r: _num(r.latency_error_pct, 1)),
    ("arena KB", lambda r: _kb(r.arena_bytes) + estimate_mark(r)),
    ("peak SRAM KB", lambda r: _kb(r.peak_sram_bytes) + estimate_mark(r)),
    ("flash KB", lambda r: _kb(r.flash_bytes) + estimate_mark(r)),
    ("front-end ms", lambda r: _num(r.frontend_latency_ms, 2) + _fe_mark(r)),
    ("front-end SRAM KB", lambda r: _kb(r.frontend_sram_bytes) + _fe_mark(r)),
    ("front-end flash KB", lambda r: _kb(r.frontend_flash_bytes) + _fe_mark(r)),
    ("energy uJ", lambda r: _num(r.energy_uj, 1) + (energy_mark(r) if r.energy_uj else "")),
    ("energy ± %", lambda r: _num(r.energy_error_pct, 0)),
    ("MACs", lambda r: _num(r.macs, 0)),
    ("params", lambda r: _num(r.params, 0)),
    ("source", lambda r: r.source or ""),
    ("train s", lambda r: _num(r.train_s, 1)),
    ("total s", lambda r: _num(r.total_s, 1)),
    ("reason", lambda r: r.reason or ""),
]


# columns shown only when some trial has a value there (a search with an audio front end)
_OPTIONAL = {"front-end ms", "front-end SRAM KB", "front-end flash KB"}


def _fe_mark(r: TrialRecord) -> str:
    return "~" if r.frontend_latency_ms is not None and r.estimated else ""


def _pct(v: float | None) -> str:
    return "" if v is None else f"{100 * v:.1f}%"


def _num(v: float | None, digits: int) -> str:
    return "" if v is None else f"{v:,.{digits}f}"


def _kb(v: int | None) -> str:
    return "" if v is None else f"{v / 1024:.1f}"


def _resumes(summary: dict) -> str:
    """`` over 2 resumes (this one 40 s)`` for a resumed search, else nothing."""
    n, this = summary.get("sessions") or 1, summary.get("session_wall_s")
    return "" if n < 2 or this is None else f" over {n} resumes (this one {this:.0f} s)"


def _table(records: Sequence[TrialRecord], chosen_id: str | None) -> str:
    """Trials as a table the report's script sorts by any column; the chosen row marked."""
    columns = [
        (name, fn) for name, fn in _COLUMNS if name not in _OPTIONAL or any(fn(r) for r in records)
    ]
    head = "".join(f"<th>{html.escape(name)}</th>" for name, _ in columns)
    rows = []
    for r in records:
        cells = "".join(f"<td>{html.escape(str(fn(r)))}</td>" for _, fn in columns)
        marked = " chosen" if chosen_id is not None and r.trial_id == chosen_id else ""
        rows.append(f'<tr class="{r.status}{marked}">{cells}</tr>')
    return (
        f'<table class="sortable"><thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table>"
    )


def _layers(rows: list[dict] | None) -> str:
    """The chosen model's per-op table: op, output shape, MACs, latency ± error, live arena."""
    if not rows:
        return ""
    head = "".join(
        f"<th>{h}</th>"
        for h in ("#", "op", "output shape", "MACs", "latency ms~", "± %", "live arena KB")
    )
    body = "".join(
        f"<tr><td>{r['index']}</td><td>{html.escape(r['op'])}</td>"
        f"<td>{'x'.join(str(d) for d in r['output_shape']) or '-'}</td>"
        f'<td class="num">{_num(r["macs"], 0)}</td>'
        f'<td class="num">{_num(r["est_ms"], 3)}</td>'
        f'<td class="num">{_num(r["est_error_pct"], 0)}</td>'
        f'<td class="num">{_kb(r["live_bytes"])}</td></tr>'
        for r in rows
    )
    return (
        '<h2>Chosen model, layer by layer</h2><p class="note">Latency per op is the '
        "simulator's estimate (~) with its stated error; live arena is the activation "
        "bytes alive while the op runs. Rows F0, F1, ... are the audio front end's signal "
        "ops, run first, timed per inference window (per frame x the window's frames; "
        "assumed cycle counts, good to a factor of two).</p>"
        f"<table><tr>{head}</tr>{body}</table>"
    )


def _energy(best: dict) -> str:
    """``energy 123.4 uJ +/-40% (estimate), `` for the chosen model's line."""
    if best.get("energy_uj") is None:
        return ""
    measured = str(best.get("energy_source") or "").startswith("meter:")
    band = "" if measured else f" +/-{best.get('energy_error_pct') or 0:.0f}% (estimate)"
    return f"energy {best['energy_uj']:.1f} uJ{band} per inference, "


def _objectives(summary: dict) -> str:
    from mcunas.search.pareto import objectives_text

    return objectives_text(summary["hypervolume"].get("objectives") or DEFAULT_OBJECTIVES)


def _reference(summary: dict) -> str:
    """The reference point's costs, for the objectives of this front."""
    ref, objectives = summary["hypervolume"]["reference"], summary["hypervolume"].get("objectives")
    parts = {
        "latency": f"{ref['latency_ms']:.2f} ms",
        "sram": f"{ref['peak_sram_bytes'] / 1024:.0f} KB SRAM",
        "flash": f"{(ref.get('flash_bytes') or 0) / 1024:.0f} KB flash",
        "energy": f"{ref.get('energy_uj') or 0:.1f} uJ",
    }
    return ", ".join(parts[o] for o in objectives or DEFAULT_OBJECTIVES if o in parts)


def _chosen_line(best: dict | None) -> str:
    """The chosen model's one line: trial, description, figures, where it went."""
    if best is None:
        return "none (no feasible candidate)"
    what = html.escape(best.get("description") or best.get("family") or "")
    return (
        f"trial {html.escape(best['trial_id'])} ({what})"
        f": INT8 accuracy {_pct(best['int8_accuracy'])}, latency {best['latency_ms']:.2f} ms, "
        f"peak SRAM {best['peak_sram_bytes'] / 1024:.1f} KB{estimate_tag(best)}, "
        f"{_energy(best)}{_split(best)}exported to best/"
    )


def _split(best: dict) -> str:
    """``(front end ... + model ... = ...), `` when the chosen model has a front end."""
    text = split_text(record_from_dict(best))
    return f"({html.escape(text)}), " if text else ""


def _chosen_by(summary: dict, why: str | None) -> str:
    """Which rule chose the model: the summary's ``chosen_by`` where it has one."""
    rule = summary.get("chosen_by") or (summary.get("best") or {}).get("chosen_by") or why
    if not rule:
        return ""
    return f"<p><b>Chosen by:</b> {html.escape(str(rule))}</p>"


def _search_line(summary: dict) -> str:
    esc = html.escape
    counts = ", ".join(f"{v} {k}" for k, v in summary["counts"].items())
    draws = summary["draws"]
    return (
        f"Strategy {esc(summary['strategy'])}, dataset {esc(summary['dataset'])}, {counts} "
        f"({draws['trained']} trained of {draws['drawn']} drawn, cap {draws['cap']}); "
        f"wall time {summary['wall_s']:.0f} s{_resumes(summary)}; training time spent on "
        f"infeasible candidates: {summary['infeasible_train_s']:.1f} s. "
        f"{esc(summary.get('stopped_reason') or '')}"
    )


def _html(
    summary: dict,
    records: Sequence[TrialRecord],
    front: Sequence[TrialRecord],
    pngs: list[str],
    why: str | None = None,
) -> str:
    """The report page, from ``templates/report.html.in``."""
    esc, board, best = html.escape, summary["board"], summary.get("best")
    chosen_id = None if best is None else best["trial_id"]
    hv = summary["hypervolume"]
    return _template().substitute(
        board_name=esc(board["name"]),
        board_line=(
            f"{esc(board.get('title') or '')}: {board['clock_hz'] / 1e6:g} MHz, "
            f"kernels {esc(board['kernels'])}, {board['sram_budget_bytes'] / 1024:.0f} KB SRAM "
            f"usable, {board['flash_budget_bytes'] / 1024:.0f} KB flash for the model. "
            f"User budgets: {esc(summary['budgets_text'])}."
        ),
        search_line=_search_line(summary),
        chosen=_chosen_line(best),
        chosen_by=_chosen_by(summary, why),
        test_line=esc(summary.get("test_text") or NO_TEST),
        hypervolume_line=(
            f"Hypervolume of the feasible front over {esc(_objectives(summary))} (normalised, "
            f"reference point: accuracy 0, {esc(_reference(summary))}): {hv['normalized']:.4f}"
        ),
        pareto_png=pngs[0],
        energy_png=pngs[1],
        front_table=_table(front, chosen_id),
        estimate_note=esc(summary["estimate_note"]),
        layers=_layers(summary.get("layers")),
        trials_table=_table(records, chosen_id),
    )


def _template() -> Template:
    """The report page's HTML, CSS and sorting script (package data)."""
    text = resources.files("mcunas").joinpath("templates", "report.html.in").read_text("utf-8")
    return Template(text)
