"""A search's trial as a value: its status, origin and every recorded figure.

:class:`TrialRecord` is what the store holds per row, what the report and the
Pareto front read, and what a distributed search's chief and workers send each
other (:meth:`TrialRecord.to_dict` and :func:`record_from_dict`).
:func:`figure_columns` maps one set of cost figures to the record's fields.
:mod:`mcunas.search.results.store` keeps records in SQLite.

Example::

    rec = TrialRecord("03", family="dsconv", status=TrialStatus.OK, latency_ms=4.2)
    assert record_from_dict(rec.to_dict()) == rec
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field, fields

from mcunas.figures import Figures
from mcunas.jsontext import JsonObject
from mcunas.space.values import HpValue, HpValues

__all__ = [
    "HpValue",
    "HpValues",
    "TrialOrigin",
    "TrialRecord",
    "TrialStatus",
    "figure_columns",
    "record_from_dict",
]

# One hyperparameter's value (a Keras Tuner choice, int, float or boolean) and a
# design's values by name: a trial's hyperparameters, a rung of the reference's ladder.


class TrialStatus(enum.StrEnum):
    """Where a trial ended up."""

    OK = "ok"  # trained, converted, evaluated and measured
    INFEASIBLE = "infeasible"  # failed the cost check (or a measured budget): see reason
    FAILED = "failed"  # could not build, train, convert or measure: see reason
    RUNNING = "running"  # started, not finished (or killed mid-trial)
    SCREENED = "screened"  # a subnet scored with inherited supernet weights, not fine-tuned


class TrialOrigin(enum.StrEnum):
    """Where a trial's architecture came from (no origin: the search's own proposal)."""

    SEED = "seed"  # a --seed-arch design: a tuner trial drawing it, or a supernet reference rung
    SUPERNET = "supernet"  # a subnet of the trained supernet


@dataclass
class TrialRecord:
    """One row of the store (every field but ``trial_id`` may be empty)."""

    trial_id: str
    hyperparameters: HpValues = field(default_factory=dict)
    family: str | None = None
    origin: str | None = None  # a TrialOrigin value (stored as its text), or None
    status: TrialStatus = TrialStatus.RUNNING
    reason: str | None = None
    description: str | None = None
    float_accuracy: float | None = None
    int8_accuracy: float | None = None
    int8_loss: float | None = None  # mean cross-entropy of the INT8 model on validation
    inherited_accuracy: float | None = None  # a subnet's, supernet weights (float, validation)
    inherited_loss: float | None = None  # its cross-entropy there (nats)
    score: float | None = None
    latency_ms: float | None = None
    latency_error_pct: float | None = None
    sim_latency_ms: float | None = None
    arena_bytes: int | None = None
    peak_sram_bytes: int | None = None
    flash_bytes: int | None = None
    energy_uj: float | None = None  # per inference: estimate, or a power meter's
    energy_error_pct: float | None = None  # the estimate's 90% band (None: measured)
    energy_source: str | None = None
    # the audio front end's share of latency_ms, peak_sram_bytes and flash_bytes (which
    # are front end + model totals); empty for a search without a front end
    frontend_latency_ms: float | None = None
    frontend_sram_bytes: int | None = None  # its arena and buffers
    frontend_flash_bytes: int | None = None
    frontend_source: str | None = None  # "estimate: ..." or "measured: <board>"
    frontend_energy_uj: float | None = None  # its share of energy_uj (an estimate)
    macs: int | None = None
    params: int | None = None
    source: str | None = None
    estimated: bool | None = None
    build_s: float = 0.0
    check_s: float = 0.0
    train_s: float = 0.0
    convert_s: float = 0.0
    eval_s: float = 0.0
    measure_s: float = 0.0
    epochs_run: int | None = None
    steps: int | None = None  # optimizer steps of its training (epochs_run x steps/epoch)
    # its validation curve (mcunas.search.results.curves: JSON of epoch -> float accuracy)
    curve: str | None = None
    steps_saved: int | None = None  # steps not trained: stopped on a rung (training.curves)
    model_sha256: str | None = None
    model_path: str | None = None
    worker: str | None = None  # distributed search: the worker that ran it (None: local)
    worker_wall_s: float | None = None  # its wall time on that worker, start to finish
    started_at: float | None = None
    finished_at: float | None = None

    @property
    def feasible(self) -> bool:
        """True for a trial that ran to the end within every budget."""
        return self.status == TrialStatus.OK

    @property
    def total_s(self) -> float:
        """Seconds spent on this trial's stages."""
        return (
            self.build_s
            + self.check_s
            + self.train_s
            + self.convert_s
            + self.eval_s
            + self.measure_s
        )

    def to_dict(self) -> JsonObject:
        """Plain dict for JSON output."""
        data = {f.name: getattr(self, f.name) for f in fields(self)}
        data["status"] = str(self.status)
        return data


def figure_columns(figures: Figures, *, before_training: bool = False) -> JsonObject:
    """The store columns of one set of cost figures (see :meth:`TrialStore.record_figures`)."""
    values: JsonObject = {
        "latency_ms": figures.latency_ms,
        "latency_error_pct": figures.latency_error_pct,
        "arena_bytes": figures.arena_bytes,
        "peak_sram_bytes": figures.peak_sram_bytes,
        "flash_bytes": figures.flash_bytes,
        "energy_uj": figures.energy_uj,
        "energy_error_pct": figures.energy_error_pct,
        "energy_source": figures.energy_source or None,
        "source": figures.source,
        "estimated": figures.estimated,
    }
    if figures.macs is not None:
        values["macs"] = figures.macs
    front = (figures.details.get("cost_split") or {}).get("frontend")  # with_frontend's
    if front is not None:
        values["frontend_latency_ms"] = front["latency_ms"]
        values["frontend_sram_bytes"] = front["sram_bytes"]
        values["frontend_flash_bytes"] = front["flash_bytes"]
        values["frontend_source"] = front["source"]
        if front.get("energy_uj") is not None:
            values["frontend_energy_uj"] = front["energy_uj"]
    sim = figures.latency_ms if before_training else figures.sim_latency_ms
    if sim is not None:
        values["sim_latency_ms"] = sim
    return values


def record_from_dict(data: JsonObject) -> TrialRecord:
    """Inverse of :meth:`TrialRecord.to_dict` (a row sent between chief and worker)."""
    names = {f.name for f in fields(TrialRecord)}
    clean = {k: v for k, v in data.items() if k in names}
    clean["status"] = TrialStatus(clean.get("status", TrialStatus.RUNNING))
    return TrialRecord(**clean)
