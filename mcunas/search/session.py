"""One search run: wire data, space, measurers, oracle and tuner; then report and export.

Imported only when a search starts (it pulls in TensorFlow through the space).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from mcunas.boards import BoardProfile
from mcunas.errors import FatalError
from mcunas.search.api import SearchConfig, SearchResult, infeasible_train_s
from mcunas.search.export import choose_best, export_best
from mcunas.search.pareto import hypervolume, normalized_hypervolume, reference_point
from mcunas.search.progress import Progress
from mcunas.search.report import front_records, pareto_table, points, write_report
from mcunas.search.store import TrialRecord, TrialStatus, TrialStore

__all__ = ["SearchSession"]


class SearchSession:
    """Runs and finishes one search in ``out_dir`` (see :func:`mcunas.search.run_search`)."""

    def __init__(
        self, config: SearchConfig, board: BoardProfile, out_dir: Path, store: TrialStore
    ) -> None:
        """Keep the settings; nothing heavy happens until :meth:`run`."""
        self.config, self.board, self.out_dir, self.store = config, board, out_dir, store
        self.dataset: Any = None

    def _hardware(self) -> Any | None:
        """The board or rack measurer for ``--measure board|hybrid``; None for simulator."""
        from mcunas.measure.base import get_measurer

        if self.config.measure == "simulator":
            return None
        if self.config.rack:
            hardware = get_measurer("rack")(self.board, rack=self.config.rack)
        else:
            hardware = get_measurer("board")(self.board, port=self.config.port or "auto")
        hardware.test_connection()  # FatalError now rather than after the first training
        return hardware

    def _components(self) -> tuple[Any, Any, Callable[[], None]]:
        """The search space, the candidate runner and a clean-up callable."""
        cfg = self.config
        hardware = self._hardware()  # before TensorFlow loads: a missing board fails fast

        from mcunas.search.candidate import KerasRunner
        from mcunas.search.isolate import TflmWorker
        from mcunas.space import FAMILIES, McuSearchSpace

        space = McuSearchSpace(
            self.dataset.input_shape, self.dataset.num_classes, cfg.families or FAMILIES
        )
        worker = TflmWorker(str(self.board.path or self.board.name))
        runner = KerasRunner(
            space,
            self.dataset,
            self.board,
            worker,
            hardware,
            hybrid=cfg.measure == "hybrid",
            batch_size=cfg.batch_size,
            seed=cfg.seed,
        )
        return space, runner, worker.close

    def run(self, progress: Progress) -> str | None:
        """Search until ``max_trials`` or the time budget; return why it stopped early."""
        from mcunas.data import load_dataset

        cfg = self.config
        self.dataset = load_dataset(cfg.dataset, seed=cfg.seed)
        space, runner, close = self._components()
        try:
            from mcunas.search.oracles import make_oracle
            from mcunas.search.tuner import HardwareAwareTuner, SearchFatal

            oracle = make_oracle(cfg.strategy, cfg.max_trials, cfg.seed, cfg.epochs)
            tuner = HardwareAwareTuner(
                oracle,
                space,
                runner=runner,
                store=self.store,
                budgets=cfg.budgets,
                progress=progress,
                models_dir=self.out_dir / "models",
                epochs=cfg.epochs,
                seed=cfg.seed,
                directory=str(self.out_dir),
                project_name="tuner",
                overwrite=not cfg.resume,
            )
            self._reconcile(oracle)
            tuner.search()
        except SearchFatal as exc:
            raise exc.error from None
        except RuntimeError as exc:  # keras-tuner's own stop conditions
            raise FatalError(f"Search stopped: {exc}") from exc
        finally:
            close()
        return tuner.stopped_reason

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
            if rec.status == TrialStatus.OK:
                oracle.update_trial(tid, {"score": rec.score or 0.0})
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
        """Pareto front, hypervolume, report files and the exported best model.

        The wall time is the store's: every session of this search, written back to it.
        """
        cfg, board = self.config, self.board
        wall_s = self.store.checkpoint_wall()
        session_s = wall_s - self.store.earlier_wall_s
        records = self.store.trials()
        sram_ref = cfg.max_sram_kb * 1024 if cfg.max_sram_kb else board.usable_sram_bytes
        pts = points(records)
        ref = reference_point(cfg.max_latency_ms, sram_ref, pts)
        hv = {
            "value": hypervolume(pts, ref),
            "normalized": round(normalized_hypervolume(pts, ref), 6),
            "reference": {
                "accuracy": ref.accuracy,
                "latency_ms": ref.latency_ms,
                "peak_sram_bytes": ref.peak_sram_bytes,
            },
        }
        best = choose_best(records)
        result = SearchResult(
            out_dir=self.out_dir,
            board=board,
            config=cfg,
            trials=records,
            front=front_records(records),
            best=best,
            hypervolume=hv,
            wall_s=wall_s,
            session_wall_s=session_s,
            sessions=max(1, self.store.sessions),
            stopped_reason=stopped,
            message=None if best else no_feasible_message(records, cfg, board),
        )
        summary = self._summary(result)
        result.paths = write_report(self.out_dir, summary, records)
        if best is not None:
            context = {k: summary[k] for k in ("board", "budgets", "dataset", "strategy")}
            context["preprocessing"] = getattr(self.dataset, "preprocessing", None)
            context["class_names"] = list(getattr(self.dataset, "class_names", ()) or ())
            result.paths["best_dir"] = str(export_best(best, self.out_dir, context))
        result.paths["store"] = str(self.store.path)
        return result

    def _summary(self, result: SearchResult) -> dict[str, Any]:
        board, cfg = self.board, self.config
        ok = [r for r in result.trials if r.status == TrialStatus.OK]
        errs = sorted({r.latency_error_pct for r in ok if r.estimated and r.latency_error_pct})
        measured = [r for r in ok if not r.estimated]
        note = "Latency, arena, peak SRAM and flash marked ~ are simulator estimates"
        if errs:
            lo, hi = errs[0], errs[-1]
            span = f"{lo:.0f}-{hi:.0f}%" if hi - lo >= 1 else f"{hi:.1f}%"
            note += (
                f" (predictor's stated latency error +/-{span} by model: the measured error "
                "of each op kind on this board, 50% for kinds no measurement covers; "
                "see the 'error %' column)."
            )
        else:
            note += "."
        if measured:
            note += (
                f" {len(measured)} trial(s) were measured on a board; their 'error %' column "
                "is the simulator's latency error against that measurement."
            )
        return {
            "board": {
                "name": board.name,
                "title": board.title,
                "clock_hz": board.clock_hz,
                "kernels": board.kernels,
                "sram_budget_bytes": board.usable_sram_bytes,
                "flash_budget_bytes": board.model_flash_budget_bytes,
            },
            "budgets": cfg.budgets.to_dict(),
            "budgets_text": cfg.budgets.describe(),
            "strategy": cfg.strategy,
            "dataset": cfg.dataset or "digits (built-in)",
            "counts": result.counts(),
            "wall_s": round(result.wall_s, 2),
            "session_wall_s": round(result.session_wall_s or 0.0, 2),
            "sessions": result.sessions,
            "infeasible_train_s": infeasible_train_s(result.trials),
            "stopped_reason": result.stopped_reason,
            "hypervolume": result.hypervolume,
            "best": None if result.best is None else result.best.to_dict(),
            "estimate_note": note,
            "pareto_table": pareto_table(result.front),
        }


def no_feasible_message(records: list[TrialRecord], cfg: SearchConfig, board: BoardProfile) -> str:
    """Say that nothing was feasible, and what the smallest candidates seen need."""
    seen = [r for r in records if r.peak_sram_bytes is not None]
    head = f"No candidate met the limits ({cfg.budgets.describe()}; board {board.name})"
    if not seen:
        return head + ", and none got as far as a cost estimate: see the trial reasons."
    lat = min(seen, key=lambda r: r.latency_ms or 0.0)
    sram = min(seen, key=lambda r: r.peak_sram_bytes or 0)
    flash = min(seen, key=lambda r: r.flash_bytes or 0)
    return (
        f"{head}. Of {len(seen)} candidates costed, the smallest need "
        f"{lat.latency_ms:.2f} ms latency (trial {lat.trial_id}), "
        f"{(sram.peak_sram_bytes or 0) / 1024:.1f} KB peak SRAM (trial {sram.trial_id}), "
        f"{(flash.flash_bytes or 0) / 1024:.1f} KB flash (trial {flash.trial_id}). "
        "Relax the budgets or search smaller families."
    )
