"""Which parts of a board's latency estimate are fitted to measurements, and which are priors.

An estimate multiplies a kernel library's table by a scale, a core's speed and the
setup's factors, and states a band. ``mcunas boards show`` and ``mcunas profile``
print each part with its kind: ``fitted`` (published or measured rows set it, and
held-out rows checked it), ``prior`` (no measured pair: a guess that widens the
band and does not move the estimate, or a transfer such as CoreMark per MHz) or
``baseline`` (what the scales were fitted on).

Example::

    for part in latency_basis(load_board("nucleo_f746zg")):
        print(part.part, part.value, part.kind, part.source)
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from mcunas.cost.coefficients import (
    CORE_FACTORS,
    DEFAULT_ERRORS,
    DEFAULT_SCALES,
    STATED_RUNTIME_ERRORS,
    core_family,
    family_value,
    path_for,
)
from mcunas.cost.setup import effect_label, runtime_stated, setup_effects

__all__ = ["BasisPart", "basis_summary", "latency_basis"]

# Core speeds measured on one library run on each core (bench/core_fit.py); the rest
# of CORE_FACTORS carries CoreMark per MHz or a table's anchor core over.
_MEASURED_CORES = {"cmsis-nn-dsp": ("cortex-m4", "cortex-m7", "cortex-m33")}


@dataclass(frozen=True)
class BasisPart:
    """One part of the estimate: what it is, its value, ``fitted``/``prior``/``baseline``, why."""

    part: str
    value: str
    kind: str
    source: str


@lru_cache(maxsize=4)
def _boards(*, kernel_only: bool, recent_only: bool) -> dict[str, frozenset[str]]:
    """Per path and per ``path/family``: the boards of the published rows a default used.

    ``kernel_only``: rows whose time is mostly kernel work (what sizes a band and a
    family's scale); ``recent_only``: runtimes from 2021 on where a path has such rows
    (what sets a scale's centre and the band of a profile stating its runtime).
    """
    from mcunas.cost.fit.scale import load_calibration, overhead_row

    rows = [r for r in load_calibration() if not r.off_baseline]
    recent = {r.path for r in rows if r.recent}
    out: dict[str, set[str]] = defaultdict(set)
    for r in rows:
        if recent_only and not r.recent and r.path in recent:
            continue
        if kernel_only and overhead_row(r, DEFAULT_SCALES):
            continue
        out[r.path].add(r.board)
        out[f"{r.path}/{core_family(r.core)}"].add(r.board)
    return {k: frozenset(v) for k, v in out.items()}


def latency_basis(board: Any) -> list[BasisPart]:
    """The parts of ``board``'s latency estimate for its kernel library, each with its basis."""
    path = path_for(board.core, board.kernels)
    return [
        _scale_part(board, path),
        _core_part(board.core, path),
        _band_part(board, path),
        *(
            BasisPart(
                f"setup {e.key}",
                f"x{e.factor:.2f} +/-{e.error_pct:.0f}%",
                e.kind,
                e.value
                if e.kind == "baseline"
                else f"{e.value}; {effect_label(e)}; " + e.basis.partition(": ")[2],
            )  # fmt: skip
            for e in setup_effects(board)
        ),
    ]


def basis_summary(board: Any) -> str:
    """One line: ``fitted: kernel scale, core speed; prior: setup arena (x1.50 not applied)``."""
    parts = latency_basis(board)
    text = []
    for kind in ("fitted", "prior"):
        names = [p.part for p in parts if p.kind == kind]
        if names:
            text.append(f"{kind}: {', '.join(names)}")
    return "; ".join(text) or "baseline only"


def _scale_part(board: Any, path: str) -> BasisPart:
    entry = (board.latency or {}).get(board.kernels)
    if isinstance(entry, dict) and "scale" in entry:
        source = str(entry.get("source") or (board.latency or {}).get("source") or "the profile")
        return BasisPart("kernel scale", f"x{float(entry['scale']):g}", "fitted", source)
    family = f"{path}/{core_family(board.core)}"
    if family in DEFAULT_SCALES:
        n = len(_boards(kernel_only=True, recent_only=True).get(family, ()))
        source = (
            f"{path} on {core_family(board.core)} cores: {n} board(s) of kernel work, "
            "pooled with the path's with the weight of one board"
        )
        return BasisPart("kernel scale", f"x{DEFAULT_SCALES[family]:g}", "fitted", source)
    if path in DEFAULT_SCALES:
        n = len(_boards(kernel_only=False, recent_only=True).get(path, ()))
        source = f"{path}: published rows of {n} board(s)"
        return BasisPart("kernel scale", f"x{DEFAULT_SCALES[path]:g}", "fitted", source)
    return BasisPart("kernel scale", "x1", "prior", f"{path}: no published row")


def _core_part(core: str, path: str) -> BasisPart:
    from mcunas.cost.latency import path_tables

    factors = CORE_FACTORS.get(path, {})
    factor = factors.get(core, CORE_FACTORS["tflm-ref"].get(core, 1.0))
    if core == path_tables()[path].anchor_core:
        return BasisPart("core speed", "1x (the table's own core)", "baseline", path)
    value = f"{factor:g}x the table core's cycles"
    if core in _MEASURED_CORES.get(path, ()):
        source = "one vendor library's runs of the same models on M4F, M33 and M7"
        return BasisPart("core speed", value, "fitted", source)
    return BasisPart("core speed", value, "prior", "CoreMark per MHz against the table's core")


def _band_part(board: Any, path: str) -> BasisPart:
    entry = (board.latency or {}).get(board.kernels)
    if isinstance(entry, dict) and "error_pct" in entry:
        method = str(entry.get("error_method") or "leave-one-out over the board's rows")
        return BasisPart("band", f"+/-{float(entry['error_pct']):g}%", "fitted", method)
    table = STATED_RUNTIME_ERRORS if runtime_stated(board) else DEFAULT_ERRORS
    band = family_value(table, path, board.core, float("nan"))
    if band != band:  # NaN: no row of this path
        return BasisPart("band", "+/-50% at least", "prior", f"{path}: no published row")
    family = f"{path}/{core_family(board.core)}"
    boards = _boards(kernel_only=True, recent_only=table is STATED_RUNTIME_ERRORS)
    n = len(boards.get(family if family in table else path, ()))
    source = (
        f"90% band of leave-one-board-out errors: {n} board(s) of this kind, "
        "pooled with the kernel library's (one board weighs as much as the pool)"
    )
    return BasisPart("band", f"+/-{band:g}%", "fitted" if n else "prior", source)
