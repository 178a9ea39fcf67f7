"""The board setup a profile states, as factors on the latency estimate.

A profile may state where the weights and the arena live, whether the caches are
on, the flash wait states at its clock, the TFLM and CMSIS-NN vintage and the
compiler's optimisation level (``board_checks.check_setup``). Each stated key is a
:class:`SetupEffect` with its basis. A ``fitted`` effect (published rows measured
it: the old-runtime factor on CMSIS-NN's DSP path, code and data in TCM) moves the
estimate and adds its error. A ``prior`` (no published pair checks it) does not
move the estimate: its guess only widens the band, to hold both the baseline and
the guess (:func:`widened`). Moved by guesses, the held-out rows' estimates went the
wrong way as often as the right one.

The baseline every factor is relative to is what the default scales were fitted
on: weights in flash behind the chip's cache or flash accelerator, the arena in
internal SRAM, TFLM and CMSIS-NN of 2021 or later, ``-O2``. A key left out means
that baseline, and a profile that states none keeps today's estimate (the older
``memory`` key still applies when neither ``weights`` nor ``arena`` is given).

    from mcunas.cost.setup import setup_effects, combined
    factor, error = combined(setup_effects(board))
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from mcunas.boards.checks import cmsis_nn_major, runtime_year
from mcunas.cost.coefficients import MEMORY_FACTORS, path_for

# What a key left out means (the fitted baseline); `mcunas boards show` prints it.
BASELINE = {
    "weights": "flash",
    "arena": "sram",
    "cache": "true",
    "flash_wait_states": "as the board's clock needs",
    "runtime": "tflm-2021 or later",
    "cmsis_nn": "3.0 or later",
    "opt": "O2",
}

# TFLM of 2020 and earlier (TF <= 2.4, CMSIS-NN < 3.0) against 2021 on, per cycle, on
# CMSIS-NN's DSP path: MLPerf Tiny's four models on NUCLEO-L4R5ZI (Cortex-M4F, TFLM
# 2.3.1, v0.5) against the DSP path's scale fitted on the recent boards (EK-RA6M4,
# TF 2.5's TFLM, MLPerf Tiny v0.7; NUCLEO-F413ZH, tflite-micro of 2021), the cores'
# cycles put on the M4F's by the X-CUBE-AI ratios (bench/core_fit.py). Geometric mean of the
# four per-model ratios, and their 90% spread (33%) widened for the core ratios' own
# uncertainty (scripts/bench predictor --emit-defaults prints both). One old-runtime
# board: no held-out row checks it.
OLD_RUNTIME_FACTOR = (1.47, 35.0)
OLD_RUNTIME_BASIS = (
    "fitted: MLPerf Tiny's 4 models, NUCLEO-L4R5ZI TFLM 2.3.1 vs the 2021-on DSP fit "
    "(one old-runtime board)"
)
LAST_OLD_YEAR = 2020
FIRST_RECENT_CMSIS_NN = 3
# The code paths whose rows the factor was fitted on: on any other path (TFLM's reference
# kernels, Helium, the M0+'s C) no pair checks it, so it widens the band only.
OLD_RUNTIME_PATHS = ("cmsis-nn-dsp",)

# Priors (no checkable published pair with the setup stated): factor on time, error %.
_WEIGHTS = {  # (cache on, cache off)
    "flash": ((1.0, 0.0), (1.0, 0.0)),
    "sram": ((0.9, 20.0), (0.9, 20.0)),
    "tcm": ((0.85, 25.0), (0.85, 25.0)),
    "sdram": ((1.3, 50.0), (3.0, 60.0)),
    "psram": ((1.3, 50.0), (3.0, 60.0)),
}
_ARENA = {
    "sram": ((1.0, 0.0), (1.0, 0.0)),
    "tcm": ((0.9, 20.0), (0.9, 20.0)),
    "sdram": ((1.5, 50.0), (3.0, 60.0)),
    "psram": ((1.5, 50.0), (3.0, 60.0)),
}
# Flash fetches the cache no longer hides: per wait state, and for unstated ones.
UNCACHED_PER_WAIT_STATE = 0.15
UNCACHED_DEFAULT = (1.6, 50.0)
_OPT = {"O2": (1.0, 0.0), "O3": (0.95, 10.0), "Os": (1.2, 25.0)}


@dataclass(frozen=True)
class SetupEffect:
    """One stated key's effect: ``factor`` on the time, its ``error_pct``, and why.

    A ``prior`` (no published pair measured it) keeps ``factor`` 1: its guess,
    ``prior_factor`` with ``prior_error_pct``, only widens ``error_pct`` to hold both
    the baseline and the guess (:func:`widened`). A ``fitted`` effect moves the estimate.
    """

    key: str
    value: str
    factor: float
    error_pct: float
    basis: str
    prior_factor: float = 1.0
    prior_error_pct: float = 0.0

    @property
    def kind(self) -> str:
        """``fitted``, ``prior`` or ``baseline``: the first word of :attr:`basis`."""
        return self.basis.split(":")[0]


def widened(factor: float, error_pct: float) -> float:
    """The band (in %) of an unapplied prior: it holds the baseline and the prior's range.

    ``factor`` x (1 + ``error_pct``) above and its inverse below, in % of the time:
    a guess of x1.5 +/-50% that no pair checks is stated as +/-125%, centred on 1.
    """
    return (max(factor, 1.0 / factor) * (1.0 + error_pct / 100.0) - 1.0) * 100.0


def _prior(key: str, value: str, factor: float, error_pct: float, basis: str) -> SetupEffect:
    """A prior's effect: no move, the band widened by its guess (``basis`` starts ``prior``)."""
    if factor == 1.0 and error_pct == 0.0:
        return SetupEffect(key, value, 1.0, 0.0, "baseline")
    band = round(widened(factor, error_pct), 1)
    return SetupEffect(key, value, 1.0, band, basis, factor, error_pct)


