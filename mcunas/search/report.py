"""What a search leaves behind: ``pareto.json``, ``pareto.png`` and ``report.html``.

Written from one :class:`~mcunas.search.result.SearchResult`; the wording of
figures and estimates comes from :mod:`mcunas.search.summary`.
"""

from __future__ import annotations

import base64
import html
import io
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from mcunas.files import write_file
from mcunas.jsontext import dumps
from mcunas.search.pareto import DEFAULT_OBJECTIVES
from mcunas.search.result import SearchResult
from mcunas.search.store import TrialRecord, TrialStatus
from mcunas.search.summary import energy_mark, estimate_mark, estimate_tag

__all__ = ["plot_energy", "plot_pareto", "write_report"]


def plot_pareto(records: Sequence[TrialRecord], front: Sequence[TrialRecord], title: str) -> bytes:
    """PNG of INT8 accuracy against latency, colour = peak SRAM, front joined by a line."""
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
        for r in fr:
            ax.annotate(
                r.trial_id,
                (r.latency_ms, 100 * (r.int8_accuracy or 0)),
                textcoords="offset points",
                xytext=(5, 4),
                fontsize=8,
            )
        ax.legend(loc="lower right")
        lats = [r.latency_ms for r in ok if r.latency_ms]
        if lats and max(lats) > 20 * min(lats):  # latencies span orders of magnitude
            ax.set_xscale("log")
    else:
        ax.text(0.5, 0.5, "no feasible candidate", ha="center", transform=ax.transAxes)
    est = any(r.estimated for r in ok)
    return _png(fig, ax, "latency (ms)" + (", simulator estimate" if est else ""), title)


def plot_energy(records: Sequence[TrialRecord], front: Sequence[TrialRecord], title: str) -> bytes:
    """PNG of INT8 accuracy against energy per inference, with each estimate's stated band."""
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
        ax.legend(loc="best")
        energies = [r.energy_uj or 0 for r in ok]
        if max(energies) > 20 * min(energies):
            ax.set_xscale("log")
    else:
        ax.text(0.5, 0.5, "no feasible candidate", ha="center", transform=ax.transAxes)
    estimated = any(energy_mark(r) for r in ok)
    return _png(fig, ax, "energy per inference (uJ)" + (", estimate" if estimated else ""), title)


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
    png = plot_pareto(result.trials, result.front, f"{result.board.name}: feasible candidates")
    paths["pareto_png"] = write_file(out_dir / "pareto.png", png)
    energy_png = plot_energy(result.trials, result.front, f"{result.board.name}: energy")
    paths["energy_png"] = write_file(out_dir / "energy.png", energy_png)
    images = [base64.b64encode(p).decode() for p in (png, energy_png)]
    page = _html(summary, result.trials, result.front, images)
    paths["report_html"] = write_file(out_dir / "report.html", page)
    return {k: str(v) for k, v in paths.items()}


NO_TEST = "No test split: the accuracies above are on the validation split."
_CSS = """body{font-family:sans-serif;margin:2em;max-width:1200px}
table{border-collapse:collapse;font-size:13px}td,th{border:1px solid #ccc;padding:3px 6px}
th{background:#eee}td.num{text-align:right}tr.ok{background:#f3fff3}
tr.infeasible{background:#fff8ee}tr.failed{background:#fff0f0}tr.screened{color:#555}
.note{color:#555}"""

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
    ("energy uJ", lambda r: _num(r.energy_uj, 1) + (energy_mark(r) if r.energy_uj else "")),
    ("energy ± %", lambda r: _num(r.energy_error_pct, 0)),
    ("MACs", lambda r: _num(r.macs, 0)),
    ("params", lambda r: _num(r.params, 0)),
    ("source", lambda r: r.source or ""),
    ("train s", lambda r: _num(r.train_s, 1)),
    ("total s", lambda r: _num(r.total_s, 1)),
    ("reason", lambda r: r.reason or ""),
]


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


def _table(records: Sequence[TrialRecord]) -> str:
    head = "".join(f"<th>{html.escape(name)}</th>" for name, _ in _COLUMNS)
    rows = []
    for r in records:
        cells = "".join(f"<td>{html.escape(str(fn(r)))}</td>" for _, fn in _COLUMNS)
        rows.append(f'<tr class="{r.status}">{cells}</tr>')
    return f"<table><tr>{head}</tr>{''.join(rows)}</table>"


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
        f"<td>{'x'.join(str(d) for d in r['output_shape'])}</td>"
        f'<td class="num">{_num(r["macs"], 0)}</td>'
        f'<td class="num">{_num(r["est_ms"], 3)}</td>'
        f'<td class="num">{_num(r["est_error_pct"], 0)}</td>'
        f'<td class="num">{_kb(r["live_bytes"])}</td></tr>'
        for r in rows
    )
    return (
        '<h2>Chosen model, layer by layer</h2><p class="note">Latency per op is the '
        "simulator's estimate (~) with its stated error; live arena is the activation "
        "bytes alive while the op runs.</p>"
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


def _html(
    summary: dict, records: Sequence[TrialRecord], front: Sequence[TrialRecord], pngs: list[str]
) -> str:
    board = summary["board"]
    esc = html.escape
    counts = ", ".join(f"{v} {k}" for k, v in summary["counts"].items())
    best = summary.get("best")
    what = "" if best is None else esc(best.get("description") or best.get("family") or "")
    best_txt = (
        "none (no feasible candidate)"
        if best is None
        else (
            f"trial {esc(best['trial_id'])} ({what})"
            f": INT8 accuracy {_pct(best['int8_accuracy'])}, latency {best['latency_ms']:.2f} ms, "
            f"peak SRAM {best['peak_sram_bytes'] / 1024:.1f} KB{estimate_tag(best)}, "
            f"{_energy(best)}exported to best/"
        )
    )
    return f"""<!doctype html><html><head><meta charset="utf-8">
<title>mcunas search: {esc(board["name"])}</title><style>{_CSS}</style></head><body>
<h1>mcunas search on {esc(board["name"])}</h1>
<p>{esc(board.get("title") or "")}: {board["clock_hz"] / 1e6:g} MHz,
kernels {esc(board["kernels"])}, {board["sram_budget_bytes"] / 1024:.0f} KB SRAM usable,
{board["flash_budget_bytes"] / 1024:.0f} KB flash for the model.
User budgets: {esc(summary["budgets_text"])}.</p>
<p>Strategy {esc(summary["strategy"])}, dataset {esc(summary["dataset"])}, {counts}
({summary["draws"]["trained"]} trained of {summary["draws"]["drawn"]} drawn, cap
{summary["draws"]["cap"]});
wall time {summary["wall_s"]:.0f} s{_resumes(summary)}; training time spent on infeasible
candidates: {summary["infeasible_train_s"]:.1f} s. {esc(summary.get("stopped_reason") or "")}</p>
<p><b>Chosen model:</b> {best_txt}</p>
<p>{esc(summary.get("test_text") or NO_TEST)}</p>
<p>Hypervolume of the feasible front over {esc(_objectives(summary))} (normalised,
reference point: accuracy 0, {esc(_reference(summary))}):
{summary["hypervolume"]["normalized"]:.4f}</p>
<h2>Pareto front</h2><img alt="Pareto plot" src="data:image/png;base64,{pngs[0]}">
<img alt="Accuracy against energy" src="data:image/png;base64,{pngs[1]}">
{_table(front)}
<p class="note">{esc(summary["estimate_note"])}</p>
{_layers(summary.get("layers"))}
<h2>All trials</h2>{_table(records)}
</body></html>
"""
