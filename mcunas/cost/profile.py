"""Profile one INT8 ``.tflite`` on one board: ops, audit, memory, latency, fit.

Everything here is a simulator estimate: the graph and the arena come from the
real model and the real TFLite Micro planner, latency from the fitted latency
model (:mod:`mcunas.cost.latency`), device-specific corrections from the
board profile.

Example::

    from mcunas.boards.catalog import load_board
    from mcunas.cost.profile import profile_model
    p = profile_model("model.tflite", load_board("nucleo_f746zg"))
    p.fits, p.reasons, p.latency.ms, p.memory.arena_bytes
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mcunas.cost.memory import MemoryEstimate, estimate_memory, live_bytes_per_op
from mcunas.errors import ModelError
from mcunas.figures import Figures, OpTiming
from mcunas.tflite.audit import AuditReport, audit_graph, is_float_model
from mcunas.tflite.reader import Graph, load_model_bytes, read_graph

__all__ = [
    "ModelProfile",
    "fit_reasons",
    "layer_rows",
    "load_int8_model",
    "model_layers",
    "profile_model",
    "with_frontend",
]


def load_int8_model(model: bytes | str | os.PathLike) -> tuple[bytes, Graph]:
    """The bytes and graph of a full-integer INT8 ``.tflite`` (bytes or a path).

    Raises:
        ModelError: the file is missing or not a ``.tflite``, or the model is float.
    """
    data = load_model_bytes(model) if isinstance(model, (str, Path, os.PathLike)) else bytes(model)
    where = str(model) if isinstance(model, (str, os.PathLike)) else "model"
    graph = read_graph(data, name=where)
    if is_float_model(graph):
        raise ModelError(
            f"{where} is a float model: mcunas needs a full-integer INT8 quantized .tflite "
            "(convert with TFLITE_BUILTINS_INT8 and a representative dataset)"
        )
    return data, graph


@dataclass(frozen=True)
class ModelProfile:
    """The simulator's view of one model on one board."""

    board: Any
    graph: Graph
    audit: AuditReport
    memory: MemoryEstimate
    latency: Any  # mcunas.cost.latency.LatencyEstimate
    fits: bool
    reasons: tuple[str, ...]
    source: str

    @property
    def runnable(self) -> bool:
        """True if TFLM can run every op and allocate the model."""
        return self.audit.runnable and self.memory.runtime_error is None

    @property
    def energy(self) -> Any:
        """Energy per inference (:class:`~mcunas.cost.energy.EnergyEstimate`), from latency."""
        from mcunas.cost.energy import estimate_energy

        return estimate_energy(self.latency.ms, self.latency.error_pct, self.board)

    def figures(self, model_crc32: str = "") -> Figures:
        """The profile as the one figures type (an estimate; ``details`` keeps the audit).

        Args:
            model_crc32: str, the model's CRC-32 as the firmware reports it (optional).
        """
        from mcunas.cost.energy import with_energy

        return with_energy(self._figures(model_crc32), self.board)

    def _figures(self, model_crc32: str) -> Figures:
        lat = self.latency
        return Figures(
            source=self.source,
            estimated=True,
            latency_ms=float(lat.ms),
            arena_bytes=int(self.memory.arena_bytes),
            peak_sram_bytes=int(self.memory.peak_sram_bytes),
            flash_bytes=int(self.memory.flash_bytes),
            latency_max_ms=float(lat.ms) * (1 + lat.error_pct / 100.0),
            latency_error_pct=float(lat.error_pct),
            macs=int(self.graph.total_macs),
            model_crc32=model_crc32,
            ops=tuple(OpTiming(o.index, o.op, float(o.ms), o.error_pct) for o in lat.ops),
            reasons=self.reasons,
            details={
                "board": self.board.name,
                "kernels": self.board.kernels,
                "runnable": self.runnable,
                "latency_lower_bound_ms": lat.lower_bound_ms,
                "mac_utilisation": lat.mac_utilisation,
                "total_macs": self.graph.total_macs,
                "audit": self.audit.to_dict(),
                "memory_methods": dict(self.memory.methods),
                "latency_coefficients": lat.coefficients_source,
            },
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict: totals, per-op rows, audit, memory methods."""
        lat, energy = self.latency, self.energy
        return {
            "source": self.source,
            "estimated": True,
            "board": self.board.name,
            "kernels": self.audit.kernels,
            "latency_ms": lat.ms,
            "latency_error_pct": lat.error_pct,
            "latency_lower_bound_ms": lat.lower_bound_ms,
            "mac_utilisation": lat.mac_utilisation,
            "arena_bytes": self.memory.arena_bytes,
            "peak_sram_bytes": self.memory.peak_sram_bytes,
            "flash_bytes": self.memory.flash_bytes,
            "model_bytes": self.memory.model_bytes,
            "energy_uj": energy.uj,
            "energy_error_pct": energy.error_pct,
            "power_mw": energy.power_mw,
            "power_basis": energy.basis,
            "total_macs": self.graph.total_macs,
            "fits": self.fits,
            "runnable": self.runnable,
            "reasons": list(self.reasons),
            "limits": _limits(self.board),
            "audit": self.audit.to_dict(),
            "memory": self.memory.to_dict(),
            "latency_coefficients": lat.coefficients_source,
            "ops": layer_rows(self.graph, lat),
        }


def layer_rows(graph: Graph, latency: Any) -> list[dict[str, Any]]:
    """One row per op: kind, output shape, MACs, estimated time and error, live arena bytes.

    Args:
        graph: the model's :class:`~mcunas.tflite.reader.Graph`.
        latency: its ``LatencyEstimate`` on the board (per-op estimates).
    """
    est = {o.index: o for o in latency.ops}
    live = live_bytes_per_op(graph)
    return [
        {
            "index": op.index,
            "op": op.name,
            "output_shape": list(op.output_shape),
            "dtype": op.dtype,
            "macs": op.macs,
            "est_ms": est[op.index].ms if op.index in est else None,
            "est_error_pct": est[op.index].error_pct if op.index in est else None,
            "accelerated": est[op.index].accelerated if op.index in est else False,
            "live_bytes": live[i],
        }
        for i, op in enumerate(graph.ops)
    ]


def _limits(board: Any) -> dict[str, int]:
    return {
        "usable_sram_bytes": board.usable_sram_bytes,
        "model_sram_budget_bytes": board.model_sram_budget_bytes,
        "usable_flash_bytes": board.usable_flash_bytes,
    }


def model_layers(model_bytes: bytes, board: Any) -> list[dict[str, Any]]:
    """:func:`layer_rows` of a ``.tflite`` on ``board`` (graph and latency model only)."""
    graph = read_graph(model_bytes)
    return layer_rows(graph, _predict_latency(graph, board))


def _predict_latency(graph: Graph, board: Any) -> Any:
    # imported here so that importing this module stays cheap for the CLI
    from mcunas.cost.latency import predict_latency

    return predict_latency(graph, board)


def fit_reasons(
    peak_sram_bytes: int, arena_bytes: int, flash_bytes: int, board: Any, arena: str = "arena"
) -> list[str]:
    """Why these memory figures do not fit ``board`` (empty: they fit).

    Args:
        peak_sram_bytes: peak SRAM, checked against the board's usable SRAM.
        arena_bytes: tensor arena(s), checked against the board's model SRAM budget.
        flash_bytes: flash, checked against the board's usable flash.
        board: a ``BoardProfile``.
        arena: what the arena figure is called in the reason.
    """
    reasons = []
    kib = 1024
    if peak_sram_bytes > board.usable_sram_bytes:
        reasons.append(
            f"peak SRAM {peak_sram_bytes / kib:.1f} KiB > usable SRAM "
            f"{board.usable_sram_bytes / kib:.1f} KiB"
        )
    if arena_bytes > board.model_sram_budget_bytes:
        reasons.append(
            f"{arena} {arena_bytes / kib:.1f} KiB > model SRAM budget "
            f"{board.model_sram_budget_bytes / kib:.1f} KiB"
        )
    if flash_bytes > board.usable_flash_bytes:
        reasons.append(
            f"flash {flash_bytes / kib:.1f} KiB > usable flash "
            f"{board.usable_flash_bytes / kib:.1f} KiB"
        )
    return reasons


def _fit_reasons(memory: MemoryEstimate, board: Any) -> list[str]:
    return fit_reasons(memory.peak_sram_bytes, memory.arena_bytes, memory.flash_bytes, board)


def profile_model(
    model: bytes | str | os.PathLike, board: Any, kernels: str | None = None
) -> ModelProfile:
    """Profile a model on a board: graph, op audit, memory, latency and fit.

    Args:
        model: ``.tflite`` bytes or path.
        board: a ``BoardProfile``.
        kernels: kernel library override ("reference", "cmsis-nn", "esp-nn").

    Returns:
        A :class:`ModelProfile`. A model that does not fit or has ops TFLM
        cannot run is not an error: ``fits`` is False and ``reasons`` say why.

    Raises:
        ModelError: the file is missing or not a ``.tflite``, or the model is a
            float model (mcunas profiles full-integer INT8 models).
    """
    if kernels is not None and kernels != board.kernels:
        board = board.with_kernels(kernels)
    data, graph = load_int8_model(model)
    audit = audit_graph(graph, board)
    memory = estimate_memory(data, graph, board)
    latency = _predict_latency(graph, board)
    reasons: list[str] = []
    if not audit.runnable:
        reasons.append(f"TFLite Micro has no kernel for: {', '.join(audit.unsupported)}")
    elif memory.runtime_error is not None:
        reasons.append(f"TFLite Micro cannot allocate the model: {memory.runtime_error}")
    reasons += _fit_reasons(memory, board)
    return ModelProfile(
        board=board,
        graph=graph,
        audit=audit,
        memory=memory,
        latency=latency,
        fits=not reasons,
        reasons=tuple(reasons),
        source=f"simulator:{latency.version}",
    )


def with_frontend(figures: Figures, front: Any, board: Any) -> Figures:
    """A model's figures with the audio front end's cost added: front end + model.

    Latency per inference window adds (the front end runs, then the model). SRAM:
    the front end's arena and buffers add to the model's peak (two interpreters,
    two arenas; see :class:`~mcunas.cost.frontend.FrontendCost`), and both
    arenas together must fit the board's model SRAM budget. Flash adds the graph and
    its tables. The board's fit is checked again on the totals. A board measurement
    whose firmware ran both graphs (``details["frontend"]``, see
    :data:`~mcunas.cost.frontend.BOARD_FRONTEND`) gives the front end's measured
    time, and its SRAM and flash already hold the front end: they are split, not
    added to. ``details["cost_split"]`` keeps the split; figures that already have
    it are returned as they are.

    Args:
        figures: the model's own figures (estimated or measured).
        front: FrontendCost | None (None: ``figures`` unchanged).
        board: the ``BoardProfile`` the figures are for.
    """
    from mcunas.cost.frontend import BOARD_FRONTEND, SPLIT

    if front is None or SPLIT in figures.details:
        return figures
    measured = figures.details.get(BOARD_FRONTEND)
    if isinstance(measured, dict) and "latency_ms" in measured:
        return _with_measured(figures, front, measured, board)
    split = front.to_dict()
    model = _model_part(figures)
    peak = figures.peak_sram_bytes + front.sram_bytes
    flash = figures.flash_bytes + front.flash_bytes
    own = fit_reasons(figures.peak_sram_bytes, figures.arena_bytes, figures.flash_bytes, board)
    arenas = figures.arena_bytes + front.sram_bytes
    reasons = [r for r in figures.reasons if r not in own]
    reasons += fit_reasons(peak, arenas, flash, board, arena="model + front-end arenas")
    fe_ms, fe_err = front.latency_ms, front.error_pct
    total = dataclasses.replace(
        figures,
        latency_ms=figures.latency_ms + fe_ms,
        latency_max_ms=_upper(figures.latency_max_ms, fe_ms * (1.0 + fe_err / 100.0)),
        latency_error_pct=_combined_error(figures, fe_ms, fe_err),
        peak_sram_bytes=peak,
        flash_bytes=flash,
        reasons=tuple(reasons),
        energy_uj=figures.energy_uj if _metered(figures) else None,
        details={**figures.details, SPLIT: {"frontend": split, "model": model}},
    )
    return _energy(total, board, fe_ms)


def _with_measured(figures: Figures, front: Any, measured: dict, board: Any) -> Figures:
    """A board's figures with the front end it ran: its time added, SRAM and flash split."""
    from mcunas.cost.frontend import SPLIT, simulated_total

    fe_ms = float(measured["latency_ms"])
    arena = int(measured.get("arena_bytes", front.arena_bytes))
    split = {
        **front.to_dict(),
        "latency_ms": fe_ms,
        "latency_error_pct": None,
        "arena_bytes": arena,
        "sram_bytes": arena + front.buffer_bytes,
        "source": f"measured: {figures.source} (SRAM and flash shares: estimates)",
    }
    model = {
        **_model_part(figures),
        "peak_sram_bytes": max(0, figures.peak_sram_bytes - split["sram_bytes"]),
        "flash_bytes": max(0, figures.flash_bytes - front.flash_bytes),
    }
    total = dataclasses.replace(
        figures,
        latency_ms=figures.latency_ms + fe_ms,
        latency_max_ms=_upper(figures.latency_max_ms, float(measured.get("latency_max_ms", fe_ms))),
        **simulated_total(figures, front.latency_ms, fe_ms),
        energy_uj=figures.energy_uj if _metered(figures) else None,
        details={**figures.details, SPLIT: {"frontend": split, "model": model}},
    )
    return _energy(total, board, fe_ms)


def _model_part(figures: Figures) -> dict[str, Any]:
    return {
        "latency_ms": figures.latency_ms,
        "latency_error_pct": figures.latency_error_pct,
        "arena_bytes": figures.arena_bytes,
        "peak_sram_bytes": figures.peak_sram_bytes,
        "flash_bytes": figures.flash_bytes,
    }


def _energy(figures: Figures, board: Any, fe_ms: float) -> Figures:
    """Front end + model energy (estimate unless metered), its shares in the cost split."""
    from mcunas.cost.energy import frontend_energy_split, with_energy
    from mcunas.cost.frontend import SPLIT

    total = with_energy(figures, board)
    if total.energy_uj is None:
        return total
    shares = frontend_energy_split(total, fe_ms, board)
    split = {k: {**v, **shares.get(k, {})} for k, v in total.details[SPLIT].items()}
    return dataclasses.replace(total, details={**total.details, SPLIT: split})


def _metered(figures: Figures) -> bool:
    return figures.energy_source.startswith("meter:")


def _upper(model_max: float | None, fe_max: float) -> float | None:
    return None if model_max is None else model_max + fe_max


def _combined_error(figures: Figures, fe_ms: float, fe_err: float) -> float | None:
    """The total latency's stated error: each part's error weighted by its share."""
    if figures.latency_error_pct is None:
        return None
    total = figures.latency_ms + fe_ms
    if total <= 0 or not figures.estimated:  # a board's: the simulator's error against it
        return figures.latency_error_pct
    return (figures.latency_ms * figures.latency_error_pct + fe_ms * fe_err) / total
