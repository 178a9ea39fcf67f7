"""How many cycles each Cortex-M core needs for the same SIMD int8 work, from published runs.

CMSIS-NN's DSP-extension path runs on the Cortex-M4, M33 and M7. Its whole-model
calibration rows come from one M4F board and one M33 board whose runtimes are two
years apart, so they cannot tell the core from the runtime. MLPerf Tiny's energy runs
(``mcunas/calibration/energy.csv``) can: in each round one vendor library (X-CUBE-AI,
int8 SIMD kernels on the same DSP extension) ran the same four models on an M4F
(STM32L4R5), an M33 (STM32U575) and an M7 (STM32H7A3). A core's factor is the
geometric mean, over every (round, runtime, model) run on it and on the anchor core,
of its cycles per inference over the anchor's: core, caches and flash wait states
together, as a board built on that core has them.

Example::

    core_cycle_ratios(load_runs())  # {'cortex-m33': 0.83, 'cortex-m7': 0.57, ...}
"""

from __future__ import annotations

import csv
import math
from collections import defaultdict
from pathlib import Path

from mcunas.paths import package_path

__all__ = ["ENERGY_CSV", "core_cycle_ratios", "load_runs"]

ENERGY_CSV = package_path("calibration", "energy.csv")


def load_runs(path: Path = ENERGY_CSV) -> list[dict[str, str]]:
    """The published runs of ``energy.csv``, one dict per row (its columns as text)."""
    with path.open(encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def core_cycle_ratios(runs: list[dict[str, str]], anchor: str = "cortex-m4f") -> dict[str, float]:
    """Per core: geometric mean of its cycles per inference over ``anchor``'s.

    Only runs of one round, runtime and model on both cores are compared, so the
    library and the model cancel; a core never run beside the anchor is left out.
    """
    groups: dict[tuple[str, str, str], dict[str, float]] = defaultdict(dict)
    for r in runs:
        key = (r["id"].split("-", 1)[0], r["runtime"], r["model_file"])
        groups[key][r["core"]] = float(r["latency_ms"]) * float(r["clock_mhz"])
    logs: dict[str, list[float]] = defaultdict(list)
    for cycles in groups.values():
        if anchor in cycles:
            for core, c in cycles.items():
                logs[core].append(math.log(c / cycles[anchor]))
    return {core: math.exp(sum(v) / len(v)) for core, v in sorted(logs.items())}
