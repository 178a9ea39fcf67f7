"""Energy per inference: the board's supply power times the inference time, with an error.

Model (what MLPerf Tiny's energy runs show: a board's power is nearly constant while
it infers, whatever the model)::

    E [uJ] = supply_v [V] x I_active [mA] x latency [ms]

``latency`` is the estimate or the measurement, the invoke overhead included.
``I_active`` is the current drawn from the supply during inference: the profile's
``[power] active_ma`` at its clock (or ``active_ma_psram`` / ``active_ma_dual_core``
where the model runs from PSRAM or on two cores), scaled linearly to another clock
(``--clock-mhz``: dynamic current dominates at these clocks). A profile without
``active_ma`` takes its core's measured current per MHz (:data:`CORE_UA_PER_MHZ`).
These are the chip's own supply currents. With ``rail = "board"`` the figure is
for the board's input instead, as a meter wired there sees it: ``board_ma`` (the
board's own regulators, LEDs, debug probe, external memories) is added to the
active and idle currents. The basis text says which rail a figure is for.

The stated error is a 90% band: the latency's band and the power's spread combined
in log space, ``exp(sqrt(ln(1+a)^2 + ln(1+b)^2)) - 1``.

Example::

    from mcunas.cost.energy import estimate_energy
    e = estimate_energy(12.5, 20.0, load_board("nucleo_l4r5zi"))
    e.uj, e.error_pct, e.basis
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any

from mcunas.figures import Figures

__all__ = [
    "CORE_UA_PER_MHZ",
    "DATASHEET_SPREAD_PCT",
    "EnergyEstimate",
    "PowerFigures",
    "board_power",
    "combine_errors",
    "estimate_energy",
    "frontend_energy_split",
    "with_energy",
    "with_frontend_energy",
]

# details key of a board run's energy split (front end share, model share).
ENERGY_SPLIT = "energy_split"

# Supply current per MHz while TFLM infers (whole chip, from the supply pin), by core:
# power / supply voltage / clock of the MLPerf Tiny energy runs in
# mcunas/calibration/energy.csv, the median of each chip's runs, then of the core's
# chips (geometric mean; `scripts/bench energy --emit-defaults` prints them).
# Cortex-M4: STM32L4R5 (LDO); Cortex-M33: RA6M4 (LDO) and STM32U575 (SMPS);
# Cortex-M7: STM32H7A3 (SMPS).
CORE_UA_PER_MHZ = {
    "cortex-m4": 205.0,
    "cortex-m4f": 205.0,
    "cortex-m33": 105.0,
    "cortex-m7": 161.0,
}
# Cores without a run of their own: the median of the measured chips of the family,
# or for Espressif chips the middle of the datasheets' CPU-active range (ESP32
# Series Datasheet, 'Power Consumption by Power Modes': Modem-sleep, 240 MHz dual
# core, 30-68 mA; ESP32-C3 Series Datasheet, 'Current Consumption in Modem-sleep
# Mode': 160 MHz, CPU running, about 20-28 mA).
FAMILY_UA_PER_MHZ = {"cortex-m": 141.0, "xtensa": 204.0, "riscv32": 150.0}
# 90% band of a default current on a chip it was not measured on: leave-one-chip-out
# over the measured Cortex-M chips (`scripts/bench energy`); Espressif chips: half
# the datasheet range around its middle, widened by the same chip-to-chip spread.
FAMILY_SPREAD_PCT = {"cortex-m": 82.0, "xtensa": 90.0, "riscv32": 90.0}
# Half-width of a two-sided 90% normal interval, in standard deviations of the log error.
BAND_Z = 1.645
# A profile's own active_ma: a datasheet's typical run current (CoreMark or while(1))
# against the same chip running NN kernels, which keep SRAM and flash busier.
DATASHEET_SPREAD_PCT = 35.0


@dataclass(frozen=True)
class PowerFigures:
    """A board's power while it infers, at its current clock.

    ``basis`` says where ``active_ma`` comes from (the profile or a core default);
    ``spread_pct`` is its 90% band; ``idle_ma`` the current between inferences (None
    where the profile gives none); ``marker_pin`` the GPIO the firmware raises around
    the timed invokes (None: no marker, a meter integrates between serial timestamps).
    """

    supply_v: float
    active_ma: float
    spread_pct: float
    basis: str
    idle_ma: float | None = None
    marker_pin: int | None = None

    @property
    def active_mw(self) -> float:
        """Power drawn while inferring, in mW."""
        return self.supply_v * self.active_ma


@dataclass(frozen=True)
class EnergyEstimate:
    """Energy of one inference: ``uj`` +/- ``error_pct`` (90% band), at ``power_mw``."""

    uj: float
    error_pct: float
    power_mw: float
    basis: str


def _family(core: str) -> str:
    if core.startswith("cortex-m"):
        return "cortex-m"
    return "xtensa" if core.startswith("xtensa") else "riscv32"


def core_default_ma(core: str, clock_hz: float) -> tuple[float, float, str]:
    """(current mA, spread %, basis) of a core without a profile figure, at ``clock_hz``."""
    family = _family(core)
    per_mhz = CORE_UA_PER_MHZ.get(core)
    basis = f"{core} default (MLPerf Tiny energy runs)"
    if per_mhz is None:
        per_mhz = FAMILY_UA_PER_MHZ[family]
        source = "MLPerf Tiny energy runs" if family == "cortex-m" else "datasheet ranges"
        basis = f"{family} default ({source})"
    return per_mhz * clock_hz / 1e9, FAMILY_SPREAD_PCT[family], basis


def _active_key(board: Any) -> str:
    """The profile key that applies: PSRAM and two-core figures where the datasheet has them."""
    if getattr(board, "memory", "sram") == "psram" and "active_ma_psram" in board.power:
        return "active_ma_psram"
    if getattr(board, "multicore_kernels", False) and "active_ma_dual_core" in board.power:
        return "active_ma_dual_core"
    return "active_ma"


def board_power(board: Any) -> PowerFigures:
    """The power figures of ``board`` (a BoardProfile) at its current clock."""
    power = dict(getattr(board, "power", {}) or {})
    supply_v = float(power.get("supply_v", 3.3))
    key = _active_key(board)
    if key in power:
        basis_hz = getattr(board, "power_clock_hz", 0) or board.clock_hz
        active = float(power[key]) * board.clock_hz / basis_hz
        spread = float(power.get("spread_pct", DATASHEET_SPREAD_PCT))
        basis = f"profile [power] {key}"
    else:
        active, spread, basis = core_default_ma(board.core, board.clock_hz)
    if "supply_v" not in power:
        basis += ", supply 3.3 V assumed"
    idle = power.get("idle_ma")
    pin = power.get("marker_pin")
    board_ma = float(power.get("board_ma", 0.0))
    if power.get("rail", "chip") == "board":  # what a meter on the board's input sees
        active += board_ma
        idle = None if idle is None else float(idle) + board_ma
        basis += f", whole board: + {board_ma:g} mA of its own parts"
    else:
        basis += ", chip supply only"
    return PowerFigures(
        supply_v=supply_v,
        active_ma=active,
        spread_pct=spread,
        basis=basis,
        idle_ma=None if idle is None else float(idle),
        marker_pin=None if pin is None else int(pin),
    )


def combine_errors(*pcts: float | None) -> float:
    """Several independent 90% bands (in %) as one: their logs added in quadrature."""
    logs = [math.log1p(p / 100.0) for p in pcts if p]
    return 100.0 * math.expm1(math.sqrt(sum(v * v for v in logs)))


def estimate_energy(
    latency_ms: float, latency_error_pct: float | None, board: Any
) -> EnergyEstimate:
    """Energy per inference of a model taking ``latency_ms`` on ``board``.

    Args:
        latency_ms: float, the inference latency (estimate or measurement).
        latency_error_pct: float | None, its stated band (None or 0 for a measurement).
        board: BoardProfile.
    """
    power = board_power(board)
    return EnergyEstimate(
        uj=power.active_mw * latency_ms,
        error_pct=combine_errors(latency_error_pct, power.spread_pct),
        power_mw=power.active_mw,
        basis=power.basis,
    )


def with_energy(figures: Figures, board: Any) -> Figures:
    """``figures`` with the energy estimate filled in (kept as is if a meter measured it)."""
    if figures.energy_uj is not None:
        return figures
    latency_error = figures.latency_error_pct if figures.estimated else None
    est = estimate_energy(figures.latency_ms, latency_error, board)
    what = "estimated" if figures.estimated else "measured"
    return dataclasses.replace(
        figures,
        energy_uj=est.uj,
        energy_error_pct=est.error_pct,
        energy_source=f"estimate: {est.power_mw:.1f} mW ({est.basis}) x {what} latency",
    )


def with_frontend_energy(figures: Figures, board: Any) -> Figures:
    """A board run's figures whose energy per inference covers its front end too.

    The firmware times the front end (``details["frontend"]``) after the model's
    timed invokes, outside the window a power meter integrates, so the front end's
    share is always an estimate: its measured latency x the board's active power.
    It is added to the model's energy (metered or estimated); ``details["energy_split"]``
    keeps both shares and their sources. Figures without a front end or an energy
    figure, or already split, are returned as they are.
    """
    fe = figures.details.get("frontend")
    if not isinstance(fe, dict) or figures.energy_uj is None or ENERGY_SPLIT in figures.details:
        return figures
    est = estimate_energy(float(fe["latency_ms"]), None, board)
    model_uj, total = figures.energy_uj, figures.energy_uj + est.uj
    fe_source = f"estimate: {est.power_mw:.1f} mW ({est.basis}) x measured front-end latency"
    split = {
        "frontend_uj": est.uj,
        "frontend_error_pct": est.error_pct,
        "frontend_source": fe_source,
        "model_uj": model_uj,
        "model_error_pct": figures.energy_error_pct,
        "model_source": figures.energy_source,
    }
    weighted = model_uj * (figures.energy_error_pct or 0.0) + est.uj * est.error_pct
    return dataclasses.replace(
        figures,
        energy_uj=total,
        energy_error_pct=weighted / total if total > 0 else figures.energy_error_pct,
        energy_source=f"{figures.energy_source}; + front end {est.uj:.2f} uJ ({fe_source})",
        details={**figures.details, ENERGY_SPLIT: split},
    )


def frontend_energy_split(total: Figures, fe_latency_ms: float, board: Any) -> dict[str, Any]:
    """The front end's and the model's shares of ``total.energy_uj`` (front end + model).

    The front end's share is the board run's own split when it has one, else an
    estimate: ``fe_latency_ms`` x the board's active power. The model's share is the rest.
    """
    split = total.details.get(ENERGY_SPLIT)
    if isinstance(split, dict):
        fe_uj, source = float(split["frontend_uj"]), str(split["frontend_source"])
    else:
        est = estimate_energy(fe_latency_ms, None, board)
        fe_uj = est.uj
        source = f"estimate: {est.power_mw:.1f} mW ({est.basis}) x front-end latency"
    fe_uj = min(fe_uj, total.energy_uj or 0.0)
    return {
        "frontend": {"energy_uj": fe_uj, "energy_source": source},
        "model": {"energy_uj": (total.energy_uj or 0.0) - fe_uj},
    }
