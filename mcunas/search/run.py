"""One search run: what every strategy and executor shares, and the two roles' protocols.

A :class:`SearchRun` is one search in one folder: its settings, board, store,
data, search space and measurers, and how it ends (result, report, ``best/``).
What is *tried* is a :class:`Strategy` (Keras Tuner trials under an oracle, or
the supernet's stages); *where* the work runs is an :class:`Executor` (this
process, a chief serving workers, or a worker of a chief). Both are chosen by
name from the registries of :mod:`mcunas.engine`; this module knows neither
the supernet nor the distributed search.

Every trained candidate goes through the one trial pipeline
(:mod:`mcunas.search.trial.pipeline`), whichever strategy and executor. A strategy
that schedules its own jobs uses the protocols of :mod:`mcunas.search.job_protocols`
(``Work``, ``Wire``, ``Jobs``; re-exported here).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from mcunas.boards.catalog import BoardProfile
from mcunas.search.config import SearchConfig
from mcunas.search.finish.export import export_best, trial_model_bytes
from mcunas.search.job_protocols import Jobs, Wire, Work
from mcunas.search.progress import Progress
from mcunas.search.results.report import write_report
from mcunas.search.results.result import SearchResult, compute_result
from mcunas.search.results.store import TrialStore
from mcunas.search.trial.pipeline import CandidateRunner, TrialPipeline

if TYPE_CHECKING:
    from mcunas.search.frontends.searched import FrontendSearch

__all__ = [
    "Executor",
    "Jobs",
    "Planner",
    "SearchRun",
    "Strategy",
    "TunerRole",
    "Wire",
    "Work",
    "WorkerRole",
]


class Executor(Protocol):
    """Where the work runs: ``local``, ``chief`` (serves workers) or ``worker``.

    The roles differ only in what they hand a strategy: the planning roles
    (:class:`Planner`: ``local``, ``chief``) run its plan, the ``worker``
    (:class:`WorkerRole`) does the chief's part of it.
    """

    name: str

    def execute(self, strategy: Strategy, run: SearchRun, progress: Progress) -> str | None:
        """Run ``strategy`` here; why it stopped early, or None."""
        ...

    def retraining(
        self, run: SearchRun, families: tuple[str, ...] | None
    ) -> contextlib.AbstractContextManager[tuple[Any, CandidateRunner]] | None:
        """Where finishing retrains designs: the space and runner for the block.

        None: this role finishes nothing (a worker; its chief does). Nothing is
        built until the block is entered (:class:`mcunas.search.finish.stage.FinishStage`).
        """
        ...


class TunerRole(Protocol):
    """What a role gives the Keras Tuner strategy: its tuner settings and its trial loop."""

    def tuner_options(self) -> dict[str, Any]:
        """What this role changes in the Keras Tuner tuner's settings."""
        ...

    def drive_tuner(
        self, run: SearchRun, tuner: Any, oracle: Any, progress: Progress
    ) -> str | None:
        """Run Keras Tuner's trials (search here, or serve the oracle); the stop reason."""
        ...


class Planner(Executor, TunerRole, Protocol):
    """A role that runs a strategy's plan: this process (``local``) or a chief."""

    def candidates(self, run: SearchRun) -> tuple[Any, Any]:
        """The search space, and the runner of candidates trained here (the run closes it).

        A chief trains nothing (its workers do): its runner is None.
        """
        ...

    def jobs(
        self, run: SearchRun, progress: Progress, make_work: Callable[[], Work], wire: Wire
    ) -> contextlib.AbstractContextManager[Jobs]:
        """A place to run jobs for the ``with`` block (``make_work`` where they run here)."""
        ...


