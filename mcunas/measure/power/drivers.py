"""Drivers of real power meters: Joulescope (``joulescope``) and Nordic PPK2 (``ppk2-api``).

Both record in a background thread from :meth:`start` to :meth:`stop`, stamping each
chunk of samples with the host's monotonic clock (the clock the serial ``mark``
lines are stamped with). Neither package is a dependency of mcunas: install the
one you use (``pip install joulescope`` or ``pip install ppk2-api``); without it,
``--power`` fails with one line.
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


def _driver(module: str, package: str) -> Any:
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise MeterError(f"the {package} package is not installed: pip install {package}") from exc


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


class JoulescopeMeter:
    """A Joulescope found by serial number (or the only one attached)."""

    def __init__(self, serial_number: str = "") -> None:
        js = _driver("joulescope", "joulescope")
        self.name = f"joulescope:{serial_number}" if serial_number else "joulescope"
        try:
            devices = js.scan(config="auto")
        except Exception as exc:  # noqa: BLE001 - the driver's own errors, as one line
            raise MeterError(f"cannot scan for a Joulescope: {exc}") from exc
        if serial_number:
            devices = [d for d in devices if serial_number in str(d)]
        if len(devices) != 1:
            found = ", ".join(str(d) for d in devices) or "none"
            raise MeterError(f"{self.name}: need exactly one matching Joulescope, found {found}")
        self._device = devices[0]
        try:
            self._device.open()
        except Exception as exc:  # noqa: BLE001
            raise MeterError(f"{self.name} is busy or cannot be opened: {exc}") from exc
        self._recorder = _Recorder(self._read)
        self._hz = float(getattr(self._device, "sampling_frequency", 0) or 1_000_000)

    def _read(self) -> dict[str, np.ndarray]:
        data = np.asarray(self._device.read(contiguous_duration=CHUNK_S))
        return {"current": data[:, 0], "voltage": data[:, 1]}

    def start(self) -> None:
        """Start recording current and voltage."""
        self._recorder.start()

    def stop(self) -> Trace:
        """Stop recording; the trace carries no marker (serial marks set the window)."""
        return self._recorder.stop(self._hz, self.name)

    def close(self) -> None:
        """Close the instrument."""
        try:
            self._device.close()
        except Exception:  # noqa: BLE001 - closing a meter that failed to open
            pass


class Ppk2Meter:
    """A PPK2 on ``port`` in ampere-meter mode; logic input D0 is the marker."""

    def __init__(self, port: str, supply_v: float = 3.3) -> None:
        api = _driver("ppk2_api.ppk2_api", "ppk2-api")
        self.name = f"ppk2:{port}"
        self._supply_v = supply_v
        try:
            self._ppk = api.PPK2_API(port, timeout=1, write_timeout=1, exclusive=True)
            self._ppk.get_modifiers()
            self._ppk.use_ampere_meter()
        except Exception as exc:  # noqa: BLE001 - serial and driver errors, as one line
            raise MeterError(f"{self.name} is absent or busy: {exc}") from exc
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
        if digital is not None:
            chunk["marker"] = np.asarray(self._ppk.digital_channels(digital)[0], dtype=bool)
        return chunk

    def start(self) -> None:
        """Start the PPK2's stream and record it."""
        self._ppk.start_measuring()
        self._recorder.start()

    def stop(self) -> Trace:
        """Stop the stream; the trace's marker is logic input D0."""
        trace = self._recorder.stop(PPK2_SAMPLE_HZ, self.name)
        self._ppk.stop_measuring()
        return trace

    def close(self) -> None:
        """Release the serial port."""
        ser = getattr(self._ppk, "ser", None)
        if ser is not None:
            ser.close()
