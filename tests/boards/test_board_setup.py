"""The setup keys of a board profile: checked on load, turned into latency factors."""

import dataclasses
import math

import pytest
from click.testing import CliRunner

from mcunas.boards.catalog import load_board
from mcunas.boards.checks import runtime_year
from mcunas.commands.cli import cli, main
from mcunas.cost.fit.scale import CALIBRATION_CSV, load_calibration
from mcunas.cost.latency import predict_latency
from mcunas.cost.setup import OLD_RUNTIME_FACTOR, combined, setup_effects, widened
from mcunas.errors import BoardProfileError
from mcunas.tflite.reader import read_graph

MINIMAL = """
name = "myboard"
core = "cortex-m4f"
clock_hz = 120_000_000
sram_bytes = 262144
flash_bytes = 1048576
kernels = "cmsis-nn"
"""


def _load(tmp_path, extra: str):
    path = tmp_path / "board.toml"
    path.write_text(MINIMAL + extra)
    return load_board(str(path))


@pytest.mark.parametrize(
    "extra, fragment",
    [
        ('weights = "rom"', "weights = 'rom' is not one of flash, sram"),
        ('arena = "flash"', "arena = 'flash' is not one of sram, tcm"),
        ("cache = 1", "cache must be true or false"),
        ("flash_wait_states = -1", "flash_wait_states must be a whole number from 0 to 15"),
        ("flash_wait_states = 3.5", "flash_wait_states must be a whole number"),
        ('runtime = "latest"', "runtime must be"),
        ('cmsis_nn = "six"', 'cmsis_nn must be "x.y"'),
        ('opt = "O1"', "opt = 'O1' is not one of O2, Os, O3"),
    ],
)
def test_bad_setup_values_are_refused_in_one_line(tmp_path, extra, fragment):
    with pytest.raises(BoardProfileError, match=fragment) as info:
        _load(tmp_path, extra)
    assert "\n" not in str(info.value)


def test_bad_setup_value_exits_2_with_one_line(tmp_path, capsys):
    path = tmp_path / "board.toml"
    path.write_text(MINIMAL + 'weights = "rom"\n')
    with pytest.raises(SystemExit) as exc:
        main(["boards", "show", str(path)])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "weights = 'rom'" in err and len(err.strip().splitlines()) == 1


def test_runtime_years():
    assert runtime_year("tflm-2023") == 2023
    assert runtime_year("2.3.1") == 2020
    assert runtime_year("tflm-2.5") == 2021
    assert runtime_year("2.14.0") == 2023


def test_no_stated_key_keeps_todays_estimate(tmp_path):
    bare = _load(tmp_path, "")
    baseline = _load(tmp_path, 'weights = "flash"\narena = "sram"\nopt = "O2"\n')
    graph = read_graph(load_calibration(CALIBRATION_CSV)[4].model)
    assert setup_effects(bare) == []
    a, b = predict_latency(graph, bare), predict_latency(graph, baseline)
    assert a.ms == pytest.approx(b.ms) and a.error_pct == pytest.approx(b.error_pct)
    recent = predict_latency(graph, _load(tmp_path, 'runtime = "tflm-2024"\n'))
    assert recent.ms == pytest.approx(a.ms)  # a recent runtime is the baseline: same centre


def test_old_runtime_moves_the_estimate_by_the_fitted_factor_and_widens_it(tmp_path):
    new = _load(tmp_path, 'runtime = "tflm-2023"\n')
    old = _load(tmp_path, 'runtime = "2.3.1"\n')
    old_cmsis = _load(tmp_path, 'cmsis_nn = "1.3"\n')
    graph = read_graph(load_calibration(CALIBRATION_CSV)[4].model)
    a, b = predict_latency(graph, new), predict_latency(graph, old)
    assert b.ms / a.ms == pytest.approx(OLD_RUNTIME_FACTOR[0])
    assert b.error_pct > a.error_pct
    assert combined(setup_effects(old_cmsis))[0] == pytest.approx(OLD_RUNTIME_FACTOR[0])
    assert setup_effects(old)[0].kind == "fitted"


def test_old_runtime_on_a_path_it_was_not_fitted_on_only_widens(tmp_path):
    graph = read_graph(load_calibration(CALIBRATION_CSV)[4].model)
    for kernels, core in (("reference", "cortex-m4f"), ("cmsis-nn", "cortex-m0plus")):
        bare = _replace(_load(tmp_path, ""), kernels=kernels, core=core)
        old = _replace(_load(tmp_path, 'runtime = "2.3.1"\n'), kernels=kernels, core=core)
        (effect,) = setup_effects(old)
        assert effect.kind == "prior" and effect.factor == 1.0, kernels
        assert effect.prior_factor == pytest.approx(OLD_RUNTIME_FACTOR[0])
        a, b = predict_latency(graph, bare), predict_latency(graph, old)
        assert b.ms == pytest.approx(a.ms) and b.error_pct > a.error_pct


def _replace(board, **changes):
    return dataclasses.replace(board, **changes)


def test_placement_and_cache_priors_are_named_priors(tmp_path):
    board = _load(tmp_path, 'weights = "sdram"\narena = "psram"\ncache = false\nopt = "Os"\n')
    effects = {e.key: e for e in setup_effects(board)}
    assert set(effects) == {"weights", "arena", "cache", "opt"}
    assert all(e.kind == "prior" for e in effects.values())
    cached = _load(tmp_path, 'weights = "sdram"\narena = "psram"\nopt = "Os"\n')
    # their guesses still order the band: caches off is the wider one
    assert combined(setup_effects(board))[1] > combined(setup_effects(cached))[1] > 0


