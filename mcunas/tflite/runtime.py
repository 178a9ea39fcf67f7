"""The host TensorFlow Lite Micro runtime: interpreters, their logs, the arena report.

The ``tflite-micro`` package is the real TFLM runtime (reference kernels and the
real memory planner) built for the host. It logs from C++ to file descriptor 2,
so its messages are captured at the fd level (``os.dup2`` onto a temporary
file); ``contextlib.redirect_stderr`` would not see them. File descriptors are
shared by every thread of the process, so each redirection holds :data:`FD_LOCK`:
a rack measures boards from several threads, and two interleaved redirections
would each lose the other's text (or restore the wrong descriptor).

Example::

    interp, log = create_interpreter(model_bytes, arena_size=256 * 1024)
    report = arena_report(interp)
    report.total_bytes, report.kinds["NodeAndRegistration struct"].count
"""

from __future__ import annotations

import contextlib
import faulthandler
import os
import pickle
import re
import signal
import subprocess
import sys
import tempfile
import threading
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "AllocationKind",
    "ArenaReport",
    "arena_report",
    "capture_fd2",
    "create_interpreter",
    "FD_LOCK",
    "missing_ops_in_log",
    "NativeCrash",
    "parse_allocations",
    "run_forked",
    "runtime_has_op",
]

# [RecordingMicroAllocator] Arena allocation total 3984 bytes
_TOTAL_RE = re.compile(r"Arena allocation (?P<part>total|head|tail) (?P<bytes>\d+) bytes")
# [RecordingMicroAllocator] 'TfLiteEvalTensor data' used 744 bytes with alignment
# overhead (requested 744 bytes for 31 allocations)
_KIND_RE = re.compile(
    r"'(?P<kind>[^']+)' used (?P<used>\d+) bytes with alignment overhead "
    r"\(requested (?P<requested>\d+) bytes for (?P<count>\d+) "
)
# Didn't find op for builtin opcode 'GELU'
_MISSING_OP_RE = re.compile(r"Didn't find op for (?:builtin|custom) opcode '(?P<op>[^']+)'")


@dataclass(frozen=True)
class AllocationKind:
    """One line of the RecordingMicroAllocator report."""

    used_bytes: int
    requested_bytes: int
    count: int


@dataclass(frozen=True)
class ArenaReport:
    """The arena usage the host TFLM allocator reports after ``AllocateTensors``."""

    total_bytes: int
    head_bytes: int
    tail_bytes: int
    kinds: dict[str, AllocationKind] = field(default_factory=dict)


#: Held while file descriptor 1 or 2 is redirected (re-entrant: captures nest).
FD_LOCK = threading.RLock()


def _fresh_fd_lock() -> None:
    """A forked child's own lock: the parent's may be held by a thread the child lacks."""
    global FD_LOCK
    FD_LOCK = threading.RLock()


os.register_at_fork(after_in_child=_fresh_fd_lock)


@contextlib.contextmanager
def capture_fd2() -> Iterator[list[str]]:
    """Capture everything written to file descriptor 2 inside the block.

    Yields a list that holds the captured text (one string) after the block.
    Other threads' redirections wait for the block to end (:data:`FD_LOCK`).
    """
    out: list[str] = []
    with FD_LOCK, tempfile.TemporaryFile() as tmp:
        sys.stderr.flush()
        saved = os.dup(2)
        os.dup2(tmp.fileno(), 2)
        try:
            yield out
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            tmp.seek(0)
            out.append(tmp.read().decode(errors="replace"))


class NativeCrash(RuntimeError):
    """The TFLM runtime died of a signal (abort, segfault) in a forked child."""


