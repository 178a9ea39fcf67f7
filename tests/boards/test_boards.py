import json
import subprocess
import sys

import pytest
from click.testing import CliRunner

from mcunas.boards.catalog import BoardProfile, list_boards, load_board
from mcunas.commands.cli import cli, main
from mcunas.errors import BoardProfileError, UnknownBoard, UserError

BUILTIN = {
    "esp32s3",
    "esp32",
    "esp32c3",
    "nucleo_f746zg",
    "nucleo_h743zi",
    "nucleo_l4r5zi",
    "nano33ble",
    "rp2040",
}

MINIMAL = """
name = "myboard"
core = "cortex-m33"
clock_hz = 150_000_000
sram_bytes = 262144
flash_bytes = 1048576
kernels = "cmsis-nn"
"""


def test_builtin_profiles_complete():
    boards = {b.name: b for b in list_boards()}
    assert BUILTIN <= set(boards)
    for b in boards.values():
        assert b.builtin
        assert b.pio_env and b.pio_board and b.hwids and b.sources
        assert 0 < b.model_sram_budget_bytes < b.sram_bytes
        assert 0 < b.model_flash_budget_bytes < b.flash_bytes
        assert b.peak_macs_per_cycle > 0


def test_esp32_arena_capped_by_contiguous_dram():
    assert load_board("esp32").model_sram_budget_bytes == 160 * 1024


def test_user_profile_by_path_gets_family_defaults(tmp_path):
    path = tmp_path / "myboard.toml"
    path.write_text(MINIMAL)
    board = load_board(str(path))
    assert isinstance(board, BoardProfile)
    assert board.family == "cortex-m" and not board.builtin
    assert board.firmware_ram_bytes > 0 and board.peak_macs_per_cycle == 2.0


def test_user_folder_searched_first(isolated_home):
    folder = isolated_home / "boards"
    folder.mkdir(parents=True)
    (folder / "esp32s3.toml").write_text(MINIMAL.replace('"myboard"', '"esp32s3"'))
    board = load_board("esp32s3")
    assert board.core == "cortex-m33" and not board.builtin


@pytest.mark.parametrize(
    "text,fragment",
    [
        ("name = 'x'\n", "missing required key"),
        ("this is not toml", "not valid TOML"),
        (MINIMAL.replace("cortex-m33", "z80"), "core"),
        (MINIMAL.replace("cmsis-nn", "fast"), "kernels"),
        (MINIMAL.replace("262144", "-1"), "positive integer"),
    ],
)
def test_malformed_profiles(tmp_path, text, fragment):
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(BoardProfileError, match=fragment):
        load_board(str(path))


def test_unknown_board():
    with pytest.raises(UnknownBoard, match="esp32s3"):
        load_board("no_such_board")


def test_boards_cli_json():
    result = CliRunner().invoke(cli, ["boards", "--json"])
    assert result.exit_code == 0, result.output
    assert BUILTIN <= {b["name"] for b in json.loads(result.output)}


def test_boards_show_cli():
    result = CliRunner().invoke(cli, ["boards", "show", "rp2040"])
    assert result.exit_code == 0 and "cortex-m0plus" in result.output


def test_unknown_board_one_line_exit_2(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["boards", "show", "nope"])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "Unknown board 'nope'" in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


