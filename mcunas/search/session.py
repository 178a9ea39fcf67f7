"""One search run: wire data, space, measurers, oracle and tuner; then report and export.

Imported only when a search starts (it pulls in TensorFlow through the space).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mcunas.boards import BoardProfile
from mcunas.errors import FatalError
from mcunas.search.config import SearchConfig
from mcunas.search.export import export_best
from mcunas.search.progress import Progress
from mcunas.search.report import write_report
from mcunas.search.result import SearchResult, compute_result
from mcunas.search.store import TrialStatus, TrialStore

__all__ = ["SearchSession"]


class SearchSession:
    """Runs and finishes one search in ``out_dir`` (see :func:`mcunas.search.run_search`)."""

    def __init__(
        self,
        config: SearchConfig,
        board: BoardProfile,
        out_dir: Path,
        store: TrialStore,
        debug: bool = False,
    ) -> None:
        """Keep the settings; nothing heavy happens until :meth:`run`."""
        self.config, self.board, self.out_dir, self.store = config, board, out_dir, store
        self.debug = debug
        self.dataset: Any = None
        self.recipe: Any = None

    def _load_data(self) -> Any:
        """Load the dataset and plan its training recipe (``self.dataset``, ``self.recipe``)."""
        from mcunas.data import load_dataset
        from mcunas.search.recipe import plan_recipe

        cfg = self.config
        self.dataset = load_dataset(cfg.dataset, seed=cfg.seed)
        self.recipe = plan_recipe(self.dataset, cfg.batch_size, cfg.augment)
        return self.dataset

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

    def _components(
        self, families: tuple[str, ...] | None = None
    ) -> tuple[Any, Any, Callable[[], None]]:
        """The search space, the candidate runner and a clean-up callable (closes both)."""
        cfg = self.config
        stack = contextlib.ExitStack()
        hardware = self._hardware(stack)

        from mcunas.search.candidate import KerasRunner
        from mcunas.search.isolate import TflmWorker
        from mcunas.space import FAMILIES, McuSearchSpace

        space = McuSearchSpace(
            self.dataset.input_shape, self.dataset.num_classes, families or cfg.families or FAMILIES
        )
        worker = TflmWorker(self.board)
        stack.callback(worker.close)
        runner = KerasRunner(
            space,
            self.dataset,
            self.board,
            worker,
            hardware,
            hybrid=cfg.measure == "hybrid",
            recipe=self.recipe,
            seed=cfg.seed,
        )
        return space, runner, stack.close

    def run(self, progress: Progress) -> str | None:
        """Search until ``max_trials`` or the time budget; return why it stopped early."""
        cfg = self.config
        d = self._load_data()
        space, runner, close = self._components()
        test = f", {len(d.y_test)} test" if d.x_test is not None else ""
        progress.note(
            f"Data: {len(d.y_train)} training, {len(d.y_val)} validation{test} samples of "
            f"{d.input_shape} ({d.kind}), {d.num_classes} classes. Training: "
            f"{self.recipe.describe()}."
        )
        try:
            from mcunas.search.oracles import make_oracle
            from mcunas.search.tuner import SearchFatal

            oracle = make_oracle(cfg.strategy, cfg.max_trials, cfg.seed, cfg.epochs)
            seed = self._seed_name(space)
            seeds = self._seed(oracle, space, seed) if seed else []
            tuner = self._tuner(oracle, space, runner, progress, seeds)
            self._reconcile(oracle)
            tuner.search()
            from mcunas.search.rescore import rescore_finalists

            rescore_finalists(cfg, self.store, space, runner, self.dataset, progress)
        except SearchFatal as exc:
            raise exc.error from None
        except RuntimeError as exc:  # keras-tuner's own stop conditions
            raise FatalError(f"Search stopped: {exc}") from exc
        finally:
            close()
        return tuner.stopped_reason

    def _tuner(
        self, oracle: Any, space: Any, runner: Any, progress: Progress, seeds: list, **options: Any
    ) -> Any:
        """The search's ``HardwareAwareTuner``; ``options`` override its defaults."""
        from mcunas.search.tuner import HardwareAwareTuner

        cfg = self.config
        settings: dict[str, Any] = {
            "runner": runner,
            "store": self.store,
            "budgets": cfg.budgets,
            "progress": progress,
            "models_dir": self.out_dir / "models",
            "epochs": cfg.epochs,
            "seed": cfg.seed,
            "directory": str(self.out_dir),
            "project_name": "tuner",
            "overwrite": not cfg.resume,
            "max_draws": cfg.draw_cap,
            "debug": self.debug,
            "objectives": cfg.objectives,
            "seeds": seeds,
            "warm_start": cfg.warm_start,
        }
        return HardwareAwareTuner(oracle, space, **{**settings, **options})

    def _seed_name(self, space: Any) -> str | None:
        """The reference the search starts from: ``--seed-arch``, or by kind for ``auto``.

        ``auto`` (the default) seeds only where a named seed would be accepted:
        not with hyperband, and only when the space searches the stage family.
        """
        from mcunas.space.reference import AUTO, NONE, auto_reference

        cfg = self.config
        if cfg.seed_arch in (None, NONE):
            return None
        if cfg.seed_arch != AUTO:
            return cfg.seed_arch
        if cfg.strategy == "hyperband" or "stages" not in getattr(space, "families", ()):
            return None
        return auto_reference(self.dataset.kind, self.dataset.input_shape)

    def _seed(self, oracle: Any, space: Any, name: str) -> list[dict[str, Any]]:
        """Start from reference design ``name`` scaled to the data, shrunk until it fits.

        Returns the ladder of its variants (hyperparameter values), largest first.
        """
        from mcunas.search.oracles import seed_first_trial
        from mcunas.space.reference import reference_ladder

        ladder = reference_ladder(name, self.dataset.input_shape)
        values = [space.hyperparameters(**v).values for v in ladder]
        seed_first_trial(oracle, values)
        return values

    def _reconcile(self, oracle: Any) -> None:
        """Square the store with keras-tuner's state after a kill.

        A ``running`` row whose trial keras-tuner will re-run stays ``running``
        (it is redone from scratch); one that finished in the store but not in
        keras-tuner is handed to the oracle as finished, not redone; any other
        ``running`` row is marked failed ("interrupted").
        """
        from keras_tuner.engine import trial as trial_module

        for tid in list(oracle._retry_queue):  # noqa: SLF001 - keras-tuner keeps no public view
            rec = self.store.get(tid)
            if rec is None or rec.status == TrialStatus.RUNNING:
                continue
            oracle._retry_queue.remove(tid)  # noqa: SLF001
            trial = oracle.trials[tid]
            if rec.status in (TrialStatus.OK, TrialStatus.INFEASIBLE):
                feasible = float(rec.status == TrialStatus.OK)
                oracle.update_trial(tid, {"score": rec.score or 0.0, "feasible": feasible})
                trial.status = trial_module.TrialStatus.COMPLETED
            else:
                trial.status = trial_module.TrialStatus.FAILED
            oracle.end_trial(trial)
        retry = set(oracle._retry_queue)  # noqa: SLF001
        for rec in self.store.trials(TrialStatus.RUNNING):
            if rec.trial_id not in retry:
                self.store.finish_trial(
                    rec.trial_id, TrialStatus.FAILED, reason="interrupted mid-trial; not re-run"
                )

    def finish(self, stopped: str | None) -> SearchResult:
        """Compute the result, write the report, export the chosen model."""
        result = compute_result(self.store, self.config, self.board, stopped)
        result.test = self._test_accuracy(result.best)
        if result.best is not None:
            from mcunas.profile import model_layers

            model_bytes = (self.out_dir / (result.best.model_path or "")).read_bytes()
            result.layers = model_layers(model_bytes, self.board)
        result.paths = write_report(result)
        if result.best is not None:
            context = {**self._context(), "test": result.test, "chosen_by": result.chosen_by}
            context["rescore"] = result.rescore
            result.paths["best_dir"] = str(export_best(result.best, self.out_dir, context))
        result.paths["store"] = str(self.store.path)
        return result

    def _test_accuracy(self, best: Any) -> dict[str, Any] | None:
        """The chosen INT8 model's accuracy on the dataset's test split (TFLM kernels).

        None without a test split or a chosen model; a model TFLM cannot run on
        the test inputs is reported as such, not raised (the search is done).
        """
        data = self.dataset
        if best is None or data is None or getattr(data, "x_test", None) is None:
            return None
        from mcunas.errors import CandidateError
        from mcunas.search.isolate import TflmWorker

        model_bytes = (self.out_dir / (best.model_path or "")).read_bytes()
        worker = TflmWorker(self.board)
        try:
            accuracy = worker.int8_accuracy(model_bytes, data.x_test, data.y_test)
        except CandidateError as exc:
            return {"samples": len(data.y_test), "int8_accuracy": None, "error": str(exc)}
        finally:
            worker.close()
        return {"samples": len(data.y_test), "int8_accuracy": round(float(accuracy), 6)}

    def _context(self) -> dict[str, Any]:
        """What ``best.json`` records beside the trial: board, budgets, dataset, strategy."""
        cfg = self.config
        return {
            "board": SearchResult.board_summary_of(self.board),
            "budgets": cfg.budgets.to_dict(),
            "dataset": cfg.dataset or "digits (built-in)",
            "strategy": cfg.strategy,
            "preprocessing": getattr(self.dataset, "preprocessing", None),
            "class_names": list(getattr(self.dataset, "class_names", ()) or ()),
        }