def run_forked(fn: Callable[..., Any], *args: Any) -> Any:
    """Run ``fn(*args)`` in a forked child and return its (picklable) result.

    The host TFLite Micro runtime is native code: some kernels end a failed
    check with ``abort()`` (a SOFTMAX input scale below 2**-26) and the
    allocator can crash on a pathological arena. In a child, such a crash
    becomes :class:`NativeCrash` instead of killing the caller. Exceptions
    raised by ``fn`` are re-raised here. Where ``os.fork`` is missing the call
    runs in-process.

    Raises:
        NativeCrash: the child died of a signal; the message names it and the
            last line the runtime printed.
    """
    if not hasattr(os, "fork"):
        return fn(*args)
    read_fd, write_fd = os.pipe()
    log_file = tempfile.TemporaryFile()
    for stream in (sys.stdout, sys.stderr):  # None when the caller closed it
        if stream is not None:
            stream.flush()
    with warnings.catch_warnings():
        # Python 3.12+ warns on fork() in a threaded process (TensorFlow's pools). The
        # child touches no TensorFlow (only the TFLM runtime and pickle) and ends with _exit.
        warnings.filterwarnings("ignore", ".*fork.*", DeprecationWarning)
        pid = os.fork()
    if pid == 0:  # child: never returns into the caller
        code = 1
        try:
            os.close(read_fd)
            os.dup2(log_file.fileno(), 2)
            faulthandler.disable()  # the crash is reported by the parent
            try:
                payload = (True, fn(*args))
            except Exception as exc:  # noqa: BLE001 - handed to the parent
                payload = (False, exc)
            with os.fdopen(write_fd, "wb") as pipe:
                pickle.dump(payload, pipe)
            code = 0
        finally:
            os._exit(code)
    os.close(write_fd)
    with os.fdopen(read_fd, "rb") as pipe:
        data = pipe.read()
    _, status = os.waitpid(pid, 0)
    with log_file:
        log_file.seek(0)
        log = log_file.read().decode("utf-8", "replace")
    if os.WIFSIGNALED(status) or not data:
        name = signal.Signals(os.WTERMSIG(status)).name if os.WIFSIGNALED(status) else "exit"
        tail = [ln.strip() for ln in log.splitlines() if ln.strip()]
        raise NativeCrash(f"{name}" + (f": {tail[-1][:200]}" if tail else ""))
    ok, value = pickle.loads(data)
    if not ok:
        raise value
    return value


def create_interpreter(model_bytes: bytes, arena_size: int) -> tuple[Any | None, str]:
    """Create a host TFLM interpreter; return it (or None if it failed) and its log.

    The interpreter allocates its tensors on creation, so a None result means the
    arena was too small, an op has no kernel, or a kernel's Prepare failed:
    the log says which.
    """
    from tflite_micro.python.tflite_micro import runtime

    with capture_fd2() as log:
        try:
            interp = runtime.Interpreter.from_bytes(model_bytes, arena_size=arena_size)
        except (RuntimeError, ValueError, TypeError):  # TypeError: a buffer with no subgraph
            interp = None
    return interp, log[0]


def missing_ops_in_log(log: str) -> list[str]:
    """Op names the runtime reported it has no kernel for."""
    return list(dict.fromkeys(m.group("op") for m in _MISSING_OP_RE.finditer(log)))


def parse_allocations(text: str) -> ArenaReport:
    """Parse the text of ``print_allocations()`` into an :class:`ArenaReport`.

    Raises:
        ValueError: the text has no total/head/tail lines.
    """
    parts = {m.group("part"): int(m.group("bytes")) for m in _TOTAL_RE.finditer(text)}
    if set(parts) != {"total", "head", "tail"}:
        raise ValueError(f"no arena report in TFLM output: {text[:200]!r}")
    kinds = {
        m.group("kind"): AllocationKind(
            int(m.group("used")), int(m.group("requested")), int(m.group("count"))
        )
        for m in _KIND_RE.finditer(text)
    }
    return ArenaReport(parts["total"], parts["head"], parts["tail"], kinds)


def arena_report(interp: Any) -> ArenaReport:
    """The RecordingMicroAllocator report of a created interpreter."""
    with capture_fd2() as log:
        interp.print_allocations()
    return parse_allocations(log[0])


def runtime_has_op(op_name: str) -> bool:
    """Ask the installed TFLM runtime whether it registers a builtin op.

    Loads a one-op model in a child process (a kernel's Prepare may crash on
    the dummy tensors after the op was found) and looks for the runtime's
    "Didn't find op" message.
    """
    code = (
        "from mcunas.tflite.runtime import create_interpreter; "
        "from mcunas.tflite.writer import one_op_model; import sys; "
        f"sys.stderr.write(create_interpreter(one_op_model({op_name!r}), 16384)[1])"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    return op_name not in missing_ops_in_log(proc.stderr)
