"""Energy estimate against published MLPerf Tiny energy runs (mcunas/calibration/energy.csv).

Every row is one MLPerf Tiny closed-division energy result: median energy per
inference and median throughput, the board's supply voltage from the submission's
system description. Rows marked tflm_cpu=yes run TensorFlow Lite Micro on the CPU
(the runtime mcunas measures); the others (X-CUBE-AI) only inform the per-core
supply current, which depends on the chip, not the inference library.

Tables:
  1. supply current per chip (power / voltage / clock) and leave-one-chip-out error
     of the core defaults (what a profile without active_ma gets);
  2. the TFLM rows against the estimate of a bare profile plus the supply voltage:
     in-sample (the shipped defaults), and held out (latency fitted without the
     row's board, current from the other chips).

scripts/bench energy                  # both tables and the medians quoted in the README
scripts/bench energy --emit-defaults  # also print CORE_UA_PER_MHZ / FAMILY_* for predict/energy.py
"""

from __future__ import annotations

import argparse
import csv
import math
import statistics
import sys
import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.latency_error import leave_one_board_out  # noqa: E402
from mcunas.boards.catalog import BoardProfile  # noqa: E402
from mcunas.cost.energy import BAND_Z, core_default_ma, estimate_energy  # noqa: E402
from mcunas.cost.fit.scale import load_calibration  # noqa: E402
from mcunas.cost.latency import predict_latency  # noqa: E402
from mcunas.tflite.reader import read_graph  # noqa: E402

ENERGY_CSV = ROOT / "mcunas" / "calibration" / "energy.csv"
MODELS = ROOT / "mcunas" / "calibration" / "models"


@dataclass(frozen=True)
class EnergyRow:
    """One published energy result."""

    id: str
    model: str
    board: str
    core: str
    clock_mhz: float
    supply_v: float
    runtime: str
    tflm_cpu: bool
    latency_ms: float
    energy_uj: float

    @property
    def current_ma(self) -> float:
        """Supply current while inferring: uJ / ms = mW, / V = mA."""
        return self.energy_uj / self.latency_ms / self.supply_v


def load_rows(path: Path = ENERGY_CSV) -> list[EnergyRow]:
    """The rows of ``energy.csv``."""
    with path.open(encoding="utf-8") as fh:
        return [
            EnergyRow(
                id=r["id"],
                model=r["model_file"],
                board=r["board"],
                core=r["core"],
                clock_mhz=float(r["clock_mhz"]),
                supply_v=float(r["supply_v"]),
                runtime=r["runtime"],
                tflm_cpu=r["tflm_cpu"] == "yes",
                latency_ms=float(r["latency_ms"]),
                energy_uj=float(r["energy_uj"]),
            )
            for r in csv.DictReader(fh)
        ]


def chip_currents(rows: list[EnergyRow]) -> dict[str, tuple[str, float]]:
    """Per chip: (core, median supply current per MHz in uA) over all its runs."""
    by_chip: dict[str, list[EnergyRow]] = defaultdict(list)
    for r in rows:
        by_chip[r.board].append(r)
    return {
        chip: (group[0].core, statistics.median(1000 * r.current_ma / r.clock_mhz for r in group))
        for chip, group in by_chip.items()
    }


def held_out_ua_per_mhz(chips: dict[str, tuple[str, float]], chip: str) -> float:
    """A chip's current per MHz from the other chips: same core if any, else all."""
    core = chips[chip][0]
    same = [v for c, (k, v) in chips.items() if c != chip and k == core]
    other = [v for c, (_, v) in chips.items() if c != chip]
    return statistics.median(same or other)


def band_pct(log_errors: list[float]) -> float:
    """90% band of log errors: exp(1.645 x rms) - 1, in %."""
    rms = math.sqrt(sum(e * e for e in log_errors) / len(log_errors))
    return 100.0 * math.expm1(BAND_Z * rms)


def chip_table(chips: dict[str, tuple[str, float]]) -> float:
    """Print the per-chip currents and their held-out errors; return the 90% band."""
    print(f"{'chip':<30} {'core':<11} {'uA/MHz':>7} {'held out':>9} {'error':>7}")
    logs = []
    for chip, (core, ua) in sorted(chips.items()):
        held = held_out_ua_per_mhz(chips, chip)
        logs.append(math.log(held / ua))
        print(f"{chip:<30} {core:<11} {ua:7.1f} {held:9.1f} {100 * (held / ua - 1):+6.1f}%")
    band = band_pct(logs)
    print(f"leave-one-chip-out 90% band of a core default: ±{band:.0f}%\n")
    return band


