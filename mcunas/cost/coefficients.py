"""Prior coefficients of the latency model: kernel code paths and core factors.

A *code path* is one implementation of the int8 kernels: TFLite Micro's
reference C kernels, ESP-NN's portable C, ESP-NN's ESP32-S3 SIMD assembly,
CMSIS-NN's DSP-extension (Cortex-M4/M7/M33), Helium (M55/M85) or plain C
(M0+) builds. Each path has per-variant cycles per unit of work on its
*anchor core*; another core scales them by a core factor. A path's ``scale``
(fitted to whole-model measurements, see :mod:`mcunas.cost.fit.scale`) multiplies
the lot. Where the figures come from is in each table's ``source``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = [
    "CORE_FACTORS",
    "DEFAULT_CHECKED",
    "DISPATCH_CYCLES",
    "MEMORY_FACTORS",
    "MULTICORE_FACTORS",
    "DEFAULT_ERRORS",
    "DEFAULT_SCALES",
    "STATED_RUNTIME_ERRORS",
    "PRIOR_TABLES",
    "PathTable",
    "core_family",
    "dispatch_cycles",
    "family_value",
    "path_for",
]


@dataclass(frozen=True)
class PathTable:
    """Cycles of one kernel code path on its anchor core.

    ``mac`` maps a variant to cycles per unit of work (see
    :data:`mcunas.cost.op_features.VARIANTS`); ``requant`` is cycles per
    requantized output element of MAC ops; ``op_overhead`` cycles per op
    (interpreter dispatch, kernel prologue); ``invoke_overhead`` per invoke.
    """

    name: str
    anchor_core: str
    mac: dict[str, float]
    requant: float
    op_overhead: float
    invoke_overhead: float
    source: str
    estimated: tuple[str, ...] = field(default=())
    byte: float = 0.0  # cycles per byte moved (weights from flash, activations)
    unscaled: tuple[str, ...] = field(default=())  # variants the path's scale leaves alone


# Scalar C kernels run at a speed set by the core's general integer
# performance: factor = CoreMark/MHz of the anchor (Xtensa LX7) / the core's.
# CoreMark/MHz: Arm's published figures for Cortex-M; Espressif's single-core
# figures for ESP32 (2.06) and ESP32-S3 (2.56); ESP32-C3 approximate (2.55).
_COREMARK_PER_MHZ = {
    "cortex-m0plus": 2.46,
    "cortex-m4": 3.42,
    "cortex-m4f": 3.42,
    "cortex-m7": 5.01,
    "cortex-m33": 4.02,
    "cortex-m55": 4.2,
    "cortex-m85": 6.28,
    "xtensa-lx6": 2.06,
    "xtensa-lx7": 2.56,
    "riscv32": 2.55,
}
_SCALAR = {core: round(2.56 / cm, 3) for core, cm in _COREMARK_PER_MHZ.items()}

# TFLite Micro's fixed costs in Xtensa LX7 cycles (other cores by CoreMark/MHz):
# per invoke (MicroInterpreter::Invoke, the graph walk, the harness's call) and per
# op (eval-tensor lookups, the kernel call and its argument setup). They are the
# interpreter's code, the same under every kernel library, so no kernel scale
# applies to them. Per op: TFLM on a 2-core x86_64 VM (scripts/bench hostcal) spends 76.6 ns
# per op against 0.658 ns per FULLY_CONNECTED MAC, i.e. 116 MACs of the portable-C
# FC (9.79 LX7 cycles each): 1140 cycles. Per invoke: fitted (scale_fit.fit_dispatch) to
# the published hello_world figures of eight boards (three FULLY_CONNECTED ops, 288
# MACs: almost all overhead; mcunas/calibration/measurements_extra.csv), printed
# by scripts/bench_predictor.py --emit-defaults.
DISPATCH_CYCLES = {"invoke": 8603.0, "op": 1140.0}


# Time relative to internal SRAM and flash for the ``memory`` a profile names, with
# the stated error of that factor. TCM (code and data in tightly coupled memory):
# Teensy 4.1 (i.MX RT1062, ITCM/DTCM) runs hello_world in 5400 cycles, 0.55x the
# mean of the flash-and-cache Cortex-M7 boards of the same source (SAMV71 8400,
# Portenta H7 11040); one board, so the error is wide. PSRAM and SDRAM: priors
# (external memory behind a cache, about 1.5x); no measurement checks them.
MEMORY_FACTORS: dict[str, tuple[float, float]] = {
    "sram": (1.0, 0.0),
    "tcm": (0.55, 30.0),
    "psram": (1.5, 50.0),
    "sdram": (1.5, 50.0),
}


# Kernel time with ``multicore_kernels = true``: pico-tflmicro splits CONV_2D and
# DEPTHWISE_CONV_2D over both RP2040 cores. From its benchmark_results.txt
# (person_detect, per op, with and without TF_LITE_PICO_MULTICORE): geometric
# mean of the per-op ratios, 0.79 for CONV_2D (0.61-0.87 by shape) and 0.63 for
# DEPTHWISE_CONV_2D (0.53 on most; a one-channel input is not split); the whole
# model went from 823.7 to 587.4 ms, 0.713x, which these factors reproduce.
MULTICORE_FACTORS = {"CONV_2D": 0.79, "DEPTHWISE_CONV_2D": 0.63}


def dispatch_cycles(anchor_core: str) -> tuple[float, float]:
    """(per-invoke, per-op) fixed cycles on ``anchor_core``."""
    factor = _SCALAR[anchor_core]
    return DISPATCH_CYCLES["invoke"] * factor, DISPATCH_CYCLES["op"] * factor


CORE_FACTORS: dict[str, dict[str, float]] = {
    "tflm-ref": _SCALAR,
    "esp-nn-ansi": _SCALAR,
    "cmsis-nn-c": _SCALAR,
    "esp-nn-s3": {"xtensa-lx7": 1.0},
    # DSP extension: cycles of the same int8 SIMD work against an M4F's, measured
    # (bench/core_fit.py, core_cycle_ratios): one vendor library, the four MLPerf Tiny models, in
    # five rounds, on STM32L4R5 (M4F), STM32U575 (M33) and STM32H7A3 (M7). The M7's
    # dual issue gives 0.57 (1.1-1.3x faster per MHz than the M33's 0.83, which CoreMark
    # (4.02 vs 3.42 per MHz) also puts ahead of the M4).
    "cmsis-nn-dsp": {"cortex-m4": 1.0, "cortex-m4f": 1.0, "cortex-m7": 0.57, "cortex-m33": 0.83},
    "cmsis-nn-mve": {"cortex-m55": 1.0, "cortex-m85": 0.75},
}

# Variants the ESP-NN microbenchmarks do not cover, as a multiple of a
# measured variant of the same path (estimates; fit with `mcunas calibrate`).
MICROBENCH_DERIVED: dict[str, dict[str, tuple[str, float]]] = {
    "esp-nn-ansi": {
        "conv_kxk": ("conv_1x1", 1.15),
        "dw_3x3_s2": ("dw_3x3_s1", 1.0),
        "dw_kxk": ("dw_3x3_s1", 1.0),
        "bmm": ("fc", 1.0),
        "mean": ("pool_avg", 1.0),
    },
    "esp-nn-s3": {
        "conv_kxk": ("conv_1x1", 2.0),
        "dw_3x3_s2": ("dw_3x3_s1", 1.1),
        "dw_kxk": ("dw_mult", 1.0),
        "bmm": ("fc", 1.0),
        "mean": ("pool_avg", 1.0),
    },
}
# Non-MAC variants no microbenchmark covers, cycles per unit, any path.
GENERIC_UNIT_CYCLES = {
    "transpose": 6.0,
    "copy": 1.0,
    "quantize": 20.0,
    "float": 40.0,
    "other": 40.0,
    "free": 0.0,
}

_CMSIS_DSP = {
    "conv_1x1": 0.75,
    "conv_kxk": 1.0,
    "conv_shallow": 2.5,
    "dw_3x3_s1": 1.6,
    "dw_3x3_s2": 1.6,
    "dw_kxk": 2.0,
    "dw_mult": 3.5,
    "fc": 0.9,
    "bmm": 1.1,
    "softmax": 25.0,
    "add": 9.0,
    "mul": 7.0,
    "activation": 0.5,
    "mean": 3.0,
    "transpose": 5.0,
    "pool_max": 1.0,
    "pool_avg": 1.5,
    "copy": 0.5,
    "quantize": 15.0,
    "float": 25.0,
    "other": 30.0,
    "free": 0.0,
}

_DISPATCH_M4 = dispatch_cycles("cortex-m4f")
_DISPATCH_M55 = dispatch_cycles("cortex-m55")

PRIOR_TABLES: dict[str, PathTable] = {
    "cmsis-nn-dsp": PathTable(
        name="cmsis-nn-dsp",
        anchor_core="cortex-m4f",
        mac=_CMSIS_DSP,
        requant=14.0,
        op_overhead=_DISPATCH_M4[1],
        invoke_overhead=_DISPATCH_M4[0],
        source=(
            "prior from CMSIS-NN's inner loops on a Cortex-M4 (SMLAD: 2 MACs/cycle, "
            "halved by loads and SXTB16 widening; ~14 cycles per requantized output); "
            "scale fitted to the runtimes from 2022 on (MLPerf Tiny v0.7 EK-RA6M4, TF 2.5 TFLM)"
        ),
        estimated=tuple(_CMSIS_DSP),
    ),
    "cmsis-nn-mve": PathTable(
        name="cmsis-nn-mve",
        anchor_core="cortex-m55",
        mac={k: (v / 3.0 if k in _CMSIS_DSP and v < 4 else v / 2.0) for k, v in _CMSIS_DSP.items()},
        requant=6.0,
        op_overhead=_DISPATCH_M55[1],
        invoke_overhead=_DISPATCH_M55[0],
        source="prior: the Cortex-M4 CMSIS-NN table with Helium's 4x wider int8 MAC, unmeasured",
        estimated=tuple(_CMSIS_DSP),
    ),
}

# Fitted path scales (measured / model) from the built-in calibration rows
# in mcunas/calibration (measurements.csv and measurements_extra.csv),
# written by `python scripts/bench_predictor.py --emit-defaults`; the test suite
# fits them again and checks these stay in step with the data and the tables above.
DEFAULT_SCALES: dict[str, float] = {
    "cmsis-nn-c": 0.9304,  # one board: RP2040 (Cortex-M0+), pico-tflmicro 2024
    # runtimes from 2021 on (calibration_rows.RECENT_RUNTIME_YEAR): EK-RA6M4 with TF 2.5's TFLM
    # and NUCLEO-F413ZH with tflite-micro of 2021; the NUCLEO-L4R5ZI rows (TFLM 2.3.1,
    # 2020, 1.47x slower per cycle) only widen the band
    "cmsis-nn-dsp": 3.8709,
    "cmsis-nn-mve": 1.9479,  # one board: EK-RA8D1 (Cortex-M85), CMSIS-NN 12.4 (2024)
    "esp-nn-ansi": 0.6638,  # ESP32/C3 run ESP-NN's generic opt C (esp_nn_*_opt.c), not ansi
    "esp-nn-ansi/riscv32": 0.651,
    "esp-nn-ansi/xtensa": 0.6768,
    "esp-nn-s3": 1.1616,
    # TFLM's reference conv kernels vs ESP-NN's portable C, and per core family (a family's
    # boards pooled with the path's median board, weighing one board; scale_fit.family_scales):
    # the NUCLEO-F413ZH runs them 3x slower per cycle than CoreMark carries over from the ESPs
    "tflm-ref": 6.835,
    "tflm-ref/cortex": 9.2131,
    "tflm-ref/riscv32": 4.9734,
    "tflm-ref/xtensa": 5.8503,
}
# Stated error of a profile without measurements: a 90% prediction interval of a new
# board's error (scale_fit.path_band over the leave-one-board-out errors of the same rows:
# no row of the board's own informs its prediction), per core family where a path ran on
# several. A path or family seen on few boards leans on its kernel library's spread, so one
# lucky board does not make a narrow band; rows that are mostly the interpreter's fixed
# costs (hello_world) do not size a kernel band.
DEFAULT_ERRORS: dict[str, float] = {
    "cmsis-nn-c": 59.4,  # one board (RP2040): CMSIS-NN's spread, not that board's 7.5%
    "cmsis-nn-dsp": 61.6,  # three boards, two runtimes 1.47x apart: the spread is real
    "cmsis-nn-mve": 172.4,  # one board (RA8D1), itself 37-70% off from the others
    "esp-nn-ansi": 15.7,
    "esp-nn-ansi/riscv32": 16.6,
    "esp-nn-ansi/xtensa": 16.6,
    "esp-nn-s3": 23.8,
    # TFLM's reference kernels: one Cortex-M board with kernel work (NUCLEO-F413ZH, 66% off
    # what the ESP chips predict), so the Cortex-M band is that error pooled with the
    # library's; a new core family gets the pooled band
    "tflm-ref": 140.4,
    "tflm-ref/cortex": 310.0,
    "tflm-ref/riscv32": 71.0,
    "tflm-ref/xtensa": 93.7,
}
# The same for a profile that states its ``runtime`` (or ``cmsis_nn``): the errors of the
# rows of runtimes from 2021 on alone, each board predicted from the other boards; an
# older stated runtime adds predict/setup.py's OLD_RUNTIME_FACTOR and its error on top.
STATED_RUNTIME_ERRORS: dict[str, float] = {
    "cmsis-nn-c": 58.6,
    "cmsis-nn-dsp": 47.5,
    "cmsis-nn-mve": 171.7,
    "esp-nn-ansi": 15.7,
    "esp-nn-ansi/riscv32": 16.6,
    "esp-nn-ansi/xtensa": 16.6,
    "esp-nn-s3": 23.8,
    "tflm-ref": 140.4,
    "tflm-ref/cortex": 310.0,
    "tflm-ref/riscv32": 71.0,
    "tflm-ref/xtensa": 93.7,
}
# Variants those errors were measured on (scale_fit.checked_variants of the same rows);
# any other variant is stated at 50% at least.
DEFAULT_CHECKED: dict[str, tuple[str, ...]] = {
    "cmsis-nn-c": ("conv_1x1", "dw_3x3_s1", "dw_3x3_s2", "dw_mult"),
    "cmsis-nn-dsp": (
        *("add", "conv_1x1", "conv_kxk", "conv_shallow", "dw_3x3_s1", "dw_3x3_s2", "dw_mult", "fc"),
    ),
    "cmsis-nn-mve": ("add", "conv_1x1", "conv_kxk", "conv_shallow", "dw_3x3_s1", "dw_3x3_s2", "fc"),
    "esp-nn-ansi": ("conv_1x1", "dw_3x3_s1", "dw_3x3_s2", "dw_mult"),
    "esp-nn-s3": ("conv_1x1", "dw_3x3_s1", "dw_3x3_s2", "dw_mult"),
    "tflm-ref": ("conv_1x1", "dw_3x3_s1", "dw_3x3_s2", "dw_mult", "fc"),
}


def core_family(core: str) -> str:
    """A core's family: ``cortex-m4f`` -> ``cortex``, ``xtensa-lx7`` -> ``xtensa``."""
    return core.split("-")[0]