class WorkerRole(Executor, TunerRole, Protocol):
    """A distributed search's worker: it does the chief's trials or jobs."""

    def serve_jobs(
        self,
        run: SearchRun,
        progress: Progress,
        make_work: Callable[[Callable[[], bytes] | None], Work],
        wire: Wire,
    ) -> None:
        """Do the chief's jobs until it says stop.

        ``make_work(fetch)`` makes the work; ``fetch`` brings the chief's shared
        model checkpoint.
        """
        ...


class Strategy(Protocol):
    """What is tried: Keras Tuner trials under an oracle, or the supernet's stages."""

    name: str

    def search(self, run: SearchRun, executor: Planner, progress: Progress) -> str | None:
        """Plan and run the search (this process or a chief); why it stopped early, or None."""
        ...

    def work(self, run: SearchRun, executor: WorkerRole, progress: Progress) -> None:
        """A worker's side: do the chief's work until the search is over."""
        ...


class SearchRun:
    """Runs and finishes one search in ``out_dir`` (see :func:`mcunas.engine.run_search`).

    Args:
        config: the search's settings.
        board: the board profile.
        out_dir: the output folder (a worker's is a temporary one).
        store: the trial store (a worker's is the chief's, remote).
        strategy: what is tried.
        executor: where the work runs.
        debug: print each failed trial's traceback.
    """

    def __init__(
        self,
        config: SearchConfig,
        board: BoardProfile,
        out_dir: Path,
        store: TrialStore,
        strategy: Strategy,
        executor: Executor,
        debug: bool = False,
    ) -> None:
        self.config, self.board, self.out_dir, self.store = config, board, out_dir, store
        self.strategy, self.executor, self.debug = strategy, executor, debug
        self.dataset: Any = None
        self.recipe: Any = None
        self.fronts: FrontendSearch | None = None  # --frontend tflm on WAV clips
        self.families: tuple[str, ...] | None = None  # the space the search asked for
        self._trial_parts: tuple[Any, CandidateRunner] | None = None
        self._open = contextlib.ExitStack()  # what the strategy left open for the finish

    def run(self, progress: Progress) -> str | None:
        """Search until done or out of time, then finish; why it stopped early, or None.

        The finish (:class:`~mcunas.search.finish.stage.FinishStage`: the finalists
        re-scored, the choice refitted) runs after every strategy's search, where the
        executor says; a worker's run has none.
        """
        from mcunas.search.finish.stage import FinishStage

        with self._open:
            stopped = self.executor.execute(self.strategy, self, progress)
            FinishStage().run(self, progress)
        return stopped

    # ---------------------------------------------------------------- set-up
    def load_data(self) -> Any:
        """Load the dataset and plan its training recipe (``self.dataset``, ``self.recipe``).

        With ``--frontend tflm`` a WAV dataset's features come from the front-end graph
        (``self.fronts``: the fixed front end's data, or every searched one's).

        Raises:
            UserError: ``--frontend-space search`` on data that are not WAV clips.
            DatasetError: the data are missing or unreadable.
        """
        from mcunas.data.datasets import load_dataset
        from mcunas.search.training.recipe import plan_recipe

        cfg = self.config
        if cfg.frontend == "tflm":
            from mcunas.search.frontends.searched import FrontendSearch

            self.fronts = FrontendSearch(cfg, self.board, self.out_dir / "cache")
            self.dataset = self.fronts.default
            if self.dataset.frontend is None:  # no WAV clips: no front end
                self.fronts = None
        else:
            self.dataset = load_dataset(cfg.dataset, seed=cfg.seed)
        self.recipe = plan_recipe(self.dataset, cfg.batch_size, cfg.augment)
        return self.dataset

    def space(self, families: tuple[str, ...] | None = None) -> Any:
        """The search space over ``families`` (default: ``--families``, else all).

        The run keeps ``families`` as asked: the finish retrains in the same space.
        """
        from mcunas.space import FAMILIES, McuSearchSpace

        self.families = families
        d, families = self.dataset, families or self.config.families or FAMILIES
        if self.fronts is not None and self.fronts.searched:
            from mcunas.search.frontends.space import FrontendSpace

            return FrontendSpace(self.fronts, d.num_classes, families)
        return McuSearchSpace(d.input_shape, d.num_classes, families)

    def components(
        self, families: tuple[str, ...] | None = None, measure: bool = True
    ) -> tuple[Any, CandidateRunner, Callable[[], None]]:
        """The search space, the candidate runner and a clean-up callable (closes both).

        ``measure=False``: no board or rack is connected (a runner that only
        trains and scores, as re-scoring needs).
        """
        cfg = self.config
        stack = contextlib.ExitStack()
        hardware = self._hardware(stack) if measure else None

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

    def trial_components(self) -> tuple[Any, CandidateRunner]:
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
    ) -> Iterator[tuple[Any, CandidateRunner]]:
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

    def _hardware(self, stack: contextlib.ExitStack) -> Any | None:
        """The board or rack measurer for ``--measure board|hybrid``; None for simulator.

        Its connection is checked now (a missing board fails before TensorFlow
        loads) and it is closed with ``stack``.
        """
        from mcunas.measure.opener import open_measurer

        cfg = self.config
        if cfg.measure == "simulator":
            return None
        kind = "rack" if cfg.rack else "board"
        return stack.enter_context(
            open_measurer(kind, self.board, port=cfg.port or "auto", rack=cfg.rack, check=True)
        )

    def pipeline(self, runner: CandidateRunner | None) -> TrialPipeline:
        """The trial pipeline over ``runner`` (None: only its cost check is used)."""
        cfg = self.config
        return TrialPipeline(
            runner,  # type: ignore[arg-type]
            self.store,
            cfg.budgets,
            self.out_dir / "models",
            cfg.objectives,
            frontend=self.frontend_adder(),
        )

    def frontend_adder(self) -> Callable[[Any], Any] | None:
        """Adds the current trial's front-end cost to a model's figures; None without one.

        The cost (:func:`mcunas.cost.frontend.frontend_cost`) is estimated once per
        front end and input length, on the run's board
        (:meth:`mcunas.search.frontends.searched.FrontendSearch.add`).
        """
        return None if self.fronts is None else self.fronts.add

    def reference_name(self, space: Any) -> str | None:
        """The reference the search starts from: ``--seed-arch``, or by kind for ``auto``."""
        return self.reference_choice(space)[0]

    def reference_choice(self, space: Any) -> tuple[str | None, str]:
        """:meth:`reference_name` and why (the start-up line's words).

        ``auto`` (the default) seeds only where a named seed would be accepted:
        not with hyperband, and only when the space searches the stage family.
        """
        from mcunas.space.reference import AUTO, NONE, auto_choice

        cfg = self.config
        if cfg.seed_arch in (None, NONE):
            return None, "--seed-arch none"
        if cfg.seed_arch != AUTO:
            return cfg.seed_arch, f"--seed-arch {cfg.seed_arch}"
        if cfg.strategy == "hyperband" or "stages" not in getattr(space, "families", ()):
            return None, "--seed-arch auto seeds no hyperband search and no space without stages"
        name, why = auto_choice(self.dataset.kind, self.dataset.input_shape)
        return name, f"--seed-arch auto: {why}"

    def reference_line(self, space: Any) -> str:
        """The start-up line that says which design seeded the search and why."""
        name, why = self.reference_choice(space)
        if name is None:
            return f"Seed: none ({why})."
        return f"Seed: {name} ({why}), its largest variant that fits first."

    def reference_ladder(self, space: Any) -> list[dict[str, Any]]:
        """The reference design's variants (hyperparameter values); [] for none.

        In the order a search tries them (:func:`mcunas.search.tuner.rungs.reference_rungs`).
        """
        from mcunas.search.tuner.rungs import reference_rungs

        name = self.reference_name(space)
        if name is None:
            return []
        ladder = reference_rungs(name, self.dataset.input_shape)
        return [space.hyperparameters(**v).values for v in ladder]

    def data_line(self) -> str:
        """The progress line that says what the data is."""
        d = self.dataset
        test = f", {len(d.y_test)} test" if d.x_test is not None else ""
        return (
            f"Data: {len(d.y_train)} training, {len(d.y_val)} validation{test} samples of "
            f"{d.input_shape} ({d.kind}), {d.num_classes} classes."
        )

    # ---------------------------------------------------------------- the end
    def finish(self, stopped: str | None) -> SearchResult:
        """Compute the result, write the report, export the chosen model."""
        result = compute_result(self.store, self.config, self.board, stopped)
        data = self.data_of(result.best)
        model_bytes = None
        if result.best is not None:
            from mcunas.cost.profile import model_layers
            from mcunas.search.finish.refit import stored_refit

            result.refit = stored_refit(self.store, result.best, self.out_dir, self.config)
            model_bytes = self._exported_bytes(result.best, result.refit)
            result.layers = self._frontend_rows(data) + model_layers(model_bytes, self.board)
        result.test = self._test_accuracy(model_bytes, data)
        result.paths = write_report(result)
        if result.best is not None:
            context = {**self._context(data), "test": result.test, "chosen_by": result.chosen_by}
            context |= result.finish_dict()
            front = None if data is None else data.frontend
            best_dir = export_best(
                result.best, self.out_dir, context, self.board, frontend=front, model=model_bytes,
                refit=result.refit,
            )  # fmt: skip
            result.paths["best_dir"] = str(best_dir)
        result.paths["store"] = str(self.store.path)
        return result

    def data_of(self, rec: Any) -> Any:
        """The data trial ``rec`` trained on: its own front end's when that is searched."""
        if rec is None or self.fronts is None:
            return self.dataset
        return self.fronts.dataset_of(rec.hyperparameters)

    def _frontend_rows(self, data: Any) -> list[dict[str, Any]]:
        """The front end's ops for the per-layer table (listed first); [] without one."""
        if self.fronts is None:
            return []
        from mcunas.cost.frontend import frontend_rows

        return frontend_rows(self.fronts.cost_of(data))

    def _exported_bytes(self, best: Any, refit: Any) -> bytes:
        """The model ``best/`` exports: the chosen trial's refit when there is one, else its own."""
        if refit is None:
            return trial_model_bytes(best, self.out_dir)
        return (self.out_dir / refit.model_path).read_bytes()

    def _test_accuracy(self, model_bytes: bytes | None, data: Any) -> dict[str, Any] | None:
        """The exported INT8 model's accuracy on the dataset's test split (TFLM kernels).

        None without a test split or a chosen model; a model TFLM cannot run on
        the test inputs is reported as such, not raised (the search is done).
        """
        if model_bytes is None or data is None or getattr(data, "x_test", None) is None:
            return None
        from mcunas.errors import CandidateError
        from mcunas.search.trial.isolate import TflmWorker

        worker = TflmWorker(self.board)
        try:
            accuracy = worker.int8_accuracy(model_bytes, data.x_test, data.y_test)
        except CandidateError as exc:
            return {"samples": len(data.y_test), "int8_accuracy": None, "error": str(exc)}
        finally:
            worker.close()
        return {"samples": len(data.y_test), "int8_accuracy": round(float(accuracy), 6)}

    def _context(self, data: Any = None) -> dict[str, Any]:
        """What ``best.json`` records beside the trial: board, budgets, dataset, strategy."""
        cfg = self.config
        return {
            "board": SearchResult.board_summary_of(self.board),
            "budgets": cfg.budgets.to_dict(),
            "dataset": cfg.dataset or "digits (built-in)",
            "strategy": cfg.strategy,
            "preprocessing": getattr(data or self.dataset, "preprocessing", None),
            "class_names": list(getattr(self.dataset, "class_names", ()) or ()),
        }
