"""The signal kernels' stored counts and footprint, and the Cortex-M cost made from them."""

from __future__ import annotations

import pytest

from mcunas.boards.catalog import load_board
from mcunas.cost.coefficients import DISPATCH_CYCLES
from mcunas.cost.frontend import CYCLES_PER_INSTRUCTION, estimate_frontend
from mcunas.frontend.config import FrontendConfig
from mcunas.frontend.graph import frontend_model
from mcunas.frontend.kernels.counts import COUNTS_FILE, load_counts, load_footprint
from mcunas.paths import package_path
from tests.frontend.signal_cases import variants


def test_every_searched_front_end_has_its_ops_counted():
    rows = load_counts()
    for cfg in variants():
        ops = {r.op for r in rows if (r.frame_ms, r.hop_ms, r.bands, r.pcan) == (
            cfg.frame_ms, cfg.hop_ms, cfg.mel_bands, cfg.pcan)}  # fmt: skip
        assert len(ops) == (9 if cfg.pcan else 7), cfg
    assert all(r.instructions > 0 for r in rows)
    text = package_path("calibration", COUNTS_FILE).read_text()
    assert "python scripts/signal_counts.py" in text and "QEMU models no cycles" in text


def test_the_footprint_holds_code_and_stack():
    parts = load_footprint()
    assert parts["library"].flash_bytes > 2000 and parts["library"].stack_bytes > 0
    assert parts["tflm_glue"].flash_bytes > 1000


@pytest.mark.parametrize("board", ["nano33ble", "nucleo_l4r5zi", "nucleo_f746zg", "rp2040"])
def test_cortex_m_latency_is_counted_with_a_band_of_at_most_50_percent(board):
    b = load_board(board)
    cfg = FrontendConfig(pcan=True)
    est = estimate_frontend(frontend_model(cfg), b)
    lo, hi = CYCLES_PER_INSTRUCTION[b.core]
    counted = {r.op: r.instructions for r in load_counts() if (r.frame_ms, r.bands, r.pcan) == (
        cfg.frame_ms, cfg.mel_bands, cfg.pcan) and r.hop_ms == cfg.hop_ms}  # fmt: skip
    rfft = next(r for r in est.rows if r.op == "SignalRfft")
    want = counted["SignalRfft"] * (lo + hi) / 2 + DISPATCH_CYCLES["op"]  # + TFLM's dispatch
    assert rfft.cycles == pytest.approx(want)
    assert est.error_pct == pytest.approx(100 * (hi - lo) / (hi + lo)) and est.error_pct <= 50
    assert "emulated Cortex-M4F" in est.source and "models no cycles" in est.source
    if board == "nano33ble":
        assert est.error_pct <= 30


def test_a_front_end_outside_the_file_scales_by_loop_iterations():
    nano = load_board("nano33ble")
    base = estimate_frontend(frontend_model(FrontendConfig()), nano)
    wide = estimate_frontend(frontend_model(FrontendConfig(frame_ms=64.0, hop_ms=32.0)), nano)
    fft = {r.op: r.cycles for r in base.rows}["SignalRfft"]
    assert {r.op: r.cycles for r in wide.rows}["SignalRfft"] > 1.8 * fft  # 1024 points, not 512
    assert "emulated Cortex-M4F" in wide.source


def test_esp32_keeps_the_assumed_cycle_counts():
    est = estimate_frontend(frontend_model(FrontendConfig()), load_board("esp32s3"))
    assert est.error_pct == 100.0 and "assumed" in est.source and est.kernel_ram_bytes == 0
