"""Drivers of real power meters: Joulescope (``joulescope``) and Nordic PPK2 (``ppk2-api``).

Both record from :meth:`start` to :meth:`stop` and stamp their samples with the
host's monotonic clock (the clock the serial ``mark`` lines are stamped with). Neither
package is a dependency of mcunas: install the one you use (``pip install
joulescope`` or ``pip install ppk2-api``); without it, ``--power`` fails with one
line. Every call into a driver goes through :func:`_call`, so a third-party
exception (ppk2-api raises bare ``Exception``) becomes one :class:`MeterError` line.
"""

from __future__ import annotations

import importlib
import threading
import time
from typing import Any

import numpy as np

from mcunas.measure.power.trace import MeterError, Trace

__all__ = ["JoulescopeMeter", "Ppk2Meter"]

# Seconds of samples per read of the recording thread.
CHUNK_S = 0.01
PPK2_SAMPLE_HZ = 100_000
# The supply voltages a PPK2 measures or sources (ppk2-api's vdd_low and vdd_high, mV).
PPK2_MIN_MV, PPK2_MAX_MV = 800, 5000


def _driver(module: str, package: str) -> Any:
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise MeterError(f"the {package} package is not installed: pip install {package}") from exc


def _call(meter: str, doing: str, fn: Any, *args: Any, **kwargs: Any) -> Any:
    """``fn(*args, **kwargs)``; any exception of the driver becomes one :class:`MeterError`."""
    try:
        return fn(*args, **kwargs)
    except MeterError:
        raise
    except Exception as exc:  # noqa: BLE001 - third-party drivers raise anything
        raise MeterError(f"{meter}: could not {doing}: {exc or type(exc).__name__}") from exc


