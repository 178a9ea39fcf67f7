"""mcunas calibrate: the suite, measuring it, the fit, and recovering a hidden ground truth."""

from __future__ import annotations

import json
import tomllib

import numpy as np
import pytest
from click.testing import CliRunner

from bench.calibrate_check import check_models
from mcunas.boards.catalog import load_board
from mcunas.commands.calibrate import cli
from mcunas.cost.fit import suite as suite_mod
from mcunas.cost.fit.records import RecordStore
from mcunas.cost.fit.suite import build_model, build_suite, load_suite
from mcunas.cost.latency import predict_latency
from mcunas.cost.op_features import op_features
from mcunas.errors import CandidateError, UserError
from mcunas.figures import Figures, OpTiming
from mcunas.measure.calibrate import calibrate
from mcunas.measure.opener import open_measurer
from mcunas.testing.virtual_board.truth import GroundTruth
from mcunas.tflite.reader import read_graph
from mcunas.tflite.runtime import create_interpreter
from tests.repo import REPO

CAL_MODELS = REPO / "mcunas" / "calibration" / "models"
COVERED = {
    "conv_1x1",
    "conv_kxk",
    "conv_shallow",
    "dw_3x3_s1",
    "dw_3x3_s2",
    "dw_kxk",
    "dw_mult",
    "fc",
    "bmm",
    "softmax",
    "add",
    "mul",
    "mean",
    "transpose",
    "pool_max",
    "pool_avg",
}


def _dscnn(n, x):  # noqa: ANN001, ANN202 - a KWS-like DS-CNN, not in the suite
    x = n.conv(x, 40, 3, 2)
    for _ in range(3):
        x = n.conv(n.dwconv(x, 3), 40, 1)
    return n.softmax(
        n.fc(
            n.op(
                "RESHAPE",
                [n.mean(x), n.const_i32([1, 40])],
                [1, 40],
                "ReshapeOptions",
                newShape=[1, 40],
            ),
            12,
        )
    )


def _mbnet(n, x):  # noqa: ANN001, ANN202 - inverted residuals at 40x40x3
    x = n.dwconv(n.conv(x, 24, 3, 2), 3, 2)
    y = n.conv(n.dwconv(n.conv(x, 72, 1), 5), 24, 1, relu=False)
    return n.pool(n.binary("ADD", x, y), "AVERAGE_POOL_2D", 10, 10)


def _transformer(n, x):  # noqa: ANN001, ANN202 - one attention block, 24 tokens x 48
    q = n.fc(x, 48)
    att = n.bmm(n.softmax(n.bmm(q, x)), n.transpose(x))
    y = n.binary("ADD", x, n.fc(att, 48))
    return n.fc(n.binary("MUL", y, y), 48)


HELD_OUT = [
    ("dscnn_50x10", [1, 50, 10, 1], _dscnn),
    ("mbnet_40", [1, 40, 40, 3], _mbnet),
    ("transformer_24x48", [1, 24, 48], _transformer),
]


def held_out_models() -> list[tuple[str, bytes]]:
    """(name, .tflite bytes): the published calibration models and models no suite holds."""
    models = [(p.name, p.read_bytes()) for p in sorted(CAL_MODELS.glob("*.tflite"))]
    return models + [(name, build_model(name, shape, r)) for name, shape, r in HELD_OUT]


def _within_10(rows: list[tuple[str, float, float]]) -> float:
    return sum(abs(p / t - 1) <= 0.10 for _, p, t in rows) / len(rows)


def test_suite_covers_every_variant_and_runs_on_tflm():
    suite = build_suite("small")
    counts: dict[str, set[str]] = {}
    for m in suite:
        graph = read_graph(m.model_bytes)
        for feat in op_features(graph):
            counts.setdefault(feat.variant, set()).add(m.name)
        interp, log = create_interpreter(m.model_bytes, 300_000)
        assert interp is not None, f"{m.name}: {log[-300:]}"
        interp.set_input(np.ones(graph.inputs[0].shape, np.int8), 0)
        interp.invoke()
    assert all(len(counts.get(v, ())) >= 2 for v in COVERED), counts
    assert len(build_suite("full")) > len(suite) >= 35
    assert {m.name for m in suite}.isdisjoint(name for name, _, _ in HELD_OUT)


def test_suite_is_cached_per_version(monkeypatch):
    first = load_suite("small")
    monkeypatch.setattr(suite_mod, "build_suite", lambda size: pytest.fail("rebuilt"))
    again = load_suite("small")
    assert [m.model_bytes for m in again] == [m.model_bytes for m in first]


