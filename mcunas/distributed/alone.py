"""A chief left alone (work handed back, no worker to take it), and a worker without its chief.

A killed worker's trial (or supernet job) goes back to the queue for the next
worker; when there is none, the chief says so every minute, with the command
that starts one, and after ``--wait`` (default 15 minutes) stops with the line
that continues the search (``--resume``: finished trials are kept, the waiting
one is run again). The chief never waits for good. A worker whose chief stops answering says
so once (how long it waits, how to stop it) and stops after its wait.

Example::

    watch = AloneWatch(900, print, "mcunas search --out runs/big --resume")
    watch.check(connected=0, waiting=["trial 5"])  # every poll of the chief's loop
"""

from __future__ import annotations

import time
from collections.abc import Callable

from mcunas.errors import ResumableStop

__all__ = ["DEFAULT_WAIT_S", "NOTE_EVERY_S", "AloneWatch", "ChiefAbsence", "NoWorkers"]

DEFAULT_WAIT_S = 900.0  # as long as a worker waits for a restarting chief
NOTE_EVERY_S = 60.0
SAY_AFTER_S = 5.0  # a worker says its chief is gone after this long without an answer


class NoWorkers(ResumableStop):
    """No worker came to take the work handed back (one line with the resume command)."""


class AloneWatch:
    """Counts how long handed-back work waits with no worker connected.

    Args:
        wait_s: float, seconds after which the chief stops.
        note: prints one line on the chief.
        resume: str, the command that continues the search.
        connect: str, the address workers connect to (for the hint).
        clock: the monotonic clock (tests pass their own).
    """

    def __init__(
        self,
        wait_s: float,
        note: Callable[[str], None],
        resume: str,
        connect: str = "",
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.wait_s, self.note, self.resume, self.connect = wait_s, note, resume, connect
        self.clock = clock
        self.since: float | None = None
        self.noted: float | None = None

    def check(self, connected: int, waiting: list[str]) -> None:
        """One look: note every minute while alone; stop after the wait.

        Args:
            connected: int, workers connected now.
            waiting: what was handed back and waits ("trial 5"), empty if nothing.

        Raises:
            NoWorkers: alone with work waiting for ``wait_s``.
        """
        if connected or not waiting:
            self.since = self.noted = None
            return
        now = self.clock()
        if self.since is None:
            self.since = now
        alone_s = now - self.since
        what = ", ".join(waiting[:3]) + (" ..." if len(waiting) > 3 else "")
        if alone_s >= self.wait_s:
            raise NoWorkers(
                f"no worker connected for {alone_s:.0f} s with {what} waiting: the chief stops "
                f"(--wait). Finished trials are kept; continue with: {self.resume}"
            )
        if self.noted is None or now - self.noted >= NOTE_EVERY_S:
            self.noted = now
            start = f"`mcunas worker --connect {self.connect}`" if self.connect else "a worker"
            self.note(
                f"No worker connected, {what} waiting: start {start}. The chief stops in "
                f"{_minutes(self.wait_s - alone_s)} otherwise (--wait; --resume continues)."
            )


def _minutes(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.0f} min"


class ChiefAbsence:
    """A worker's view of a chief that stopped answering: say so once, give up after the wait.

    Args:
        name: str, this worker's name.
        address: str, the chief's address.
        wait_s: float, how long the worker waits for the chief to come back.
        note: prints one line on the worker.
        clock: the monotonic clock (tests pass their own).
    """

    def __init__(
        self,
        name: str,
        address: str,
        wait_s: float,
        note: Callable[[str], None],
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.name, self.address, self.wait_s, self.note = name, address, wait_s, note
        self.clock = clock
        self.since: float | None = None
        self.said = False

    def answered(self) -> None:
        """The chief answered: say it is back, if its absence was announced."""
        if self.said:
            self.note(f"Worker {self.name}: the chief at {self.address} answers again.")
        self.since, self.said = None, False

    def missed(self) -> bool:
        """The chief did not answer a heartbeat; True once the wait is over."""
        now = self.clock()
        if self.since is None:
            self.since = now
        gone_s = now - self.since
        if not self.said and gone_s >= SAY_AFTER_S:
            self.said = True
            self.note(
                f"Worker {self.name}: the chief at {self.address} does not answer (stopped, or "
                f"restarting). This worker waits up to {_minutes(self.wait_s)} for it: "
                "`mcunas search --out DIR --resume` on the chief's machine takes it back. "
                "Ctrl-C stops this worker now."
            )
        return gone_s >= self.wait_s

    def gone_line(self) -> str:
        """The worker's last line when the chief did not come back."""
        return (
            f"the chief at {self.address} did not come back within {_minutes(self.wait_s)}: "
            "this worker stops (start it again once the chief runs)"
        )
