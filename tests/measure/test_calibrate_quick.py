"""Few-shot calibration: `mcunas calibrate --quick` measures three suite models."""

from __future__ import annotations

import statistics

import pytest
from click.testing import CliRunner

from mcunas.boards.catalog import load_board
from mcunas.commands.calibrate import cli
from mcunas.cost.fit.suite import QUICK_MODELS, load_suite
from mcunas.cost.latency import predict_latency
from mcunas.cost.op_features import op_features
from mcunas.errors import UserError
from mcunas.testing.virtual_board.truth import GroundTruth
from mcunas.tflite.reader import read_graph


def test_quick_suite_is_three_models_of_the_small_suite_that_run_every_variant():
    quick = load_suite("quick")
    assert [m.name for m in quick] == list(QUICK_MODELS)
    small = {m.name: m.model_bytes for m in load_suite("small")}
    assert all(small[m.name] == m.model_bytes for m in quick)
    covered = {f.variant for m in quick for f in op_features(read_graph(m.model_bytes))}
    in_small = {f.variant for b in small.values() for f in op_features(read_graph(b))}
    assert in_small <= covered, in_small - covered


@pytest.mark.parametrize(("board_name", "seed"), [("nucleo_f746zg", 0), ("esp32s3", 3)])
def test_quick_calibration_gets_the_rest_of_the_suite_within_10_percent(
    isolated_home, board_name, seed
):
    truth = GroundTruth.from_seed(seed)
    rest = [m for m in load_suite("small") if m.name not in QUICK_MODELS]

    def errors(board_name: str) -> list[float]:
        board = load_board(board_name)
        errs = []
        for m in rest:
            graph = read_graph(m.model_bytes)
            errs.append(abs(predict_latency(graph, board).ms / truth.latency_ms(graph, board) - 1))
        return errs

    before = errors(board_name)
    args = ["--board", board_name, "--virtual", "--quick", "--truth-seed", str(seed)]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    assert "3 models (quick suite)" in result.output and "3-fold" in result.output
    after = errors(f"{board_name}-virtual")
    within = sum(e <= 0.10 for e in after) / len(after)
    assert statistics.median(after) < statistics.median(before) / 4, (before, after)
    assert within >= 0.9 > sum(e <= 0.10 for e in before) / len(before), after
    # the band it states comes from held-out ops of measured variants, not from folds
    # that leave out whole variants, and holds most of the rest of the suite
    fitted = load_board(f"{board_name}-virtual")
    entry = fitted.latency[fitted.kernels]
    assert entry["error_method"].startswith("90% band of leave-one-op-out"), entry
    assert entry["error_pct"] < 15, entry
    bands = [predict_latency(read_graph(m.model_bytes), fitted).error_pct for m in rest]
    held = sum(e * 100 <= b for e, b in zip(after, bands, strict=True)) / len(after)
    assert held >= 0.8, list(zip(after, bands, strict=True))


def test_quick_refuses_another_suite():
    result = CliRunner().invoke(
        cli, ["--board", "esp32s3", "--virtual", "--quick", "--suite", "full"]
    )
    assert isinstance(result.exception, UserError) and "--quick" in str(result.exception)
