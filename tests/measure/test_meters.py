"""The real meters' drivers against fakes that behave as ppk2-api and pyjoulescope do.

The fakes copy the libraries' documented behaviour where it matters to mcunas:
ppk2-api's ``start_measuring`` raises ``Exception("Input voltage not set!")`` in
ampere-meter mode until ``set_source_voltage`` ran, and ``get_modifiers`` returns
None when the meter sends no calibration; pyjoulescope streams from ``start`` to
``stop`` into a stream buffer read with ``samples_get`` and notifies registered
stream processes as samples arrive.
"""

from __future__ import annotations

import sys
import time
import types
from typing import Any

import numpy as np
import pytest

from mcunas.measure.power.drivers import JoulescopeMeter, Ppk2Meter
from mcunas.measure.power.meter import run_energy
from mcunas.measure.power.trace import MeterError


class FakePpk2:
    """ppk2_api.ppk2_api.PPK2_API as far as mcunas uses it (modes, voltage, samples)."""

    silent = False  # a meter that sends no calibration metadata
    opened: list[FakePpk2] = []  # every instance, newest last (the fixture gives a fresh list)

    def __init__(self, port: str, **serial_kwargs: Any) -> None:
        if port == "/dev/none":
            raise OSError(2, "could not open port /dev/none")
        self.mode: str | None = None
        self.current_vdd: int | None = None
        self.measuring = False
        self.calls: list[str] = []
        self.ser = types.SimpleNamespace(close=lambda: self.calls.append("close"))
        self.opened.append(self)
        self._chunks = [bytes(40)] * 20

    def get_modifiers(self) -> bool | None:
        self.calls.append("get_modifiers")
        return None if self.silent else True

    def use_ampere_meter(self) -> None:
        self.mode = "AMPERE_MODE"

    def set_source_voltage(self, mv: int) -> None:
        assert isinstance(mv, int), "ppk2-api packs the voltage into command bytes"
        self.calls.append(f"vdd {mv}")
        self.current_vdd = mv

    def start_measuring(self) -> None:
        if not self.current_vdd:  # ppk2-api's own check, word for word
            if self.mode == "SOURCE_MODE":
                raise Exception("Output voltage not set!")
            if self.mode == "AMPERE_MODE":
                raise Exception("Input voltage not set!")
        self.measuring = True

    def stop_measuring(self) -> None:
        self.measuring = False

    def get_data(self) -> bytes:
        return self._chunks.pop() if self.measuring and self._chunks else b""

    def get_samples(self, buf: bytes) -> tuple[list[float], list[int]]:
        n = len(buf) // 4
        return [2000.0] * n, [1] * n  # 2 mA (uA here), D0 high

    def digital_channels(self, bits: list[int]) -> list[list[int]]:
        return [[b & 1 for b in bits]] + [[0] * len(bits) for _ in range(7)]


@pytest.fixture
def ppk2(monkeypatch: pytest.MonkeyPatch) -> type[FakePpk2]:
    package = types.ModuleType("ppk2_api")
    module = types.ModuleType("ppk2_api.ppk2_api")
    fake = type("PPK2_API", (FakePpk2,), {"silent": False, "opened": []})
    module.PPK2_API = fake
    package.ppk2_api = module
    monkeypatch.setitem(sys.modules, "ppk2_api", package)
    monkeypatch.setitem(sys.modules, "ppk2_api.ppk2_api", module)
    return fake


def test_the_fake_ppk2_refuses_to_start_without_a_voltage(ppk2) -> None:
    raw = ppk2("/dev/ttyACM1")
    raw.use_ampere_meter()
    with pytest.raises(Exception, match="Input voltage not set!"):
        raw.start_measuring()


def test_ppk2_sets_the_profile_supply_before_measuring(ppk2) -> None:
    meter = Ppk2Meter("/dev/ttyACM1", supply_v=1.8)
    driver = ppk2.opened[-1]
    assert driver.calls[:2] == ["get_modifiers", "vdd 1800"]
    meter.start()
    time.sleep(0.05)
    trace = meter.stop()
    meter.close()
    assert len(trace.t_s) > 0 and np.allclose(trace.current_a, 2e-3)
    assert np.allclose(trace.voltage_v, 1.8) and trace.marker is not None
    assert not driver.measuring and driver.calls[-1] == "close"


