"""The bench package (bench/): what the benchmarks compute, checked on the shipped data."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from bench.calibrate_check import check_models
from bench.core_fit import core_cycle_ratios, load_runs
from bench.latency_error import coverage, leave_one_board_out, path_bands
from bench.rescore_check import rescored_stand_ins
from mcunas.boards.catalog import load_board
from mcunas.cost.fit.scale import load_calibration, path_band
from mcunas.search.results.store import TrialRecord, TrialStatus


def test_core_ratios_anchor_on_the_m4f_and_order_the_cores() -> None:
    ratios = core_cycle_ratios(load_runs())
    assert ratios["cortex-m4f"] == pytest.approx(1.0)
    assert 0 < ratios["cortex-m7"] < ratios["cortex-m33"] < 1.0


def test_core_ratios_leave_out_a_core_never_run_beside_the_anchor() -> None:
    runs = [
        {"id": "r1-a", "runtime": "x", "model_file": "m", "core": "cortex-m4f",
         "latency_ms": "10", "clock_mhz": "100"},
        {"id": "r1-b", "runtime": "x", "model_file": "m", "core": "cortex-m7",
         "latency_ms": "5", "clock_mhz": "100"},
        {"id": "r2-c", "runtime": "x", "model_file": "m", "core": "cortex-m33",
         "latency_ms": "5", "clock_mhz": "100"},
    ]  # fmt: skip
    assert core_cycle_ratios(runs) == pytest.approx({"cortex-m4f": 1.0, "cortex-m7": 0.5})


def test_a_board_never_informs_its_own_bare_prediction() -> None:
    rows = load_calibration()
    bare = leave_one_board_out(rows)
    assert [r.row for r in bare] == list(rows)
    for r in bare:
        others = sum(o.path == r.row.path and o.board != r.row.board for o in rows)
        assert r.from_rows == others


def test_path_bands_are_path_band_per_path_and_coverage_counts_rows_inside() -> None:
    bare = leave_one_board_out(load_calibration())
    bands = path_bands(bare)
    paths = {r.row.path for r in bare}
    per_path = {k: v for k, v in bands.items() if "/" not in k}
    assert per_path == {p: path_band(p, bare) for p in paths}
    # a path run on several core families has a band per family, from that family's rows
    assert bands["tflm-ref/cortex"] == path_band("tflm-ref", bare, "cortex")
    assert not any(k.startswith("cmsis-nn-dsp/") for k in bands)  # one family: one band
    assert coverage(bare, [math.inf] * len(bare)) == 1.0
    assert coverage(bare, [-1.0] * len(bare)) == 0.0
    assert math.isnan(coverage([], []))


def test_check_models_pairs_the_prediction_with_the_truth() -> None:
    class Truth:
        def latency_ms(self, graph, board) -> float:
            return 7.0

    board = load_board("esp32s3")
    model = next(iter(sorted(p for p in _calibration_models())))
    (row,) = check_models(board, Truth(), [("m", model.read_bytes())])
    assert row[0] == "m" and row[1] > 0 and row[2] == 7.0


def _calibration_models():
    return (Path(__file__).resolve().parents[2] / "mcunas" / "calibration" / "models").glob(
        "*.tflite"
    )


def _record(tid: str, score: float) -> TrialRecord:
    return TrialRecord(
        trial_id=tid, status=TrialStatus.OK, score=score, int8_accuracy=score, int8_loss=0.9
    )


def test_rescored_stand_ins_carry_each_finalists_mean_in_the_stored_order() -> None:
    records = [_record("1", 0.95), _record("2", 0.90), _record("3", 0.85)]
    runs = {"0": {"accuracy": 0.8, "loss": 0.4}, "1": {"accuracy": 0.9, "loss": 0.6}}
    state = {"finalists": ["2", "1"], "runs": {"1": runs, "2": {"0": {"accuracy": 0.7}}}}
    stand_ins = rescored_stand_ins(records, state)
    assert list(stand_ins) == ["2", "1"]  # "3" was not re-scored
    one = stand_ins["1"]
    assert one.score == one.int8_accuracy == pytest.approx(0.85)
    assert one.int8_loss == pytest.approx(0.5)
    assert stand_ins["2"].score == pytest.approx(0.7) and stand_ins["2"].int8_loss is None
    assert records[0].score == 0.95  # the records themselves are left as they were


def test_nothing_re_scored_gives_no_stand_ins() -> None:
    records = [_record("1", 0.9)]
    assert rescored_stand_ins(records, None) == {} == rescored_stand_ins(records, {})


def test_stating_the_published_setup_never_worsens_the_median_error() -> None:
    from bench.latency_error import check_rows, summary
    from mcunas.tflite.reader import read_graph

    checks = check_rows(leave_one_board_out(load_calibration()), lambda r: read_graph(r.model))
    s = summary(checks)
    assert s["setup_median"] <= s["bare_median"]
    # priors do not move: only fitted effects (an old runtime on the DSP path, TCM) do
    for c in checks:
        if c.row.kernels == "reference" or c.row.off_baseline:
            assert c.setup_error == pytest.approx(c.bare_error)
    # the external-SDRAM row: outside the bare band, inside once its arena is stated
    sdram = next(c for c in checks if c.row.off_baseline)
    assert (
        abs(sdram.bare_error) > sdram.bare_nested and abs(sdram.setup_error) <= sdram.setup_nested
    )
