"""Energy per inference: [power] profiles, the estimate, budgets, objectives, meters."""

import dataclasses
import math

import numpy as np
import pytest

from mcunas.boards.catalog import load_board
from mcunas.cost.energy import (
    CORE_UA_PER_MHZ,
    board_power,
    combine_errors,
    estimate_energy,
    with_energy,
)
from mcunas.errors import BoardProfileError, ImplausibleFigure, UserError
from mcunas.figures import Figures
from mcunas.measure.board import BoardMeasurer
from mcunas.measure.power.meter import (
    MeterError,
    Trace,
    energy_between,
    marker_window,
    parse_meter,
    run_energy,
)
from mcunas.search.results.budgets import Budgets, violations
from mcunas.search.results.pareto import (
    Point,
    check_objectives,
    hypervolume,
    normalized_hypervolume,
    pareto_front,
)
from tests.repo import REPO
from tests.vboard_helpers import MODEL, virtual_board

PROFILE = """name = "mine"
core = "cortex-m33"
clock_hz = 100_000_000
sram_bytes = 262_144
flash_bytes = 1_048_576
kernels = "cmsis-nn"
"""


def write_profile(tmp_path, extra=""):
    path = tmp_path / "mine.toml"
    path.write_text(PROFILE + extra)
    return path


def test_bare_profile_with_supply_only_takes_the_core_default(tmp_path):
    board = load_board(str(write_profile(tmp_path, "[power]\nsupply_v = 1.8\n")))
    power = board_power(board)
    assert power.supply_v == 1.8
    assert power.active_ma == pytest.approx(CORE_UA_PER_MHZ["cortex-m33"] * 100 / 1000)
    assert "cortex-m33 default" in power.basis and power.spread_pct > 50
    # E = V x I x t: 1.8 V x 10.5 mA x 10 ms = 189 uJ
    assert estimate_energy(10.0, None, board).uj == pytest.approx(1.8 * power.active_ma * 10)


def test_profile_current_scales_with_the_clock(tmp_path):
    extra = "[power]\nsupply_v = 3.0\nactive_ma = 20.0\nidle_ma = 0.01\n"
    board = load_board(str(write_profile(tmp_path, extra)))
    assert board_power(board).active_ma == 20.0
    half = board_power(board.at_clock(50))
    assert half.active_ma == pytest.approx(10.0) and half.idle_ma == 0.01
    # half the clock: twice the latency at half the current, the same energy per inference
    assert estimate_energy(20.0, None, board.at_clock(50)).uj == pytest.approx(
        estimate_energy(10.0, None, board).uj
    )


@pytest.mark.parametrize(
    "extra, text",
    [
        ("[power]\nsupply_volts = 3.3\n", "unknown key [power] 'supply_volts'"),
        ("[power]\nactive_ma = 0.02e6\n", "[power] active_ma must be a number"),
        ("[power]\nsupply_v = 33\n", "[power] supply_v must be a number from 0.5 to 12"),
        ("[power]\nmarker_pin = 4.5\n", "[power] marker_pin must be a whole GPIO number"),
        ("power = 3\n", "power must be a table"),
    ],
)
def test_bad_power_tables_are_one_line(tmp_path, extra, text):
    with pytest.raises(BoardProfileError, match=None) as exc:
        load_board(str(write_profile(tmp_path, extra)))
    assert text in str(exc.value) and "\n" not in str(exc.value)


def test_every_builtin_profile_cites_its_power_figures():
    from mcunas.boards.catalog import list_boards

    for board in list_boards():
        assert {"supply_v", "active_ma", "idle_ma"} <= set(board.power), board.name
        assert "power" in board.sources, board.name


def test_errors_combine_in_log_space():
    assert combine_errors(None, 0.0) == 0.0
    assert combine_errors(30.0) == pytest.approx(30.0)
    both = combine_errors(30.0, 40.0)
    assert both == pytest.approx(100 * math.expm1(math.hypot(math.log(1.3), math.log(1.4))))
    assert 40.0 < both < 70.0  # more than either, less than their sum


