"""Kernel cost tables from the ESP-NN microbenchmarks (ESP32-S3, cycles per call).

``mcunas/calibration/esp_nn_kernels_esp32s3.csv`` gives, for a dozen kernel
calls, the cycles of ESP-NN's portable C ("reference") and of its ESP32-S3
SIMD code. From it this module derives, per code path, the cycles of one
requantized output and of one MAC per variant: the two 1x1 convolutions
(409,600 and 16,384 MACs) fix the pair (cycles/MAC, cycles/output) exactly;
every other MAC kernel then gives its variant's cycles/MAC after its outputs'
requantization cost is taken off; the rest give cycles per element or tap.
"""

from __future__ import annotations

import csv
import re
from functools import lru_cache
from pathlib import Path

import numpy as np

from mcunas.cost.coefficients import (
    GENERIC_UNIT_CYCLES,
    MICROBENCH_DERIVED,
    PathTable,
    dispatch_cycles,
)
from mcunas.errors import UserError
from mcunas.paths import package_path

__all__ = ["MICROBENCH_CSV", "KernelCall", "load_microbench", "microbench_tables"]

MICROBENCH_CSV = package_path("calibration", "esp_nn_kernels_esp32s3.csv")
COLUMNS = {"esp-nn-ansi": "reference_cycles", "esp-nn-s3": "esp_nn_cycles"}
_SIMPLE = {
    "elementwise_add": "add",
    "elementwise_mul": "mul",
    "relu6": "activation",
    "softmax": "softmax",
    "max_pool": "pool_max",
    "avg_pool": "pool_avg",
}
_PAIR = re.compile(r"(\w+)\s*\(\s*(\d+)\s*,\s*(\d+)\s*\)")
_FILTER = re.compile(r"filter[:(\s]*\s*(\d+)x(\d+)x(\d+)x(\d+)")
_NUMBERS = re.compile(r"\d+")


class KernelCall:
    """One microbenchmark row: variant, MACs or units, requantized outputs, cycles."""

    def __init__(
        self, function: str, variant: str, units: float, outputs: int, cycles: dict[str, float]
    ) -> None:
        self.function, self.variant, self.units = function, variant, units
        self.outputs, self.cycles = outputs, cycles


def _conv_like(function: str, data: str) -> tuple[str, float, int]:
    pairs = {name: (int(a), int(b)) for name, a, b in _PAIR.findall(data)}
    match = _FILTER.search(data)
    if "input" not in pairs or not match:
        raise UserError(f"microbenchmark row '{function}': cannot read shapes from {data!r}")
    h, w = pairs["input"]
    ph, pw = pairs.get("pad", (0, 0))
    sh, sw = pairs.get("stride", (1, 1))
    a, kh, kw, c = (int(x) for x in match.groups())
    oh, ow = (h + 2 * ph - kh) // sh + 1, (w + 2 * pw - kw) // sw + 1
    if function == "convolution":  # filter: out x kh x kw x in
        variant = "conv_1x1" if kh == kw == 1 else ("conv_shallow" if c < 8 else "conv_kxk")
        return variant, float(oh * ow * a * kh * kw * c), oh * ow * a
    if function == "depthwise_conv":  # filter: multiplier x kh x kw x channels
        variant = "dw_mult" if a > 1 else ("dw_3x3_s1" if (kh, kw, sh) == (3, 3, 1) else "dw_kxk")
        return variant, float(oh * ow * a * c * kh * kw), oh * ow * a * c
    # pooling, valid padding, stride 1: units are output elements x window taps
    return _SIMPLE[function], float(oh * ow * c * kh * kw), 0


def _parse(function: str, data: str) -> tuple[str, float, int]:
    if function in ("convolution", "depthwise_conv", "max_pool", "avg_pool"):
        return _conv_like(function, data)
    numbers = [int(n) for n in _NUMBERS.findall(data)]
    if function == "fully_connected" and len(numbers) == 2:
        return "fc", float(numbers[0] * numbers[1]), numbers[1]
    if function in _SIMPLE and numbers:
        return _SIMPLE[function], float(np.prod(numbers)), 0
    raise UserError(f"microbenchmark row: unknown kernel '{function}' ({data!r})")