def setup_effects(board: Any) -> list[SetupEffect]:
    """The effects of the setup ``board`` states, in key order (empty: none stated).

    Args:
        board: a :class:`mcunas.boards.catalog.BoardProfile`.
    """
    setup = dict(getattr(board, "setup", {}) or {})
    effects = _placement(board, setup)
    cache = setup.get("cache", True)
    if "cache" in setup or "flash_wait_states" in setup:
        effects.append(_cache(cache, setup.get("flash_wait_states"), setup.get("weights", "flash")))
    vintage = _vintage(board, setup)
    if vintage is not None:
        effects.append(vintage)
    if "opt" in setup:
        factor, error = _OPT[setup["opt"]]
        basis = "prior: compiler optimisation level"
        effects.append(_prior("opt", setup["opt"], factor, error, basis))
    return effects


def runtime_stated(board: Any) -> bool:
    """True when a Cortex-M profile states its ``runtime`` or ``cmsis_nn``.

    Such a profile is stated at the error of the runtimes of 2021 on
    (``coefficients.STATED_RUNTIME_ERRORS``) instead of the wider error that
    also holds boards of unknown vintage.
    """
    setup = getattr(board, "setup", None) or {}
    core = str(getattr(board, "core", ""))
    return core.startswith("cortex-m") and ("runtime" in setup or "cmsis_nn" in setup)


def combined(effects: list[SetupEffect]) -> tuple[float, float]:
    """The product of the factors and the errors added in quadrature."""
    factor = math.prod(e.factor for e in effects) if effects else 1.0
    return factor, math.hypot(*(e.error_pct for e in effects)) if effects else 0.0


