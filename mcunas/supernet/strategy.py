"""``mcunas search --strategy supernet``: train one supernet, search its subnets, fine-tune.

Four stages, each resumable without losing finished work:

0. **reference**: the ``--seed-arch`` design trained from scratch, largest
   variant first, a smaller one while it misses the budgets (rows ``r0``,
   ``r1``..., ``origin = "seed"``), the known-good baseline every search keeps
   unless a candidate beats it by more than validation noise;
1. **supernet** (:mod:`mcunas.supernet.train`): checkpointed every epoch;
2. **subnet search** (:mod:`mcunas.supernet.evolve`): every subnet drawn is a
   trial row (``origin = "supernet"``): its cost checked against the board and
   the budgets from its INT8 graph, then, if it fits, scored with inherited
   weights (``screened``, ``inherited_accuracy``). A resumed search replays the
   same draws from the store;
3. **fine-tuning**: the best ``--max-trials`` screened subnets are extracted,
   fine-tuned for ``--finetune-epochs``, converted, scored and measured like
   any trial; they become ``ok`` (or ``infeasible``) rows;
4. **finish** (the run's, :class:`mcunas.search.finish.stage.FinishStage`, as
   in every search): the top ``--finalists`` of the front (the reference's rows
   included) are trained again from scratch in the stage space with the
   search's recipe, by k-fold or seeds; the choice uses their means.
   Re-scoring measures the architecture; the exported model is the fine-tuned
   one, or on a small dataset the chosen architecture trained from scratch on
   every training sample (:mod:`mcunas.search.finish.refit`).

The strategy plans; the work is typed jobs (:mod:`mcunas.supernet.jobs`) that
the executor runs here or on a chief's workers, done by
:class:`~mcunas.supernet.work.SupernetWork` either way.
"""

from __future__ import annotations

import hashlib
import itertools
import statistics
import time
from typing import Any