def test_a_prior_no_pair_supports_widens_the_band_and_does_not_move_the_estimate(tmp_path):
    graph = read_graph(load_calibration(CALIBRATION_CSV)[4].model)
    bare = predict_latency(graph, _load(tmp_path, ""))
    for extra in ('arena = "sdram"\n', 'opt = "Os"\n', "cache = false\n", 'weights = "sram"\n'):
        board = _load(tmp_path, extra)
        (effect,) = setup_effects(board)
        assert effect.kind == "prior" and effect.factor == 1.0 and effect.prior_factor != 1.0
        # the band holds both the baseline and the guess with its own error
        assert effect.error_pct == pytest.approx(
            widened(effect.prior_factor, effect.prior_error_pct), abs=0.1
        )
        low, high = sorted((1.0, effect.prior_factor * (1 + effect.prior_error_pct / 100)))
        assert effect.error_pct >= (high / low - 1) * 100 - 0.1
        est = predict_latency(graph, board)
        assert est.ms == pytest.approx(bare.ms)
        assert est.error_pct > bare.error_pct
        assert est.error_pct == pytest.approx(math.hypot(bare.error_pct, effect.error_pct), abs=0.2)


def test_uncached_flash_costs_per_wait_state(tmp_path):
    few = _load(tmp_path, "cache = false\nflash_wait_states = 1\n")
    many = _load(tmp_path, "cache = false\nflash_wait_states = 7\n")
    zero = _load(tmp_path, "cache = false\nflash_wait_states = 0\n")
    effects = [setup_effects(b)[0] for b in (zero, few, many)]
    assert effects[0].prior_factor == 1.0 and effects[0].prior_factor < effects[1].prior_factor
    assert effects[1].prior_factor < effects[2].prior_factor
    assert effects[1].error_pct < effects[2].error_pct  # more wait states: a wider guess
    assert all(e.factor == 1.0 for e in effects)


def test_memory_key_still_applies_without_weights_or_arena(tmp_path):
    tcm = _load(tmp_path, 'memory = "tcm"\n')
    both = _load(tmp_path, 'weights = "tcm"\narena = "tcm"\n')
    assert combined(setup_effects(tcm)) == combined(setup_effects(both))
    assert combined(setup_effects(tcm))[0] < 1.0


def test_builtin_cortex_m_profiles_state_their_build_and_show_it():
    for name in ("nano33ble", "nucleo_f746zg", "nucleo_h743zi", "nucleo_l4r5zi"):
        board = load_board(name)
        assert {"weights", "arena", "cache", "runtime", "opt"} <= set(board.setup)
        assert "setup" in board.sources
        assert combined(setup_effects(board)) == (1.0, 0.0)  # their build is the baseline
        bare = dataclasses.replace(board, setup={})
        graph = read_graph(load_calibration(CALIBRATION_CSV)[4].model)
        assert predict_latency(graph, bare).ms == pytest.approx(predict_latency(graph, board).ms)
    out = CliRunner().invoke(cli, ["boards", "show", "nucleo_f746zg"]).output
    assert "flash_wait_states  7" in out and "latency moved      x1.00" in out


def test_a_stated_runtime_narrows_the_band_an_old_one_widens_it(tmp_path):
    graph = read_graph(load_calibration(CALIBRATION_CSV)[4].model)
    bare = predict_latency(graph, _load(tmp_path, ""))
    recent = predict_latency(graph, _load(tmp_path, 'runtime = "tflm-2024"\n'))
    old = predict_latency(graph, _load(tmp_path, 'runtime = "tflm-2020"\n'))
    assert recent.error_pct < bare.error_pct and recent.error_pct < old.error_pct
    assert old.ms == pytest.approx(bare.ms * OLD_RUNTIME_FACTOR[0])


def test_band_breakdown_names_each_part_and_the_key_that_would_narrow_it(tmp_path):
    from mcunas.cost.setup import band_breakdown

    graph = read_graph(load_calibration(CALIBRATION_CSV)[4].model)
    board = _load(tmp_path, 'arena = "sdram"\n')
    text = band_breakdown(board, predict_latency(graph, board).error_pct)
    assert "kernels" in text and "+/-125% arena (prior: x1.50 not applied" in text
    assert "state `runtime`" in text
    stated = _load(tmp_path, 'runtime = "2.3.1"\n')
    text = band_breakdown(stated, predict_latency(graph, stated).error_pct)
    assert "kernels" in text and "runtime (fitted)" in text and "state" not in text


def test_power_rail_board_adds_the_boards_own_draw(tmp_path):
    from mcunas.cost.energy import board_power

    power = "\n[power]\nsupply_v = 3.3\nactive_ma = 10.0\nidle_ma = 1.0\nboard_ma = 12.0\n"
    chip = board_power(_load(tmp_path, power + 'rail = "chip"\n'))
    board = board_power(_load(tmp_path, power + 'rail = "board"\n'))
    assert chip.active_ma == 10.0 and "chip supply only" in chip.basis
    assert board.active_ma == 22.0 and board.idle_ma == 13.0 and "whole board" in board.basis
    with pytest.raises(BoardProfileError, match="rail = 'usb' is not one of chip, board"):
        _load(tmp_path, power + 'rail = "usb"\n')
    for name in ("nano33ble", "nucleo_f746zg", "nucleo_h743zi", "nucleo_l4r5zi", "esp32s3"):
        assert load_board(name).power["rail"] == "chip" and "rail" in load_board(name).sources