def _placement(board: Any, setup: dict[str, Any]) -> list[SetupEffect]:
    """Weights and arena where stated; else the older ``memory`` key as before."""
    if "weights" not in setup and "arena" not in setup:
        memory = getattr(board, "memory", "sram")
        if memory == "sram":
            return []
        factor, error = MEMORY_FACTORS.get(memory, (1.0, 0.0))
        if memory == "tcm":
            basis = "fitted: Teensy 4.1 hello_world (one board)"
            return [SetupEffect("memory", memory, factor, error, basis)]
        return [_prior("memory", memory, factor, error, "prior: external memory")]
    weights, arena = setup.get("weights", "flash"), setup.get("arena", "sram")
    if weights == "tcm" and arena == "tcm":
        factor, error = MEMORY_FACTORS["tcm"]
        return [SetupEffect("weights+arena", "tcm", factor, error, "fitted: as memory = tcm")]
    on = 0 if setup.get("cache", True) else 1
    effects = []
    for key, value, table in (("weights", weights, _WEIGHTS), ("arena", arena, _ARENA)):
        if key in setup:
            factor, error = table[value][on]
            effects.append(_prior(key, value, factor, error, "prior: memory placement"))
    return effects


def _cache(cache: bool, wait_states: int | None, weights: str) -> SetupEffect:
    """Caches off expose the flash wait states to every weight and code fetch."""
    value = f"cache={'on' if cache else 'off'}" + (
        f", {wait_states} wait states" if wait_states is not None else ""
    )
    if cache or weights not in ("flash", "sdram", "psram"):
        # the baseline rows ran at their boards' wait states behind the cache
        return SetupEffect("cache", value, 1.0, 0.0, "baseline")
    if wait_states is None:
        factor, error = UNCACHED_DEFAULT
    else:
        factor, error = 1.0 + UNCACHED_PER_WAIT_STATE * wait_states, 50.0
    return _prior("cache", value, factor, error, "prior: uncached flash fetches")


def _vintage(board: Any, setup: dict[str, Any]) -> SetupEffect | None:
    """TFLM 2020 and earlier (or CMSIS-NN before 3.0) on a Cortex-M board."""
    stated = [k for k in ("runtime", "cmsis_nn") if k in setup]
    if not stated or not str(getattr(board, "core", "")).startswith("cortex-m"):
        return None
    value = ", ".join(f"{k}={setup[k]}" for k in stated)
    old = "runtime" in setup and runtime_year(setup["runtime"]) <= LAST_OLD_YEAR
    if "cmsis_nn" in setup:
        old = old or cmsis_nn_major(setup["cmsis_nn"]) < FIRST_RECENT_CMSIS_NN
    if not old:
        return SetupEffect("runtime", value, 1.0, 0.0, "baseline")
    factor, error = OLD_RUNTIME_FACTOR
    path = path_for(str(board.core), str(getattr(board, "kernels", "")))
    if path in OLD_RUNTIME_PATHS:
        return SetupEffect("runtime", value, factor, error, OLD_RUNTIME_BASIS)
    basis = f"prior: the runtime factor was fitted on {', '.join(OLD_RUNTIME_PATHS)}, not {path}"
    return _prior("runtime", value, factor, error, basis)


def effect_label(effect: SetupEffect) -> str:
    """``fitted``, or ``prior: x1.50 not applied, widens only`` for a prior."""
    if effect.kind != "prior":
        return effect.kind
    return f"prior: x{effect.prior_factor:.2f} not applied, widens only"


def band_breakdown(board: Any, error_pct: float) -> str:
    """What a model's stated error is made of, and which key would narrow it.

    ``+/-48%: +/-41% kernels, +/-33% weights (prior: x0.90 not applied, widens only)``.
    The kernel share is what is left of ``error_pct`` after the setup effects'
    errors (they add in quadrature).
    """
    effects = [e for e in setup_effects(board) if e.error_pct > 0]
    setup_error = combined(effects)[1]
    kernels = math.sqrt(max(error_pct**2 - setup_error**2, 0.0))
    parts = [f"+/-{kernels:.0f}% kernels"] + [
        f"+/-{e.error_pct:.0f}% {e.key} ({effect_label(e)})" for e in effects
    ]
    text = f"+/-{error_pct:.0f}%: " + ", ".join(parts)
    if str(getattr(board, "core", "")).startswith("cortex-m") and not runtime_stated(board):
        text += "; state `runtime` in the profile to narrow it"
    return text
