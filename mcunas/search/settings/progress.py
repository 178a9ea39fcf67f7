"""The live progress line printed after every trial, and the search clock."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TextIO

from mcunas.search.results.store import TrialRecord, TrialStatus
from mcunas.search.settings.stop import raise_if_asked

__all__ = ["Progress", "format_duration", "trial_summary"]


def format_duration(seconds: float) -> str:
    """``75`` -> ``1:15``; ``3725`` -> ``1:02:05``."""
    s = max(0, round(seconds))
    h, rem = divmod(s, 3600)
    m, sec = divmod(rem, 60)
    return f"{h}:{m:02d}:{sec:02d}" if h else f"{m}:{sec:02d}"


@dataclass
class Progress:
    """Tracks the search clock and prints one line per finished trial.

    Args:
        max_trials: int, the N of "trial n of N" (n counts trained candidates; a draw
            refused before training is shown with the same n).
        time_budget_s: float | None, seconds after which the search stops after
            the current trial.
        stream: TextIO | None, where lines go (default stderr); None -> silent.
        clock: Callable[[], float], time source (tests pass a fake).
    """

    max_trials: int
    time_budget_s: float | None = None
    stream: TextIO | None = field(default_factory=lambda: sys.stderr)
    clock: Callable[[], float] = time.monotonic
    started: float = field(init=False)
    trial_seconds: list[float] = field(default_factory=list, init=False)

    def __post_init__(self) -> None:
        self.started = self.clock()

    @property
    def elapsed_s(self) -> float:
        """Seconds since this resume of the search started."""
        return self.clock() - self.started

    def time_up(self) -> bool:
        """True once the time budget is spent."""
        return self.time_budget_s is not None and self.elapsed_s >= self.time_budget_s

    def time_left_s(self, done: int) -> float | None:
        """Estimated seconds to the end: mean trial time x trials left, capped by the budget."""
        left = max(0, self.max_trials - done)
        estimate = None
        if self.trial_seconds:
            estimate = left * sum(self.trial_seconds) / len(self.trial_seconds)
        if self.time_budget_s is not None:
            budget_left = max(0.0, self.time_budget_s - self.elapsed_s)
            estimate = budget_left if estimate is None else min(estimate, budget_left)
        return estimate

    def note(self, line: str) -> None:
        """Print one line of context (the data and the recipe at the start)."""
        if self.stream is not None:
            print(line, file=self.stream, flush=True)

    def trial_done(self, rec: TrialRecord, done: int, best: TrialRecord | None) -> str:
        """Record one finished trial and print (and return) its progress line.

        Raises:
            KeyboardInterrupt: a signal asked the search to stop and its own
                exception was lost (:mod:`mcunas.search.settings.stop`).
        """
        if rec.train_s or rec.status == TrialStatus.OK:  # a refused draw says nothing of ETA
            self.trial_seconds.append(rec.total_s)
        line = self.format_line(rec, done, best)
        if self.stream is not None:
            print(line, file=self.stream, flush=True)
        raise_if_asked()
        return line

    def format_line(self, rec: TrialRecord, done: int, best: TrialRecord | None) -> str:
        """E.g. ``[ 3/20] trial 02 ok  int8 96.4%  3.21 ms~  41.2 KB | best 96.4% | 0:45``."""
        width = len(str(self.max_trials))
        head = f"[{done:>{width}}/{self.max_trials}] trial {rec.trial_id} {rec.status!s:<10}"
        if rec.worker:  # a distributed search: which worker ran it
            head = f"{head} @{rec.worker}"
        body = trial_summary(rec)
        best_txt = "best -" if best is None else f"best {100 * (best.int8_accuracy or 0):.1f}%"
        left = self.time_left_s(done)
        left_txt = "" if left is None else f", ~{format_duration(left)} left"
        return f"{head} {body} | {best_txt} | {format_duration(self.elapsed_s)}{left_txt}"


def trial_summary(rec: TrialRecord) -> str:
    """A finished trial in a few words.

    INT8 accuracy, latency and SRAM (``~`` marks estimates), or the reason it
    did not finish ``ok``.
    """
    if rec.status == TrialStatus.OK:
        mark = "~" if rec.estimated else ""
        return (
            f"int8 {100 * (rec.int8_accuracy or 0):5.1f}%  {rec.latency_ms or 0:7.2f} ms{mark}"
            f"  {(rec.peak_sram_bytes or 0) / 1024:6.1f} KB SRAM{mark}"
        )
    return _short(rec.reason or "")


def _short(text: str, limit: int = 70) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."
