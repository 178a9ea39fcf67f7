"""scripts/bench_hostcal.py: host timing helper, store and fit plumbing (no timing assertions)."""

from __future__ import annotations

import pytest

from mcunas.cost.fit.records import RecordStore
from mcunas.cost.fit.suite import build_suite
from tests.script_helpers import loaded_script


@pytest.fixture(scope="module")
def hostcal():
    yield from loaded_script("bench_hostcal")


@pytest.fixture(scope="module")
def tiny(hostcal):
    wanted = {
        "conv1x1_6x64to128": "single",
        "dw3x3s2_24x16": "single",
        "fc_256to64": "single",
        "block_ds_24x16": "block",
    }
    return [
        hostcal.HostModel(m.name, wanted[m.name], m.model_bytes)
        for m in build_suite("small")
        if m.name in wanted
    ]


def test_time_model_gives_one_minimum_per_batch(hostcal):
    timing = hostcal.time_model(hostcal.reshape_model(), batches=3, batch_ms=1.0)
    assert len(timing.batch_min_ms) == 3
    assert timing.ms > 0 and timing.trimmed_ms > 0 and timing.invokes >= 15
    assert min(timing.batch_min_ms) <= timing.ms <= max(timing.batch_min_ms)
    assert timing.spread_pct >= 0


def test_unloadable_model_is_reported_not_fatal(hostcal, tiny):
    broken = hostcal.HostModel("broken", "single", b"\x00" * 64)
    timings, failed = hostcal.measure_all([broken, tiny[0]], rounds=1, batch_ms=1.0)
    assert set(failed) == {"broken"} and set(timings) == {tiny[0].name}


def test_records_reach_the_store_and_the_fit_runs(hostcal, tiny, tmp_path):
    board = hostcal.host_board()
    timings, failed = hostcal.measure_all(tiny, rounds=2, batch_ms=2.0)
    assert not failed
    store = RecordStore(tmp_path / "predictor.sqlite")
    n_ops = hostcal.store_timings(store, board, tiny, timings, overhead_ms=0.0)
    assert n_ops == 3  # the block gets a whole-model row only
    assert len(store.model_rows("host-cpu")) == 4
    assert {r.op_name for r in store.op_records("host-cpu")} == {
        "CONV_2D",
        "DEPTHWISE_CONV_2D",
        "FULLY_CONNECTED",
    }
    fitted = hostcal.fit_host(board, store, tiny)
    store.close()
    assert fitted["report"].op_rows == 3
    assert {"conv_1x1", "dw_3x3_s2", "fc"} <= set(fitted["report"].variants["reference"])
    assert fitted["fit"]["reference"]["scale"] > 0
    assert len(fitted["cv"]) == 3  # K-fold covers the models with op records only
    preds = hostcal.predictions(board, tiny, timings, fitted)
    assert set(preds["fit"]) == {m.name for m in tiny}
    assert all(v > 0 for key in ("before", "opfit", "fit") for v in preds[key].values())