def test_estimated_figures_get_energy_and_a_meter_reading_is_kept():
    board = load_board("esp32s3")
    est = Figures("simulator:x", True, 10.0, 1, 1, 1, latency_error_pct=20.0)
    filled = with_energy(est, board)
    assert filled.energy_uj == pytest.approx(3.3 * 51.0 * 10.0)
    assert filled.energy_error_pct == pytest.approx(combine_errors(20.0, 35.0))
    assert filled.energy_source.startswith("estimate:")
    measured = dataclasses.replace(est, energy_uj=5.0, energy_source="meter:ppk2:x")
    assert with_energy(measured, board) is measured
    with pytest.raises(ImplausibleFigure):
        Figures("x", True, 1.0, 1, 1, 1, energy_uj=float("nan"))


def test_profile_json_reports_energy():
    from mcunas.cost.profile import profile_model

    prof = profile_model(MODEL, load_board("nano33ble")).to_dict()
    assert prof["energy_uj"] == pytest.approx(prof["latency_ms"] * 3.3 * 3.3)
    assert prof["energy_error_pct"] > prof["latency_error_pct"]


def cost(energy, error=None, source="estimate: x"):
    return Figures(
        "s", True, 1.0, 1, 1, 1, energy_uj=energy, energy_error_pct=error, energy_source=source
    )


def test_energy_budget():
    budgets = Budgets(max_energy_uj=100.0)
    assert violations(cost(90.0, 20.0), budgets) == []
    assert "estimated energy 120.0 uJ > budget 100 uJ" in violations(cost(120.0), budgets)[0]
    safe = Budgets(max_energy_uj=100.0, safe_latency=True)
    assert "stated error" in violations(cost(90.0, 20.0), safe)[0]  # 90 +20% = 108
    assert violations(cost(90.0, None, "meter:virtual"), safe) == []  # measured: as it is
    assert "energy <= 100 uJ" in budgets.describe()


def test_energy_objective_changes_the_front():
    a = Point(0.9, 5.0, 100, "a", energy_uj=500.0)
    b = Point(0.8, 6.0, 120, "b", energy_uj=100.0)  # slower, bigger, but frugal
    assert [p.key for p in pareto_front([a, b])] == ["a"]
    objectives = ("accuracy", "latency", "energy")
    a2, b2 = (dataclasses.replace(p, objectives=objectives) for p in (a, b))
    assert [p.key for p in pareto_front([a2, b2])] == ["a", "b"]


def test_hypervolume_in_two_and_four_dimensions():
    two = ("accuracy", "energy")
    ref = Point(0.0, 0, 0, energy_uj=10.0, objectives=two)
    pts = [Point(0.5, 0, 0, energy_uj=4.0, objectives=two)]
    assert hypervolume(pts, ref) == pytest.approx(0.5 * 6.0)
    assert normalized_hypervolume(pts, ref) == pytest.approx(0.3)
    four = ("accuracy", "latency", "sram", "energy")
    ref4 = Point(0.0, 10.0, 10.0, energy_uj=10.0, objectives=four)
    p4 = [Point(0.5, 5.0, 5.0, energy_uj=5.0, objectives=four)]
    assert hypervolume(p4, ref4) == pytest.approx(0.5 * 5 * 5 * 5)


@pytest.mark.parametrize("bad", [("latency",), ("accuracy",), ("accuracy", "speed")])
def test_bad_objectives(bad):
    with pytest.raises(UserError):
        check_objectives(bad)


def square_trace(marker=True, scale=1.0):
    t = np.linspace(0.0, 1.0, 1001)
    on = (t >= 0.2) & (t < 0.7)
    current = np.where(on, 0.010, 0.001)
    return Trace(t, current, np.full(len(t), 2.0), on if marker else None, scale)


def test_meter_window_from_the_marker_or_the_mark_lines():
    trace = square_trace()
    assert marker_window(trace) == pytest.approx((0.2, 0.7))
    uj, method = run_energy(trace, [], runs=10)
    # 2 V x 10 mA x 0.5 s = 10 mJ over 10 runs
    assert uj == pytest.approx(1000.0, rel=0.01) and method == "marker GPIO"
    no_pin = square_trace(marker=False)
    uj, method = run_energy(no_pin, [("start", 0.2), ("end", 0.7)], runs=10)
    assert uj == pytest.approx(1000.0, rel=0.01) and method == "serial mark lines"
    assert energy_between(square_trace(scale=0.5), 0.2, 0.7)[0] == pytest.approx(5000, rel=0.01)


