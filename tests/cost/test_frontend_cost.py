"""The audio front end costed like the model: every figure a budget checks is front end + model."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from mcunas.boards.catalog import load_board
from mcunas.commands.cli import cli, main
from mcunas.cost.frontend import BOARD_FRONTEND, frontend_cost
from mcunas.cost.profile import with_frontend
from mcunas.figures import Figures
from mcunas.frontend.config import FrontendConfig
from mcunas.frontend.graph import frontend_model
from mcunas.frontend.kernels.counts import load_footprint
from mcunas.search.results.budgets import Budgets
from mcunas.search.results.store import TrialStatus, TrialStore
from mcunas.search.results.summary import cost_split, split_text
from mcunas.search.trial.pipeline import TrialPipeline
from tests.commands.test_search_cli import MODEL, fake_runner_fixture, run
from tests.frontend.test_frontend_features import make_tones
from tests.search.trial.test_pipeline import Runner, fake_train

fake_runner = pytest.fixture(fake_runner_fixture)
FRAMES = 24  # half a second at the default 30 ms frame / 20 ms hop


@pytest.fixture(scope="module")
def front():
    return frontend_cost(frontend_model(FrontendConfig()), FRAMES, load_board("nano33ble"))


def test_the_front_end_adds_to_latency_sram_and_flash(front) -> None:
    board = load_board("nano33ble")
    model = Figures("simulator:test", True, 5.0, 10_000, 60_000, 30_000, latency_error_pct=20.0)
    total = with_frontend(model, front, board)
    assert front.latency_ms == pytest.approx(FRAMES * front.frame_ms) and front.latency_ms > 5
    assert total.latency_ms == pytest.approx(5.0 + front.latency_ms)
    # two interpreters, two arenas: the front end's arena and its buffers add to the peak
    cfg = front.config
    parts = load_footprint().values()  # Cortex-M: the signal kernels' code, static RAM, stack
    kernel_ram = sum(p.ram_bytes + p.stack_bytes for p in parts)
    assert front.buffer_bytes == 2 * (cfg.frame_samples + FRAMES * cfg.mel_bands) + kernel_ram
    assert total.peak_sram_bytes == 60_000 + front.arena_bytes + front.buffer_bytes
    code = sum(p.flash_bytes for p in parts)
    assert total.flash_bytes == 30_000 + len(frontend_model(cfg)) + code
    assert total.arena_bytes == 10_000  # the model's own arena (what best/project allocates)
    # the error is each part's weighted by its share (the front end's: from its CPI range)
    assert front.error_pct <= 50.0
    want = (5.0 * 20.0 + front.latency_ms * front.error_pct) / total.latency_ms
    assert total.latency_error_pct == pytest.approx(want)
    from mcunas.cost.energy import with_energy

    assert total.energy_uj > with_energy(model, board).energy_uj  # energy follows the latency
    split = total.details["cost_split"]
    assert split["model"]["latency_ms"] == 5.0 and split["frontend"]["frames"] == FRAMES
    assert with_frontend(total, front, board) is total  # added once, whoever asks again


def test_the_board_fit_is_checked_on_the_totals(front) -> None:
    board = load_board("nano33ble")
    peak = board.usable_sram_bytes - front.sram_bytes // 2  # fits alone, not with the front end
    model = Figures("simulator:test", True, 5.0, 1000, peak, 30_000)
    assert model.fits
    total = with_frontend(model, front, board)
    assert not total.fits and total.reasons[0].startswith("peak SRAM")


def test_a_board_that_ran_the_front_end_gives_its_time_and_holds_its_memory(front) -> None:
    """A firmware that runs both graphs reports the front end's time beside the model's; its
    peak SRAM and flash already hold the front end: they are split, not added to."""
    board = load_board("nano33ble")
    ran = {"latency_ms": 3.5, "latency_max_ms": 3.6, "arena_bytes": 6000, "frames": FRAMES}
    measured = Figures(
        "board:/dev/ttyACM0", False, 5.0, 1000, 90_000, 300_000, details={BOARD_FRONTEND: ran}
    )
    total = with_frontend(measured, front, board)
    assert total.latency_ms == pytest.approx(8.5)
    assert (total.peak_sram_bytes, total.flash_bytes) == (90_000, 300_000)
    split = total.details["cost_split"]
    assert split["frontend"]["source"].startswith("measured: board:/dev/ttyACM0")
    assert split["frontend"]["latency_error_pct"] is None
    assert split["frontend"]["sram_bytes"] == 6000 + front.buffer_bytes
    assert split["model"]["latency_ms"] == 5.0
    assert split["model"]["peak_sram_bytes"] == 90_000 - 6000 - front.buffer_bytes
    assert total.details[BOARD_FRONTEND] == ran  # the board's own report is kept as it came


def _pipeline(tmp_path: Path, front, budgets: Budgets) -> tuple[TrialPipeline, TrialStore]:
    store = TrialStore.open(tmp_path)
    board = load_board("nano33ble")
    add = (lambda f: with_frontend(f, front, board)) if front is not None else None
    return TrialPipeline(Runner(), store, budgets, tmp_path / "models", frontend=add), store


def test_a_budget_only_the_front_end_breaks_refuses_the_trial(tmp_path: Path, front) -> None:
    budget = Budgets(max_latency_ms=5.0 + front.latency_ms / 2)  # the model alone: 5 ms
    for name, fe in (("without", None), ("with", front)):
        pipeline, store = _pipeline(tmp_path / name, fe, budget)
        pipeline.begin("t1", {"ms": 5.0}, family="stages", origin=None)
        outcome = pipeline.run("t1", lambda: {"ms": 5.0}, fake_train)
        rec = store.get("t1")
        if fe is None:
            assert outcome.status == TrialStatus.OK and rec.frontend_latency_ms is None
            assert cost_split(rec) is None
        else:
            assert outcome.status == rec.status == TrialStatus.INFEASIBLE
            assert "latency" in rec.reason and not rec.train_s  # refused before training
            assert rec.latency_ms == pytest.approx(5.0 + front.latency_ms)
    sram = Budgets(max_sram_kb=(2000 + front.sram_bytes // 2) / 1024)
    pipeline, _ = _pipeline(tmp_path / "sram", front, sram)
    assert pipeline.cost_reasons(Figures("s", True, 1.0, 1000, 2000, 3000)).startswith(
        "estimated peak SRAM"
    )


def test_the_record_keeps_the_split(tmp_path: Path, front) -> None:
    pipeline, store = _pipeline(tmp_path, front, Budgets())
    pipeline.begin("t1", {"ms": 5.0}, family="stages", origin=None)
    assert pipeline.run("t1", lambda: {"ms": 5.0}, fake_train).status == TrialStatus.OK
    rec = store.get("t1")
    split = cost_split(rec)
    assert rec.frontend_latency_ms == pytest.approx(front.latency_ms)
    assert rec.frontend_sram_bytes == front.sram_bytes
    assert rec.frontend_flash_bytes == front.flash_bytes
    model_uj = pytest.approx(rec.energy_uj - rec.frontend_energy_uj)
    assert split["model"] == {"latency_ms": pytest.approx(5.0), "peak_sram_bytes": 2000,
                              "flash_bytes": 3000, "energy_uj": model_uj}  # fmt: skip
    mw = rec.energy_uj / rec.latency_ms  # the estimate: active power x latency, both parts
    assert rec.frontend_energy_uj == pytest.approx(mw * front.latency_ms)
    text = split_text(rec)  # the terminal's and report's split line names each part's uJ
    assert f"{rec.frontend_energy_uj:.1f} uJ (estimate) + model" in text
    assert split["total"]["latency_ms"] == rec.latency_ms
    assert rec.frontend_source.startswith("estimate")


def test_a_search_shows_the_split_everywhere(capsys, tmp_path: Path, fake_runner) -> None:
    make_tones(tmp_path / "data", per_class=6)
    out = tmp_path / "run"
    args = ["--board", "nano33ble", "--out", str(out), "--dataset", str(tmp_path / "data")]
    code, stdout, err = run(capsys, *args, "--frontend", "tflm", "--max-trials", "2")
    assert code == 0, err
    assert "front end" in stdout and "model" in stdout and "= " in stdout
    info = json.loads((out / "best" / "best.json").read_text())
    split = info["cost_split"]
    assert split["total"]["latency_ms"] == pytest.approx(
        split["frontend"]["latency_ms"] + split["model"]["latency_ms"]
    )
    assert info["trial"]["frontend_sram_bytes"] > 0
    assert "emulated Cortex-M4F" in json.dumps(split["frontend"])  # counted, not assumed
    page = (out / "report.html").read_text()
    assert "front-end ms" in page and page.index("SignalWindow") < page.index("FULLY_CONNECTED")
    pareto = json.loads((out / "pareto.json").read_text())
    assert all(row["frontend_flash_bytes"] > 0 for row in pareto["front"])


def test_profile_with_a_front_end_prints_the_total(capsys, tmp_path: Path) -> None:
    path = tmp_path / "frontend.tflite"
    path.write_bytes(frontend_model(FrontendConfig()))
    args = ["profile", str(MODEL), "--board", "nano33ble", "--frontend", str(path)]
    got = CliRunner().invoke(cli, args)
    assert got.exit_code == 0, got.output
    assert "front end" in got.output and "total" in got.output and "SignalRfft" not in got.output
    data = json.loads(CliRunner().invoke(cli, [*args, "--json"]).output)
    fe = data["with_frontend"]
    assert fe["total"]["latency_ms"] == pytest.approx(data["latency_ms"] + fe["latency_ms"])
    assert fe["total"]["peak_sram_bytes"] == data["peak_sram_bytes"] + fe["sram_bytes"]
    with pytest.raises(SystemExit) as info:
        main(["profile", str(MODEL), "--board", "nano33ble", "--frontend", str(MODEL)])
    assert info.value.code == 2 and "not an mcunas audio front end" in capsys.readouterr().err


def test_a_board_that_can_run_the_front_end_is_given_the_trials(tmp_path: Path) -> None:
    from mcunas.data.datasets import load_dataset
    from mcunas.search.trial.runner import KerasRunner

    make_tones(tmp_path / "data", per_class=4)
    data = load_dataset(tmp_path / "data", frontend=FrontendConfig(mel_bands=20))
    ran = {"latency_ms": 3.0}

    class Both:  # a measurer whose firmware runs the front end too
        def measure(self, model_bytes: bytes, frontend: bytes | None = None) -> Figures:
            self.got = frontend
            return Figures("board:x", False, 5.0, 1000, 9000, 3000, details={BOARD_FRONTEND: ran})

    class ModelOnly:  # a measurer whose firmware cannot run it: the model alone
        def measure(self, model_bytes: bytes, frontend: bytes | None = None) -> Figures:
            return Figures("board:y", False, 5.0, 1000, 9000, 3000)

    board = load_board("nano33ble")
    both = Both()
    got = KerasRunner(None, data, board, None, both).measure(b"model", lambda f: True)
    assert both.got == frontend_model(data.frontend) and got.details[BOARD_FRONTEND] == ran
    alone = KerasRunner(None, data, board, None, ModelOnly()).measure(b"model", lambda f: True)
    assert alone.source == "board:y"
