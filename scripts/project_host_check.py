"""Build best/project's main.cpp with real TFLite Micro sources on the host and check it.

The project's ``predict_audio()`` (front end, then model, as on the board) is
compiled with the host g++ against a TensorFlow Lite Micro source tree that has
the signal library (an esp-tflite-micro or tflite-micro checkout; esp-tflite-micro
``v1.3.4`` is the version the ESP-IDF firmware pins), linked with its reference
kernels, and run on the raw WAV clips of a folder. Its scores must equal, bit for
bit, those of ``mcunas predict`` (the host runtime of the ``tflite-micro``
wheel) on the same clips.

    python scripts/project_host_check.py --tflm ~/src/esp-tflite-micro \\
        --best runs/bench-audio/fixed/best --clips runs/bench-audio/data/test

Nothing is downloaded: the TFLM tree is the caller's. Only the kernels of the
model's ops and the signal ops are compiled (a few minutes on 2 cores).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

MICRO = (
    "debug_log flatbuffer_utils memory_helpers micro_allocation_info micro_allocator "
    "micro_context micro_interpreter_context micro_interpreter_graph micro_interpreter "
    "micro_log micro_op_resolver micro_profiler micro_resource_variable micro_time "
    "micro_utils recording_micro_allocator system_setup"
).split()
KERNELS = {  # builtin op -> reference kernel files (tensorflow/lite/micro/kernels)
    "CONV_2D": ["conv", "conv_common"],
    "DEPTHWISE_CONV_2D": ["depthwise_conv", "depthwise_conv_common"],
    "FULLY_CONNECTED": ["fully_connected", "fully_connected_common"],
    "AVERAGE_POOL_2D": ["pooling", "pooling_common"],
    "MAX_POOL_2D": ["pooling", "pooling_common"],
    "SOFTMAX": ["softmax", "softmax_common"],
    "RESHAPE": ["reshape", "reshape_common"],
    "ADD": ["add", "add_common"],
    "MUL": ["mul", "mul_common"],
    "MEAN": ["reduce", "reduce_common"],
}
SIGNAL = (
    "window fft_auto_scale_kernel fft_auto_scale_common rfft energy filter_bank "
    "filter_bank_square_root filter_bank_square_root_common filter_bank_spectral_subtraction "
    "pcan filter_bank_log"
).split()
OTHERS = [
    "tensorflow/lite/kernels/kernel_util.cc",
    "tensorflow/lite/micro/memory_planner/greedy_memory_planner.cc",
    "tensorflow/lite/micro/memory_planner/linear_memory_planner.cc",
    "tensorflow/lite/core/c/common.cc",
    "tensorflow/lite/core/api/flatbuffer_conversions.cc",
    "tensorflow/lite/core/api/tensor_utils.cc",
    "tensorflow/lite/kernels/internal/common.cc",
    "tensorflow/lite/kernels/internal/quantization_util.cc",
    "tensorflow/lite/kernels/internal/portable_tensor_utils.cc",
    "tensorflow/lite/kernels/internal/tensor_utils.cc",
    "tensorflow/lite/kernels/internal/tensor_ctypes.cc",
    "tensorflow/lite/kernels/internal/reference/portable_tensor_utils.cc",
    "tensorflow/lite/kernels/internal/reference/comparisons.cc",
    "tensorflow/compiler/mlir/lite/core/api/error_reporter.cc",
    "tensorflow/compiler/mlir/lite/schema/schema_utils.cc",
]
DRIVER = r"""
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
bool predict_audio(const int16_t* window, float* scores);
void setup();
int main(int argc, char** argv) {  // window samples, classes, raw int16 files...
  setup();
  const size_t n = strtoul(argv[1], nullptr, 10), k = strtoul(argv[2], nullptr, 10);
  int16_t* w = (int16_t*)malloc(n * 2);
  float* s = (float*)malloc(k * sizeof(float));
  for (int a = 3; a < argc; ++a) {
    FILE* f = fopen(argv[a], "rb");
    if (!f || fread(w, 2, n, f) != n) return 2;
    fclose(f);
    if (!predict_audio(w, s)) return 1;
    printf("scores");
    for (size_t i = 0; i < k; ++i) printf(" %.9g", s[i]);
    printf("\n");
  }
  return 0;
}
"""
ARDUINO_H = """#pragma once
#include <stdint.h>
#include <stdio.h>
struct HostSerial {
  void begin(unsigned long) {}
  void println(const char* text) { fprintf(stderr, "%s\\n", text); }
  explicit operator bool() const { return true; }
};
inline HostSerial Serial;
inline unsigned long micros() { static unsigned long t = 0; return t += 7; }
inline unsigned long millis() { return micros() / 1000; }
inline void delay(unsigned long) {}
"""


def sources(tflm: Path, ops: list[str]) -> list[Path]:
    """The TFLM files the project needs: core, the model's kernels, the signal library."""
    k = sorted({f for op in ops for f in KERNELS[op]} | {"kernel_util", "micro_tensor_utils"})
    names = [f"tensorflow/lite/micro/{m}.cc" for m in MICRO]
    names += [f"tensorflow/lite/micro/kernels/{f}.cc" for f in k]
    names += [f"signal/micro/kernels/{f}.cc" for f in SIGNAL]
    found = [tflm / n for n in names + OTHERS]
    found += sorted((tflm / "tensorflow/lite/micro/tflite_bridge").glob("*.cc"))
    found += sorted((tflm / "tensorflow/lite/micro/arena_allocator").glob("*.cc"))
    found += sorted((tflm / "signal/src").glob("*.cc"))
    found += [tflm / f"signal/src/kiss_fft_wrappers/kiss_fft_{t}.cc" for t in ("int16", "int32")]
    found += [tflm / "signal/src/kiss_fft_wrappers/kiss_fft_float.cc"]
    return [p for p in found if p.is_file() and not p.name.endswith("_test.cc")]


