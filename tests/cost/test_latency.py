from __future__ import annotations

import dataclasses
import statistics
from pathlib import Path

import pytest

from bench.core_fit import core_cycle_ratios, load_runs
from bench.latency_error import leave_one_board_out, path_bands
from mcunas.boards.catalog import load_board
from mcunas.cost.coefficients import (
    CORE_FACTORS,
    DEFAULT_CHECKED,
    DEFAULT_ERRORS,
    DEFAULT_SCALES,
    DISPATCH_CYCLES,
    PRIOR_TABLES,
    family_value,
    path_for,
)
from mcunas.cost.coefficients import core_family as family
from mcunas.cost.fit.scale import (
    CALIBRATION_CSV,
    CALIBRATION_EXTRA_CSV,
    LooResult,
    checked_variants,
    fit_dispatch,
    fit_scales,
    leave_one_out,
    load_calibration,
    path_band,
    predict_row_ms,
    summarize,
)
from mcunas.cost.latency import op_cycles, predict_latency
from mcunas.cost.microbench import load_microbench, microbench_tables
from mcunas.cost.op_features import op_features
from mcunas.errors import BoardProfileError, UserError
from mcunas.tflite.reader import read_graph
from tests.repo import REPO

MODELS = REPO / "mcunas" / "calibration" / "models"


@pytest.fixture(scope="module")
def graphs():
    return {p.stem: read_graph(p) for p in MODELS.glob("*.tflite")}


def test_variants_of_calibration_models(graphs):
    kws = [f.variant for f in op_features(graphs["kws_ref_model"])]
    assert kws[:3] == ["conv_shallow", "dw_3x3_s1", "conv_1x1"]
    assert kws[-4:] == ["pool_avg", "free", "fc", "softmax"]
    person = [f.variant for f in op_features(graphs["person_detect_int8"])]
    assert person[0] == "dw_mult"  # 1 input channel, depth multiplier 8
    assert "dw_3x3_s2" in person
    resnet = [f.variant for f in op_features(graphs["pretrainedResnet_quant"])]
    assert resnet.count("add") == 3 and "conv_kxk" in resnet


def test_microbench_tables_reproduce_the_1x1_convolutions():
    table = microbench_tables()["esp-nn-s3"]
    for call in (c for c in load_microbench() if c.variant == "conv_1x1"):
        modelled = table.mac["conv_1x1"] * call.units + table.requant * call.outputs
        assert modelled == pytest.approx(call.cycles["esp-nn-s3"], rel=0.01)
    ansi = microbench_tables()["esp-nn-ansi"]
    assert ansi.mac["conv_1x1"] > 10 * table.mac["conv_1x1"]  # SIMD vs portable C


def test_default_scales_match_a_fit_of_the_calibration_rows():
    rows = load_calibration()
    scales = fit_scales(rows)
    assert set(scales) == set(DEFAULT_SCALES)
    for path, value in DEFAULT_SCALES.items():
        assert scales[path] == pytest.approx(value, rel=1e-3), path
    assert set(DEFAULT_ERRORS) == set(DEFAULT_SCALES)
    checked = checked_variants(rows)
    assert {p: tuple(v) for p, v in checked.items()} == DEFAULT_CHECKED
    assert "bmm" not in checked["tflm-ref"]  # no calibration row runs a transformer


def test_dsp_core_factors_are_the_published_cross_core_ratios():
    measured = core_cycle_ratios(load_runs())
    dsp = CORE_FACTORS["cmsis-nn-dsp"]
    for core in ("cortex-m33", "cortex-m7"):
        assert dsp[core] == pytest.approx(measured[core], abs=0.005), core
    assert dsp["cortex-m4f"] == measured["cortex-m4f"] == 1.0
    assert dsp["cortex-m7"] < dsp["cortex-m33"] < dsp["cortex-m4f"]


def test_core_cycle_ratios_compare_only_runs_of_one_round_runtime_and_model():
    def run(rid: str, core: str, mhz: float, ms: float, model: str = "m", rt: str = "x") -> dict:
        return {"id": rid, "core": core, "clock_mhz": str(mhz), "latency_ms": str(ms),
                "model_file": model, "runtime": rt}  # fmt: skip

    runs = [
        run("v1-a", "cortex-m4f", 100, 10.0),  # 1.0 M cycles
        run("v1-b", "cortex-m33", 200, 4.0),  # 0.8 M cycles: 0.8
        run("v1-c", "cortex-m4f", 100, 40.0, model="big"),
        run("v1-d", "cortex-m33", 100, 20.0, model="big"),  # 0.5
        run("v1-e", "cortex-m7", 400, 1.0, rt="other"),  # no M4F beside it
        run("v2-f", "cortex-m33", 100, 99.0),  # another round, no M4F in it
    ]
    ratios = core_cycle_ratios(runs)
    assert ratios["cortex-m33"] == pytest.approx((0.8 * 0.5) ** 0.5)
    assert "cortex-m7" not in ratios


