"""Every number has a range: options, profile values and their consistency, in one line."""

from __future__ import annotations

import math
from dataclasses import fields

import click
import pytest

from mcunas.boards.catalog import load_board
from mcunas.commands import Ranged
from mcunas.commands.search import cli as search_cli
from mcunas.errors import BoardProfileError, ImplausibleFigure, UserError
from mcunas.figures import Figures
from mcunas.limits import LIMITS, Limit, check_input_shape, check_number
from mcunas.search.settings.config import SearchConfig
from tests.cli_helpers import one_line_exit_2

PROFILE = """name = "mine"
core = "cortex-m33"
clock_hz = 240_000_000
sram_bytes = 262_144
flash_bytes = 1_048_576
kernels = "cmsis-nn"
"""


@pytest.mark.parametrize(
    "args, words",
    [
        (["--input-shape", "100000,100000,3"], "out of range"),
        (["--input-shape", "2048,2048,3"], "values per input"),
        (["--input-shape", "8,8,0"], "out of range"),
        (["--classes", "10000000"], "2 to 1000"),
    ],
)
def test_space_reference_refuses_absurd_sizes(capsys, tmp_path, args, words) -> None:
    out = str(tmp_path / "m.tflite")
    err = one_line_exit_2(capsys, "space", "reference", "kws-dscnn", *args, "--out", out)
    assert words in err and not (tmp_path / "m.tflite").exists()


@pytest.mark.parametrize("value", ["nan", "inf", "-1", "0", "1e9"])
def test_worker_timeout_must_be_finite_and_bounded(capsys, value) -> None:
    args = ["search", "--board", "esp32s3", "--serve", "127.0.0.1:0", "--worker-timeout", value]
    assert "--worker-timeout" in one_line_exit_2(capsys, *args)


def test_a_clock_above_the_profile_needs_overclock(capsys) -> None:
    err = one_line_exit_2(capsys, "search", "--board", "esp32s3", "--clock-mhz", "5000")
    assert "above esp32s3's 240 MHz" in err and "--overclock" in err
    board = load_board("esp32s3")
    assert board.at_clock(300, above_profile=True).clock_hz == 300_000_000
    assert board.at_clock(80).clock_hz == 80_000_000
    with pytest.raises(BoardProfileError, match="is not a clock"):
        board.at_clock(math.nan, above_profile=True)


@pytest.mark.parametrize("name", [f.name for f in fields(SearchConfig) if f.name in LIMITS])
def test_every_config_number_is_checked(name: str) -> None:
    limit = LIMITS[name]
    for bad in (math.nan, math.inf, limit.high * 10 + 1, limit.low - 1):
        config = SearchConfig(board="esp32s3", **{name: bad})
        with pytest.raises(UserError) as exc:
            config.validate()
        assert "\n" not in str(exc.value)


def test_every_search_number_option_states_its_range() -> None:
    ranged = [p for p in search_cli.params if isinstance(p.type, Ranged)]
    assert len(ranged) >= 15
    for param in ranged:
        assert param.type.limit.text() in (param.help or ""), param.name
    numbers = [p for p in search_cli.params if isinstance(p.type, click.types._NumberParamTypeBase)]
    assert not numbers, [p.name for p in numbers]  # no number option without a range


def test_the_limits_are_finite_and_stated() -> None:
    for name, limit in LIMITS.items():
        assert math.isfinite(limit.low) and math.isfinite(limit.high) and limit.low < limit.high
        assert limit.holds(limit.high) and not limit.holds(math.nan), name
    assert Limit(0, 10, above=True).text() == "above 0 to 10"
    assert not Limit(1, 10, integer=True).holds(2.5)
    check_number("epochs", 30)
    with pytest.raises(UserError, match="--epochs must be a whole number 1 to 10000"):
        check_number("epochs", 10**6)
    check_input_shape((96, 96, 3))


@pytest.mark.parametrize(
    "power, words",
    [
        ("active_ma = 0.001\nidle_ma = 0.0001\n", "uA/MHz"),
        ("active_ma = 50.0\nidle_ma = 5000\n", "idle_ma = 5000 is above active_ma"),
        ("active_ma_dual_core = 60.0\nidle_ma = 70.0\n", "above active_ma_dual_core"),
    ],
)
def test_power_values_must_agree(tmp_path, power: str, words: str) -> None:
    path = tmp_path / "mine.toml"
    path.write_text(PROFILE + "[power]\n" + power)
    with pytest.raises(BoardProfileError) as exc:
        load_board(str(path))
    assert words in str(exc.value) and "\n" not in str(exc.value)


def test_an_energy_of_zero_is_implausible() -> None:
    base = {"source": "x", "estimated": True, "arena_bytes": 1, "peak_sram_bytes": 1}
    with pytest.raises(ImplausibleFigure, match="energy_uj"):
        Figures(latency_ms=3.0, flash_bytes=1, energy_uj=0.0, **base)
    assert Figures(latency_ms=3.0, flash_bytes=1, energy_uj=0.5, **base).energy_uj == 0.5


@pytest.mark.parametrize(
    "key, value, words",
    [
        ("clock_hz", "1_000_000_000_000", "clock_hz = 1000000000000 is above 10,000,000,000"),
        ("sram_bytes", str(2**40), "sram_bytes = 1099511627776 is above 4,294,967,296"),
        ("peak_macs_per_cycle", "1e9", "peak_macs_per_cycle must be a positive number up to 1024"),
    ],
)
def test_profile_sizes_have_a_physical_upper_bound(tmp_path, key, value, words) -> None:
    lines = [line for line in PROFILE.splitlines() if not line.startswith(key)]
    path = tmp_path / "mine.toml"
    path.write_text("\n".join([*lines, f"{key} = {value}", ""]))
    with pytest.raises(BoardProfileError) as exc:
        load_board(str(path))
    assert words in str(exc.value) and "\n" not in str(exc.value)
