"""Few-shot calibration: `mcunas calibrate --quick` measures three suite models."""

from __future__ import annotations

import statistics

from click.testing import CliRunner

from mcunas.boards import load_board
from mcunas.commands.calibrate import cli
from mcunas.errors import UserError
from mcunas.measure.virtual_board.truth import GroundTruth
from mcunas.predict.latency import predict_latency
from mcunas.predict.suite import QUICK_MODELS, load_suite
from mcunas.tflite.reader import read_graph


def test_quick_suite_is_three_blocks_of_the_small_suite():
    quick = load_suite("quick")
    assert [m.name for m in quick] == list(QUICK_MODELS)
    small = {m.name: m.model_bytes for m in load_suite("small")}
    assert all(small[m.name] == m.model_bytes for m in quick)


def test_quick_calibration_moves_the_rest_of_the_suite_towards_the_truth(isolated_home):
    truth = GroundTruth.from_seed(0)
    rest = [m for m in load_suite("small") if m.name not in QUICK_MODELS]

    def median_error(board_name: str) -> float:
        board = load_board(board_name)
        errs = []
        for m in rest:
            graph = read_graph(m.model_bytes)
            errs.append(abs(predict_latency(graph, board).ms / truth.latency_ms(graph, board) - 1))
        return statistics.median(errs) * 100

    before = median_error("nucleo_f746zg")
    result = CliRunner().invoke(cli, ["--board", "nucleo_f746zg", "--virtual", "--quick"])
    assert result.exit_code == 0, result.output
    assert "3 models (quick suite)" in result.output and "3-fold" in result.output
    after = median_error("nucleo_f746zg-virtual")
    assert after < before / 2 and after < 15, (before, after)


def test_quick_refuses_another_suite():
    result = CliRunner().invoke(
        cli, ["--board", "esp32s3", "--virtual", "--quick", "--suite", "full"]
    )
    assert isinstance(result.exception, UserError) and "--quick" in str(result.exception)