def test_builtin_calibration_is_the_shared_rows_then_the_extra_rows():
    shared = load_calibration(CALIBRATION_CSV)
    extra = load_calibration(CALIBRATION_EXTRA_CSV)
    assert len(shared) == 8 and len(extra) == 23
    assert [r.id for r in load_calibration()] == [r.id for r in shared + extra]
    assert {r.core for r in extra} == {
        "riscv32", "cortex-m33", "cortex-m85", "cortex-m0plus", "cortex-m4", "cortex-m4f",
        "cortex-m7", "xtensa-lx6",
    }  # fmt: skip
    assert all(r.source and r.runtime for r in extra)
    assert len({r.id for r in shared + extra}) == 31
    assert {r.id for r in extra if r.memory == "tcm"} == {"hello-teensy41-ref"}
    # a row in external memory checks a stated setup and is fitted on nothing
    assert {r.id for r in extra if r.off_baseline} == {"f767-person-cmsis-sdram"}
    assert {r.id for r in extra if dict(r.setup).get("arena") == "tcm"} == {
        f"ra8d1-{m}-cmsis" for m in ("kws", "vww", "ic", "ad")
    }


def test_leave_one_out_is_out_of_sample():
    rows = load_calibration()
    results = leave_one_out(rows)
    assert len(results) == len(rows) == 31
    # rows whose path has no other row are predicted by the kernel tables alone
    alone = {r.row.id for r in results if r.from_rows == 0}
    assert alone == {"esp32s3-person-espnn", "rp2040-person-cmsis"}
    for r in results:  # each row's fit never sees the row; its own board's rows first
        rest = [x for x in rows if x.id != r.row.id]
        mine = [x for x in rest if x.board == r.row.board and x.path == r.row.path]
        scales = fit_scales(mine or rest)
        invoke = fit_dispatch(mine or rest, scales)
        assert r.predicted_ms == pytest.approx(predict_row_ms(r.row, scales, invoke))
    shared_ids = {r.id for r in load_calibration(CALIBRATION_CSV)}
    shared = summarize([r for r in results if r.row.id in shared_ids])
    # the predictor's goal: a median error under 20% on the published rows
    assert shared["n"] == 8 and 0 < shared["median_abs_pct"] < 20


def test_leave_one_board_out_is_a_bare_profile_and_gives_the_default_errors():
    rows = load_calibration()
    bare = leave_one_board_out(rows)
    for r in bare:  # nothing of the row's own board
        others = [x for x in rows if x.board != r.row.board]
        scales = fit_scales(others)
        invoke = fit_dispatch(others, scales)
        assert r.predicted_ms == pytest.approx(predict_row_ms(r.row, scales, invoke))
    assert path_bands(bare) == pytest.approx(DEFAULT_ERRORS, abs=0.1)
    stated = [family_value(DEFAULT_ERRORS, r.row.path, r.row.core, 50.0) for r in bare]
    inside = sum(abs(r.error_pct) <= b + 0.05 for r, b in zip(bare, stated, strict=True))
    assert inside / len(bare) >= 0.9
    # nested: each row's band from the other boards alone (per core family; a kind no
    # other board measured states what kinds seen on one board met). The one miss is the
    # row whose arena was in external SDRAM: a bare profile does not say so
    nested = [
        path_band(r.row.path, [o for o in bare if o.row.board != r.row.board], family(r.row.core))
        for r in bare
    ]
    held = [abs(r.error_pct) <= b for r, b in zip(bare, nested, strict=True)]
    assert sum(held) / len(bare) >= 0.9
    assert all(ok or r.row.off_baseline for r, ok in zip(bare, held, strict=True))
    # TFLM 2020 (L4R5) vs 2021 on (RA6M4, F413ZH): with the cores' own speeds taken out,
    # the older runtime is still ~1.47x slower per cycle, so the recent fit under-predicts it
    l4r5 = [r.error_pct for r in bare if r.row.id.startswith("l4r5")]
    assert all(e < -10 for e in l4r5) and statistics.median(l4r5) < -25


