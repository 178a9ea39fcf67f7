"""The trial store as a trial's code sees it: a protocol, met here and on a worker.

:class:`~mcunas.search.results.store.TrialStore` (this process's SQLite file) and a
distributed search's :class:`~mcunas.distributed.remote_store.RemoteStore`
(a worker's proxy of its chief's store) both meet :class:`Store`: the trial
pipeline, the tuner and a strategy's work write and read trials through it,
wherever they run.
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from mcunas.figures import Figures
from mcunas.search.results.store import TrialRecord, TrialStatus, TrialStore
from mcunas.space.values import HpValue

__all__ = ["Store"]


class Store(Protocol):
    """Where trials are written and read (this process's store, or the chief's).

    ``values`` are further columns of the trial's row (numbers, text, flags).
    """

    def start_trial(
        self, trial_id: str, hyperparameters: dict[str, HpValue], **values: object
    ) -> None:
        """Start (or restart) a trial."""
        ...

    def begin(self, trial_id: str) -> None:
        """Start the clock of a trial's wall time here."""
        ...

    def update(self, trial_id: str, **values: object) -> None:
        """Set some columns of one trial."""
        ...

    def record_figures(
        self, trial_id: str, figures: Figures, *, before_training: bool = False
    ) -> None:
        """Record a trial's cost figures."""
        ...

    def record_model(
        self,
        trial_id: str,
        models_dir: Path,
        model_bytes: bytes,
        figures: Figures,
        **values: object,
    ) -> Path:
        """Keep a trained model and its figures; where the file is."""
        ...

    def finish_trial(self, trial_id: str, status: TrialStatus, **values: object) -> None:
        """End a trial."""
        ...

    def get(self, trial_id: str) -> TrialRecord | None:
        """One trial, or None."""
        ...

    def trials(self, status: TrialStatus | None = None) -> list[TrialRecord]:
        """Every trial (or those of one status), in trial order."""
        ...


_: type[Store] = TrialStore  # checked against the protocol by type checkers