@pytest.mark.parametrize(
    "port, supply_v, silent, words",
    [
        ("/dev/none", 3.3, False, "could not open /dev/none"),
        ("/dev/ttyACM1", 3.3, True, "did not answer with its calibration"),
        ("/dev/ttyACM1", 12.0, False, "supplies of 0.8 to 5 V"),
    ],
)
def test_ppk2_faults_are_one_line(ppk2, port, supply_v, silent, words) -> None:
    ppk2.silent = silent
    with pytest.raises(MeterError) as exc:
        Ppk2Meter(port, supply_v=supply_v)
    assert words in str(exc.value) and "\n" not in str(exc.value)


def test_a_driver_exception_while_measuring_is_one_line(ppk2, monkeypatch) -> None:
    meter = Ppk2Meter("/dev/ttyACM1")

    def unplugged() -> None:
        raise Exception("device reports readiness to read but returned no data")

    monkeypatch.setattr(ppk2.opened[-1], "start_measuring", unplugged)
    with pytest.raises(MeterError, match="could not start measuring: device reports"):
        meter.start()


class FakeStreamBuffer:
    def __init__(self) -> None:
        self.current: list[float] = []
        self.voltage: list[float] = []

    @property
    def sample_id_range(self) -> tuple[int, int]:
        return 0, len(self.current)

    def samples_get(self, start: int, stop: int, fields: list[str]) -> dict[str, Any]:
        signals = {"current": self.current, "voltage": self.voltage}
        return {"signals": {f: {"value": np.array(signals[f][start:stop])} for f in fields}}


class FakeJoulescope:
    """A JS220 as pyjoulescope's v1 Device shows it: 1 MHz, streaming between start and stop."""

    sampling_frequency = 1_000_000

    def __init__(self) -> None:
        self.stream_buffer = FakeStreamBuffer()
        self.processes: list[Any] = []
        self.streaming = False
        self.opened = False

    def __str__(self) -> str:
        return "JS220-001234"

    def open(self) -> None:
        self.opened = True

    def close(self) -> None:
        self.opened = False

    def stream_process_register(self, obj: Any) -> None:
        self.processes.append(obj)

    def stream_process_unregister(self, obj: Any) -> None:
        self.processes.remove(obj)

    def start(self, stop_fn: Any = None, duration: Any = None, contiguous_duration: Any = None):
        self.streaming = True
        for p in self.processes:
            p.start(self.stream_buffer)

    def stop(self) -> None:
        self.streaming = False

    def push(self, samples: int, amps: float) -> None:
        assert self.streaming
        self.stream_buffer.current += [amps] * samples
        self.stream_buffer.voltage += [3.3] * samples
        for p in self.processes:
            p.stream_notify(self.stream_buffer)


def test_joulescope_streams_once_and_stamps_host_time(monkeypatch) -> None:
    device = FakeJoulescope()
    js = types.ModuleType("joulescope")
    js.scan = lambda config=None: [device]
    monkeypatch.setitem(sys.modules, "joulescope", js)
    meter = JoulescopeMeter()
    meter.start()
    t0 = time.monotonic()
    for _ in range(5):  # 5 blocks of 10 ms at 10 mA
        device.push(10_000, 0.01)
    t1 = time.monotonic()
    trace = meter.stop()
    meter.close()
    assert len(trace.t_s) == 50_000 and np.all(np.diff(trace.t_s) > 0)
    assert trace.t_s[-1] <= t1 + 1e-6 and trace.t_s[0] >= t0 - 0.06
    uj, method = run_energy(trace, [("start", trace.t_s[0]), ("end", trace.t_s[-1])], runs=1)
    assert uj == pytest.approx(3.3 * 0.01 * 0.05 * 1e6, rel=0.01) and method == "serial mark lines"
    assert not device.opened and device.processes == []


def test_joulescope_faults_are_one_line(monkeypatch) -> None:
    js = types.ModuleType("joulescope")

    def scan(config: Any = None) -> list[Any]:
        raise RuntimeError("libusb: access denied")

    js.scan = scan
    monkeypatch.setitem(sys.modules, "joulescope", js)
    with pytest.raises(MeterError, match="could not scan for a Joulescope: libusb"):
        JoulescopeMeter()
    js.scan = lambda config=None: []
    with pytest.raises(MeterError, match="found none"):
        JoulescopeMeter("ABC")
