from __future__ import annotations

import dataclasses
import tomllib
from pathlib import Path

import pytest
from click.testing import CliRunner

from mcunas.boards.catalog import load_board
from mcunas.commands.latency_model import cli
from mcunas.cost.fit.board import fit_op_costs
from mcunas.cost.fit.records import RecordStore
from mcunas.cost.latency import predict_latency
from mcunas.cost.op_features import op_features
from mcunas.errors import UserError
from mcunas.tflite.reader import read_graph
from tests.repo import REPO

CAL = REPO / "mcunas" / "calibration"


def test_import_fit_report_round_trip(isolated_home, tmp_path):
    runner = CliRunner()
    result = runner.invoke(cli, ["import", str(CAL / "measurements.csv")])
    assert result.exit_code == 0, result.output
    assert "Imported 8" in result.output
    result = runner.invoke(cli, ["fit", "--board", "esp32s3"])
    assert result.exit_code == 0, result.output
    written = isolated_home / "boards" / "esp32s3.toml"
    data = tomllib.loads(written.read_text())
    assert data["name"] == "esp32s3" and data["kernels"] == "esp-nn"
    assert data["latency"]["esp-nn"]["error_pct"] == pytest.approx(13.9)
    assert "esp32s3: esp-nn: scale " in result.output and "error 13.9%" in result.output
    board = load_board("esp32s3")  # the user folder wins over the built-in profile
    assert board.path == str(written)
    plot = tmp_path / "p.png"
    result = runner.invoke(cli, ["report", "--board", "nucleo_l4r5zi", "--plot", str(plot)])
    assert result.exit_code == 0, result.output
    assert "median |error| 12.8%" in result.output
    assert plot.stat().st_size > 1000


def test_per_op_fit_recovers_variant_costs(tmp_path):
    board = load_board("nucleo_f746zg")
    model = (CAL / "models" / "kws_ref_model.tflite").read_bytes()
    graph = read_graph(model)
    # a board whose 1x1 convolutions cost 3x the current table: per-op truth
    truth = dataclasses.replace(
        board, latency={"cmsis-nn": {"scale": 1.0, "mac": {"conv_1x1": 2.25}}}
    )
    est = predict_latency(graph, truth)
    store = RecordStore(tmp_path / "db.sqlite")
    key = store.add_measurement(
        model,
        board.name,
        board.core,
        "cmsis-nn",
        board.clock_hz,
        est.ms,
        "virtual:test",
        ops=[(o.index, o.op, o.ms) for o in est.ops],
    )
    records = store.op_records(board.name)
    assert len(records) == len(graph.ops)
    start = dataclasses.replace(board, latency={"cmsis-nn": {"scale": 1.0}})
    costs, errors = fit_op_costs(start, records, lambda k: read_graph(store.model_path(k)))
    assert costs["conv_1x1"] == pytest.approx(2.25, rel=1e-6)
    assert errors["conv_1x1"] == pytest.approx(0.0, abs=0.1)
    assert key in {r.model_hash for r in records}
    assert {f.variant for f in op_features(graph)} - {"free"} <= set(costs)


def test_store_rejects_bad_input(tmp_path):
    store = RecordStore(tmp_path / "db.sqlite")
    with pytest.raises(UserError):
        store.add_measurement(b"x", "b", "cortex-m4", "cmsis-nn", 1, -1.0, "test")
    bad = tmp_path / "bad.csv"
    bad.write_text("nothing\n")
    with pytest.raises(UserError):
        store.import_csv(bad)


def test_fit_with_empty_store_is_one_clear_error():
    result = CliRunner().invoke(cli, ["fit"])
    assert result.exit_code != 0
    assert isinstance(result.exception, UserError)


_HEADER = "id,model_file,board,core,clock_mhz,kernels,runtime,latency_ms,source\n"
_ROW = "r1,ad01_int8.tflite,,cortex-m4f,120,cmsis-nn,,10.5,me\n"


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (_ROW.replace("10.5", "nan"), r"csv:2: latency_ms = nan is outside \(0, 3.6e\+06\]"),
        (_ROW.replace("10.5", "-3"), r"csv:2: latency_ms = -3 is outside"),
        (_ROW.replace("10.5", "1e308"), r"csv:2: latency_ms = 1e308 is outside"),
        (_ROW.replace(",120,", ",0,"), r"csv:2: clock_mhz = 0 is outside"),
        (_ROW.replace("cmsis-nn", "esp-nn"), r"csv:2: kernels esp-nn .* cannot run on cortex-m4f"),
        (_ROW + _ROW, r"csv:3: id 'r1' is used again \(first on line 2\)"),
    ],
)
def test_import_refuses_bad_rows_and_stores_nothing(isolated_home, tmp_path, body, message):
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "ad01_int8.tflite").write_bytes(
        (CAL / "models" / "ad01_int8.tflite").read_bytes()
    )
    csv_path = tmp_path / "m.csv"
    csv_path.write_text(_HEADER + body)
    store = RecordStore(tmp_path / "s.sqlite")
    with pytest.raises(UserError, match=message):
        store.import_csv(csv_path)
    assert store.summary() == []