def bare_profile(row: EnergyRow) -> BoardProfile:
    """What a user writes for the row's board: core, clock, kernels and [power] supply_v."""
    return BoardProfile(
        name="bare",
        core=row.core,
        clock_hz=int(row.clock_mhz * 1e6),
        sram_bytes=1 << 20,
        flash_bytes=1 << 22,
        kernels="cmsis-nn",
        power={"supply_v": row.supply_v},
    )


def tflm_table(rows: list[EnergyRow], chips: dict[str, tuple[str, float]]) -> None:
    """Print the TFLM rows against the bare-profile estimate, in-sample and held out."""
    held_latency = {
        (r.row.model.name, r.row.core, r.row.clock_hz): r.predicted_ms
        for r in leave_one_board_out(load_calibration())
    }
    print(
        f"{'row':<26} {'published':>10} {'estimate':>10} {'err':>7} {'±band':>6} "
        f"{'held out':>10} {'err':>7}  power only"
    )
    errs, held_errs, power_errs, inside = [], [], [], 0
    for r in (r for r in rows if r.tflm_cpu):
        board = bare_profile(r)
        lat = predict_latency(read_graph(MODELS / r.model), board)
        est = estimate_energy(lat.ms, lat.error_pct, board)
        key = (r.model, r.core, board.clock_hz)
        held_ua = held_out_ua_per_mhz(chips, r.board)
        held = r.supply_v * held_ua * r.clock_mhz / 1000 * held_latency[key]
        power_only = estimate_energy(r.latency_ms, None, board).uj
        err = 100 * (est.uj / r.energy_uj - 1)
        herr = 100 * (held / r.energy_uj - 1)
        perr = 100 * (power_only / r.energy_uj - 1)
        inside += abs(err) <= est.error_pct
        errs.append(abs(err))
        held_errs.append(abs(herr))
        power_errs.append(abs(perr))
        print(
            f"{r.id:<26} {r.energy_uj:9.1f}u {est.uj:9.1f}u {err:+6.1f}% {est.error_pct:5.0f}% "
            f"{held:9.1f}u {herr:+6.1f}%  {perr:+6.1f}%"
        )
    n = len(errs)
    med = statistics.median(errs)
    print(
        f"\nTFLM rows ({n}), bare profile + supply_v: median |error| {med:.1f}% "
        f"(held out: {statistics.median(held_errs):.1f}%; with the published latency, "
        f"power alone: {statistics.median(power_errs):.1f}%); {inside}/{n} within the stated band"
    )


def emit_defaults(chips: dict[str, tuple[str, float]], band: float) -> None:
    """Print the constants of mcunas/cost/energy.py fitted on these rows."""
    by_core: dict[str, list[float]] = defaultdict(list)
    for core, ua in chips.values():
        by_core[core].append(ua)
    per_core = {
        c: round(math.exp(statistics.mean(map(math.log, v))), 0) for c, v in by_core.items()
    }
    print("CORE_UA_PER_MHZ (geometric mean of the core's chips) = " + repr(per_core))
    family = statistics.median(ua for _, ua in chips.values())
    print(
        f"FAMILY_UA_PER_MHZ['cortex-m'] = {family:.0f}; FAMILY_SPREAD_PCT['cortex-m'] = {band:.0f}"
    )
    m0 = core_default_ma("cortex-m0plus", 125e6)[0]
    print(f"current default of a bare cortex-m0plus at 125 MHz: {m0:.1f} mA")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--emit-defaults", action="store_true")
    args = parser.parse_args()
    start = time.perf_counter()
    rows = load_rows()
    print(
        f"MLPerf Tiny energy runs: {len(rows)} rows, {sum(r.tflm_cpu for r in rows)} TFLM on CPU\n"
    )
    chips = chip_currents(rows)
    band = chip_table(chips)
    tflm_table(rows, chips)
    if args.emit_defaults:
        emit_defaults(chips, band)
    print(f"\n({time.perf_counter() - start:.2f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