def test_ground_truth_is_seeded_and_differs_from_the_predictor():
    board, graph = load_board("esp32s3"), read_graph(CAL_MODELS / "kws_ref_model.tflite")
    a, b = GroundTruth.from_seed(0), GroundTruth.from_seed(1)
    assert a.latency_ms(graph, board) == GroundTruth.from_seed(0).latency_ms(graph, board)
    assert a.latency_ms(graph, board) != pytest.approx(b.latency_ms(graph, board), rel=0.01)
    assert all(1.2 < max(f, 1 / f) < 1.85 for f in a.variant_factor.values())


def test_virtual_calibration_recovers_the_ground_truth(isolated_home):
    """Held-out models (not in the suite) within 10% after calibration, not before."""
    board = load_board("esp32s3")
    truth = GroundTruth.from_seed(0)
    before = check_models(board, truth, held_out_models())
    result = CliRunner().invoke(cli, ["--board", "esp32s3", "--virtual", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert all(m["ok"] and m["ops"] >= 1 for m in data["models"])
    # --virtual writes its own profile and leaves the real board's alone
    assert not (isolated_home / "boards" / "esp32s3.toml").exists()
    assert load_board("esp32s3").builtin
    profile = isolated_home / "boards" / "esp32s3-virtual.toml"
    fitted = tomllib.loads(profile.read_text())
    assert fitted["name"] == "esp32s3-virtual"
    entry = fitted["latency"]["esp-nn"]
    # the stated error is a 90% band of the k-fold errors, not their median
    assert entry["error_pct"] > data["after"]["median_abs_pct"]
    assert entry["error_method"].startswith("90% band of k-fold cross-validation")
    after = check_models(load_board("esp32s3-virtual"), truth, held_out_models())
    assert _within_10(before) < 0.5, before
    assert _within_10(after) >= 0.9, after
    bands = [
        predict_latency(read_graph(data_), load_board("esp32s3-virtual")).error_pct
        for _, data_ in held_out_models()
    ]
    held = [abs(p / t - 1) * 100 <= b for (_, p, t), b in zip(after, bands, strict=True)]
    assert sum(held) / len(held) >= 0.85, list(zip(after, bands, strict=True))
    store = RecordStore()
    assert len(store.model_rows("esp32s3-virtual")) == len(data["models"])
    assert len(store.op_records("esp32s3-virtual")) >= len(data["models"])
    # the copy says what it is, is never auto-detected as the real board, and a later
    # `latency-model fit` (same store, from the same built-in base) writes the same profile
    assert "virtual test device" in fitted["title"] and fitted["serial"]["hwids"] == []
    assert fitted["latency"]["base"] == "esp32s3"
    text = profile.read_text()
    from mcunas.commands.latency_model import cli as model_cli

    again = CliRunner().invoke(model_cli, ["fit", "--board", "esp32s3-virtual"])
    assert again.exit_code == 0, again.output
    assert profile.read_text() == text
    from mcunas.commands.boards import cli as boards_cli

    shown = CliRunner().invoke(boards_cli, ["show", "esp32s3-virtual"]).output
    assert "esp-nn          scale" in shown and "k-fold cross-validation" in shown
    # the report predicts each suite model from per-op tables fitted without it,
    # not from the profile's tables (fitted on all of them)
    from mcunas.cost.fit.board import board_loo, report_loo
    from mcunas.cost.fit.scale import cached_graph

    board, rows, ops = (
        load_board("esp32s3-virtual"),
        store.model_rows("esp32s3-virtual"),
        store.op_records("esp32s3-virtual"),
    )
    honest = report_loo(board, rows, ops, lambda k: cached_graph(store.model_path(k)))
    in_sample = board_loo(board, rows)
    assert len(honest) == len(rows) == len(in_sample)

    # every variant is in at least two suite models, so no held-out model loses its
    # variant's cost entirely; each is predicted by a fit without it, not as in-sample
    mine = {r.row.id: r.predicted_ms for r in in_sample}
    moved = [abs(r.predicted_ms / mine[r.row.id] - 1) > 1e-6 for r in honest]
    assert sum(moved) >= 0.9 * len(moved) and max(abs(r.error_pct) for r in honest) > 10
    report = CliRunner().invoke(model_cli, ["report", "--board", "esp32s3-virtual"])
    assert report.exit_code == 0 and "per-op tables fitted without each model" in report.output


class _FlakyMeasurer:
    """Fails one model, returns simulator-like figures for the rest."""

    name = "fake"

    def __init__(self, fail: bytes) -> None:
        self.fail = fail

    def measure(self, model_bytes: bytes) -> Figures:
        if model_bytes == self.fail:
            raise CandidateError("arena_too_small: AllocateTensors failed")
        graph = read_graph(model_bytes)
        ops = tuple(OpTiming(op.index, op.name, 0.01 + op.macs * 1e-6) for op in graph.ops)
        return Figures(
            "board:fake", False, sum(o.ms for o in ops) + 0.05, 1000, 2000, 3000, ops=ops
        )


def test_failed_model_is_recorded_and_skipped(isolated_home):
    board = load_board("nucleo_f746zg")
    suite = build_suite("small")[:12]
    result = calibrate(board, _FlakyMeasurer(suite[3].model_bytes), suite, RecordStore())
    failed = [o for o in result.outcomes if not o.ok]
    assert [o.name for o in failed] == [suite[3].name]
    assert "arena_too_small" in failed[0].error
    assert result.before["n"] == 11 and result.profile_path.is_file()


def test_rack_of_virtual_boards_measures_in_parallel(isolated_home, tmp_path):
    from mcunas.measure.rack import RackMeasurer
    from mcunas.testing.virtual_board.device import VirtualBoard
    from mcunas.testing.virtual_board.flasher import VirtualProject
    from mcunas.testing.virtual_board.truth import truth_figures

    board = load_board("esp32s3")
    suite = build_suite("small")[:8]
    vbs = [
        VirtualBoard(board, None, figures=truth_figures(0), runs=3, time_scale=1000)
        for _ in range(2)
    ]
    ports = [vb.start() for vb in vbs]
    try:
        rack = tmp_path / "rack.toml"
        rack.write_text("".join(f'[[board]]\nprofile = "esp32s3"\nport = "{p}"\n' for p in ports))
        with RackMeasurer(
            board, rack=rack, project_factory=VirtualProject, work_dir=tmp_path / "w"
        ) as measurer:
            result = calibrate(board, measurer, suite, RecordStore(), source="rack-test")
    finally:
        for vb in vbs:
            vb.stop()
    assert all(o.ok for o in result.outcomes)
    assert sum(vb.runs_served for vb in vbs) == len(suite)


def test_cli_rejects_conflicting_targets():
    result = CliRunner().invoke(cli, ["--board", "esp32s3", "--virtual", "--port", "/dev/x"])
    assert isinstance(result.exception, UserError) and "--virtual" in str(result.exception)


def test_an_unfitted_requantization_is_written_as_the_fit_used_it(isolated_home):
    """One MAC variant on a path: its requantization is not fitted, and the table the
    fit writes must carry the value the fit assumed (not one rescaled afterwards)."""
    from mcunas.cost.fit.kernels import fit_op_tables
    from mcunas.cost.fit.store import store_graphs
    from mcunas.cost.latency import resolve

    board = load_board("esp32s3")
    suite = [m for m in load_suite("small") if m.name.startswith(("bmm_", "transpose_"))]
    store = RecordStore()
    with open_measurer("virtual", board, truth_seed=3) as measurer:
        calibrate(board, measurer, suite, store, write=False)
    ops = store.op_records(board.name)
    tables, report = fit_op_tables(board, ops, store.model_rows(board.name), store_graphs(store))
    assert report.variants["reference"] == ["bmm", "transpose"]  # one MAC variant
    prior = resolve(board, "reference")
    assert tables["reference"]["requant"] == pytest.approx(
        prior.table.requant * prior.scale, abs=0.001
    )


def test_cv_band_is_a_90_percent_interval_never_below_the_median():
    from mcunas.cost.fit.error import cv_band

    assert cv_band([(1.0, 1.0)] * 4) == 0.0
    spread = [(1.1, 1.0), (0.9, 1.0), (1.02, 1.0), (0.98, 1.0), (1.3, 1.0)]
    band = cv_band(spread)
    assert 20 < band < 40  # exp(1.645 * rms log error) - 1
    assert cv_band([(2.0, 1.0)]) > 100.0  # one fold 2x off: wider than its own error


def test_leave_one_op_out_holds_out_only_variants_measured_twice(isolated_home):
    from mcunas.cost.fit.kernels import op_cross_validate
    from mcunas.cost.fit.store import store_graphs

    board = load_board("nucleo_f746zg")
    names = ("conv1x1_24x16to32", "conv1x1_12x32to64", "fc_256to64")  # fc measured once
    suite = [m for m in load_suite("small") if m.name in names]
    store = RecordStore()
    with open_measurer("virtual", board, truth_seed=0) as measurer:
        calibrate(board, measurer, suite, store, write=False)
    pairs = op_cross_validate(board, store.op_records(board.name), store_graphs(store))
    assert len(pairs) == 2  # the two 1x1 convolutions; the lone FC is not held out
    assert all(abs(p / m - 1) < 0.5 for p, m in pairs)