def test_a_path_seen_on_one_board_states_its_librarys_spread():
    row = load_calibration()[0]

    def result(board: str, path: str, ratio: float) -> LooResult:
        fake = dataclasses.replace(row, board=board, kernels=path.split("-nn")[0] + "-nn")
        core = "cortex-m0plus" if path == "cmsis-nn-c" else "cortex-m4f"
        fake = dataclasses.replace(fake, core=core)
        return LooResult(fake, fake.latency_ms * ratio, 1.0, 1)

    lucky = [result("pico", "cmsis-nn-c", 1.02)]
    spread = [result(f"m4-{i}", "cmsis-nn-dsp", r) for i, r in enumerate((1.6, 0.6, 1.4, 0.7))]
    assert [r.row.path for r in lucky + spread[:1]] == ["cmsis-nn-c", "cmsis-nn-dsp"]
    alone = path_band("cmsis-nn-c", lucky)
    pooled = path_band("cmsis-nn-c", lucky + spread)
    assert alone < 4 and pooled > 40  # its own 2% alone; the library's spread once pooled
    # a board with many rows counts once: repeating its rows does not narrow the band
    repeated = spread + spread[:1] * 5
    assert path_band("cmsis-nn-dsp", repeated) == pytest.approx(path_band("cmsis-nn-dsp", spread))
    # a symmetric band in %: exp(z sigma) - 1 holds a 2x slower prediction at +100%
    assert path_band("cmsis-nn-dsp", [result("x", "cmsis-nn-dsp", 2.0)]) > 100


def test_builtin_board_fits_its_own_row_and_reports_loo_error(graphs):
    board = load_board("esp32s3")
    est = predict_latency(graphs["person_detect_int8"], board)
    assert est.ms == pytest.approx(54.0, rel=0.01)
    assert est.error_pct == pytest.approx(13.9, abs=0.5)  # and the overhead's error
    assert 0 < est.lower_bound_ms < est.ms
    assert est.mac_utilisation == pytest.approx(est.lower_bound_ms / est.ms)
    assert est.version.startswith("lat-1+")
    assert all(o.accelerated for o in est.ops if o.op != "RESHAPE")
    assert sum(o.ms for o in est.ops) < est.ms  # plus the invoke overhead
    ref = predict_latency(graphs["person_detect_int8"], board.with_kernels("reference"))
    assert ref.ms == pytest.approx(2300.0, rel=0.01)
    assert not any(o.accelerated for o in ref.ops)


def test_clock_scales_latency(graphs):
    board = load_board("nucleo_f746zg")
    fast = dataclasses.replace(board, clock_hz=board.clock_hz * 2)
    slow_ms = predict_latency(graphs["kws_ref_model"], board).ms
    assert predict_latency(graphs["kws_ref_model"], fast).ms == pytest.approx(slow_ms / 2)


def test_minimal_user_profile_uses_family_defaults(tmp_path, graphs):
    path = tmp_path / "myboard.toml"
    path.write_text(
        'name = "myboard"\ncore = "cortex-m7"\nclock_hz = 200_000_000\n'
        'sram_bytes = 524288\nflash_bytes = 2097152\nkernels = "cmsis-nn"\n'
    )
    est = predict_latency(graphs["vww_96_int8"], load_board(str(path)))
    assert est.error_pct == pytest.approx(DEFAULT_ERRORS["cmsis-nn-dsp"], abs=0.5)
    assert "defaults" in est.coefficients_source
    m4 = predict_latency(graphs["vww_96_int8"], load_board("nucleo_l4r5zi"))
    assert est.ms < m4.ms  # faster core, higher clock
    assert path_for("cortex-m55", "cmsis-nn") == "cmsis-nn-mve"


@pytest.mark.parametrize("table", ["scale = -1.0", 'scale = "fast"', "mac = 3"])
def test_malformed_latency_table_is_a_profile_error(tmp_path, graphs, table):
    path = tmp_path / "bad.toml"
    path.write_text(
        'name = "bad"\ncore = "cortex-m4f"\nclock_hz = 80_000_000\nsram_bytes = 131072\n'
        f'flash_bytes = 524288\nkernels = "cmsis-nn"\n\n[latency.cmsis-nn]\n{table}\n'
    )
    with pytest.raises(BoardProfileError):
        predict_latency(graphs["kws_ref_model"], load_board(str(path)))


def test_board_mac_override_changes_that_variant_only(tmp_path, graphs):
    base = 'name = "b"\ncore = "cortex-m4f"\nclock_hz = 80_000_000\nsram_bytes = 131072\n'
    base += 'flash_bytes = 524288\nkernels = "cmsis-nn"\n'
    path = tmp_path / "b.toml"
    path.write_text(base + "\n[latency.cmsis-nn]\nscale = 1.0\nmac = { fc = 100.0 }\n")
    est = predict_latency(graphs["kws_ref_model"], load_board(str(path)))
    feats = {f.index: f for f in op_features(graphs["kws_ref_model"])}
    fc = next(o for o in est.ops if o.variant == "fc")
    table = dataclasses.replace(
        microbench_tables()["esp-nn-s3"],
        mac={"fc": 100.0},
        requant=14.0,
        op_overhead=PRIOR_TABLES["cmsis-nn-dsp"].op_overhead,
        byte=0.0,
    )
    assert fc.ms == pytest.approx(op_cycles(feats[fc.index], table) / 80_000)


