"""The chosen design's refit and its average as stored values (see :mod:`.refit`).

The store keeps the refit in its meta as plain JSON (``refit``, the shape older
stores have, so they resume); :meth:`Refit.to_dict` writes that shape and
:meth:`Refit.from_dict` reads it, missing keys of older versions included.

Example::

    refit = Refit.from_dict(store.get_meta(REFIT_META))
    refit.figures  # an average's own Figures, or None (the trial's stand)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from mcunas.figures import Figures
from mcunas.jsontext import JsonObject
from mcunas.search.results.record import figure_columns

__all__ = ["REFIT_META", "Ensemble", "Refit", "figures_of_columns"]

REFIT_META = "refit"  # the store's meta key for the chosen trial's refit


def figures_of_columns(columns: JsonObject) -> Figures:
    """The :class:`Figures` a trial row's figure columns were written from.

    Inverse of :func:`mcunas.search.results.record.figure_columns` for the figures an
    average keeps (its front-end share back in ``details["cost_split"]``).
    """
    details: JsonObject = {}
    if columns.get("frontend_latency_ms") is not None:
        front = {
            "latency_ms": columns["frontend_latency_ms"],
            "sram_bytes": columns.get("frontend_sram_bytes"),
            "flash_bytes": columns.get("frontend_flash_bytes"),
            "source": columns.get("frontend_source"),
        }
        if columns.get("frontend_energy_uj") is not None:
            front["energy_uj"] = columns["frontend_energy_uj"]
        details["cost_split"] = {"frontend": front}
    return Figures(
        source=str(columns.get("source") or ""),
        estimated=bool(columns.get("estimated")),
        latency_ms=float(columns["latency_ms"]),
        arena_bytes=int(columns["arena_bytes"]),
        peak_sram_bytes=int(columns["peak_sram_bytes"]),
        flash_bytes=int(columns["flash_bytes"]),
        latency_error_pct=columns.get("latency_error_pct"),
        sim_latency_ms=columns.get("sim_latency_ms"),
        macs=columns.get("macs"),
        energy_uj=columns.get("energy_uj"),
        energy_error_pct=columns.get("energy_error_pct"),
        energy_source=columns.get("energy_source") or "",
        details=details,
    )


@dataclass(frozen=True)
class Ensemble:
    """Refits of the chosen design averaged: how many, and the average's own figures.

    ``figures`` None: no average fitted, the refit alone (``members`` 1) is exported.
    """

    members: int
    figures: Figures | None = None

    def to_dict(self) -> JsonObject:
        """Its part of the store's ``refit`` meta (the figures as a trial row's columns)."""
        if self.figures is None:
            return {"members": self.members}
        return {"members": self.members, "figures": figure_columns(self.figures)}

    @classmethod
    def from_dict(cls, data: JsonObject) -> Ensemble | None:
        """The ensemble part of a ``refit`` meta; None when no members were planned."""
        if data.get("members") is None:
            return None
        own = data.get("figures")
        return cls(int(data["members"]), figures_of_columns(own) if own else None)


@dataclass(frozen=True)
class Refit:
    """The chosen design refitted on every sample, as stored (see :mod:`.refit`).

    Its key (``trial_id``, ``seed``, ``epochs``, ``distill``, ``members_planned``)
    says which choice it is the refit of; ``ensemble`` is the average of members
    when more than one was planned.
    """

    trial_id: str
    seed: int
    epochs: int
    distill: bool
    members_planned: int
    model_path: str
    model_sha256: str
    samples: int
    steps: int = 0
    seconds: float = 0.0
    teacher: str | None = None
    ensemble: Ensemble | None = None

    @property
    def figures(self) -> Figures | None:
        """The exported graph's own figures (an average's); None: the trial's stand."""
        return None if self.ensemble is None else self.ensemble.figures

    @property
    def members(self) -> int:
        """How many refits the exported model averages (1: the refit alone)."""
        return 1 if self.ensemble is None else self.ensemble.members

    def to_dict(self) -> JsonObject:
        """The store's ``refit`` meta (and ``best.json``'s ``refit``)."""
        out: JsonObject = {
            "trial_id": self.trial_id,
            "seed": self.seed,
            "epochs": self.epochs,
            "distill": self.distill,
            "members_planned": self.members_planned,
            "model_path": self.model_path,
            "model_sha256": self.model_sha256,
            "samples": self.samples,
            "steps": self.steps,
            "seconds": self.seconds,
        }
        if self.ensemble is not None:
            out |= self.ensemble.to_dict()
        return out | {"teacher": self.teacher}

    @classmethod
    def from_dict(cls, data: object) -> Refit | None:
        """The stored refit (keys an older version did not write take their defaults)."""
        if isinstance(data, Refit):
            return data
        if not isinstance(data, Mapping) or not data:
            return None
        return cls(
            trial_id=str(data.get("trial_id", "")),
            seed=int(data.get("seed") or 0),
            epochs=int(data.get("epochs") or 0),
            distill=bool(data.get("distill", False)),
            members_planned=int(data.get("members_planned") or 1),
            model_path=str(data.get("model_path", "")),
            model_sha256=str(data.get("model_sha256", "")),
            samples=int(data.get("samples") or 0),
            steps=int(data.get("steps") or 0),
            seconds=float(data.get("seconds") or 0.0),
            teacher=data.get("teacher"),
            ensemble=Ensemble.from_dict(dict(data)),
        )
