"""How a search run ends: the result, the report, the test score and ``best/``.

:meth:`mcunas.search.run.SearchRun.finish` hands what it holds to a
:class:`RunEnd` once the search and its finishing stage are done.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from mcunas.boards.catalog import BoardProfile
from mcunas.errors import ModelError
from mcunas.inputs.formats import read_model
from mcunas.jsontext import JsonObject
from mcunas.search.finish.export import export_best, trial_model_bytes
from mcunas.search.report.page import write_report
from mcunas.search.report.result import SearchResult, compute_result
from mcunas.search.results.record import TrialRecord
from mcunas.search.results.store import TrialStore
from mcunas.search.settings.config import SearchConfig

if TYPE_CHECKING:
    from mcunas.data.datasets import Dataset
    from mcunas.search.finish.refit_records import Refit
    from mcunas.search.frontends.searched import FrontendSearch

__all__ = ["RunEnd", "data_of"]


def data_of(dataset: Dataset, fronts: FrontendSearch | None, rec: TrialRecord | None) -> Dataset:
    """The data trial ``rec`` trained on: its own front end's when that is searched."""
    if rec is None or fronts is None:
        return dataset
    return fronts.dataset_of(rec.hyperparameters)


@dataclass
class RunEnd:
    """The end of one search in ``out_dir``: what the run holds when its search is done."""

    config: SearchConfig
    board: BoardProfile
    out_dir: Path
    store: TrialStore
    dataset: Dataset
    fronts: FrontendSearch | None

    def finish(self, stopped: str | None) -> SearchResult:
        """Compute the result, write the report, export the chosen model."""
        result = compute_result(self.store, self.config, self.board, stopped)
        data = data_of(self.dataset, self.fronts, result.best)
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

    def _frontend_rows(self, data: Dataset) -> list[JsonObject]:
        """The front end's ops for the per-layer table (listed first); [] without one."""
        if self.fronts is None:
            return []
        from mcunas.cost.frontend import frontend_rows

        return frontend_rows(self.fronts.cost_of(data))

    def _exported_bytes(self, best: TrialRecord, refit: Refit | None) -> bytes:
        """The model ``best/`` exports: the chosen trial's refit when there is one, else its own."""
        if refit is None:
            return trial_model_bytes(best, self.out_dir)
        return read_model(self.out_dir / refit.model_path, "refit model", ModelError)

    def _test_accuracy(self, model_bytes: bytes | None, data: Dataset | None) -> JsonObject | None:
        """The exported INT8 model's accuracy on the dataset's test split (TFLM kernels).

        None without a test split or a chosen model; a model TFLM cannot run on
        the test inputs is reported as such, not raised (the search is done).
        """
        if model_bytes is None or data is None or getattr(data, "x_test", None) is None:
            return None
        from mcunas.errors import CandidateError
        from mcunas.search.trial.isolate import TflmWorker

        x_test, y_test = data.x_test, data.y_test
        assert x_test is not None and y_test is not None  # a test split has both
        worker = TflmWorker(self.board)
        try:
            accuracy = worker.int8_accuracy(model_bytes, x_test, y_test)
        except CandidateError as exc:
            return {"samples": len(y_test), "int8_accuracy": None, "error": str(exc)}
        finally:
            worker.close()
        return {"samples": len(y_test), "int8_accuracy": round(float(accuracy), 6)}

    def _context(self, data: Dataset | None = None) -> JsonObject:
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
