"""The report: the chosen model marked on every plot and table, front labelled, trials sortable."""

from __future__ import annotations

import json
import re
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import pytest

from mcunas.search.report import page as report
from mcunas.search.report import plots as report_plots
from mcunas.search.results.store import TrialRecord, TrialStatus
from tests.commands.test_search_cli import fake_runner_fixture, run

fake_runner = pytest.fixture(fake_runner_fixture)


def _search(capsys, tmp_path: Path) -> tuple[dict, str]:
    out = tmp_path / "s"
    args = ("--board", "esp32s3", "--out", str(out), "--max-trials", "5", "--json")
    code, stdout, err = run(capsys, *args)
    assert code == 0, err
    return json.loads(stdout), (out / "report.html").read_text()


def test_report_marks_the_chosen_model_and_sorts_trials(capsys, tmp_path, fake_runner) -> None:
    summary, page = _search(capsys, tmp_path)
    chosen = summary["best"]["trial_id"]
    # the chosen row is marked in the front's table and in the table of all trials
    marked = re.findall(r'<tr class="ok chosen"><td>([^<]*)</td>', page)
    assert marked == [chosen, chosen]
    assert page.count(' chosen"') == 2
    # both tables are sortable: a head to click, a body the script reorders
    assert page.count('<table class="sortable"><thead>') == 2
    assert "<script>" in page and 'addEventListener("click"' in page
    assert not re.search(r"\$[a-z_{]", page)  # every template field was filled
    if summary.get("chosen_by"):  # the rule that chose, where the summary names it
        assert "Chosen by:" in page


class _Axes:
    """Records what a plot draws, in place of matplotlib's axes."""

    def __init__(self) -> None:
        self.labels: list[str] = []
        self.stars: list[tuple] = []

    def annotate(self, text, xy, **_):
        self.labels.append(text)

    def scatter(self, x, y, marker=None, label=None, **_):
        self.stars.append((x[0], y[0], label))


def _rec(tid: str, acc: float, lat: float, energy: float) -> TrialRecord:
    rec = TrialRecord(trial_id=tid, status=TrialStatus.OK)
    rec.int8_accuracy, rec.latency_ms, rec.energy_uj = acc, lat, energy
    return rec


def test_front_points_are_labelled_and_the_chosen_one_starred() -> None:
    front = [_rec("03", 0.9, 2.0, 40.0), _rec("07", 0.95, 5.0, 90.0)]
    ax = _Axes()
    report_plots.label_trials(ax, front, lambda r: r.latency_ms)
    report_plots.mark_chosen(ax, front[1], front[1].latency_ms)
    assert ax.labels == ["03", "07"]
    assert ax.stars == [(5.0, 95.0, "chosen: trial 07")]
    report_plots.mark_chosen(ax, None, None)  # nothing chosen: nothing drawn
    report_plots.mark_chosen(ax, front[0], None)  # no such figure (no energy): nothing drawn
    assert len(ax.stars) == 1


@pytest.mark.parametrize("plot", [report.plot_pareto, report.plot_energy])
def test_plots_draw_with_and_without_a_chosen_model(plot) -> None:
    front = [_rec("03", 0.9, 2.0, 40.0), _rec("07", 0.95, 5.0, 90.0)]
    for chosen in (front[1], None):
        png = plot(front, front, "title", chosen)
        assert png.startswith(b"\x89PNG")


def test_chosen_by_is_shown_when_the_summary_has_it() -> None:
    assert "Chosen by:</b> front, then tie" in report.chosen_by_text(
        {"chosen_by": "front, then tie"}, None
    )
    assert "seed" in report.chosen_by_text({"best": {"chosen_by": "seed design kept"}}, None)
    assert "faster" in report.chosen_by_text({}, "tied with trial 2; faster")
    assert report.chosen_by_text({}, None) == ""
