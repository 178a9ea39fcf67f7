"""The supernet search's trials that train a model: the reference design and the finalists.

Both end as every trial does: converted to INT8, scored with the TFLite Micro
kernels, measured (simulator, board or rack) and recorded ``ok`` or
``infeasible``; a failing one is a ``failed`` row and the search goes on.

- **The reference design** (stage 0, ``--seed-arch``, ``auto`` by default): the
  known-good design the per-trial searches start from, trained from scratch
  for ``--epochs`` before the supernet, largest variant first, a smaller one
  while it misses the budgets. Its rows have ``origin = "seed"`` and ids
  ``r0``, ``r1``...; the choice of ``best/`` keeps it unless a subnet beats it
  by more than validation noise, as in every search (a subnet that only ties
  with the known design on validation is not handed back instead of it).
- **The finalists** (stage 3): subnets extracted with inherited weights and
  fine-tuned for ``--finetune-epochs``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from mcunas.errors import FatalError, describe
from mcunas.search.budgets import score, violations
from mcunas.search.pareto import front_test
from mcunas.search.progress import Progress, trial_summary
from mcunas.search.store import TrialOrigin, TrialStatus

__all__ = ["REFERENCE_ORIGIN", "TrainedStages"]

REFERENCE_ORIGIN = TrialOrigin.SEED  # the origin every search gives the --seed-arch design's rows
REFERENCE_PREFIX = "r"
STOPPED = "time budget reached while training the reference (--resume continues)"


class TrainedStages:
    """Stage 0 (the reference design) and the training half of stage 3.

    A part of :class:`mcunas.supernet.session.SupernetSession`: it uses the
    session's ``store``, ``config``, ``runner``, ``space``, ``scorer`` and ``out_dir``.
    """

    store: Any
    config: Any
    runner: Any
    space: Any
    scorer: Any
    out_dir: Any

    # ------------------------------------------------------------------ stage 0
    def _reference(self, progress: Progress) -> str | None:
        """Train the reference design (largest variant that fits); why it stopped early, or None.

        A resumed search skips the variants already finished and re-runs one
        that was cut short.
        """
        ladder = self._reference_ladder()
        if not ladder:
            return None
        rows = {r.trial_id: r for r in self.store.trials() if r.origin == REFERENCE_ORIGIN}
        for i, values in enumerate(ladder):
            tid = f"{REFERENCE_PREFIX}{i}"
            rec = rows.get(tid)
            if rec is None or rec.status == TrialStatus.RUNNING:
                if progress.time_up():
                    return STOPPED
                self._reference_rung(tid, values, i)
                rec = self.store.get(tid)
                if rec is None or rec.status == TrialStatus.RUNNING:
                    return STOPPED
                progress.note(
                    f"[reference] trial {tid} {rec.status!s:<10} {trial_summary(rec)} | "
                    f"{rec.description or ''}"
                )
            if rec.status != TrialStatus.INFEASIBLE:
                return None  # trained (ok), or failed: either way the search goes on
        return None

    def _reference_ladder(self) -> list[dict[str, Any]]:
        """The reference design's variants (hyperparameter values), largest first; [] for none."""
        from mcunas.space.reference import reference_ladder

        name = self._seed_name(self.space)  # type: ignore[attr-defined]
        if name is None:
            return []
        ladder = reference_ladder(name, self.dataset.input_shape)  # type: ignore[attr-defined]
        return [self.space.hyperparameters(**v).values for v in ladder]

    def _reference_rung(self, tid: str, values: dict[str, Any], rung: int) -> None:
        """Build, check, train from scratch for ``--epochs`` and record one variant.

        (A distributed search's chief hands this to a worker.)
        """
        hp = self.space.hyperparameters(**values)
        self.store.start_trial(
            tid, hp.values, family="stages", origin=REFERENCE_ORIGIN, started_at=time.time()
        )

        def build() -> Any:
            model = self.runner.build(hp, self.config.seed + rung)
            check = self.runner.check(model)
            self.store.record_figures(tid, check.cost, before_training=True)
            self.store.update(tid, params=check.params, description=check.description)
            reasons = violations(check.cost, self.config.budgets)
            if reasons:
                self._end(tid, TrialStatus.INFEASIBLE, "; ".join(reasons))
                return None
            return model

        self._train_record(tid, build, self.config.epochs, ("build", "train"))

    # ------------------------------------------------------------------ stage 3
    def _finetune_one(self, tid: str, net: Any, epochs: int) -> None:
        """Extract one subnet with its inherited weights, fine-tune it and record it."""
        self.store.update(tid, status=TrialStatus.RUNNING)

        def extract() -> Any:
            return self.scorer.extract(net, self.space)

        self._train_record(tid, extract, epochs, ("extract", "fine-tune"))

    # ------------------------------------------------------------------ both
    def _train_record(
        self, tid: str, make: Callable[[], Any], epochs: int, stages: tuple[str, str]
    ) -> None:
        """``make`` a model (None: it ended the trial itself), train, convert, score, measure.

        A failure at any stage is the trial's ``failed`` row, naming the stage
        (``stages``: the names of making and of training, e.g. build and train).
        """
        from mcunas.search.tuner import TrainResult

        timings: dict[str, float] = {}
        stage, clock = stages[0], time.perf_counter()
        try:
            runner = self.runner
            model = make()
            if model is None:
                return
            timings["build_s"], clock, stage = _since(clock), time.perf_counter(), stages[1]
            trained = runner.train(model, epochs) if epochs else TrainResult(None, 0)
            timings["train_s"], clock, stage = _since(clock), time.perf_counter(), "convert"
            model_bytes = runner.convert(model)
            timings["convert_s"], clock, stage = _since(clock), time.perf_counter(), "evaluate"
            evaluated = runner.evaluate(model_bytes)
            timings["eval_s"], clock, stage = _since(clock), time.perf_counter(), "measure"
            ok = self.store.trials(TrialStatus.OK)
            cost = runner.measure(
                model_bytes, front_test(ok, evaluated.accuracy, self.config.objectives)
            )
            timings["measure_s"] = _since(clock)
        except FatalError:
            raise
        except Exception as exc:  # noqa: BLE001 - a failing trial is recorded, search goes on
            self._end(tid, TrialStatus.FAILED, f"{stage} failed: {describe(exc)}", **timings)
            return
        timings["epochs_run"] = trained.epochs_run  # written before the row finishes
        self._record(tid, model_bytes, cost, evaluated, trained.float_accuracy, timings)

    def _record(
        self,
        tid: str,
        model_bytes: bytes,
        cost: Any,
        evaluated: Any,
        float_accuracy: float | None,
        timings: dict[str, float],
    ) -> None:
        """Keep the model and its figures; ``ok`` within every budget, else ``infeasible``."""
        self.store.record_model(
            tid,
            self.out_dir / "models",
            model_bytes,
            cost,
            float_accuracy=float_accuracy,
            int8_accuracy=evaluated.accuracy,
            int8_loss=evaluated.loss,
            **timings,
        )
        reasons = violations(cost, self.config.budgets)
        if reasons:
            self._end(tid, TrialStatus.INFEASIBLE, "; ".join(reasons))
            return
        result = score(evaluated.accuracy, cost, self.config.budgets)
        self.store.finish_trial(tid, TrialStatus.OK, score=result, finished_at=time.time())

    def _end(self, tid: str, status: TrialStatus, reason: str, **values: Any) -> None:
        self.store.finish_trial(tid, status, reason=reason, finished_at=time.time(), **values)


def _since(start: float) -> float:
    return time.perf_counter() - start
