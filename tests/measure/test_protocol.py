import zlib

import pytest

from mcunas.errors import MeasurementError
from mcunas.measure.protocol import (
    BoardError,
    Crash,
    Malformed,
    ProtocolError,
    Ready,
    Result,
    encode_line,
    parse_line,
)
from mcunas.tflite.csource import model_crc32

RESULT = (
    'MCUNAS/1 {"event":"result","model_crc32":"8c2f61a0","runs":20,'
    '"latency_us":{"min":51210,"median":51300,"max":51544},"arena_bytes":84312,'
    '"stack_bytes":2804,"static_ram_bytes":31200,"ops":[{"op":"CONV_2D","us":1234}],'
    '"new_key":1}'
)


def test_ready_line_from_design():
    ev = parse_line(
        'MCUNAS/1 {"event":"ready","board":"esp32s3","fw":"0.1.0","clock_hz":240000000}\r'
    )
    assert ev == Ready("esp32s3", "0.1.0", 240000000, ev.raw)


def test_result_line_from_design_keeps_units_and_unknown_keys():
    ev = parse_line(RESULT)
    assert isinstance(ev, Result)
    assert (ev.latency_min_us, ev.latency_median_us, ev.latency_max_us) == (51210, 51300, 51544)
    assert ev.arena_bytes == 84312 and ev.stack_bytes == 2804 and ev.static_ram_bytes == 31200
    assert ev.flash_bytes is None
    assert ev.ops[0].op == "CONV_2D" and ev.ops[0].us == 1234
    assert ev.raw["new_key"] == 1


def test_error_event():
    ev = parse_line('MCUNAS/1 {"event":"error","code":"arena_too_small","message":"no"}')
    assert ev == BoardError("arena_too_small", "no", ev.raw)


def test_prefix_after_noise_on_same_line_is_found():
    assert isinstance(parse_line("\x00\xffI (31) boot: x" + RESULT), Result)


@pytest.mark.parametrize(
    "line",
    ["I (312) cpu_start: Starting scheduler", "", "rst:0xc (RTC_SW_CPU_RST)", "MCUNAS/1 {}"],
)
def test_other_lines_are_ignored(line):
    assert parse_line(line) is None


@pytest.mark.parametrize(
    ("line", "signature"),
    [
        ("Guru Meditation Error: Core  1 panic'ed (LoadProhibited)", "Guru Meditation Error"),
        ("abort() was called at PC 0x42003a1c on core 0", "abort() was called"),
        ("++ HardFault_Handler ++", "HardFault"),
        ("Kernel panic at main.c:12", "panic"),
    ],
)
def test_crash_signatures(line, signature):
    ev = parse_line(line)
    assert isinstance(ev, Crash) and ev.signature == signature


def test_line_cut_by_reset_is_malformed():
    ev = parse_line(RESULT[:60] + "ets Jun  8 2016 00:22:57")
    assert isinstance(ev, Malformed) and "not JSON" in ev.reason


def test_other_protocol_version_is_an_error():
    with pytest.raises(ProtocolError, match="MCUNAS/2"):
        parse_line('MCUNAS/2 {"event":"ready"}')


@pytest.mark.parametrize(
    ("patch", "message"),
    [
        ('"model_crc32":"8C2F61A0"', "8 lowercase hex"),
        ('"runs":0', "runs must be positive"),
        ('"runs":"20"', "should be int"),
        ('"arena_bytes":-1', "arena_bytes must be >= 0"),
        ('"stack_bytes":true', "should be int"),
    ],
)
def test_result_validation(patch, message):
    key = patch.split(":")[0]
    start = RESULT.index(key)
    end = RESULT.index(",", start)
    with pytest.raises(ProtocolError, match=message):
        parse_line(RESULT[:start] + patch + RESULT[end:])


def test_result_latency_order_and_missing_fields():
    with pytest.raises(ProtocolError, match="median"):
        parse_line(RESULT.replace('"median":51300', '"median":60000'))
    with pytest.raises(ProtocolError, match="'arena_bytes' is missing"):
        parse_line(RESULT.replace('"arena_bytes":84312,', ""))
    assert issubclass(ProtocolError, MeasurementError)


def test_crc_is_zlib_as_8_lowercase_hex():
    data = b"\x00" * 7
    assert model_crc32(data) == f"{zlib.crc32(data):08x}"
    assert model_crc32(b"") == "00000000" and len(model_crc32(b"abc")) == 8


def test_encode_roundtrip():
    line = encode_line({"event": "ready", "board": "rp2040", "fw": "1"})
    assert line.endswith("\n") and parse_line(line.rstrip("\n")).board == "rp2040"


def test_hostile_lines_are_malformed_not_a_crash_of_the_host():
    deep = "MCUNAS/1 " + '{"a":' * 20000 + "1" + "}" * 20000
    assert isinstance(parse_line(deep), Malformed)
    huge = 'MCUNAS/1 {"event":"ready","board":"' + "x" * 100_000 + '"}'
    event = parse_line(huge)
    assert isinstance(event, Malformed) and "over" in event.reason


def test_an_absurd_board_figure_is_refused():
    from mcunas.errors import ImplausibleFigure
    from mcunas.figures import Figures

    with pytest.raises(ProtocolError, match="arena_bytes"):
        parse_line(RESULT.replace('"arena_bytes":84312', '"arena_bytes":1e30'))
    result = parse_line(RESULT.replace('"arena_bytes":84312', f'"arena_bytes":{10**30}'))
    with pytest.raises(ImplausibleFigure, match="arena_bytes"):  # a whole number, but absurd
        Figures("board:/dev/ttyACM0", False, 1.0, result.arena_bytes, 10, 10)
