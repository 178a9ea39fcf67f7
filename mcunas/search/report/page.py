"""What a search leaves behind: ``pareto.json``, ``pareto.png`` and ``report.html``.

Written from one :class:`~mcunas.search.report.result.SearchResult`; the wording of
figures and estimates comes from :mod:`mcunas.search.results.summary`, the plots from
:mod:`mcunas.search.report.plots` (re-exported here).
"""

from __future__ import annotations

import base64
import html
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from string import Template

from mcunas.files import write_file
from mcunas.jsontext import dumps
from mcunas.search.report.plots import plot_energy, plot_pareto
from mcunas.search.report.result import SearchResult, choice_reason
from mcunas.search.results.pareto import DEFAULT_OBJECTIVES
from mcunas.search.results.store import TrialRecord, record_from_dict
from mcunas.search.results.summary import energy_mark, estimate_mark, estimate_tag, split_text

__all__ = ["chosen_by_text", "plot_energy", "plot_pareto", "write_report"]


def write_report(result: SearchResult) -> dict[str, str]:
    """Write ``pareto.json``, ``pareto.png`` and ``report.html``; return their paths."""
    out_dir = Path(result.out_dir)
    summary = result.overview()
    keys = ("board", "budgets", "hypervolume", "wall_s", "session_wall_s", "sessions")
    pareto = {**{k: summary.get(k) for k in keys}, "front": [r.to_dict() for r in result.front]}
    paths = {"pareto_json": write_file(out_dir / "pareto.json", dumps(pareto), inside=out_dir)}
    name, best = result.board.name, result.best
    png = plot_pareto(result.trials, result.front, f"{name}: feasible candidates", best)
    paths["pareto_png"] = write_file(out_dir / "pareto.png", png, inside=out_dir)
    energy_png = plot_energy(result.trials, result.front, f"{name}: energy", best)
    paths["energy_png"] = write_file(out_dir / "energy.png", energy_png, inside=out_dir)
    images = [base64.b64encode(p).decode() for p in (png, energy_png)]
    why = None if best is None else choice_reason(result.trials, best)
    page = _html(summary, result.trials, result.front, images, why)
    paths["report_html"] = write_file(out_dir / "report.html", page, inside=out_dir)
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
    from mcunas.search.results.pareto import objectives_text

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


def chosen_by_text(summary: dict, why: str | None) -> str:
    """Which rule chose the model: the summary's ``chosen_by`` where it has one."""
    rule = summary.get("chosen_by") or (summary.get("best") or {}).get("chosen_by") or why
    refit = summary.get("refit_text")
    refit_line = f"<p><b>Exported model:</b> {html.escape(refit)}</p>" if refit else ""
    if not rule:
        return refit_line
    return f"<p><b>Chosen by:</b> {html.escape(str(rule))}</p>{refit_line}"


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
        chosen_by=chosen_by_text(summary, why),
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