from mcunas.errors import FatalError
from mcunas.search.results.store import TrialRecord, TrialStatus
from mcunas.search.run import Jobs, Planner, SearchRun, WorkerRole
from mcunas.search.settings.progress import Progress, format_duration, trial_summary
from mcunas.search.trial.pipeline import REFERENCE_ORIGIN
from mcunas.supernet.evolve import EvolutionSettings, evolve
from mcunas.supernet.jobs import (
    WIRE,
    Check,
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
from mcunas.supernet.spec import (
    PROBES,
    WIDTHS,
    Subnet,
    SupernetSpec,
    choose_width,
    plan_supernet,
    smallest,
    subnet_from_values,
    subnet_values,
)
from mcunas.supernet.train import CHECKPOINT, checkpoint_epochs
from mcunas.supernet.work import ORIGIN, SupernetWork, TimeUp

__all__ = ["ORIGIN", "REFERENCE_ORIGIN", "SupernetStrategy", "epoch_line"]

REFERENCE_ORIGIN = REFERENCE_ORIGIN  # the origin every search gives the --seed-arch design's rows
REFERENCE_PREFIX = "r"
REPORT_EVERY = 25  # subnets between two progress lines of the search
POPULATION = 40
STOPPED_REFERENCE = "time budget reached while training the reference (--resume continues)"
STOPPED_SUPERNET = "time budget reached while training the supernet (--resume continues)"
STOPPED_SEARCH = "time budget reached during the subnet search (--resume continues)"
STOPPED_FINETUNE = "time budget reached while fine-tuning (--resume continues)"


class SupernetStrategy:
    """The supernet search's plan (see the module); one instance per run.

    :meth:`search` sets what the stages share: the ``run``, its ``progress``,
    the ``space`` (the stage family), the executor's ``jobs``, the ``spec`` (the
    supernet planned) and, once it is trained, its checkpoint's ``sha256``.
    """

    name = "supernet"
    run: SearchRun
    progress: Progress
    space: Any
    jobs: Jobs
    spec: SupernetSpec
    sha256: str | None = None

    def search(self, run: SearchRun, executor: Planner, progress: Progress) -> str | None:
        """Train (or resume) the supernet, search its subnets, fine-tune the best."""
        self.run, self.progress = run, progress
        cfg = run.config
        run.load_data()
        self.space = run.space(("stages",))

        def make_work() -> SupernetWork:
            return SupernetWork(run, progress)

        with executor.jobs(run, progress, make_work, WIRE) as jobs:
            self.jobs = jobs
            self.spec = spec = self._plan()
            epochs, finetune = cfg.supernet_plan
            progress.note(
                f"{run.data_line()} Supernet: {spec.space_size():,} subnets; {epochs} epochs, "
                f"then {cfg.subnets} subnets scored, the best {cfg.max_trials} fine-tuned "
                f"for {finetune} epochs."
            )
            progress.note(run.reference_line(self.space))
            if self.reference() is not None:
                return STOPPED_REFERENCE
            nothing = self.nothing_fits()
            if nothing is not None:
                return nothing
            self.sha256 = self.supernet(epochs)
            if self.sha256 is None:
                return STOPPED_SUPERNET
            if not self.subnet_search():
                return STOPPED_SEARCH
            return self.finetune(finetune)

    def work(self, run: SearchRun, executor: WorkerRole, progress: Progress) -> None:
        """A worker's side: the executor hands this run's work the chief's jobs."""
        run.load_data()
        executor.serve_jobs(run, progress, lambda fetch: SupernetWork(run, progress, fetch), WIRE)

    # ---------------------------------------------------------------- the width
    def _plan(self) -> SupernetSpec:
        """The supernet at the largest width whose subnets fit the budgets often enough.

        Widths x1, x0.75, x0.5, x0.25 are tried in turn, each with its smallest
        subnet and random ones, until a quarter of them fit (:func:`choose_width`,
        MCUNet's point). The choice is kept in the store, so a resume trains the same.
        """
        d, store = self.run.dataset, self.run.store
        stored = store.get_meta("supernet_width")
        if stored is not None:
            return plan_supernet(d.input_shape, d.num_classes, float(stored))
        seed = self.run.config.seed
        width, tried = choose_width(d.input_shape, d.num_classes, self.fit_flags, seed)
        store.set_meta("supernet_width", width)
        self.progress.note(
            f"Supernet width x{width:g} (subnets inside the budgets, of {PROBES} drawn: {tried})."
        )
        return plan_supernet(d.input_shape, d.num_classes, width)

    def fit_flags(self, spec: SupernetSpec, nets: list[Subnet]) -> list[bool]:
        """Whether each of ``nets`` (of ``spec``) passes the cost check (board and budgets)."""
        checks = [Check(spec.width, subnet_values(spec, net)) for net in nets]
        return [isinstance(r, Fits) and r.fits for r in self.jobs.run(checks)]

    # ---------------------------------------------------------------- stage 0
    def reference(self) -> str | None:
        """Train the reference design (largest variant that fits); why it stopped, or None.

        A resumed search skips the variants already finished and re-runs one cut short.
        """
        store, progress = self.run.store, self.progress
        rows = {r.trial_id: r for r in store.trials() if r.origin == REFERENCE_ORIGIN}
        for i, values in enumerate(self.run.reference_ladder(self.space)):
            tid = f"{REFERENCE_PREFIX}{i}"
            rec = rows.get(tid)
            if rec is None or rec.status == TrialStatus.RUNNING:
                if progress.time_up():
                    return STOPPED_REFERENCE
                job = Reference(tid, values, i, origin=REFERENCE_ORIGIN)
                self.record_failure(job, self.jobs.run([job])[0])
                rec = store.get(tid)
                if rec is None or rec.status == TrialStatus.RUNNING:
                    return STOPPED_REFERENCE
                progress.note(
                    f"[reference] trial {tid} {rec.status!s:<10} {trial_summary(rec)} | "
                    f"{rec.description or ''}"
                )
            if rec.status != TrialStatus.INFEASIBLE:
                return None  # trained (ok), or failed: either way the search goes on
        return None

    def nothing_fits(self) -> str | None:
        """Why no subnet can fit, when even the smallest one at the smallest width misses.

        Checked only when no reference variant fitted either: the supernet is then
        not trained, and the search ends with what the smallest designs need.
        """
        if any(r.status == TrialStatus.OK for r in self.run.store.trials()):
            return None
        d = self.run.dataset
        spec = plan_supernet(d.input_shape, d.num_classes, min(WIDTHS))
        check = self.jobs.run([Check(spec.width, subnet_values(spec, smallest(spec)))])[0]
        if not isinstance(check, Fits) or check.fits:
            return None
        return f"nothing to search: the supernet's smallest subnet misses too ({check.reason})"

    # ---------------------------------------------------------------- stage 1
    def supernet(self, epochs: int) -> str | None:
        """The trained supernet's checkpoint hash; None if the time budget ran out first."""
        path = self.run.out_dir / CHECKPOINT
        done = checkpoint_epochs(path)
        if done < epochs:
            if done:
                self.progress.note(f"Supernet: resumed after epoch {done}/{epochs}.")
            seconds: list[float] = []

            def on_epoch(e: Epoch) -> bool:
                epoch_line(self.progress, epochs, e.epoch, e.loss, e.seconds, seconds)
                return self.progress.time_up() and e.epoch < epochs

            job = Train(self.spec.width, epochs)
            result = self.jobs.run([job], on_epoch=on_epoch, progress=self.progress)[0]
            if isinstance(result, Failed):
                raise FatalError(f"the supernet's training failed{_where(result)}: {result.error}")
            if not isinstance(result, Trained) or result.stopped:
                return None
        return hashlib.sha256(path.read_bytes()).hexdigest()

    # ---------------------------------------------------------------- stage 2
    def subnet_search(self) -> bool:
        """Evolve over subnets; False if the time budget ran out first."""
        cfg, spec = self.run.config, self.spec
        rows = {subnet_from_values(spec, r.hyperparameters): r for r in self._rows()}
        numbers = itertools.count(len(rows))
        scored = [sum(r.inherited_accuracy is not None for r in rows.values())]
        start = time.monotonic()

        def screened(job: Job, result: Result | None) -> None:
            self.record_failure(job, result)
            if isinstance(result, Screened) and result.score is not None:
                scored[0] += 1
                if scored[0] % REPORT_EVERY == 0 or scored[0] == cfg.subnets:
                    self._search_line(scored[0], time.monotonic() - start)

        def evaluate(nets: list[Subnet]) -> list[tuple[float, float] | None]:
            results, todo = {}, []
            for net in nets:
                rec = rows.get(net)
                if rec is not None and _screened(rec):
                    results[net] = _result(rec)  # scored before (a fine-tuning cut short included)
                else:
                    tid = rec.trial_id if rec else f"s{next(numbers):04d}"
                    values = subnet_values(spec, net)
                    todo.append(Screen(tid, spec.width, values, self.sha256 or ""))
            if todo and self.progress.time_up():
                raise TimeUp
            done = self.jobs.run(todo, on_done=screened, progress=self.progress)
            if any(r is None for r in done):
                raise TimeUp
            for job, result in zip(todo, done, strict=True):
                results[subnet_from_values(spec, job.values)] = _score(result)
            return [results[net] for net in nets]

        settings = EvolutionSettings(subnets=cfg.subnets, population=min(POPULATION, cfg.subnets))
        try:
            evolve(spec, evaluate, settings, seed=cfg.seed, start=(smallest(spec),))
        except TimeUp:
            return False
        return True

    def _search_line(self, scored: int, seconds: float) -> None:
        best = min(self._rows(TrialStatus.SCREENED), key=_inherited, default=None)
        left = (self.run.config.subnets - scored) * seconds / max(1, scored)
        best_txt = (
            "" if best is None else f"best inherited {100 * (best.inherited_accuracy or 0):.1f}% | "
        )
        self.progress.note(
            f"[subnets {scored}/{self.run.config.subnets}] {best_txt}"
            f"{format_duration(self.progress.elapsed_s)}, ~{format_duration(left)} left"
        )

    # ---------------------------------------------------------------- stage 3
    def finetune(self, epochs: int) -> str | None:
        """Fine-tune, convert, score and measure the best screened subnets."""
        store, spec = self.run.store, self.spec
        scored = [r for r in self._rows() if r.inherited_accuracy is not None]
        top = sorted(scored, key=_inherited)[: self.run.config.max_trials]
        left = (TrialStatus.SCREENED, TrialStatus.RUNNING)
        numbers = itertools.count(1)

        def done(tid: str) -> None:
            ok = store.trials(TrialStatus.OK)  # the reference's row included
            best = max(ok, key=lambda r: r.score or 0.0, default=None)
            rec = store.get(tid)
            if rec is not None:
                self.progress.trial_done(rec, next(numbers), best)

        for rec in top:
            if rec.status not in left:
                done(rec.trial_id)  # fine-tuned before a --resume
        jobs = [
            Finetune(r.trial_id, spec.width, dict(r.hyperparameters), self.sha256 or "", epochs)
            for r in top
            if r.status in left
        ]

        def finished(job: Job, result: Result | None) -> None:
            if result is not None:
                self.record_failure(job, result)
                done(job.tid)  # type: ignore[union-attr]

        results = self.jobs.run(jobs, on_done=finished, progress=self.progress)
        return STOPPED_FINETUNE if any(r is None for r in results) else None

    # ---------------------------------------------------------------- the store
    def record_failure(self, job: Job, result: Result | None) -> None:
        """A job that could not be done: its trial rows end as failed, with why."""
        if not isinstance(result, Failed):
            return
        store = self.run.store
        open_ = (TrialStatus.RUNNING, TrialStatus.SCREENED if isinstance(job, Finetune) else None)
        for tid in WIRE.trial_ids(job):
            rec = store.get(tid)
            if rec is None:
                store.start_trial(tid, dict(getattr(job, "values", {})), origin=_origin(job))
            if rec is None or rec.status in open_:
                reason = (
                    f"{result.error}"
                    if result.worker is None
                    else (f"on worker {result.worker}: {result.error}")
                )
                store.finish_trial(tid, TrialStatus.FAILED, reason=reason, finished_at=time.time())

    def _rows(self, status: TrialStatus | None = None) -> list[TrialRecord]:
        return [r for r in self.run.store.trials(status) if r.origin == ORIGIN]


def epoch_line(
    progress: Progress, epochs: int, epoch: int, loss: float, took: float, seconds: list[float]
) -> None:
    """The progress line after one supernet epoch (``seconds``: the epochs' times so far)."""
    seconds.append(took)
    left = (epochs - epoch) * statistics.median(seconds)  # the first one traces
    progress.note(
        f"[supernet {epoch:>{len(str(epochs))}}/{epochs}] loss {loss:.3f} | "
        f"{format_duration(progress.elapsed_s)}, ~{format_duration(left)} left"
    )


def _where(result: Failed) -> str:
    return "" if result.worker is None else f" on worker {result.worker}"


def _origin(job: Job) -> str:
    return job.origin if isinstance(job, Reference) else ORIGIN


def _score(result: Result | None) -> tuple[float, float] | None:
    return result.score if isinstance(result, Screened) else None


def _screened(rec: TrialRecord) -> bool:
    """Whether a stored subnet's screening finished (a fine-tuning cut short included)."""
    return rec.status != TrialStatus.RUNNING or rec.inherited_accuracy is not None


def _result(rec: TrialRecord) -> tuple[float, float] | None:
    """A stored subnet's search result (None: it did not fit or failed its check)."""
    if rec.inherited_accuracy is None:
        return None
    return rec.inherited_accuracy, rec.inherited_loss or 0.0


def _inherited(rec: TrialRecord) -> tuple[float, float, str]:
    """Sort key of screened subnets: best inherited accuracy, then loss, then id."""
    return (-(rec.inherited_accuracy or 0.0), rec.inherited_loss or 0.0, rec.trial_id)
