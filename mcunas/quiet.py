"""Keep the terminal to mcunas's own lines.

TensorFlow (and gRPC, and the host TFLite Micro runtime) log from C++ straight
to file descriptor 2, at any time: during training, tf.data's rewrites print
``E0000 ...] NodeDef mentions attribute use_unbounded_threadpool ...`` lines
that no environment variable reliably silences, and the libraries raise
Python warnings about their own deprecations. :func:`quiet_terminal` keeps
both off the terminal for one command:

- Python warnings are ignored, in this process and (through
  ``PYTHONWARNINGS``) in the processes it starts; the libraries' Python
  loggers are set to errors only.
- File descriptor 2 becomes a pipe. A thread passes each line on to the real
  standard error unless it is a native log line (:func:`is_native_log`). Child
  processes inherit the pipe, so the TFLite Micro worker's lines are filtered
  too. Fatal-signal tracebacks (``faulthandler``) bypass it.

``mcunas --debug`` skips all of this and shows everything.
"""

from __future__ import annotations

import contextlib
import faulthandler
import logging
import os
import re
import select
import sys
import threading
import warnings
from collections.abc import Iterator

__all__ = ["NATIVE_LOG", "is_native_log", "quiet_terminal"]

# A native log line, in the three forms seen on this stack:
#   E0000 00:00:1795666189.015950   17479 node_def_util.cc:682] NodeDef mentions ...  (absl)
#   2026-11-26 04:05:00.123456: I tensorflow/core/util/port.cc:153] oneDNN custom ...  (tsl)
#   WARNING: All log messages before absl::InitializeLog() is called are written to STDERR
NATIVE_LOG = re.compile(
    r"^(?:[IWE]\d{4} \d\d:\d\d:\d+\.\d+\s+\d+\s+\S+:\d+\]"
    r"|\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+: [IWE] \S+:\d+\]"
    r"|WARNING: All log messages before absl::InitializeLog\(\))"
)
# A partial line that may still turn out to be one of those (held until its newline).
_MAYBE_NATIVE = re.compile(r"^(?:[IWE]\d|\d{4}-|WARNING: All)")
# Python loggers of the libraries, kept to errors.
_LIBRARY_LOGGERS = ("absl", "tensorflow", "keras", "keras_tuner", "h5py", "matplotlib", "grpc")
# Seconds the filter thread gets to pass on what is left in the pipe at the end,
# and between its checks for the end.
_DRAIN_S = 2.0
_POLL_S = 0.05


def is_native_log(line: str) -> bool:
    """True for a line a native library logged (not mcunas's, not a Python traceback).

    Fatal (``F``) lines are kept: they say why the process is about to abort.
    """
    return NATIVE_LOG.match(line) is not None


@contextlib.contextmanager
def quiet_terminal(enabled: bool = True) -> Iterator[None]:
    """Keep native log lines and dependency warnings off standard error in the block.

    Args:
        enabled: bool, False (``--debug``) leaves everything as it is (default True).
    """
    if not enabled:
        yield
        return
    saved_env = {k: os.environ.get(k) for k in ("PYTHONWARNINGS", "TF_CPP_MIN_LOG_LEVEL")}
    os.environ["PYTHONWARNINGS"] = "ignore"
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    levels = {name: logging.getLogger(name).level for name in _LIBRARY_LOGGERS}
    for name in _LIBRARY_LOGGERS:
        logging.getLogger(name).setLevel(logging.ERROR)
    try:
        with warnings.catch_warnings(), _filtered_fd2():
            warnings.simplefilter("ignore")
            yield
    finally:
        for name, level in levels.items():
            logging.getLogger(name).setLevel(level)
        for key, value in saved_env.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


@contextlib.contextmanager
def _filtered_fd2() -> Iterator[None]:
    """File descriptor 2 through a line filter; restored (and drained) at the end."""
    try:
        _flush_stderr()
        terminal = os.dup(2)
    except OSError:  # no standard error at all: nothing to keep quiet
        yield
        return
    read_end, write_end = os.pipe()
    os.dup2(write_end, 2)
    os.close(write_end)
    os.set_inheritable(terminal, False)
    pump = _Pump(read_end, terminal)
    pump.start()
    # A crash's traceback must not die in the pipe (unless a caller set up its own).
    crash_traceback = not faulthandler.is_enabled()
    if crash_traceback:
        faulthandler.enable(file=terminal)
    try:
        yield
    finally:
        _flush_stderr()
        os.dup2(terminal, 2)  # closes this process's write end of the pipe
        pump.stop()
        if crash_traceback:
            faulthandler.disable()
        if not pump.is_alive():
            os.close(terminal)


def _flush_stderr() -> None:
    with contextlib.suppress(Exception):  # a closed or replaced stream
        sys.stderr.flush()


class _Pump(threading.Thread):
    """Reads the pipe and writes every line that is not a native log line to ``out``."""

    def __init__(self, read_end: int, out: int) -> None:
        super().__init__(name="mcunas-stderr-filter", daemon=True)
        self._read_end, self._out = read_end, out
        self._held = b""
        self._stopping = threading.Event()

    def run(self) -> None:
        """Pass lines on until stopped and the pipe is empty, or every writer closed it.

        Should the filter itself fail, standard error goes back to the terminal
        unfiltered: a pipe nobody reads would block every writer once full.
        """
        try:
            self._pump()
        except Exception:  # noqa: BLE001 - anything: never leave the pipe unread
            with contextlib.suppress(OSError):
                os.dup2(self._out, 2)
            self._pass_through()
        finally:
            os.close(self._read_end)

    def _pump(self) -> None:
        while True:
            ready, _, _ = select.select([self._read_end], [], [], _POLL_S)
            if not ready:
                if self._stopping.is_set():
                    break
                continue
            chunk = os.read(self._read_end, 65536)
            if not chunk:
                break
            self._feed(chunk)
        if self._held:
            self._emit(self._held)

    def _pass_through(self) -> None:
        """What writers still send through the pipe, as it is, until they close it."""
        with contextlib.suppress(OSError):
            while chunk := os.read(self._read_end, 65536):
                os.write(self._out, chunk)

    def stop(self) -> None:
        """Pass on what is in the pipe now, then end (waits at most :data:`_DRAIN_S`).

        Child processes (multiprocessing's resource tracker) may hold the pipe
        open for as long as this process lives, so the end is not waited for.
        """
        self._stopping.set()
        self.join(_DRAIN_S)

    def _feed(self, chunk: bytes) -> None:
        *lines, rest = (self._held + chunk).split(b"\n")
        for line in lines:
            self._emit(line + b"\n")
        self._held = b""
        if rest and _MAYBE_NATIVE.match(rest.decode(errors="replace")):
            self._held = rest  # wait for the newline to judge it
        elif rest:
            self._emit(rest)  # a partial line of ours (a prompt, a progress bar)

    def _emit(self, data: bytes) -> None:
        if is_native_log(data.decode(errors="replace")):
            return
        with contextlib.suppress(OSError):  # the terminal went away: nothing to tell it
            while data:
                data = data[os.write(self._out, data) :]
