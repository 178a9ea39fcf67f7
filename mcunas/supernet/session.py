"""``mcunas search --strategy supernet``: train one supernet, search its subnets, fine-tune.

Four stages, each resumable without losing finished work:

0. **reference** (:mod:`mcunas.supernet.trained`): the ``--seed-arch`` design
   trained from scratch, the known-good baseline every search keeps unless a
   candidate beats it by more than validation noise;
1. **supernet** (:mod:`mcunas.supernet.train`): checkpointed every epoch;
2. **subnet search** (:mod:`mcunas.supernet.evolve`): every subnet drawn is a
   trial row (``origin = "supernet"``): its cost checked against the board and
   the budgets from its INT8 graph (:mod:`mcunas.supernet.costgraph`, the same
   profile as every trial's check), then, if it fits, scored with inherited
   weights (``screened``, ``inherited_accuracy``). A resumed search replays the
   same draws from the store;
3. **fine-tuning**: the best ``--max-trials`` screened subnets are extracted,
   fine-tuned for ``--finetune-epochs``, converted to INT8, scored with the
   TFLite Micro kernels and measured (simulator, board or rack) like any trial;
   they become ``ok`` (or ``infeasible``) rows with ``int8_accuracy``.

The front, the report and ``best/`` then come from the ``ok`` rows as in
every search.
"""

from __future__ import annotations

import itertools
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from mcunas.errors import CandidateError
from mcunas.search.budgets import violations
from mcunas.search.progress import Progress, format_duration
from mcunas.search.session import SearchSession
from mcunas.search.store import TrialOrigin, TrialRecord, TrialStatus
from mcunas.supernet.evolve import EvolutionSettings, evolve
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
from mcunas.supernet.trained import TrainedStages

__all__ = ["SupernetSession", "TimeUp", "epoch_line"]

ORIGIN = TrialOrigin.SUPERNET
REPORT_EVERY = 25  # subnets between two progress lines of the search
POPULATION = 40


class TimeUp(Exception):  # noqa: N818 - a stop signal, not an error
    """The time budget ran out between two subnets."""


