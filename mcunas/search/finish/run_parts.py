"""What finishing reads of a search run, and the parts it retrains with.

:class:`~mcunas.search.run.SearchRun` meets :class:`FinishingRun`; the finish's
modules take it by this protocol (the run imports the finish, so they cannot
import the run). :data:`Parts` is the (search space, candidate runner) pair a
retraining builds on: the executor's place, or one the run builds.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from mcunas.search.results.store import TrialRecord, TrialStore
from mcunas.search.settings.config import SearchConfig
from mcunas.search.trial.retrain import RetrainRunner

if TYPE_CHECKING:
    from mcunas.boards.catalog import BoardProfile
    from mcunas.data.datasets import Dataset
    from mcunas.search.frontends.searched import FrontendSearch
    from mcunas.space.hypermodel import McuSearchSpace

__all__ = ["FinishingRun", "Parts"]

Parts = tuple["McuSearchSpace", RetrainRunner]


class FinishingRun(Protocol):
    """A search run as finishing reads it: settings, store, data and the parts to retrain."""

    @property
    def config(self) -> SearchConfig:
        """The search's settings."""
        ...

    @property
    def store(self) -> TrialStore:
        """The search's trials."""
        ...

    @property
    def out_dir(self) -> Path:
        """The search's folder."""
        ...

    @property
    def board(self) -> BoardProfile:
        """The board searched for."""
        ...

    @property
    def dataset(self) -> Dataset | None:
        """The search's data (None before they are loaded)."""
        ...

    @property
    def fronts(self) -> FrontendSearch | None:
        """The searched front ends (``--frontend tflm`` on WAV clips), or None."""
        ...

    def components(
        self, families: tuple[str, ...] | None = None, measure: bool = True
    ) -> tuple[McuSearchSpace, RetrainRunner, Callable[[], None]]:
        """A search space, a candidate runner and a clean-up callable."""
        ...

    def data_of(self, rec: TrialRecord) -> Dataset:
        """The data trial ``rec`` trained on."""
        ...
