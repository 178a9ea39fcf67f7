"""A search run's set-up: its data, search space, measurers and reference design.

:class:`RunSetup` is the part of :class:`~mcunas.search.run.SearchRun` that
prepares a search (the run extends it): the data and recipe, the space, the
candidate runner and its board, and the start-up lines. The functions below it
take the run's settings and board, not the run, so each can be read alone.
TensorFlow, Keras and the space are imported where used: the CLI loads this
module without them.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from mcunas.boards.catalog import BoardProfile
from mcunas.search.settings.config import SearchConfig
from mcunas.search.settings.plugins import starts_from_reference

if TYPE_CHECKING:
    from mcunas.data.datasets import Dataset
    from mcunas.figures import Figures
    from mcunas.measure.base import Measurer
    from mcunas.search.frontends.searched import FrontendSearch
    from mcunas.search.training.recipe import Recipe
    from mcunas.search.trial.pipeline import CandidateRunner
    from mcunas.space.hypermodel import McuSearchSpace
    from mcunas.space.values import HpValue

__all__ = ["RunSetup", "load_run_data", "open_hardware", "reference_choice", "search_space"]


class RunSetup:
    """What a search prepares: data, space, runner and board (see the module).

    Args:
        config: the search's settings.
        board: the board profile.
        out_dir: the output folder (a worker's is a temporary one).
    """

    def __init__(self, config: SearchConfig, board: BoardProfile, out_dir: Path) -> None:
        self.config, self.board, self.out_dir = config, board, out_dir
        self.dataset: Dataset = None  # type: ignore[assignment]  # set by load_data()
        self.recipe: Recipe = None  # type: ignore[assignment]  # set by load_data()
        self.fronts: FrontendSearch | None = None  # --frontend tflm on WAV clips
        self.families: tuple[str, ...] | None = None  # the space the search asked for
        self._trial_parts: tuple[McuSearchSpace, CandidateRunner] | None = None
        self._open = contextlib.ExitStack()  # what the strategy left open for the finish

    def load_data(self) -> Dataset:
        """Load the dataset and plan its training recipe (``self.dataset``, ``self.recipe``).

        With ``--frontend tflm`` a WAV dataset's features come from the front-end graph
        (``self.fronts``: the fixed front end's data, or every searched one's).

        Raises:
            UserError: ``--frontend-space search`` on data that are not WAV clips.
            DatasetError: the data are missing or unreadable.
        """
        self.dataset, self.recipe, self.fronts = load_run_data(
            self.config, self.board, self.out_dir
        )
        return self.dataset

    def space(self, families: tuple[str, ...] | None = None) -> McuSearchSpace:
        """The search space over ``families`` (default: ``--families``, else all).

        The run keeps ``families`` as asked: the finish retrains in the same space.
        """
        from mcunas.space import FAMILIES

        self.families = families
        return search_space(self.dataset, self.fronts, families or self.config.families or FAMILIES)

    def components(
        self, families: tuple[str, ...] | None = None, measure: bool = True
    ) -> tuple[McuSearchSpace, CandidateRunner, Callable[[], None]]:
        """The search space, the candidate runner and a clean-up callable (closes both).

        ``measure=False``: no board or rack is connected (a runner that only
        trains and scores, as re-scoring needs).
        """
        cfg = self.config
        stack = contextlib.ExitStack()
        hardware = open_hardware(cfg, self.board, stack) if measure else None

        from mcunas.search.trial.isolate import TflmWorker
        from mcunas.search.trial.runner import KerasRunner

        space = self.space(families)
        worker = TflmWorker(self.board)
        stack.callback(worker.close)
        searched = self.fronts is not None and self.fronts.searched
        runner = KerasRunner(
            space,
            self.dataset,
            self.board,
            worker,
            hardware,
            hybrid=cfg.measure == "hybrid",
            recipe=self.recipe,
            seed=cfg.seed,
            fronts=self.fronts if searched else None,
        )
        return space, runner, stack.close

    def trial_components(self) -> tuple[McuSearchSpace, CandidateRunner]:
        """The search space and the runner of trials run here, open until the run ends.

        The finish retrains with them (:meth:`retraining_here`), board included.
        """
        space, runner, close = self.components()
        self._open.callback(close)
        self._trial_parts = (space, runner)
        return space, runner

    @contextlib.contextmanager
    def retraining_here(
        self, families: tuple[str, ...] | None, kept: bool = True
    ) -> Iterator[tuple[McuSearchSpace, CandidateRunner]]:
        """The space and runner to retrain with in this process, for the block.

        ``kept``: the trials' own (:meth:`trial_components`) when the search left
        them open; else a runner built here with no board, closed after the block.
        """
        if kept and self._trial_parts is not None:
            yield self._trial_parts
            return
        space, runner, close = self.components(families, measure=False)
        try:
            yield space, runner
        finally:
            close()

    def frontend_adder(self) -> Callable[[Figures], Figures] | None:
        """Adds the current trial's front-end cost to a model's figures; None without one.

        The cost (:func:`mcunas.cost.frontend.frontend_cost`) is estimated once per
        front end and input length, on the run's board
        (:meth:`mcunas.search.frontends.searched.FrontendSearch.add`).
        """
        return None if self.fronts is None else self.fronts.add

    def reference_name(self, space: McuSearchSpace) -> str | None:
        """The reference the search starts from: ``--seed-arch``, or by kind for ``auto``."""
        return reference_choice(self.config, self.dataset, space)[0]

    def reference_line(self, space: McuSearchSpace) -> str:
        """The start-up line that says which design seeded the search and why."""
        name, why = reference_choice(self.config, self.dataset, space)
        if name is None:
            return f"Seed: none ({why})."
        return f"Seed: {name} ({why}), its largest variant that fits first."

    def reference_ladder(self, space: McuSearchSpace) -> list[dict[str, HpValue]]:
        """The reference design's variants (hyperparameter values); [] for none.

        In the order a search tries them (:func:`mcunas.space.rungs.reference_rungs`).
        """
        from mcunas.space.rungs import reference_rungs

        name = self.reference_name(space)
        if name is None:
            return []
        ladder = reference_rungs(name, self.dataset.input_shape)
        return [space.hyperparameters(**v).values for v in ladder]

    def data_line(self) -> str:
        """The progress line that says what the data is."""
        d = self.dataset
        test = f", {len(d.y_test)} test" if d.x_test is not None and d.y_test is not None else ""
        return (
            f"Data: {len(d.y_train)} training, {len(d.y_val)} validation{test} samples of "
            f"{d.input_shape} ({d.kind}), {d.num_classes} classes."
        )


def load_run_data(
    config: SearchConfig, board: BoardProfile, out_dir: Path
) -> tuple[Dataset, Recipe, FrontendSearch | None]:
    """The dataset, its training recipe, and the searched front ends (None: no front end).

    With ``--frontend tflm`` a WAV dataset's features come from the front-end graph
    (the fixed front end's data, or every searched one's, cached under ``out_dir``).

    Raises:
        UserError: ``--frontend-space search`` on data that are not WAV clips.
        DatasetError: the data are missing or unreadable.
    """
    from mcunas.data.datasets import load_dataset
    from mcunas.search.training.recipe import plan_recipe

    fronts: FrontendSearch | None = None
    if config.frontend == "tflm":
        from mcunas.search.frontends.searched import FrontendSearch

        fronts = FrontendSearch(config, board, out_dir / "cache")
        dataset = fronts.default
        if dataset.frontend is None:  # no WAV clips: no front end, and the user is told
            fronts = None
            sys.stderr.write(
                f"Note: --frontend tflm makes the features of WAV clips; {dataset.name} holds "
                f"{dataset.kind} inputs, so no front end is used.\n"
            )
    else:
        dataset = load_dataset(config.dataset, seed=config.seed)
    return dataset, plan_recipe(dataset, config.batch_size, config.augment), fronts


def search_space(
    dataset: Dataset, fronts: FrontendSearch | None, families: tuple[str, ...]
) -> McuSearchSpace:
    """The search space over ``families`` for ``dataset`` (with the searched front ends')."""
    from mcunas.space import McuSearchSpace

    if fronts is not None and fronts.searched:
        from mcunas.search.frontends.space import FrontendSpace

        return FrontendSpace(fronts, dataset.num_classes, families)
    return McuSearchSpace(dataset.input_shape, dataset.num_classes, families)


def open_hardware(
    config: SearchConfig, board: BoardProfile, stack: contextlib.ExitStack
) -> Measurer | None:
    """The board or rack measurer for ``--measure board|hybrid``; None for simulator.

    Its connection is checked now (a missing board fails before TensorFlow
    loads) and it is closed with ``stack``.
    """
    from mcunas.measure.opener import open_measurer

    if config.measure == "simulator":
        return None
    kind = "rack" if config.rack else "board"
    return stack.enter_context(
        open_measurer(kind, board, port=config.port or "auto", rack=config.rack, check=True)
    )


def reference_choice(
    config: SearchConfig, dataset: Dataset, space: McuSearchSpace
) -> tuple[str | None, str]:
    """The reference the search starts from (``--seed-arch``, or by kind for ``auto``), and why.

    ``auto`` (the default) seeds only where a named seed would be accepted:
    not with hyperband, and only when the space searches the stage family.
    """
    from mcunas.space.reference import AUTO, NONE, auto_choice

    if config.seed_arch in (None, NONE):
        return None, "--seed-arch none"
    if config.seed_arch != AUTO:
        return config.seed_arch, f"--seed-arch {config.seed_arch}"
    if not starts_from_reference(config.strategy) or "stages" not in getattr(space, "families", ()):
        return None, "--seed-arch auto seeds no hyperband search and no space without stages"
    name, why = auto_choice(dataset.kind, dataset.input_shape)
    return name, f"--seed-arch auto: {why}"
