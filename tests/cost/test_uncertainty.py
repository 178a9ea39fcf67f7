"""Per-op uncertainty, the fit's starting profile, and the measurement store's upkeep."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
from click.testing import CliRunner

from mcunas.boards.catalog import load_board
from mcunas.commands.latency_model import cli
from mcunas.cost.coefficients import DEFAULT_CHECKED, DEFAULT_ERRORS
from mcunas.cost.fit.board import FIT_SOURCE, fit_base
from mcunas.cost.fit.records import RecordStore
from mcunas.cost.fit.suite import build_suite
from mcunas.cost.latency import NO_DATA_ERROR_PCT, OVERHEAD_ERROR_PCT, predict_latency
from mcunas.errors import BoardProfileError
from mcunas.tflite.reader import read_graph
from tests.repo import REPO

CAL = REPO / "mcunas" / "calibration"
BASE = (
    'name = "lab"\ncore = "xtensa-lx7"\nclock_hz = 240_000_000\nsram_bytes = 524288\n'
    'flash_bytes = 8388608\nkernels = "esp-nn"\n'
)


@pytest.fixture(scope="module")
def suite():
    return {m.name: read_graph(m.model_bytes) for m in build_suite("small")}


def test_checked_variants_carry_the_measured_error(suite):
    est = predict_latency(suite["block_ds_24x16"], load_board("esp32s3"))
    assert {o.variant for o in est.ops} - {"free"} <= set(DEFAULT_CHECKED["esp-nn-s3"])
    # the board's measured 13.9%, with the interpreter's overhead at its own error
    assert 13.9 < est.error_pct < OVERHEAD_ERROR_PCT


def test_unchecked_variants_are_stated_at_the_no_data_error(suite):
    """No calibration row runs attention: its BATCH_MATMUL gets no measured error."""
    est = predict_latency(suite["block_attn_16x32"], load_board("esp32s3"))
    bmm = [o for o in est.ops if o.variant == "bmm"]
    assert bmm and all(not o.accelerated for o in bmm)
    assert all(o.error_pct == pytest.approx(NO_DATA_ERROR_PCT, abs=0.5) for o in bmm)
    weighted = sum(o.ms * o.error_pct for o in est.ops)
    rest = est.ms - sum(o.ms for o in est.ops)  # the invoke overhead, at the overhead's error
    expected = (weighted + rest * OVERHEAD_ERROR_PCT) / est.ms
    assert est.error_pct == pytest.approx(expected, abs=0.1)
    assert est.error_pct > 40


def test_profile_may_name_the_variants_its_error_was_measured_on(tmp_path, suite):
    path = tmp_path / "lab.toml"
    path.write_text(
        BASE + '\n[latency.reference]\nscale = 5.0\nerror_pct = 6.0\nchecked_variants = ["bmm"]\n'
    )
    est = predict_latency(suite["bmm_16x32"], load_board(str(path)))
    bmm = [o.error_pct for o in est.ops if o.variant == "bmm"]
    assert bmm and all(e == pytest.approx(6.0, abs=0.5) for e in bmm)
    path.write_text(BASE + '\n[latency.reference]\nerror_pct = 6.0\nchecked_variants = "bmm"\n')
    with pytest.raises(BoardProfileError):
        predict_latency(suite["bmm_16x32"], load_board(str(path)))


def test_a_hand_set_scale_without_an_error_is_unchecked(tmp_path, suite):
    path = tmp_path / "lab.toml"
    path.write_text(BASE + "\n[latency.esp-nn]\nscale = 2.0\n")
    est = predict_latency(suite["conv1x1_24x16to32"], load_board(str(path)))
    unchecked = max(DEFAULT_ERRORS["esp-nn-s3"], NO_DATA_ERROR_PCT)
    assert est.error_pct == pytest.approx(unchecked, abs=0.5)


def test_a_fit_never_starts_from_an_earlier_fit(isolated_home, tmp_path):
    builtin = load_board("esp32s3")
    assert fit_base(builtin) is builtin
    folder = isolated_home / "boards"
    folder.mkdir(parents=True)
    fitted = folder / "esp32s3.toml"
    fitted.write_text(
        Path(builtin.path).read_text().split("[latency]")[0]
        + f'[latency]\nsource = "{FIT_SOURCE}: 40 model and 300 op measurements"\n\n'
        "[latency.esp-nn]\nscale = 1.0\nerror_pct = 3.0\nmac = { conv_1x1 = 9.0 }\n"
    )
    user = load_board("esp32s3")
    assert user.path == str(fitted)
    assert fit_base(user).latency == {**builtin.latency, "base": "esp32s3"}
    custom = tmp_path / "lab.toml"
    custom.write_text(BASE + f'\n[latency]\nsource = "{FIT_SOURCE}: 1 model"\n')
    assert fit_base(load_board(str(custom))).latency == {}
    hand = tmp_path / "hand.toml"
    hand.write_text(BASE + '\n[latency]\nsource = "my bench"\n[latency.esp-nn]\nscale = 2.0\n')
    assert fit_base(load_board(str(hand))).latency == load_board(str(hand)).latency


def test_predictor_fit_is_the_same_over_an_earlier_fit(isolated_home):
    runner = CliRunner()
    assert runner.invoke(cli, ["import", str(CAL / "measurements.csv")]).exit_code == 0
    first = runner.invoke(cli, ["fit", "--board", "esp32s3"])
    assert first.exit_code == 0, first.output
    written = isolated_home / "boards" / "esp32s3.toml"
    text = written.read_text()
    second = runner.invoke(cli, ["fit", "--board", "esp32s3"])
    assert second.exit_code == 0, second.output
    assert written.read_text() == text
    entry = tomllib.loads(text)["latency"]["esp-nn"]
    assert entry["error_pct"] == pytest.approx(13.9)
    assert entry["checked_variants"] == list(DEFAULT_CHECKED["esp-nn-s3"])


def test_reimport_replaces_and_forget_deletes(isolated_home, tmp_path):
    runner = CliRunner()
    db = str(tmp_path / "lab.sqlite")
    for _ in range(2):
        result = runner.invoke(cli, ["import", str(CAL / "measurements.csv"), "--store", db])
        assert result.exit_code == 0, result.output
    store = RecordStore(Path(db))
    assert len(store.model_rows()) == 8
    listing = runner.invoke(cli, ["list", "--store", db])
    assert listing.exit_code == 0 and "nucleo_l4r5zi" in listing.output
    result = runner.invoke(cli, ["forget", "--board", "nucleo_l4r5zi", "--yes", "--store", db])
    assert result.exit_code == 0 and "Deleted 4" in result.output, result.output
    assert len(store.model_rows()) == 4
    again = runner.invoke(cli, ["forget", "--board", "nucleo_l4r5zi", "--yes", "--store", db])
    assert again.exit_code != 0 and "No measurements" in str(again.exception)
    aborted = runner.invoke(cli, ["forget", "--board", "esp32s3", "--store", db], input="n\n")
    assert aborted.exit_code != 0 and len(store.model_rows()) == 4


def test_old_stores_with_repeated_rows_are_deduplicated(tmp_path):
    import sqlite3

    path = tmp_path / "old.sqlite"
    store = RecordStore(path)
    store.add_measurement(b"model", "b", "cortex-m4", "cmsis-nn", 1, 2.0, "test")
    store.close()
    db = sqlite3.connect(path)  # what an older mcunas left: the same row twice, no key index
    db.execute("DROP INDEX measurements_key")
    db.execute(
        "INSERT INTO measurements (model_hash, board, core, kernels, clock_hz, source,"
        " latency_ms, label) SELECT model_hash, board, core, kernels, clock_hz, source, 3.0,"
        " label FROM measurements"
    )
    db.commit()
    db.close()
    rows = RecordStore(path).model_rows()
    assert [r.latency_ms for r in rows] == [3.0]  # the newest kept


def test_report_checks_the_plot_folder_before_any_work(tmp_path):
    result = CliRunner().invoke(
        cli, ["report", "--board", "esp32", "--plot", str(tmp_path / "no" / "p.png")]
    )
    assert result.exit_code != 0 and "folder does not exist" in str(result.exception)
    assert "leave-one-out" not in result.output


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ("x,kws_ref_model.tflite,b,cortex-m9,80,cmsis-nn,r,10,s", "unknown core 'cortex-m9'"),
        ("x,kws_ref_model.tflite,b,cortex-m4f,80,tflite,r,10,s", "unknown kernels 'tflite'"),
        ("x,kws_ref_model.tflite,b", "too few columns"),
    ],
)
def test_calibration_csv_rows_name_what_is_wrong(tmp_path, row, message):
    from mcunas.cost.fit.scale import load_calibration
    from mcunas.errors import UserError

    header = (CAL / "measurements.csv").read_text().splitlines()[0]
    path = tmp_path / "m.csv"
    path.write_text(f"{header}\n{row}\n")
    with pytest.raises(UserError, match=message):
        load_calibration(path, models_dir=CAL / "models")


def test_fit_skips_published_boards_without_a_profile(isolated_home):
    runner = CliRunner()
    extra = CAL / "measurements_extra.csv"
    assert runner.invoke(cli, ["import", str(extra)]).exit_code == 0
    result = runner.invoke(cli, ["fit"])
    assert result.exit_code == 0, result.output
    assert "EK-RA6M4 (Renesas R7FA6M4AF3CFB): skipped" in result.output
    assert (isolated_home / "boards" / "rp2040.toml").is_file()
    named = runner.invoke(cli, ["fit", "--board", "EK-RA6M4 (Renesas R7FA6M4AF3CFB)"])
    assert named.exit_code != 0  # asked for by name: the unknown board is an error