def build(tflm: Path, src: Path, work: Path, ops: list[str]) -> Path:
    """Compile the project's main.cpp and the TFLM sources; return the executable."""
    (work / "inc").mkdir(parents=True, exist_ok=True)
    (work / "inc" / "Arduino.h").write_text(ARDUINO_H)
    (work / "driver.cc").write_text(DRIVER)
    flags = ["-std=c++17", "-O1", "-fno-exceptions", "-fno-rtti", "-DTF_LITE_STATIC_MEMORY", "-w"]
    inc = [f"-I{d}" for d in (src, work / "inc", tflm, tflm / "third_party/flatbuffers/include",
                              tflm / "third_party/gemmlowp", tflm / "third_party/ruy",
                              tflm / "third_party/kissfft")]  # fmt: skip
    objs = []
    for path in sources(tflm, ops):
        obj = work / "obj" / (path.relative_to(tflm).as_posix().replace("/", "__") + ".o")
        obj.parent.mkdir(exist_ok=True)
        if not obj.is_file():
            subprocess.run(["g++", *flags, *inc, "-c", str(path), "-o", str(obj)], check=True)
        objs.append(str(obj))
    exe = work / "host_project"
    mains = [src / "main.cpp", src / "model_data.cc", src / "frontend_data.cc", work / "driver.cc"]
    subprocess.run(["g++", *flags, *inc, *map(str, mains), *objs, "-o", str(exe)], check=True)
    return exe


def main(argv: list[str] | None = None) -> int:
    """Export an Arduino project of BEST, build it with TFLM, compare with mcunas predict."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--tflm", type=Path, required=True, help="a TFLM tree with signal/")
    p.add_argument("--best", type=Path, required=True, help="a search's best/ with a front end")
    p.add_argument("--clips", type=Path, required=True, help="WAV files, in class folders or not")
    p.add_argument("--work", type=Path, default=None, help="build folder [a temporary one]")
    a = p.parse_args(argv)
    from mcunas.audio import read_wav
    from mcunas.boards import load_board
    from mcunas.evaluate import int8_outputs
    from mcunas.frontend.host import to_int16
    from mcunas.frontend.pipeline import BestModel
    from mcunas.search.export import export_project
    from mcunas.tflite.reader import read_graph

    work = a.work or Path(tempfile.mkdtemp(prefix="mcunas-host-project-"))
    best = BestModel.load(a.best)
    if best.runner is None or not (a.tflm / "signal" / "micro" / "kernels").is_dir():
        print("project_host_check: needs a best/ with frontend.tflite and a TFLM tree with signal/")
        return 2
    project, _, _ = export_project(a.best, load_board("nucleo_f746zg"), work / "project")
    ops = sorted(set(read_graph(best.model).op_names()))
    exe = build(a.tflm, project / "src", work, ops)
    cfg, frames = best.runner.cfg, best.input_shape[0]
    need = cfg.frame_samples + (frames - 1) * cfg.hop_samples
    wavs = sorted(a.clips.rglob("*.wav"))
    raws = []
    for i, wav in enumerate(wavs):
        samples, _ = read_wav(wav)
        x16 = to_int16(np.pad(samples[:need], (0, max(0, need - len(samples))))).astype("<i2")
        raw = work / "raw" / f"{i:05d}.raw"
        raw.parent.mkdir(exist_ok=True)
        raw.write_bytes(x16.tobytes())
        raws.append(str(raw))
    host = int8_outputs(best.model, np.stack([best.wav_features(w) for w in wavs]))
    out = subprocess.run([str(exe), str(need), str(host.shape[1]), *raws],
                         capture_output=True, text=True, check=True).stdout  # fmt: skip
    c = np.array([[float(v) for v in line.split()[1:]] for line in out.splitlines()])
    diff = float(np.abs(c - host).max())
    same = int((c.argmax(1) == host.argmax(1)).sum())
    print(f"{len(wavs)} clips: C project vs mcunas predict, max |score difference| {diff:g}, "
          f"same class {same} of {len(wavs)}")  # fmt: skip
    return 0 if diff == 0.0 else 1


if __name__ == "__main__":
    sys.exit(main())
