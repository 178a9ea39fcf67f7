"""scripts/bench_audio.py: both arms share board, budgets, seed and wall time; the table."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from tests.script_helpers import loaded_script


@pytest.fixture(scope="module")
def bench():
    yield from loaded_script("bench_audio")


def _args(tmp_path: Path) -> argparse.Namespace:
    return argparse.Namespace(
        out=tmp_path, board="esp32s3", seed=0, max_trials=3, epochs=2, time_budget=60.0,
        max_latency_ms=100.0, max_sram_kb=160.0,
    )  # fmt: skip


def test_the_arms_differ_only_in_the_searched_flags(bench, tmp_path):
    args = _args(tmp_path)
    fixed = bench.search_cmd(args, tmp_path / "fixed", [])
    searched = bench.search_cmd(args, tmp_path / "searched", ["--frontend-space", "search"])
    assert fixed[: fixed.index("--out")] == searched[: searched.index("--out")]
    assert searched[len(fixed) :] == ["--frontend-space", "search"]
    for flag in ("--time-budget", "--max-latency-ms", "--max-sram-kb", "--frontend"):
        assert fixed[fixed.index(flag) + 1] == searched[searched.index(flag) + 1]
    assert fixed[fixed.index("--dataset") + 1].endswith("data/train")


def test_table_and_reuse_of_an_earlier_wall_time(bench, tmp_path):
    row = {
        "arm": "fixed", "test_predict_accuracy": 0.9, "test_search_int8_accuracy": 0.9,
        "val_int8_accuracy": 0.95, "frontend_ms": 12.8, "model_ms": 50.0, "latency_share": 0.2,
        "frontend_arena_bytes": 7856, "window_bytes": 31680, "frontend_sram_bytes": 39536,
        "model_peak_sram_bytes": 140000,
        "sram_share": 0.22, "wall_s": 901.0,
        "frontend": {"frame_ms": 30.0, "hop_ms": 20.0, "mel_bands": 40, "pcan": False},
    }  # fmt: skip
    text = bench.table([row, {"arm": "searched", "error": "not run"}])
    lines = text.splitlines()
    assert len(lines) == 4 and all(line.count("|") == 12 for line in lines)
    assert "| fixed | 30/20 ms, 40 bands | 90.0% | 90.0% | 95.0% | 12.80 (est.)" in text
    assert "| 38.6 KiB | 136.7 KiB | 22% |" in text
    (tmp_path / "fixed").mkdir()
    (tmp_path / "fixed" / "bench_arm.json").write_text(json.dumps({"wall_s": 901.0}))
    assert bench.previous_wall(tmp_path, "fixed") == 901.0
    assert bench.previous_wall(tmp_path, "searched") is None


def test_shares_take_the_searchs_own_split_when_it_has_one(bench, tmp_path):
    from tests.measure.test_frontend_bench import frontend_best_folder

    best = frontend_best_folder(tmp_path / "run")
    trial = {"latency_ms": 60.0, "peak_sram_bytes": 100_000}
    (best / "best.json").write_text(json.dumps({"trial": trial}))
    alone = bench.shares(best, "esp32s3")  # model-only figures: the estimate is added beside
    assert alone["model_ms"] == 60.0 and alone["model_peak_sram_bytes"] == 100_000
    assert alone["frontend_sram_bytes"] == alone["frontend_arena_bytes"] + 2 * 15840
    split = {"frontend_latency_ms": 10.0, "frontend_sram_bytes": 40_000}
    (best / "best.json").write_text(json.dumps({"trial": {**trial, **split}}))
    costed = bench.shares(best, "esp32s3")  # totals with the split: taken apart
    assert (costed["frontend_ms"], costed["model_ms"]) == (10.0, 50.0)
    assert (costed["frontend_sram_bytes"], costed["model_peak_sram_bytes"]) == (40_000, 60_000)
    assert costed["latency_share"] == pytest.approx(10 / 60)