def test_bad_measurements_file(tmp_path):
    bad = tmp_path / "m.csv"
    bad.write_text("id,latency_ms\nx,3\n")
    with pytest.raises(UserError):
        load_calibration(bad)


def test_the_invoke_overhead_is_fitted_to_the_tiny_model_rows():
    rows = load_calibration()
    invoke = fit_dispatch(rows, fit_scales(rows))
    assert invoke == pytest.approx(DISPATCH_CYCLES["invoke"], rel=1e-3)
    big = [r for r in rows if not r.id.startswith("hello")]
    assert fit_dispatch(big, fit_scales(big)) is None  # only overhead-bound rows tell


def test_a_288_mac_model_is_mostly_overhead_and_within_30_percent_of_every_board():
    rows = [r for r in load_calibration() if r.id.startswith("hello")]
    assert len({r.core for r in rows}) == 5  # M0+, M4, M4F, M7, LX6
    for r in leave_one_board_out(load_calibration()):
        if r.row.id.startswith("hello"):
            assert abs(r.error_pct) <= 30, r.row.id  # invoke fitted without the board
            assert r.fixed_ms / r.predicted_ms > 0.99  # no kernel scale touches it


def test_reference_fully_connected_is_not_charged_the_convolution_scale(graphs):
    board = load_board("esp32s3").with_kernels("reference")
    est = predict_latency(graphs["hello_world_int8"], board)
    assert est.fixed_ms == pytest.approx(est.ms)  # FC runs unscaled, dispatch never scales
    person = predict_latency(graphs["person_detect_int8"], board)
    assert person.fixed_ms < 0.01 * person.ms  # the reference convolutions carry the scale


def test_tcm_memory_speeds_up_and_widens_the_band(tmp_path, graphs):
    base = 'name = "t"\ncore = "cortex-m7"\nclock_hz = 600_000_000\nsram_bytes = 524288\n'
    base += 'flash_bytes = 2097152\nkernels = "cmsis-nn"\n'
    (tmp_path / "flash.toml").write_text(base)
    (tmp_path / "tcm.toml").write_text(base + 'memory = "tcm"\n')
    flash = predict_latency(graphs["kws_ref_model"], load_board(str(tmp_path / "flash.toml")))
    tcm = predict_latency(graphs["kws_ref_model"], load_board(str(tmp_path / "tcm.toml")))
    assert tcm.ms == pytest.approx(0.55 * flash.ms)
    assert tcm.error_pct > flash.error_pct
    assert tcm.lower_bound_ms == pytest.approx(flash.lower_bound_ms)
    (tmp_path / "bad.toml").write_text(base + 'memory = "eeprom"\n')
    with pytest.raises(BoardProfileError, match="memory = 'eeprom' is not one of"):
        load_board(str(tmp_path / "bad.toml"))


def test_older_runtimes_widen_the_band_but_do_not_set_the_centre():
    rows = load_calibration()
    old = [r for r in rows if not r.recent]
    assert {r.runtime_year for r in old} == {2020} and all(r.id.startswith("l4r5") for r in old)
    recent_only = fit_scales([r for r in rows if r.recent])
    assert fit_scales(rows)["cmsis-nn-dsp"] == pytest.approx(recent_only["cmsis-nn-dsp"])
    assert fit_scales(old)["cmsis-nn-dsp"] > 1.4 * recent_only["cmsis-nn-dsp"]


def test_dual_core_kernels_on_the_rp2040_match_pico_tflmicro(tmp_path, graphs):
    board = load_board("rp2040")
    one = predict_latency(graphs["person_detect_int8"], board).ms
    two = predict_latency(
        graphs["person_detect_int8"], dataclasses.replace(board, multicore_kernels=True)
    ).ms
    assert one == pytest.approx(823.7, rel=0.01)  # its own published single-core row
    assert two == pytest.approx(587.4, rel=0.10)  # pico-tflmicro's multicore figure
    path = tmp_path / "pico2.toml"
    text = (Path(board.path).read_text()).replace(
        'kernels = "cmsis-nn"', 'kernels = "cmsis-nn"\nmulticore_kernels = "yes"'
    )
    path.write_text(text)
    with pytest.raises(BoardProfileError, match="multicore_kernels must be true or false"):
        load_board(str(path))