def test_cli_subprocess_help_is_light():
    code = (
        "import sys, mcunas.commands.cli as c; sys.argv=['mcunas','--help']\n"
        "try:\n c.main()\nexcept SystemExit: pass\n"
        "assert 'tensorflow' not in sys.modules and 'keras' not in sys.modules"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr


@pytest.mark.parametrize(
    "extra,fragment",
    [
        ("firmware = 5\n", "firmware must be a table"),
        ("sources = 5\n", "sources must be a table"),
        ('[serial]\nhwids = "2E8A:000A"\n', "hwids must be a list"),
    ],
)
def test_malformed_tables(tmp_path, extra, fragment):
    _refused(tmp_path, MINIMAL + extra, fragment)


def _refused(tmp_path, text: str, fragment: str) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(BoardProfileError, match=fragment):
        load_board(str(path))


def test_board_too_small_for_the_firmware(tmp_path):
    path = tmp_path / "tiny.toml"
    path.write_text(MINIMAL.replace("262144", "8192"))
    with pytest.raises(BoardProfileError, match="no SRAM left to the model"):
        load_board(str(path))


def test_listing_skips_a_broken_user_profile(isolated_home):
    folder = isolated_home / "boards"
    folder.mkdir(parents=True)
    (folder / "broken.toml").write_text("name = 'broken'\n")
    result = CliRunner().invoke(cli, ["boards"])
    assert result.exit_code == 0
    assert "esp32s3" in result.output and "skipped:" in result.output
    with pytest.raises(BoardProfileError):
        list_boards()


def test_esp_nn_is_refused_on_a_cortex_m(tmp_path):
    path = tmp_path / "m4.toml"
    path.write_text(MINIMAL.replace("cmsis-nn", "esp-nn"))
    with pytest.raises(BoardProfileError, match="Espressif"):
        load_board(str(path))
    with pytest.raises(BoardProfileError, match="Espressif"):
        load_board("nucleo_f746zg").with_kernels("esp-nn")


def test_cmsis_nn_is_refused_off_cortex_m():
    """It estimated 1047 ms for kws on an ESP32-S3, 'accelerated', slower than reference."""
    for name in ("esp32s3", "esp32c3"):
        with pytest.raises(BoardProfileError, match="Cortex-M"):
            load_board(name).with_kernels("cmsis-nn")


@pytest.mark.parametrize(
    "extra,fragment",
    [
        ("usable_sram_bytes = 999999999\n", "usable_sram_bytes .* is more than sram_bytes"),
        ("usable_sram_bytes = 1.9\n", "usable_sram_bytes must be a positive integer"),
        ('usable_flash_bytes = "200000"\n', "usable_flash_bytes must be a positive integer"),
        ("max_arena_bytes = -5\n", "max_arena_bytes must be a positive integer"),
        ("peak_macs_per_cycle = 0\n", "peak_macs_per_cycle must be a positive number"),
        ("peak_macs_per_cycle = nan\n", "peak_macs_per_cycle must be a positive number"),
        ("sram_kb = 256\n", "unknown key 'sram_kb'"),
        ("[firmware]\nram_bytes = -100000\n", r"\[firmware\] ram_bytes must be an integer >= 0"),
        ("[firmware]\nram = 1000\n", r"unknown key \[firmware\] 'ram'; did you mean 'ram_bytes'"),
        ("[serial]\nbaud = 0\n", r"\[serial\] baud must be a positive integer"),
        ('[serial]\nhwids = ["nonsense"]\n', 'not a USB "VID:PID"'),
    ],
)
def test_bad_optional_values_are_refused(tmp_path, extra, fragment):
    path = tmp_path / "bad.toml"
    path.write_text(MINIMAL + extra)
    with pytest.raises(BoardProfileError, match=fragment):
        load_board(str(path))


def test_optional_values_given_right_are_used(tmp_path):
    path = tmp_path / "good.toml"
    path.write_text(
        MINIMAL + "usable_sram_bytes = 200000\npeak_macs_per_cycle = 1\n"
        '[firmware]\nram_bytes = 0\n[serial]\nbaud = 921600\nhwids = ["2e8a:000a"]\n'
    )
    board = load_board(str(path))
    assert (board.usable_sram_bytes, board.peak_macs_per_cycle) == (200000, 1.0)
    assert (board.firmware_ram_bytes, board.baud, board.hwids) == (0, 921600, ("2E8A:000A",))


@pytest.mark.parametrize(
    "extra,fragment",
    [
        ("[latency]\nfoo = 1\n", r"unknown key \[latency\] 'foo'"),
        ("[latency.cmsis]\nscale = 3.0\n", r"\[latency.cmsis\] is not a kernel library"),
        ("[latency.cmsis-nn]\nscael = 3.0\n", r"'scael'; did you mean 'scale'"),
        ("[latency.cmsis-nn]\nscale = nan\n", "scale must be a positive number"),
        ("[latency.cmsis-nn]\nerror_pct = -10\n", "error_pct must be a number >= 0"),
        ("[latency.cmsis-nn]\ninvoke_overhead = -1e9\n", "invoke_overhead must be a number >= 0"),
        ("[latency.cmsis-nn]\nmac = {conv_1x1 = -1}\n", "mac.conv_1x1 = -1"),
        ('[latency.cmsis-nn]\nop_error_pct = {fc = "x"}\n', "op_error_pct.fc = 'x'"),
        ('[latency.cmsis-nn]\nchecked_variants = "fc"\n', "checked_variants must be a list"),
    ],
)
def test_bad_latency_tables_are_refused_at_load(tmp_path, extra, fragment):
    _refused(tmp_path, MINIMAL + extra, fragment)


def test_fitted_latency_tables_still_load(tmp_path):
    path = tmp_path / "fitted.toml"
    path.write_text(
        MINIMAL + '[latency]\nsource = "fit"\n[latency.cmsis-nn]\nscale = 2.0\n'
        'error_pct = 20.0\nrows = ["a"]\nmac = {fc = 2.5}\nop_error_pct = {fc = 3.1}\n'
        'checked_variants = ["fc"]\nwithin_10_pct = 80.0\nerror_method = "k-fold"\n'
    )
    assert load_board(str(path)).latency["cmsis-nn"]["mac"] == {"fc": 2.5}


def test_board_list_says_which_latency_tables_are_fitted():
    from click.testing import CliRunner

    from mcunas.commands.boards import cli

    output = CliRunner().invoke(cli, []).output
    rows = {line.split()[0]: line for line in output.splitlines() if line.strip()}
    assert "fitted" in rows["esp32s3"] and "+/-14%" in rows["esp32s3"]
    assert "defaults" in rows["nucleo_f746zg"]


@pytest.mark.parametrize("name", ["42", '"../etc"', '""', '"two words"', "[1]"])
def test_a_board_name_must_be_a_plain_string(tmp_path, name: str) -> None:
    text = "\n".join(
        f"name = {name}" if line.startswith("name =") else line for line in MINIMAL.splitlines()
    )
    _refused(tmp_path, text, "name must be a string")


def test_a_search_at_a_lower_clock_is_checked_and_kept_for_resume(tmp_path):
    from mcunas.search.api import check_search
    from mcunas.search.settings.config import IDENTITY, SearchConfig

    board = check_search(SearchConfig(board="nano33ble", clock_mhz=32, out=str(tmp_path / "o")))
    assert board.clock_hz == 32_000_000 and load_board("nano33ble").clock_hz == 64_000_000
    assert "clock_mhz" in IDENTITY  # a resume at another clock is another search
    with pytest.raises(UserError, match="--clock-mhz must be a number above 0 to 10000 MHz"):
        check_search(SearchConfig(board="nano33ble", clock_mhz=-5, out=str(tmp_path / "p")))
    help_text = CliRunner().invoke(cli, ["search", "--help"]).output
    assert "--clock-mhz" in help_text
