"""Energy per inference covers the front end; ``--measure hybrid`` corrects both parts.

The front end's energy share is always an estimate (its latency x the board's active
power): the firmware times it outside the window a power meter integrates.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mcunas.boards.catalog import load_board
from mcunas.commands import bench
from mcunas.commands.cli import main
from mcunas.cost.energy import board_power
from mcunas.cost.frontend import BOARD_FRONTEND, frontend_cost
from mcunas.cost.profile import with_frontend
from mcunas.figures import Figures
from mcunas.frontend.config import FrontendConfig
from mcunas.frontend.graph import config_of_model, frontend_model
from mcunas.measure.board import BoardMeasurer
from mcunas.testing.virtual_board.figures import fixed_figures
from mcunas.testing.virtual_board.flasher import VirtualProject
from tests.frontend.test_frontend_features import make_tones
from tests.repo import REPO
from tests.vboard_helpers import virtual_board

ROOT = REPO
KWS = (ROOT / "mcunas" / "calibration" / "models" / "kws_ref_model.tflite").read_bytes()
CONFIG = FrontendConfig(mel_bands=10, pcan=True)  # kws_ref_model: (49, 10, 1)
FRONT = frontend_model(CONFIG)
ESP = load_board("esp32s3")
FAST = fixed_figures(latency_ms=3.0, arena_bytes=30_000)


def test_the_estimate_covers_the_front_end_and_the_split_shows_it() -> None:
    board = load_board("nano33ble")
    cost = frontend_cost(frontend_model(FrontendConfig()), 24, board)
    mw = board_power(board).active_mw
    model = Figures("simulator:test", True, 5.0, 10_000, 60_000, 30_000, latency_error_pct=20.0)
    total = with_frontend(model, cost, board)
    assert total.energy_uj == pytest.approx(mw * (5.0 + cost.latency_ms))
    split = total.details["cost_split"]
    assert split["frontend"]["energy_uj"] == pytest.approx(mw * cost.latency_ms)
    assert split["frontend"]["energy_source"].startswith("estimate:")
    assert split["model"]["energy_uj"] == pytest.approx(mw * 5.0)


def test_a_metered_board_run_adds_the_front_ends_estimated_share(tmp_path: Path) -> None:
    with virtual_board(model=KWS, figures=FAST, time_scale=1000) as vb:
        with BoardMeasurer(
            ESP,
            port=vb.port,
            timeout_s=5,
            project_factory=VirtualProject,
            work_dir=tmp_path,
            power="virtual",
        ) as measurer:
            m = measurer.measure(KWS, FRONT)
        model_truth = vb.power.energy_uj(m.latency_ms)
    fe_ms = m.details["frontend"]["latency_ms"]
    split = m.details["energy_split"]
    assert split["model_source"].startswith("meter:virtual")
    assert split["model_uj"] == pytest.approx(model_truth, rel=0.01)  # the meter's window
    assert split["frontend_uj"] == pytest.approx(board_power(ESP).active_mw * fe_ms)
    assert split["frontend_source"].startswith("estimate:")
    assert m.energy_uj == pytest.approx(split["model_uj"] + split["frontend_uj"])
    assert m.energy_source.startswith("meter:virtual") and "+ front end" in m.energy_source
    # the search's total keeps the metered sum and splits it the same way
    total = with_frontend(m, frontend_cost(FRONT, 49, ESP), ESP)
    assert total.energy_uj == m.energy_uj
    shares = total.details["cost_split"]
    assert shares["frontend"]["energy_uj"] == pytest.approx(split["frontend_uj"])
    assert shares["model"]["energy_uj"] == pytest.approx(split["model_uj"])


def test_bench_says_what_the_energy_covers(tmp_path: Path, capsys, monkeypatch) -> None:
    monkeypatch.setattr(bench, "PROJECT_FACTORY", VirtualProject)
    best = tmp_path / "run" / "best"
    best.mkdir(parents=True)
    (best / "model.tflite").write_bytes(KWS)
    (best / "frontend.tflite").write_bytes(FRONT)
    info = {"board": {"name": "esp32s3"}, "frontend": config_of_model(FRONT).to_dict()}
    (best / "best.json").write_text(json.dumps(info))
    with virtual_board(model=KWS, figures=FAST, time_scale=1000) as vb:
        with pytest.raises(SystemExit) as exc:
            main(["bench", str(best), "--board", "esp32s3", "--port", vb.port])
    out = capsys.readouterr().out
    assert exc.value.code == 0, out
    (line,) = [x for x in out.splitlines() if x.strip().startswith("energy")]
    assert "per inference (front end + model) = front end" in line
    front_part = line.split(" = front end ")[1].split(") + model ")[0]
    assert "ESTIMATE" in front_part and "x measured front-end latency" in front_part


class _Worker:
    def simulate(self, model_bytes: bytes) -> Figures:
        return Figures("simulator:test", True, 4.0, 1000, 9000, 3000, latency_error_pct=20.0)


class _Both:  # a board whose firmware runs the front end too
    def measure(self, model_bytes: bytes, frontend: bytes | None = None) -> Figures:
        ran = {"latency_ms": 3.0, "arena_bytes": 5000}
        return Figures("board:x", False, 5.0, 1000, 20_000, 9000, details={BOARD_FRONTEND: ran})


def test_hybrid_corrects_the_estimate_of_both_parts(tmp_path: Path) -> None:
    from mcunas.data.datasets import load_dataset
    from mcunas.search.trial.runner import KerasRunner

    make_tones(tmp_path / "data", per_class=4)
    data = load_dataset(tmp_path / "data", frontend=FrontendConfig(mel_bands=20))
    board = load_board("nano33ble")
    cost = frontend_cost(frontend_model(data.frontend), int(data.input_shape[0]), board)
    runner = KerasRunner(None, data, board, _Worker(), _Both(), hybrid=True)
    # not promising: the simulator's figures, the front end an estimate and labelled so
    skipped = with_frontend(runner.measure(b"model", lambda f: False), cost, board)
    assert skipped.estimated and skipped.latency_ms == pytest.approx(4.0 + cost.latency_ms)
    assert skipped.details["cost_split"]["frontend"]["source"].startswith("estimate")
    # promising: the board measured both; the simulator's total is kept beside it
    measured = with_frontend(runner.measure(b"model", lambda f: True), cost, board)
    assert not measured.estimated and measured.latency_ms == pytest.approx(5.0 + 3.0)
    split = measured.details["cost_split"]
    assert split["frontend"]["latency_ms"] == 3.0
    assert split["frontend"]["source"].startswith("measured: board:x")
    assert measured.sim_latency_ms == pytest.approx(4.0 + cost.latency_ms)
    want = 100.0 * (4.0 + cost.latency_ms - 8.0) / 8.0
    assert measured.latency_error_pct == pytest.approx(want)
