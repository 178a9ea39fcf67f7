"""A search that runs out of candidates ends in one line and exit 2, never a traceback."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from mcunas.search.results.budgets import Budgets
from mcunas.search.results.store import TrialStatus
from mcunas.search.tuner.oracles import start_with_reference
from tests.commands.test_search_cli import run
from tests.search.tuner.test_tuner import FakeRunner, make_tuner


def _one_line_exit_2(code: int, err: str) -> str:
    assert code == 2, err
    assert "Traceback" not in err and "internal error" not in err
    return err.strip().splitlines()[-1]


@pytest.mark.parametrize("sram_kb", ["1", "20"])
@pytest.mark.parametrize("seed_arch", ["auto", "kws-dscnn", "vww-mobilenet", "ic-resnet8", "none"])
def test_an_sram_budget_under_the_firmware_is_refused_at_once(
    capsys, tmp_path: Path, sram_kb: str, seed_arch: str
) -> None:
    out = tmp_path / "o"
    code, _, err = run(
        capsys, "--board", "esp32s3", "--max-sram-kb", sram_kb, "--max-trials", "2",
        "--seed-arch", seed_arch, "--out", str(out),
    )  # fmt: skip
    line = _one_line_exit_2(code, err)
    assert f"--max-sram-kb {sram_kb} leaves no room for a model on esp32s3" in line
    assert "firmware alone takes 56 KB" in line and "above 56" in line
    assert not out.exists()  # refused before a folder or TensorFlow


def test_the_supernet_and_a_flash_budget_are_refused_too(capsys, tmp_path: Path) -> None:
    code, _, err = run(
        capsys, "--board", "esp32s3", "--strategy", "supernet", "--max-sram-kb", "20",
        "--out", str(tmp_path / "s"),
    )  # fmt: skip
    assert "leaves no room" in _one_line_exit_2(code, err)
    code, _, err = run(
        capsys, "--board", "nano33ble", "--max-flash-kb", "100", "--out", str(tmp_path / "f")
    )
    assert "firmware alone takes 176 KB of flash" in _one_line_exit_2(code, err)


def test_every_seed_rung_refused_goes_on_with_the_oracle(tmp_path: Path) -> None:
    # the ladder's rungs all miss the 1 ms budget (latency = width / 4): the search draws on
    # past the ladder instead of indexing beyond it, until the draw cap ends it
    ladder = [{"family": "dsconv", "width": w} for w in (64, 48, 32)]
    runner = FakeRunner()
    tuner, store = make_tuner(
        tmp_path, runner, "evolution", max_trials=1, budgets=Budgets(max_latency_ms=1.0),
        max_draws=6, references=ladder,
    )  # fmt: skip
    start_with_reference(tuner.oracle, ladder)
    tuner.search()
    rows = store.trials()
    assert len(rows) == 6 and all(r.status == TrialStatus.INFEASIBLE for r in rows)
    assert [r.hyperparameters["width"] for r in rows[:3]] == [64, 48, 32]
    assert [r.origin for r in rows[:3]] == ["seed"] * 3
    assert tuner.stopped_reason.startswith("draw cap reached") and runner.trained == []


def test_the_message_names_the_smallest_design_against_the_budget(
    capsys, tmp_path: Path, fake_runner
) -> None:
    code, _, err = run(
        capsys, "--board", "esp32s3", "--out", str(tmp_path / "o"), "--max-trials", "2",
        "--max-latency-ms", "0.5",
    )  # fmt: skip
    line = _one_line_exit_2(code, err)
    assert line.startswith("Error: No candidate met the limits (latency <= 0.5 ms; board esp32s3)")
    assert "the smallest latency of any design tried is 2.0 ms (trial" in line
    assert "the budget is 0.5 ms" in line and "--max-latency-ms 3" in line
    assert fake_runner.trained == []


@pytest.fixture(name="fake_runner")
def _fake_runner(monkeypatch):
    from tests.commands.test_search_cli import fake_runner_fixture

    return fake_runner_fixture(monkeypatch)


def _acsf1_shaped(tmp_path: Path) -> Path:
    """Synthetic data shaped like aeon's ACSF1: 100 series of 1460 steps, 10 classes."""
    rng = np.random.default_rng(0)
    y = np.arange(100) % 10
    t = np.linspace(0.0, 1.0, 1460)
    x = np.stack([np.sin(2 * np.pi * 3 * (k + 1) * t) for k in y])
    x = (x + 0.3 * rng.standard_normal(x.shape)).astype("float32")[:, :, None, None]
    data = tmp_path / "acsf1.npz"
    np.savez(data, x_train=x[:60], y_train=y[:60], x_test=x[60:], y_test=y[60:])
    return data


@pytest.mark.slow
def test_a_long_series_under_the_nano_33_ble_budget_ends_in_one_line(
    capsys, tmp_path: Path
) -> None:
    code, _, err = run(
        capsys, "--board", "nano33ble", "--dataset", str(_acsf1_shaped(tmp_path)),
        "--max-latency-ms", "20", "--max-sram-kb", "96", "--max-trials", "1",
        "--max-draws", "8", "--seed-arch", "kws-dscnn", "--out", str(tmp_path / "o"),
    )  # fmt: skip
    line = _one_line_exit_2(code, err)
    # the DS-CNN's seven rungs and one draw past them, all too slow for 20 ms at 64 MHz
    assert "No candidate met the limits (latency <= 20 ms, peak SRAM <= 96 KB" in line
    assert "the smallest latency of any design tried is" in line and "/4 x0.25" in line
    assert "the budget is 20 ms" in line and "--max-latency-ms" in line


@pytest.mark.slow
def test_a_long_series_under_the_nano_33_ble_budget_seeds_series_s4_that_fits(
    capsys, tmp_path: Path
) -> None:
    from mcunas.search.results.store import TrialStore

    out = tmp_path / "o"
    code, _, err = run(
        capsys, "--board", "nano33ble", "--dataset", str(_acsf1_shaped(tmp_path)),
        "--max-latency-ms", "20", "--max-sram-kb", "96", "--max-trials", "1",
        "--epochs", "1", "--finalists", "0", "--out", str(out),
    )  # fmt: skip
    assert code == 0, err
    assert "Seed: series-s4 (--seed-arch auto: a one-channel series of 1460 steps" in err
    store = TrialStore.open(out)
    rows = store.trials()
    store.close()
    ok = [r for r in rows if r.status == TrialStatus.OK]
    assert len(ok) == 1 and ok[0].origin == "seed"
    assert ok[0].latency_ms <= 20 and ok[0].peak_sram_bytes <= 96 * 1024
    # the rungs refused before it were the larger variants of the same seed, costed only
    assert all(r.origin == "seed" for r in rows)
