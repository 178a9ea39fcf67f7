"""Finishing a search, a stage the run owns: re-score the finalists, refit the choice.

Every search ends the same way, whichever strategy tried the designs and
whichever executor ran them: :class:`~mcunas.search.run.SearchRun` runs
:class:`FinishStage` once the strategy's search has returned. It re-scores
the front's finalists (:mod:`.rescore`) and refits the chosen design, taught
by a teacher and averaged over seeds where asked (:mod:`.refit`,
:mod:`.distill`, :mod:`.ensemble`). No strategy calls these steps.

Where the retraining runs is the executor's to say
(``Executor.retraining(run, families)``): the local executor retrains with
the runner the trials were trained by when the search left it open (board
included), else with one built here without a board; a chief builds one on its
own cores once its workers are done; a worker finishes nothing (None). The
place is opened only when a step has something to train, and once for both.

Example::

    FinishStage().run(run, progress)   # after strategy.search(run, executor, progress)
"""

from __future__ import annotations

import contextlib
from typing import Any

from mcunas.search.finish.refit import refit_chosen
from mcunas.search.finish.rescore import rescore_here
from mcunas.search.finish.run_parts import Parts
from mcunas.search.settings.progress import Progress

__all__ = ["FinishStage"]


class _Place:
    """The executor's place to retrain, entered when first asked for, left at the end."""

    def __init__(self, manager: contextlib.AbstractContextManager[Parts]) -> None:
        self.manager = manager
        self.stack = contextlib.ExitStack()
        self.parts: Parts | None = None

    def __call__(self) -> Parts:
        """The (search space, candidate runner) to retrain with."""
        if self.parts is None:
            self.parts = self.stack.enter_context(self.manager)
        return self.parts


class FinishStage:
    """Re-scores and refits after a search (see the module); one :meth:`run` entry."""

    def run(self, run: Any, progress: Progress) -> None:  # a SearchRun (which imports this)
        """Finish ``run``'s search: re-score its finalists, then refit its choice.

        Args:
            run: SearchRun, its search done and its data loaded.
            progress: Progress, for the lines and the time budget.
        """
        manager = run.executor.retraining(run, run.families)
        if manager is None or run.dataset is None:  # a worker: its chief finishes
            return
        place = _Place(manager)
        with place.stack:
            rescore_here(run, progress, place=place)
            refit_chosen(run, progress, place=place)