def load_microbench(path: Path = MICROBENCH_CSV) -> list[KernelCall]:
    """Read the microbenchmark CSV into kernel calls."""
    with open(path, newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    calls = []
    for row in rows:
        variant, units, outputs = _parse(row["function"], row["data"])
        cycles = {path_name: float(row[col]) for path_name, col in COLUMNS.items()}
        calls.append(KernelCall(row["function"], variant, units, outputs, cycles))
    return calls


def _table(path_name: str, calls: list[KernelCall]) -> PathTable:
    ones = [c for c in calls if c.variant == "conv_1x1"]
    design = np.array([[c.units, c.outputs] for c in ones])
    target = np.array([c.cycles[path_name] for c in ones])
    (mac_1x1, requant), *_ = np.linalg.lstsq(design, target, rcond=None)
    per_variant: dict[str, list[float]] = {"conv_1x1": [float(mac_1x1)]}
    for call in calls:
        if call.variant == "conv_1x1":
            continue
        cycles = call.cycles[path_name] - requant * call.outputs
        per_variant.setdefault(call.variant, []).append(max(cycles, 0.0) / call.units)
    mac = {v: float(np.exp(np.mean(np.log(np.maximum(xs, 1e-6))))) for v, xs in per_variant.items()}
    for variant, (base, factor) in MICROBENCH_DERIVED[path_name].items():
        mac.setdefault(variant, mac[base] * factor)
    for variant, cycles in GENERIC_UNIT_CYCLES.items():
        mac.setdefault(variant, cycles)
    measured = {c.variant for c in calls}
    return PathTable(
        name=path_name,
        anchor_core="xtensa-lx7",
        mac=mac,
        requant=float(requant),
        op_overhead=dispatch_cycles("xtensa-lx7")[1],
        invoke_overhead=dispatch_cycles("xtensa-lx7")[0],
        source=f"ESP-NN v1.2.3 microbenchmarks on ESP32-S3 ({COLUMNS[path_name]})",
        estimated=tuple(sorted(set(mac) - measured)),
    )


# TFLM's reference kernels for these variants are flat loops over their data
# (FULLY_CONNECTED: ``acc += (w + w_off) * (x + x_off)`` along one row), so they
# run about as fast as ESP-NN's portable C; the fitted reference scale (about 5x)
# is the cost of the 4-D ``Offset()`` indexing the reference convolution,
# depthwise and pooling kernels do for every MAC. The published hello_world
# figures (three FULLY_CONNECTED ops) bear this out: at the reference scale
# they would be predicted 3-6x too slow.
REFERENCE_FLAT_VARIANTS = ("fc", "bmm", "add", "mul", "activation", "copy", "quantize")


@lru_cache(maxsize=4)
def microbench_tables(path: Path = MICROBENCH_CSV) -> dict[str, PathTable]:
    """Path tables derived from the microbenchmarks.

    ``esp-nn-ansi`` and ``esp-nn-s3`` come straight from the two columns.
    TFLite Micro's reference kernels (``tflm-ref``) and CMSIS-NN's plain-C
    build for the Cortex-M0+ (``cmsis-nn-c``) are naive C loops of the same
    shape as ESP-NN's portable C: they share its relative costs, and their
    own fitted scale says how much slower or faster they run.
    """
    calls = load_microbench(path)
    tables = {name: _table(name, calls) for name in COLUMNS}
    ansi = tables["esp-nn-ansi"]
    for name in ("tflm-ref", "cmsis-nn-c"):
        tables[name] = PathTable(
            name=name,
            anchor_core=ansi.anchor_core,
            mac=dict(ansi.mac),
            requant=ansi.requant,
            op_overhead=ansi.op_overhead,
            invoke_overhead=ansi.invoke_overhead,
            source=f"relative costs of {ansi.source}; naive C loops like TFLM's reference kernels",
            estimated=ansi.estimated,
            unscaled=REFERENCE_FLAT_VARIANTS if name == "tflm-ref" else (),
        )
    return tables