def test_a_copy_of_a_board_does_not_take_its_published_rows(isolated_home):
    from mcunas.cost.fit.records import board_for_row
    from mcunas.cost.fit.scale import load_calibration

    folder = isolated_home / "boards"
    folder.mkdir(parents=True)
    text = Path(load_board("esp32s3").path).read_text()
    (folder / "esp32s3-virtual.toml").write_text(
        text.replace('name = "esp32s3"', 'name = "esp32s3-virtual"')
    )
    (folder / "broken.toml").write_text("name = 'broken'\n")
    rows = [r for r in load_calibration() if r.id.startswith("esp32s3-")]
    assert rows and {board_for_row(r) for r in rows} == {"esp32s3"}


@pytest.mark.parametrize(
    "command",
    [["list"], ["fit"], ["forget", "--board", "esp32", "--yes"], ["report", "--board", "esp32s3"]],
)
def test_a_mistyped_store_is_an_error_and_is_not_created(isolated_home, tmp_path, command):
    missing = tmp_path / "no" / "such.sqlite"
    result = CliRunner().invoke(cli, [*command, "--store", str(missing)])
    assert result.exit_code != 0 and "No measurements store at" in str(result.exception)
    assert not missing.parent.exists()


def test_list_and_report_without_any_store_create_none(isolated_home):
    runner = CliRunner()
    result = runner.invoke(cli, ["list"])
    assert result.exit_code == 0 and "No measurements yet" in result.output
    result = runner.invoke(cli, ["report", "--board", "esp32s3"])  # the published rows
    assert result.exit_code == 0 and "leave-one-out on 2" in result.output
    assert not (isolated_home / "predictor.sqlite").exists()


def test_a_csv_with_a_byte_order_mark_imports(isolated_home, tmp_path):
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "ad01_int8.tflite").write_bytes(
        (CAL / "models" / "ad01_int8.tflite").read_bytes()
    )
    csv_path = tmp_path / "m.csv"
    csv_path.write_bytes(b"\xef\xbb\xbf" + (_HEADER + _ROW).encode())  # as spreadsheets save it
    store = RecordStore(tmp_path / "s.sqlite")
    store.import_csv(csv_path)
    assert store.summary()


def test_a_search_store_is_not_taken_for_a_measurements_store(isolated_home, tmp_path, capsys):
    import sqlite3

    from mcunas.commands.cli import main
    from mcunas.search.results.store import TrialStore

    TrialStore.open(tmp_path).close()
    db = tmp_path / "trials.sqlite"
    before = sorted(sqlite3.connect(db).execute("SELECT name FROM sqlite_master"))
    with pytest.raises(SystemExit) as info:
        main(["latency-model", "list", "--store", str(db)])
    err = capsys.readouterr().err
    assert info.value.code == 2 and "not an mcunas measurements store" in err
    assert sorted(sqlite3.connect(db).execute("SELECT name FROM sqlite_master")) == before


def test_the_former_name_still_runs_with_a_notice_and_is_hidden(isolated_home, capsys):
    from mcunas.commands.cli import main

    with pytest.raises(SystemExit) as info:
        main(["predictor", "list"])
    out, err = capsys.readouterr()
    assert info.value.code == 0 and "No measurements yet" in out
    assert err.strip() == "Warning: `mcunas predictor` is deprecated; use `mcunas latency-model`."
    with pytest.raises(SystemExit):
        main(["--help"])
    listed = capsys.readouterr().out
    assert "latency-model" in listed and "predictor" not in listed


def test_a_fit_never_writes_an_absurd_coefficient(isolated_home):
    from mcunas.cost.fit.board import write_user_board
    from mcunas.errors import BoardProfileError

    board = load_board("esp32s3")
    for bad in (4.8e306, float("nan"), -1.0):
        with pytest.raises(BoardProfileError, match="scale must be a positive number"):
            write_user_board(board, {"esp-nn": {"scale": bad}})
    assert not (isolated_home / "boards" / "esp32s3.toml").exists()


def test_fit_store_returns_a_typed_fit(isolated_home):
    from mcunas.cost.fit.store import LibraryFit, fit_store

    store = RecordStore()
    store.import_csv(CAL / "measurements.csv")
    fitted = fit_store(load_board("esp32s3"), store, folds=3)
    assert fitted.board == "esp32s3" and fitted.table["source"].startswith("mcunas predictor fit")
    esp = next(lib for lib in fitted.libraries if lib.kernels == "esp-nn")
    assert esp.error_pct == pytest.approx(13.9) and esp.scale and esp.scale > 0
    assert fitted.cv == ()  # the K-fold fits per-op tables: these rows have none
    assert LibraryFit("x", None, None).text() == "x: scale -, error not measured"
    nobody = dataclasses.replace(load_board("esp32s3"), name="nobody")
    with pytest.raises(UserError, match="No measurements for board 'nobody'"):
        fit_store(nobody, store)