class SupernetSession(TrainedStages, SearchSession):
    """A search with ``--strategy supernet`` (see the module); reporting is inherited.

    ``run`` sets the stages' shared parts: ``spec`` (the supernet planned),
    ``space`` (the stage family), ``runner`` (trains, converts, measures) and,
    once the supernet is trained, ``scorer`` (inherited scores, extraction).
    """

    spec: Any = None
    space: Any = None
    runner: Any = None
    scorer: Any = None

    def run(self, progress: Progress) -> str | None:
        """Train (or resume) the supernet, search its subnets, fine-tune the best."""
        cfg = self.config
        d = self._load_data()
        self.space, self.runner, close = self._components(("stages",))
        self.spec = spec = self._plan(progress)
        epochs, finetune = cfg.supernet_plan
        progress.note(
            f"Data: {len(d.y_train)} training, {len(d.y_val)} validation samples of "
            f"{d.input_shape} ({d.kind}), {d.num_classes} classes. Supernet: "
            f"{spec.space_size():,} subnets; {epochs} epochs, then {cfg.subnets} subnets "
            f"scored, the best {cfg.max_trials} fine-tuned for {finetune} epochs."
        )
        try:
            stopped = self._reference(progress) or self._nothing_fits()
            if stopped is not None:
                return stopped
            self.scorer = self._supernet(epochs, progress)
            if self.scorer is None:
                return "time budget reached while training the supernet (--resume continues)"
            if not self._search(progress):
                return "time budget reached during the subnet search (--resume continues)"
            return self._finetune(finetune, progress)
        finally:
            close()

    def _plan(self, progress: Progress) -> SupernetSpec:
        """The supernet at the largest width whose subnets fit the budgets often enough.

        A search space whose every subnet misses the budgets finds nothing, one
        whose subnets all fit wastes its capacity (MCUNet's point): widths x1,
        x0.75, x0.5, x0.25 are tried in turn, each with its smallest subnet and
        random ones, until a quarter of them fit (:func:`choose_width`). The choice is kept
        in the store, so a resumed search trains the same supernet.
        """
        d = self.dataset
        stored = self.store.get_meta("supernet_width")
        if stored is not None:
            return plan_supernet(d.input_shape, d.num_classes, float(stored))
        width, tried = choose_width(d.input_shape, d.num_classes, self._fit_flags, self.config.seed)
        self.store.set_meta("supernet_width", width)
        progress.note(
            f"Supernet width x{width:g} (subnets inside the budgets, of {PROBES} drawn: {tried})."
        )
        return plan_supernet(d.input_shape, d.num_classes, width)

    def _nothing_fits(self) -> str | None:
        """Why no subnet can fit, when even the smallest one at the smallest width misses.

        Checked only when no reference variant fitted either: the supernet is then
        not trained, and the search ends with what the smallest designs need.
        """
        if any(r.status == TrialStatus.OK for r in self.store.trials()):
            return None
        d = self.dataset
        spec = plan_supernet(d.input_shape, d.num_classes, min(WIDTHS))
        check = self._check(spec, smallest(spec))
        if check.status is None:
            return None
        return f"nothing to search: the supernet's smallest subnet misses too ({check.reason})"

    def _fit_flags(self, spec: SupernetSpec, nets: list[Subnet]) -> list[bool]:
        """Whether each of ``nets`` (of ``spec``) passes the cost check (board and budgets)."""
        return [self._check(spec, net).status is None for net in nets]

    def _check(self, spec: SupernetSpec, net: Subnet) -> _Check:
        """The cost check of a subnet's INT8 graph: latency first, then the full profile."""
        from mcunas.supernet.costgraph import subnet_tflite

        model = subnet_tflite(spec, net)
        slow, latency = self._too_slow(model)
        if slow:  # the arena planning is the check's costly part: skip it for these
            return _Check(TrialStatus.INFEASIBLE, slow, latency, full=False)
        try:
            cost = self.runner.worker.profile(model)
        except CandidateError as exc:
            return _Check(TrialStatus.FAILED, f"check failed: {exc}")
        reasons = violations(cost, self.config.budgets)
        return _Check(TrialStatus.INFEASIBLE if reasons else None, "; ".join(reasons), cost)

    # ------------------------------------------------------------------ stage 1
    def _trainer(self, epochs: int) -> Any:
        """The supernet trainer of ``spec`` over ``epochs`` in the output folder (not loaded)."""
        from mcunas.supernet.train import SupernetTrainer

        cfg = self.config
        return SupernetTrainer(
            self.spec,
            self.dataset,
            self.recipe,
            epochs,
            self.out_dir,
            cfg.seed,
            schedule=cfg.supernet_schedule,
        )

    def _supernet(self, epochs: int, progress: Progress) -> Any | None:
        """The trained supernet's scorer; None if the time budget ran out first."""
        from mcunas.supernet.subnets import SubnetScorer

        cfg = self.config
        trainer = self._trainer(epochs)
        done = trainer.load()
        if done:
            progress.note(f"Supernet: resumed after epoch {done}/{epochs}.")
        seconds: list[float] = []

        def report(epoch: int, loss: float, took: float) -> None:
            epoch_line(progress, epochs, epoch, loss, took, seconds)
            if progress.time_up() and epoch < epochs:
                raise TimeUp

        try:
            trainer.train(report)
        except TimeUp:
            return None
        return SubnetScorer(trainer.model, self.dataset, cfg.seed)

    # ------------------------------------------------------------------ stage 2
    def _search(self, progress: Progress) -> bool:
        """Evolve over subnets; False if the time budget ran out first."""
        cfg, spec = self.config, self.spec
        rows = {subnet_from_values(spec, r.hyperparameters): r for r in self._rows()}
        numbers = itertools.count(len(rows))
        stats = {"scored": sum(r.inherited_accuracy is not None for r in rows.values())}
        start = time.monotonic()

        def scored(result: tuple[float, float] | None) -> None:
            if result is not None:
                stats["scored"] += 1
                if stats["scored"] % REPORT_EVERY == 0 or stats["scored"] == cfg.subnets:
                    self._search_line(stats["scored"], time.monotonic() - start, progress)

        def evaluate(nets: list[Subnet]) -> list[tuple[float, float] | None]:
            results, todo = {}, []
            for net in nets:
                rec = rows.get(net)
                if rec is not None and _screened(rec):
                    results[net] = _result(rec)  # scored before (a fine-tuning cut short included)
                else:
                    todo.append((net, rec.trial_id if rec else f"s{next(numbers):04d}"))
            if todo:
                screened = self._screen_many(todo, scored, progress)
                results.update(zip((net for net, _ in todo), screened, strict=True))
            return [results[net] for net in nets]

        settings = EvolutionSettings(subnets=cfg.subnets, population=min(POPULATION, cfg.subnets))
        try:
            evolve(spec, evaluate, settings, seed=cfg.seed, start=(smallest(spec),))
        except TimeUp:
            return False
        return True

    def _screen_many(
        self,
        todo: list[tuple[Subnet, str]],
        scored: Callable[[tuple[float, float] | None], None],
        progress: Progress,
    ) -> list[tuple[float, float] | None]:
        """Screen each ``(subnet, trial id)``, calling ``scored`` after each.

        Raises:
            TimeUp: the time budget ran out before one of them.
        """
        results = []
        for net, tid in todo:
            if progress.time_up():
                raise TimeUp
            results.append(self._screen(net, tid))
            scored(results[-1])
        return results

    def _screen(self, net: Subnet, tid: str) -> tuple[float, float] | None:
        """Cost check, then (if it fits) the inherited score; one trial row either way."""
        spec, space = self.spec, self.space
        values = subnet_values(spec, net)
        self.store.start_trial(tid, values, family="stages", origin=ORIGIN, started_at=time.time())
        self.store.update(tid, description=space.describe(space.hyperparameters(**values)))
        start = time.perf_counter()
        check = self._check(spec, net)
        cost, latency_only = check.figures, {}
        if cost is not None and check.full:
            self.store.record_figures(tid, cost, before_training=True)
        elif cost is not None:  # the latency verdict alone: no arena figures to record
            latency_only = {"latency_ms": cost.latency_ms, "source": cost.source}
            latency_only |= {"latency_error_pct": cost.latency_error_pct, "estimated": True}
        if check.status is not None:
            self._end(tid, check.status, check.reason, check_s=_since(start), **latency_only)
            return None
        checked = time.perf_counter()
        result = self.scorer.score(net)
        self.store.finish_trial(
            tid,
            TrialStatus.SCREENED,
            inherited_accuracy=result.accuracy,
            inherited_loss=result.loss,
            macs=cost.macs,
            check_s=checked - start,
            eval_s=_since(checked),
            finished_at=time.time(),
        )
        return result.accuracy, result.loss

    def _too_slow(self, model: bytes) -> tuple[str | None, Any]:
        """The latency verdict alone (the predictor the full check runs), before the arena.

        Returns the reason (None: within the latency budget, or none given) and
        the estimate as figures (latency only).
        """
        from mcunas.figures import Figures
        from mcunas.predict.latency import predict_latency
        from mcunas.tflite.reader import read_graph

        if self.config.max_latency_ms is None:
            return None, None
        est = predict_latency(read_graph(model), self.board)
        latency = Figures("simulator", True, est.ms, 0, 0, 0, latency_error_pct=est.error_pct)
        return "; ".join(violations(latency, self.config.budgets)) or None, latency

    def _search_line(self, scored: int, seconds: float, progress: Progress) -> None:
        best = min(self._rows(TrialStatus.SCREENED), key=_inherited, default=None)
        left = (self.config.subnets - scored) * seconds / max(1, scored)
        best_txt = (
            "" if best is None else f"best inherited {100 * (best.inherited_accuracy or 0):.1f}% | "
        )
        progress.note(
            f"[subnets {scored}/{self.config.subnets}] {best_txt}"
            f"{format_duration(progress.elapsed_s)}, ~{format_duration(left)} left"
        )

    # ------------------------------------------------------------------ stage 3
    def _finetune(self, epochs: int, progress: Progress) -> str | None:
        """Fine-tune, convert, score and measure the best screened subnets."""
        scored = [r for r in self._rows() if r.inherited_accuracy is not None]
        top = sorted(scored, key=_inherited)[: self.config.max_trials]
        left = (TrialStatus.SCREENED, TrialStatus.RUNNING)
        pending = [
            (r.trial_id, subnet_from_values(self.spec, r.hyperparameters))
            for r in top
            if r.status in left
        ]
        numbers = itertools.count(1)

        def done(tid: str) -> None:
            ok = self.store.trials(TrialStatus.OK)  # the reference's row included
            best = max(ok, key=lambda r: r.score or 0.0, default=None)
            progress.trial_done(self.store.get(tid), next(numbers), best)  # type: ignore[arg-type]

        for rec in top:
            if rec.status not in left:
                done(rec.trial_id)  # fine-tuned before a --resume
        return self._finetune_many(epochs, pending, done, progress)

    def _finetune_many(
        self,
        epochs: int,
        pending: list[tuple[str, Subnet]],
        done: Callable[[str], None],
        progress: Progress,
    ) -> str | None:
        """Fine-tune each ``(trial id, subnet)`` in turn; why it stopped early, or None."""
        for tid, net in pending:
            if progress.time_up():
                return "time budget reached while fine-tuning (--resume continues)"
            self._finetune_one(tid, net, epochs)
            done(tid)
        return None

    # ------------------------------------------------------------------ store
    def _rows(self, status: TrialStatus | None = None) -> list[TrialRecord]:
        return [r for r in self.store.trials(status) if r.origin == ORIGIN]


@dataclass(frozen=True)
class _Check:
    """A subnet's cost check: ``status`` None if it fits, else why not."""

    status: TrialStatus | None
    reason: str = ""
    figures: Any = None  # the profile's Figures, or the latency estimate alone (full=False)
    full: bool = True


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


def _since(start: float) -> float:
    return time.perf_counter() - start
