"""The build setup the firmware reports: decoding, the virtual board, the store."""

from __future__ import annotations

import dataclasses

from click.testing import CliRunner

from mcunas.boards.catalog import load_board
from mcunas.cost.fit.records import RecordStore
from mcunas.cost.fit.suite import load_suite
from mcunas.measure.calibrate import calibrate
from mcunas.measure.opener import open_measurer
from mcunas.measure.protocol import parse_line
from mcunas.measure.setup_report import (
    describe_setup,
    firmware_setup,
    reported_setup,
    setup_differences,
)

M7 = "411fc271"  # Cortex-M7 r1p1
M4 = "410fc241"
CACHES_ON, CACHES_OFF = "00070200", "00000200"


def test_placement_caches_and_clock_are_decoded_by_the_memory_map():
    ready = {
        "setup": {
            "model_addr": "08012340",
            "arena_addr": "20000400",
            "cpuid": M7,
            "ccr": CACHES_OFF,
            "core_clock_hz": 216000000,
            "runtime": "Chirale_TensorFlowLite@46da2f9",
            "opt": "size",
        }
    }
    assert reported_setup(ready) == {
        "core": "cortex-m7",
        "weights": "flash",
        "arena": "tcm",  # the M7's DTCM
        "cache": False,
        "clock_hz": 216000000,
        "runtime": "Chirale_TensorFlowLite@46da2f9",
        "opt": "Os",
    }
    # the result line's arena address wins (the ready line at boot has none yet)
    sdram = reported_setup(ready, {"arena_addr": "c0000000"})
    assert sdram["arena"] == "sdram"
    qspi = {"setup": {"model_addr": "90001000", "cpuid": M7, "ccr": CACHES_ON}}
    assert reported_setup(qspi, {"arena_addr": "24000000"}) == {
        "core": "cortex-m7",
        "weights": "flash",
        "arena": "sram",
        "cache": True,
    }


def test_a_core_without_caches_reports_none_and_old_firmware_reports_nothing():
    m4 = reported_setup({"setup": {"model_addr": "00020000", "cpuid": M4, "ccr": "00000200"}})
    assert m4 == {"core": "cortex-m4", "weights": "flash"}  # CCR's cache bits are not an M4's
    assert reported_setup({"board": "x", "fw": "0.1.0"}) == {}
    esp = reported_setup({"setup": {"model_addr": "3c0a0000", "opt": "speed"}})
    assert esp == {"opt": "O2"}  # no Cortex-M memory map: placement unknown
    assert describe_setup({}).startswith("nothing")


def test_differences_name_what_the_profile_gets_wrong():
    board = load_board("nucleo_f746zg")  # states flash weights, SRAM arena, caches on
    reported = {"weights": "flash", "arena": "tcm", "cache": False, "clock_hz": 108_000_000}
    text = "; ".join(setup_differences(board, reported))
    assert "arena: firmware reports tcm, profile sram" in text
    assert "cache: firmware reports off, profile on" in text
    assert "108 MHz" in text and "weights" not in text
    assert setup_differences(board, {"weights": "flash", "arena": "sram", "cache": True}) == []


def test_the_virtual_board_reports_the_profiles_setup_in_its_ready_line():
    board = dataclasses.replace(
        load_board("nucleo_f746zg"), setup={"weights": "sram", "arena": "tcm", "cache": False}
    )
    raw, arena = firmware_setup(board, "virtual")
    event = parse_line(f'MCUNAS/1 {{"event":"ready","board":"x","setup":{_json(raw)}}}')
    got = reported_setup(event.raw, {"arena_addr": arena})
    assert (got["weights"], got["arena"], got["cache"]) == ("sram", "tcm", False)
    assert got["clock_hz"] == board.clock_hz and got["core"] == "cortex-m7"


def test_calibration_stores_and_prints_the_reported_setup(isolated_home):
    board = load_board("nucleo_f746zg")
    store = RecordStore()
    suite = load_suite("quick")[:1]
    with open_measurer("virtual", board, truth_seed=0) as measurer:
        result = calibrate(board, measurer, suite, store, write=False)
    assert result.setup["weights"] == "flash" and result.setup["cache"] is True
    assert result.to_dict()["setup"] == result.setup
    assert list(store.setups(board.name).values()) == [result.setup]
    from mcunas.commands.calibrate import cli

    out = CliRunner().invoke(cli, ["--board", "nucleo_f746zg", "--virtual", "--quick"])
    assert out.exit_code == 0, out.output
    assert "firmware setup:     weights flash, arena sram, caches on, 216 MHz" in out.output


def _json(value: dict) -> str:
    import json

    return json.dumps(value)


def test_the_build_names_the_tflm_it_pins(tmp_path):
    from mcunas.measure.pio import PioProject

    arduino = PioProject(load_board("nucleo_f746zg"), tmp_path).config_header()
    idf = PioProject(load_board("esp32s3"), tmp_path).config_header()
    assert '#define MCUNAS_RUNTIME "Chirale_TensorFlowLite@' in arduino
    assert '#define MCUNAS_RUNTIME "esp-tflite-micro ' in idf