@pytest.mark.parametrize(
    "trace, marks, text",
    [
        (Trace(np.zeros(0), np.zeros(0), np.zeros(0)), [], "no samples"),
        (square_trace(marker=False), [], "never toggled"),
        (square_trace(marker=False), [("start", 0.2), ("end", 0.2001)], "only 1 samples"),
    ],
)
def test_meter_failures_are_one_line(trace, marks, text):
    with pytest.raises(MeterError, match=text):
        run_energy(trace, marks, runs=5)


@pytest.mark.parametrize("spec", ["fluke", "ppk2", "ppk2:"])
def test_unknown_or_incomplete_meter_spec(spec):
    with pytest.raises(MeterError):
        parse_meter(spec)


def test_virtual_meter_reproduces_the_virtual_boards_energy():
    with virtual_board(time_scale=1000.0) as vb:
        with BoardMeasurer(vb.board, port=vb.port, flash=False, power="virtual") as m:
            figures = m.measure(MODEL)
        truth = vb.power.energy_uj(figures.latency_ms)
    assert figures.energy_source == "meter:virtual (marker GPIO)"
    assert figures.energy_uj == pytest.approx(truth, rel=0.01)


def test_virtual_meter_without_a_marker_uses_the_mark_lines():
    board = load_board("esp32s3")
    power = {k: v for k, v in board.power.items() if k != "marker_pin"}
    no_pin = dataclasses.replace(board, power=power)
    # 100 ms per invoke in real time: the window (5 invokes) is long beside the pty's delay
    # on a mark line, which a loaded machine stretches to tens of ms (at 20 ms per invoke
    # that alone gave +20%)
    with virtual_board(board=no_pin, time_scale=0.02) as vb:
        with BoardMeasurer(no_pin, port=vb.port, flash=False, power="virtual") as m:
            figures = m.measure(MODEL)
        truth = vb.power.energy_uj(figures.latency_ms)
    assert "serial mark lines" in figures.energy_source
    assert figures.energy_uj == pytest.approx(truth, rel=0.1)  # the pty's delay on the marks


def test_virtual_meter_needs_a_virtual_board():
    board = load_board("esp32s3")
    with pytest.raises(MeterError, match="needs a virtual board"):
        with BoardMeasurer(board, port="/dev/nonexistent-port", power="virtual") as m:
            m.power_meter()


def test_firmware_config_names_the_marker_pin(tmp_path):
    from mcunas.measure.pio import PioProject

    header = PioProject(load_board("esp32s3"), tmp_path).config_header()
    assert "#define MCUNAS_MARKER_PIN 4" in header


def test_rack_file_names_a_meter_per_board(tmp_path):
    from mcunas.measure.rack_file import RackError, load_rack

    path = tmp_path / "rack.toml"
    path.write_text(
        '[[board]]\nprofile = "esp32s3"\nport = "/dev/a"\npower = "ppk2:/dev/ttyACM3"\n'
        '[[board]]\nprofile = "esp32s3"\nport = "/dev/b"\n'
    )
    assert [b.power for b in load_rack(path).boards] == ["ppk2:/dev/ttyACM3", None]
    path.write_text('[[board]]\nprofile = "esp32s3"\nport = "/dev/a"\npower = "fluke:1"\n')
    with pytest.raises(RackError, match="board 1: unknown power meter"):
        load_rack(path)


def test_every_firmware_port_drives_the_marker():

    src = REPO / "firmware" / "src"
    assert "void port_marker(bool high)" in (src / "port.h").read_text()
    for port in ("arduino_common.h", "port_espidf.cc"):
        assert "void port_marker(bool high) {" in (src / port).read_text(), port
    runner = (src / "runner.cc").read_text()
    # mark lines outside the marker window, the window around the timed loop only
    steps = (
        'print_mark("start")',
        "port_marker(true)",
        "timed_invoke(&g_latency_us[i])",
        'port_marker(false);\n  print_mark("end")',
    )
    order = [runner.index(s) for s in steps]
    assert order == sorted(order)