class _Recorder:
    """A thread that calls ``read()`` until stopped, keeping (time, samples) chunks."""

    def __init__(self, read: Any) -> None:
        self._read = read
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.chunks: list[tuple[float, dict[str, np.ndarray]]] = []
        self.error: BaseException | None = None

    def start(self) -> None:
        self.chunks, self.error = [], None
        self._stop.clear()
        self._thread = threading.Thread(target=self._loop, name="power-meter", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        try:
            while not self._stop.is_set():
                chunk = self._read()
                if chunk:
                    self.chunks.append((time.monotonic(), chunk))
        except Exception as exc:  # noqa: BLE001 - reported by stop() as one line
            self.error = exc

    def stop(self, sample_hz: float, meter: str) -> Trace:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        if self.error is not None:
            raise MeterError(f"{meter} failed while recording: {self.error}")
        return _trace(self.chunks, sample_hz)


def _trace(chunks: list[tuple[float, dict[str, np.ndarray]]], sample_hz: float) -> Trace:
    """Join chunks; each chunk's samples end at its host time, spaced 1/sample_hz."""
    times, current, voltage, marker = [], [], [], []
    for stamp, chunk in chunks:
        n = len(chunk["current"])
        times.append(stamp - (np.arange(n)[::-1] + 1) / sample_hz)
        current.append(chunk["current"])
        voltage.append(chunk["voltage"])
        if "marker" in chunk:
            marker.append(chunk["marker"])
    if not times:
        empty = np.zeros(0)
        return Trace(empty, empty, empty)
    return Trace(
        t_s=np.concatenate(times),
        current_a=np.concatenate(current),
        voltage_v=np.concatenate(voltage),
        marker=np.concatenate(marker) if len(marker) == len(times) else None,
    )


class _Stamps:
    """A Joulescope stream process: pairs of (host time, newest sample id) as data arrives.

    Registered with ``device.stream_process_register`` (the driver's documented hook
    for code that follows the stream); the driver calls :meth:`stream_notify` from its
    USB thread after each block of samples.
    """

    def __init__(self) -> None:
        self.pairs: list[tuple[float, int]] = []

    def start(self, stream_buffer: Any) -> None:
        """The stream (re)started: forget earlier stamps."""
        self.pairs = []

    def stream_notify(self, stream_buffer: Any) -> bool:
        """Stamp the newest sample id; False: keep streaming."""
        self.pairs.append((time.monotonic(), int(stream_buffer.sample_id_range[1])))
        return False

    def stop(self) -> None:
        """Nothing to release."""

    def close(self) -> None:
        """Nothing to release."""


class JoulescopeMeter:
    """A Joulescope found by serial number (or the only one attached).

    Follows pyjoulescope's documented streaming API: ``scan(config="auto")``,
    ``open()``, ``start()`` / ``stop()`` around the run, then the stream buffer's
    ``samples_get(start_id, end_id, fields=["current", "voltage"])``. Repeated
    ``read(contiguous_duration=...)`` calls would restart the stream for every chunk
    and leave gaps between them.
    """

    def __init__(self, serial_number: str = "") -> None:
        js = _driver("joulescope", "joulescope")
        self.name = f"joulescope:{serial_number}" if serial_number else "joulescope"
        devices = _call(self.name, "scan for a Joulescope", js.scan, config="auto")
        if serial_number:
            devices = [d for d in devices if serial_number in str(d)]
        if len(devices) != 1:
            found = ", ".join(str(d) for d in devices) or "none"
            raise MeterError(f"{self.name}: need exactly one matching Joulescope, found {found}")
        self._device = devices[0]
        _call(self.name, "open it (busy, or unplugged?)", self._device.open)
        self._stamps = _Stamps()
        _call(self.name, "follow its stream", self._device.stream_process_register, self._stamps)
        self._first_id = 0

    def start(self) -> None:
        """Start streaming current and voltage into the driver's buffer."""
        _call(self.name, "start streaming", self._device.start)
        self._first_id = int(self._device.stream_buffer.sample_id_range[1])

    def stop(self) -> Trace:
        """Stop streaming; the samples since :meth:`start`, without a marker channel."""
        _call(self.name, "stop streaming", self._device.stop)
        hz = float(getattr(self._device, "sampling_frequency", 0) or 0)
        if hz <= 0:
            raise MeterError(f"{self.name}: the driver reports no sampling frequency")
        buffer = self._device.stream_buffer
        oldest, end = (int(v) for v in buffer.sample_id_range)
        begin = max(self._first_id, oldest)
        if end <= begin or not self._stamps.pairs:
            return _trace([], hz)
        data = _call(
            self.name, "read its samples", buffer.samples_get, begin, end, ["current", "voltage"]
        )
        current = np.asarray(data["signals"]["current"]["value"], dtype=float)
        voltage = np.asarray(data["signals"]["voltage"]["value"], dtype=float)
        ids = begin + np.arange(len(current))
        # host time of sample id 0: the least delayed stamp (USB latency only adds)
        zero = min(stamp - sid / hz for stamp, sid in self._stamps.pairs)
        keep = np.isfinite(current) & np.isfinite(voltage)  # the driver's missing samples
        return Trace(t_s=(zero + ids / hz)[keep], current_a=current[keep], voltage_v=voltage[keep])

    def close(self) -> None:
        """Close the instrument (a failure to close is not reported)."""
        try:
            self._device.stream_process_unregister(self._stamps)
            self._device.close()
        except Exception:  # noqa: BLE001 - closing a meter that failed or went away
            pass


class Ppk2Meter:
    """A PPK2 on ``port`` in ampere-meter mode; logic input D0 is the marker.

    ppk2-api needs the voltage of the measured supply in ampere-meter mode too: its
    current conversion corrects by it, and ``start_measuring`` raises "Input voltage
    not set!" without it. It is the profile's ``[power] supply_v``, in mV, set with
    ``set_source_voltage`` before the first measurement.
    """

    def __init__(self, port: str, supply_v: float = 3.3) -> None:
        api = _driver("ppk2_api.ppk2_api", "ppk2-api")
        self.name = f"ppk2:{port}"
        self._supply_v = supply_v
        millivolts = int(round(supply_v * 1000))
        if not PPK2_MIN_MV <= millivolts <= PPK2_MAX_MV:
            raise MeterError(
                f"{self.name}: a PPK2 measures supplies of {PPK2_MIN_MV / 1000:g} to "
                f"{PPK2_MAX_MV / 1000:g} V; the board's [power] supply_v is {supply_v:g} V"
            )
        opened = f"open {port} (absent, or busy?)"
        self._ppk = _call(
            self.name, opened, api.PPK2_API, port, timeout=1, write_timeout=1, exclusive=True
        )
        if not _call(self.name, "read its calibration", self._ppk.get_modifiers):
            self.close()
            raise MeterError(
                f"{self.name} did not answer with its calibration: is a PPK2 on {port}, "
                "powered and not in use by another program?"
            )
        _call(self.name, "switch to ampere-meter mode", self._ppk.use_ampere_meter)
        _call(self.name, "set the supply voltage", self._ppk.set_source_voltage, millivolts)
        self._recorder = _Recorder(self._read)

    def _read(self) -> dict[str, np.ndarray]:
        raw = self._ppk.get_data()
        if not raw:
            time.sleep(CHUNK_S / 2)
            return {}
        got = self._ppk.get_samples(raw)
        samples, digital = got if isinstance(got, tuple) else (got, None)
        current = np.asarray(samples, dtype=float) * 1e-6  # the driver gives uA
        chunk = {"current": current, "voltage": np.full(len(current), self._supply_v)}
        if digital:
            chunk["marker"] = np.asarray(self._ppk.digital_channels(digital)[0], dtype=bool)
        return chunk

    def start(self) -> None:
        """Start the PPK2's stream and record it."""
        _call(self.name, "start measuring", self._ppk.start_measuring)
        self._recorder.start()

    def stop(self) -> Trace:
        """Stop the stream; the trace's marker is logic input D0."""
        try:
            trace = self._recorder.stop(PPK2_SAMPLE_HZ, self.name)
        finally:
            _call(self.name, "stop measuring", self._ppk.stop_measuring)
        return trace

    def close(self) -> None:
        """Release the serial port."""
        ser = getattr(getattr(self, "_ppk", None), "ser", None)
        if ser is not None:
            try:
                ser.close()
            except Exception:  # noqa: BLE001 - a port that went away
                pass