def family_value(table: dict[str, float], path: str, core: str, default: float) -> float:
    """``table``'s value for ``path`` on ``core``'s family (``tflm-ref/cortex``), else the path's.

    Paths run on several core families (TFLM's reference kernels on Cortex-M, Xtensa and
    RISC-V) keep a scale and a band per family where published rows measured one.
    """
    return table.get(f"{path}/{core_family(core)}", table.get(path, default))


def path_for(core: str, kernels: str) -> str:
    """The kernel code path a core runs with a kernel library.

    ESP-NN has SIMD kernels only for the ESP32-S3 (Xtensa LX7); on the ESP32
    and ESP32-C3 it runs its generic C (``esp-nn-ansi``: relative costs of the
    portable C microbenchmarks, scale fitted to the ESP32 row). CMSIS-NN has no Xtensa/RISC-V code:
    there TFLite Micro's reference kernels run.
    """
    if kernels == "esp-nn":
        if core == "xtensa-lx7":
            return "esp-nn-s3"
        return "esp-nn-ansi" if core.startswith(("xtensa", "riscv")) else "tflm-ref"
    if kernels == "cmsis-nn":
        if core == "cortex-m0plus":
            return "cmsis-nn-c"
        if core in ("cortex-m55", "cortex-m85"):
            return "cmsis-nn-mve"
        return "cmsis-nn-dsp" if core.startswith("cortex-m") else "tflm-ref"
    return "tflm-ref"
