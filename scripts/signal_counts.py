"""Measure the signal kernels on an emulated Cortex-M4F and store the counts the cost model reads.

Builds the kernels' harness with Debian's arm-none-eabi-g++ for a Cortex-M4F,
runs every front end of the searched space over the spoken-word dataset's clips
(``mcunas make-dataset spoken-words``: speech, silence, background noise) under
``qemu-system-arm -M mps2-an386 -icount shift=0``, checks the features against
the host TFLite Micro runtime bit for bit, and writes

    mcunas/calibration/signal_kernels_m4f.csv            instructions per frame per op
    mcunas/calibration/signal_kernels_m4f_footprint.csv  code size, stack

QEMU models no cycles: these are instructions retired (SysTick at 25 MHz with
one instruction a nanosecond: 40 a tick, checked by a calibration loop).

    python scripts/signal_counts.py [--per-class 3] [--work /tmp/signal-counts]
Needs: apt-get install gcc-arm-none-eabi libnewlib-arm-none-eabi
       libstdc++-arm-none-eabi-newlib qemu-system-arm espeak-ng sox
"""

from __future__ import annotations

import argparse
import itertools
import subprocess
import sys
from pathlib import Path

import numpy as np

from mcunas.data import spoken_words
from mcunas.data.audio import read_wav
from mcunas.frontend.config import FrontendConfig
from mcunas.frontend.graph import frontend_model
from mcunas.frontend.host import FrontendRunner, to_int16
from mcunas.frontend.kernels.build import ARM_FLAGS, arm_harness, arm_tools_missing, run_harness
from mcunas.frontend.kernels.counts import (
    COUNTS_FILE,
    FOOTPRINT_FILE,
    INSTRUCTIONS_PER_TICK,
    OP_NAMES,
    CountRow,
    Part,
    footprint_of,
    object_sizes,
    stack_frames,
    write_counts,
    write_footprint,
)
from mcunas.frontend.kernels.graph import harness_input
from mcunas.paths import BUNDLED, package_path
from mcunas.search.frontends.searched import BANDS, WINDOWS

CALIBRATION = Path(__file__).resolve().parents[1] / "mcunas" / "calibration"


def _clips(folder: Path, per_class: int) -> list[np.ndarray]:
    if not folder.exists():
        spoken_words.make(folder, per_class=per_class, words=("yes", "no"))
    return [to_int16(read_wav(p)[0]) for p in sorted(folder.rglob("*.wav"))]


def _frames(cfg: FrontendConfig, clip: np.ndarray) -> np.ndarray:
    n, hop = cfg.frames(len(clip)), cfg.hop_samples
    return np.stack([clip[i * hop : i * hop + cfg.frame_samples] for i in range(n)])


def _version(cmd: list[str]) -> str:
    return subprocess.run(cmd, capture_output=True, text=True, check=False).stdout.splitlines()[0]


def _glue(headers: Path, work: Path) -> Part:
    """The TFLM glue (tflm_signal_ops.cc) built against the pinned library's headers."""
    work.mkdir(parents=True, exist_ok=True)
    src = package_path(BUNDLED, "firmware", "src", "signal", "tflm_signal_ops.cc")
    obj = work / "tflm_signal_ops.o"
    cmd = ["arm-none-eabi-g++", *ARM_FLAGS, "-std=gnu++17", "-fno-exceptions", "-fno-rtti"]
    cmd += ["-ffunction-sections", "-fstack-usage", "-DTF_LITE_STATIC_MEMORY"]
    subprocess.run([*cmd, "-I", str(headers), "-c", str(src), "-o", str(obj)], check=True)
    flash, ram = object_sizes([obj])
    frames = max(stack_frames([obj.with_suffix(".su")]).values())
    how = (
        "arm-none-eabi-size; -fstack-usage (largest frame); against Chirale_TensorFlowLite 46da2f98"
    )
    return Part("tflm_glue", flash, ram, frames, how)


def main(argv: list[str] | None = None) -> int:
    """Measure and write the two CSV files; 1 when the tools are missing or a feature differs."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--per-class", type=int, default=3)
    ap.add_argument("--work", type=Path, default=Path("/tmp/signal-counts"))
    ap.add_argument(
        "--tflm-headers",
        type=Path,
        help="the pinned Cortex-M TFLite Micro library's src/ folder: also size the TFLM glue",
    )
    args = ap.parse_args(argv)
    missing = arm_tools_missing()
    if missing:
        print(missing, file=sys.stderr)
        return 1
    clips = _clips(args.work / "kws", args.per_class)
    cfgs = [
        FrontendConfig(
            frame_ms=float(w.split("/")[0]), hop_ms=float(w.split("/")[1]), mel_bands=b, pcan=p
        )
        for w, b, p in itertools.product(WINDOWS, BANDS, (False, True))
    ]
    graphs, expected, frames = [], [], []
    for cfg in cfgs:
        model, runner = frontend_model(cfg), None
        runner = FrontendRunner(model)
        expected.append(np.concatenate([runner.clip(c).reshape(-1) for c in clips]))
        per_clip = [_frames(cfg, c) for c in clips]
        graphs.append((model, per_clip))
        frames.append(sum(len(f) for f in per_clip))
    elf = arm_harness(args.work / "build")
    got, report = run_harness(elf, harness_input(graphs), args.work / "run")
    if not np.array_equal(got, np.concatenate(expected)):
        print("features differ from the host runtime: counts not written", file=sys.stderr)
        return 1
    rows = []
    for cfg, n, kinds, ticks in zip(cfgs, frames, report.ops, report.ticks, strict=True):
        for kind, t in zip(kinds, ticks, strict=True):
            per_frame = t * INSTRUCTIONS_PER_TICK / n
            rows.append(
                CountRow(
                    cfg.frame_ms, cfg.hop_ms, cfg.mel_bands, cfg.pcan, OP_NAMES[kind], per_frame
                )
            )
    header = [
        "Instructions retired per frame by mcunas's signal kernels on a Cortex-M4F, per op:",
        f"QEMU mps2-an386 -icount shift=0, SysTick ticks x {INSTRUCTIONS_PER_TICK} (calibration:",
        f"{report.instructions_per_tick:.2f} a tick), over {min(frames)}-{max(frames)} frames of",
        f"the spoken-word dataset (per class {args.per_class}); features equal the host runtime's.",
        "QEMU models no cycles. Written by: python scripts/signal_counts.py",
        f"{_version(['arm-none-eabi-g++', '--version'])}; {' '.join(ARM_FLAGS)}",
        _version(["qemu-system-arm", "--version"]),
    ]
    write_counts(CALIBRATION / COUNTS_FILE, rows, header)
    parts = footprint_of(elf, max(c.fft_length for c in cfgs))
    if args.tflm_headers:
        parts.append(_glue(args.tflm_headers, args.work / "glue"))
    notes = [
        "mcunas's signal kernels on a Cortex-M4F: flash and RAM bytes, deepest stack of one",
        "op's call (the FFT's recursion at the largest searched fft_length). The maths row is",
        "what the FFT's Init pulls in (double cos/sin/floor, soft-float), shared with any other",
        "user of them. Written by: python scripts/signal_counts.py [--tflm-headers DIR]",
        *header[5:],
    ]
    write_footprint(CALIBRATION / FOOTPRINT_FILE, parts, notes)
    print(f"wrote {CALIBRATION / COUNTS_FILE} ({len(rows)} rows) and {FOOTPRINT_FILE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
