"""The C sources of ``frontend.tflite`` for a firmware, beside the model's.

The same templates as the model's (:func:`mcunas.tflite.csource.model_sources`), with
every name moved from ``model`` to ``frontend`` so both fit in one firmware:
``frontend_data.h``/``.cc`` (``g_frontend_data``, ``MCUNAS_FRONTEND_CRC32``,
``MCUNAS_FRONTEND_LEN``) and ``frontend_ops.h`` (``McunasFrontendOpResolver``,
``McunasRegisterFrontendOps(resolver)``). ``frontend_ops.h`` registers the signal
ops two ways, chosen by the compiler: in an ESP-IDF build (``ESP_PLATFORM``) by
esp-tflite-micro's own ``AddWindow()``, ``AddRfft()`` ... methods; elsewhere (the
Cortex-M Arduino library, which has no signal ops) as custom ops backed by
mcunas's signal kernels, ``signal/tflm_signal_ops.h``
(:data:`KERNEL_FILES`, copied beside the firmware's sources).
"""

from __future__ import annotations

import re
from pathlib import Path

from mcunas.files import write_file
from mcunas.paths import BUNDLED, package_path
from mcunas.tflite.csource import model_sources

__all__ = ["KERNEL_FILES", "frontend_sources", "kernel_folder", "write_frontend_sources"]

# The signal kernel library and its TFLite Micro glue (firmware/src/signal/).
KERNEL_FILES = (
    "signal_kernels.h",
    "signal_kernels.cc",
    "signal_fft.cc",
    "signal_options.cc",
    "tflm_signal_ops.h",
    "tflm_signal_ops.cc",
)
_CALL = re.compile(r"^  if \(resolver\.Add(\w+)\(\) != kTfLiteOk\) return kTfLiteError;$", re.M)

_RENAMES = (
    ("MCUNAS_MODEL_", "MCUNAS_FRONTEND_"),
    ("g_model_data", "g_frontend_data"),
    ("model_data.h", "frontend_data.h"),
    ("McunasOpResolver", "McunasFrontendOpResolver"),
    ("McunasRegisterOps", "McunasRegisterFrontendOps"),
    ("Ops used by the model", "Ops used by the front end"),
    ("the model's ops", "the front end's ops"),
)


def kernel_folder() -> Path:
    """``firmware/src/signal/`` as shipped in the package."""
    return package_path(BUNDLED, "firmware", "src", "signal")


def _both_registrations(ops_text: str, op_names: list[str]) -> str:
    """``frontend_ops.h`` with esp-tflite-micro's calls under ESP_PLATFORM, mcunas's else."""
    calls = _CALL.findall(ops_text)
    if not calls:
        return ops_text
    customs = [n.split(":", 1)[1] for n in op_names if n.startswith("CUSTOM:")]
    ours = "".join(
        f'  if (resolver.AddCustom("{n}", mcunas_signal::Register_{n}()) != kTfLiteOk) '
        "return kTfLiteError;\n"
        for n in customs
    )
    esp = "".join(f"  if (resolver.Add{c}() != kTfLiteOk) return kTfLiteError;\n" for c in calls)
    body = f"#if defined(ESP_PLATFORM)  // esp-tflite-micro's signal ops\n{esp}#else  // mcunas's\n"
    text = _CALL.sub("", ops_text).replace("\n\n  return kTfLiteOk;", "\n  return kTfLiteOk;")
    text = re.sub(
        r"\n+  return kTfLiteOk;", "\n" + body + ours + "#endif\n  return kTfLiteOk;", text
    )
    include = '#include "tensorflow/lite/micro/micro_mutable_op_resolver.h"\n'
    return text.replace(
        include,
        include + '#if !defined(ESP_PLATFORM)\n#include "signal/tflm_signal_ops.h"\n#endif\n',
    )


def frontend_sources(model_bytes: bytes) -> dict[str, str]:
    """File name -> C text of ``frontend_data.h``, ``frontend_data.cc`` and ``frontend_ops.h``."""
    from mcunas.tflite.reader import read_graph

    op_names = read_graph(model_bytes).op_names()
    texts = model_sources(model_bytes, op_names)
    out = {}
    for name, text in texts.items():
        for old, new in _RENAMES:
            text = text.replace(old, new)
        if name == "model_ops.h":
            text = _both_registrations(text, op_names)
        out[name.replace("model_", "frontend_")] = text
    return out


def write_frontend_sources(
    model_bytes: bytes, out_dir: Path, kernels_dir: Path | None = None
) -> list[Path]:
    """Write the three files into ``out_dir`` (no link there followed); returns their paths.

    With ``kernels_dir``, also copy the signal kernels (:data:`KERNEL_FILES`) there.
    """
    paths = []
    for name, text in frontend_sources(model_bytes).items():
        paths.append(write_file(Path(out_dir) / name, text, inside=Path(out_dir)))
    if kernels_dir is not None:
        for name in KERNEL_FILES:
            text = (kernel_folder() / name).read_text("utf-8")
            paths.append(write_file(Path(kernels_dir) / name, text, inside=Path(kernels_dir)))
    return paths
