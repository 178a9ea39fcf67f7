"""Doing the supernet search's jobs: the same code in a local search and on a worker.

:class:`SupernetWork` checks subnets' costs, trains the supernet, screens
subnets with inherited weights, and trains the reference design and the
finalists through the one trial pipeline (:mod:`mcunas.search.trial.pipeline`).
Every row it writes goes to the run's store (a worker's is the chief's).
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mcunas.errors import CandidateError, FatalError, McunasError, TrialTakenAway, describe
from mcunas.figures import Figures
from mcunas.files import write_file
from mcunas.search.results.store import TrialOrigin, TrialStatus
from mcunas.search.run import SearchRun
from mcunas.search.settings.progress import Progress
from mcunas.search.trial.pipeline import CheckResult, TrainResult, training_seed
from mcunas.supernet.jobs import (
    Check,
    Done,
    Epoch,
    Failed,
    Finetune,
    Fits,
    Job,
    Reference,
    Result,
    Screen,
    Screened,
    Train,
    Trained,
)
from mcunas.supernet.spec import Subnet, SupernetSpec, plan_supernet, subnet_from_values
from mcunas.supernet.train import CHECKPOINT

__all__ = ["ORIGIN", "CostCheck", "SupernetWork", "TimeUp"]

ORIGIN = TrialOrigin.SUPERNET  # the origin of every subnet's row


class TimeUp(Exception):  # noqa: N818 - a stop signal, not an error
    """The time budget ran out (between two subnets, or after an epoch)."""


@dataclass(frozen=True)
class CostCheck:
    """A subnet's cost check: ``status`` None if it fits, else why not."""

    status: TrialStatus | None
    reason: str = ""
    figures: Figures | None = None  # the profile, or the latency estimate alone (full=False)
    full: bool = True


