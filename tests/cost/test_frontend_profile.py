"""`mcunas profile` of a front-end graph: per-op latency estimates, arena and flash."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from mcunas.boards.catalog import load_board
from mcunas.commands.cli import cli
from mcunas.cost.frontend import estimate_frontend
from mcunas.frontend.config import FrontendConfig
from mcunas.frontend.graph import frontend_model
from mcunas.frontend.kernels.counts import load_footprint


def test_profile_prints_each_signal_op_and_the_arena(tmp_path: Path) -> None:
    path = tmp_path / "frontend.tflite"
    path.write_bytes(frontend_model(FrontendConfig(pcan=True)))
    out = CliRunner().invoke(cli, ["profile", str(path), "--board", "nano33ble"])
    assert out.exit_code == 0, out.output
    assert "ESTIMATES" in out.output and "SignalPCAN" in out.output
    assert "SignalRfft" in out.output and "arena (host planner)" in out.output
    got = CliRunner().invoke(cli, ["profile", str(path), "--board", "nano33ble", "--json"])
    data = json.loads(got.output)
    code = sum(p.flash_bytes for p in load_footprint().values())  # the Cortex-M signal kernels
    assert data["config"]["pcan"] is True and data["flash_bytes"] == path.stat().st_size + code
    assert code > 5000 and "emulated Cortex-M4F" in data["source"]
    assert data["arena_bytes"] > 1000 and len(data["rows"]) == 9


def test_estimate_follows_clock_and_config() -> None:
    board = load_board("nano33ble")
    model = frontend_model(FrontendConfig())
    base = estimate_frontend(model, board)
    slow = estimate_frontend(model, board.at_clock(board.clock_hz / 1e6 / 2))
    assert abs(slow.frame_ms - 2 * base.frame_ms) < 1e-9
    assert "SignalPCAN" not in [r.op for r in base.rows]
    bigger = estimate_frontend(frontend_model(FrontendConfig(frame_ms=64.0, hop_ms=32.0)), board)
    rfft = {r.op: r for r in bigger.rows}["SignalRfft"]
    assert rfft.iterations > {r.op: r for r in base.rows}["SignalRfft"].iterations
    assert base.per_second_ms == pytest.approx(base.frame_ms * 50)  # 20 ms hop: 50 frames a second