class SupernetWork:
    """Does the jobs of :mod:`mcunas.supernet.jobs` for ``run`` (data loaded).

    Args:
        run: the search run (its store, settings, board and data).
        progress: for the notes of a long job.
        fetch: the chief's trained supernet checkpoint (a worker); None: it is
            in ``run.out_dir`` already (a local search).
    """

    def __init__(
        self, run: SearchRun, progress: Progress, fetch: Callable[[], bytes] | None = None
    ) -> None:
        self.run, self.progress, self.fetch = run, progress, fetch
        self.space, runner, self._close = run.components(("stages",))
        self.runner: Any = runner
        self.pipeline = run.pipeline(runner)
        self._scorer: tuple[str, Any] | None = None
        self._do: dict[type[Any], Callable[..., Result]] = {
            Check: self.check,
            Train: self.train,
            Reference: self.reference,
            Screen: self.screen,
            Finetune: self.finetune,
        }

    def close(self) -> None:
        """Release the measurers and the TFLM worker."""
        self._close()

    def do(self, job: Job, on_epoch: Callable[[Epoch], bool]) -> Result:
        """The job's result; a failure is :class:`Failed` (its rows say why), not raised."""
        try:
            if isinstance(job, Train):
                return self.train(job, on_epoch)
            return self._do[type(job)](job)
        except TrialTakenAway:
            return Done(dropped=True)
        except FatalError:
            raise
        except Exception as exc:  # noqa: BLE001 - the failure is recorded, the search goes on
            return Failed(describe(exc))

    def spec(self, width: float) -> SupernetSpec:
        """The supernet of ``width`` for the run's data."""
        d = self.run.dataset
        return plan_supernet(d.input_shape, d.num_classes, width)

    # ---------------------------------------------------------------- cost check
    def check(self, job: Check) -> Fits:
        """Whether the subnet passes the cost check."""
        spec = self.spec(job.width)
        check = self.cost_check(spec, subnet_from_values(spec, job.values))
        return Fits(check.status is None, check.reason)

    def cost_check(self, spec: SupernetSpec, net: Subnet) -> CostCheck:
        """The cost check of a subnet's INT8 graph: latency first, then the full profile."""
        from mcunas.supernet.costgraph import subnet_tflite

        model = subnet_tflite(spec, net)
        slow, latency = self._too_slow(model)
        if slow:  # the arena planning is the check's costly part: skip it for these
            return CostCheck(TrialStatus.INFEASIBLE, slow, latency, full=False)
        try:
            cost = self.runner.worker.profile(model)
        except CandidateError as exc:
            return CostCheck(TrialStatus.FAILED, f"check failed: {exc}")
        reason = self.pipeline.cost_reasons(cost)
        return CostCheck(TrialStatus.INFEASIBLE if reason else None, reason or "", cost)

    def _too_slow(self, model: bytes) -> tuple[str | None, Figures | None]:
        """The latency verdict alone (the predictor the full check runs), before the arena."""
        from mcunas.cost.latency import predict_latency
        from mcunas.tflite.reader import read_graph

        if self.run.config.max_latency_ms is None:
            return None, None
        est = predict_latency(read_graph(model), self.run.board)
        latency = Figures("simulator", True, est.ms, 0, 0, 0, latency_error_pct=est.error_pct)
        return self.pipeline.cost_reasons(latency), latency

    # ---------------------------------------------------------------- supernet
    def trainer(self, spec: SupernetSpec, epochs: int) -> Any:
        """The supernet trainer of ``spec`` over ``epochs`` in the output folder (not loaded)."""
        from mcunas.supernet.train import SupernetTrainer

        run = self.run
        return SupernetTrainer(
            spec,
            run.dataset,
            run.recipe,
            epochs,
            run.out_dir,
            run.config.seed,
            schedule=run.config.supernet_schedule,
        )

    def train(self, job: Train, on_epoch: Callable[[Epoch], bool]) -> Trained:
        """Train on from the checkpoint, calling ``on_epoch`` after each epoch (True stops)."""
        path = self.run.out_dir / CHECKPOINT
        if job.from_chief:  # the chief's checkpoint, or none: start afresh
            if job.checkpoint:
                write_file(path, job.checkpoint, "supernet checkpoint", inside=self.run.out_dir)
            else:
                path.unlink(missing_ok=True)
        trainer = self.trainer(self.spec(job.width), job.epochs)
        done = trainer.load()
        if job.from_chief:
            self.progress.note(f"Training the supernet from epoch {done + 1}/{job.epochs}.")

        def report(epoch: int, loss: float, took: float) -> None:
            if on_epoch(Epoch(epoch, loss, took, path)):
                raise TimeUp

        try:
            trainer.train(report)
        except TimeUp:
            return Trained(trainer.epochs_done, stopped=True)
        self._keep_scorer(trainer, path)
        return Trained(trainer.epochs_done)

    def _keep_scorer(self, trainer: Any, path: Path) -> None:
        """Score subnets with the model just trained (no reload from its checkpoint)."""
        from mcunas.supernet.subnets import SubnetScorer

        sha = hashlib.sha256(path.read_bytes()).hexdigest()
        self._scorer = (sha, SubnetScorer(trainer.model, self.run.dataset, self.run.config.seed))

    def scorer(self, sha256: str, width: float) -> Any:
        """The scorer of the trained supernet with checkpoint ``sha256`` (loaded once)."""
        from mcunas.supernet.subnets import SubnetScorer

        if self._scorer is not None and self._scorer[0] == sha256:
            return self._scorer[1]
        path = self.run.out_dir / CHECKPOINT
        if self.fetch is not None:
            data = self.fetch()
            if hashlib.sha256(data).hexdigest() != sha256:
                raise McunasError("the chief's supernet changed while this worker fetched it")
            write_file(path, data, "supernet checkpoint", inside=self.run.out_dir)
        trainer = self.trainer(self.spec(width), self.run.config.supernet_plan[0])
        trainer.load()
        scorer = SubnetScorer(trainer.model, self.run.dataset, self.run.config.seed)
        self._scorer = (sha256, scorer)
        return scorer

    # ---------------------------------------------------------------- trial rows
    def screen(self, job: Screen) -> Screened:
        """Cost check, then (if it fits) the inherited score; one trial row either way."""
        spec, space, store, tid = self.spec(job.width), self.space, self.run.store, job.tid
        net = subnet_from_values(spec, job.values)
        store.start_trial(tid, job.values, family="stages", origin=ORIGIN, started_at=time.time())
        store.update(tid, description=space.describe(space.hyperparameters(**job.values)))
        start = time.perf_counter()
        check = self.cost_check(spec, net)
        cost, latency_only = check.figures, {}
        if cost is not None and check.full:
            store.record_figures(tid, cost, before_training=True)
        elif cost is not None:  # the latency verdict alone: no arena figures to record
            latency_only = {"latency_ms": cost.latency_ms, "source": cost.source}
            latency_only |= {"latency_error_pct": cost.latency_error_pct, "estimated": True}
        if check.status is not None or cost is None:
            took = time.perf_counter() - start
            self.pipeline.end(
                tid, check.status or TrialStatus.FAILED, check.reason, check_s=took, **latency_only
            )
            return Screened(None)
        checked = time.perf_counter()
        result = self.scorer(job.sha256, job.width).score(net)
        store.finish_trial(
            tid,
            TrialStatus.SCREENED,
            inherited_accuracy=result.accuracy,
            inherited_loss=result.loss,
            macs=cost.macs,
            check_s=checked - start,
            eval_s=time.perf_counter() - checked,
            finished_at=time.time(),
        )
        return Screened((result.accuracy, result.loss))

    def reference(self, job: Reference) -> Done:
        """Build, check, train from scratch for ``--epochs`` and record one reference rung."""
        hp = self.space.hyperparameters(**job.values)
        epochs, seed = self.run.config.epochs, training_seed(self.run.config.seed, hp.values)
        self.pipeline.begin(job.tid, hp.values, family="stages", origin=job.origin)

        def build() -> Any:
            return self.runner.build(hp, seed)

        def train(model: Any, check: CheckResult | None) -> TrainResult:
            return self.runner.train(model, epochs) if epochs else TrainResult(None, 0)

        self.pipeline.run(job.tid, build, train)
        return Done()

    def finetune(self, job: Finetune) -> Done:
        """Extract the subnet with its inherited weights, fine-tune it and record it."""
        spec, store = self.spec(job.width), self.run.store
        net = subnet_from_values(spec, job.values)
        scorer = self.scorer(job.sha256, job.width)
        store.begin(job.tid)
        store.update(job.tid, status=TrialStatus.RUNNING)

        def extract() -> Any:
            return scorer.extract(net, self.space)

        def train(model: Any, check: CheckResult | None) -> TrainResult:
            return self.runner.train(model, job.epochs) if job.epochs else TrainResult(None, 0)

        names = ("extract", "fine-tune")
        self.pipeline.run(job.tid, extract, train, check=False, names=names)
        return Done()
