"""The front end's part of a deployable project: ``frontend.tflite`` before the model.

With a front end, ``main.cpp`` gains ``frontend_init()`` and
``predict_audio(window, scores)`` (template ``deploy_frontend.cpp.in``): the
front end runs once per hop of a raw int16 window, its features go into the
model's int8 input as mcunas made them for training, then the model runs. The
project also holds ``frontend_data.cc/.h`` and ``frontend_ops.h`` (the signal
ops' resolver), and its README the call sequence.
"""

from __future__ import annotations

from pathlib import Path
from string import Template
from typing import Any

from mcunas.paths import package_path
from mcunas.tflite.csource import model_crc32

__all__ = [
    "EXAMPLE_PLAIN",
    "KERNELS_NOTE",
    "frontend_values",
    "readme_section",
    "write_frontend_files",
]

# The example of main.cpp without a front end: (buffer, call).
EXAMPLE_PLAIN = {
    "frontend_part": "",
    "example_input": "float g_input[kInputLen];  // the example input: replace with your data",
    "example_predict": "predict(g_input, g_scores)",
}


def frontend_values(frontend: bytes, model_bytes: bytes) -> dict[str, Any]:
    """``main.cpp``'s ``${...}`` values for a front end feeding ``model_bytes``.

    Raises:
        ModelError: the front end and the model do not fit together.
    """
    from mcunas.frontend.build import frontend_build

    fb = frontend_build(frontend, model_bytes)
    c = fb.config
    values = {
        "fe_description": f"{c.frame_ms:g} ms frames every {c.hop_ms:g} ms, {c.mel_bands} mel "
        f"bands {c.lower_hz:g}-{c.upper_hz:g} Hz" + (", PCAN" if c.pcan else ""),
        "fe_crc": model_crc32(frontend),
        "fe_arena_bytes": fb.arena_bytes,
        "fe_arena_note": f"host planner {fb.host_arena_bytes} bytes + 25%, rounded up to 1 KiB",
        "fe_rate": c.sample_rate,
        "fe_frames": fb.frames,
        "fe_frame_samples": c.frame_samples,
        "fe_hop_samples": c.hop_samples,
        "fe_bands": c.mel_bands,
        "fe_bits": c.output_bits,
        "fe_window_samples": fb.window_samples(),
    }
    part = Template(package_path("templates", "deploy_frontend.cpp.in").read_text("utf-8"))
    return {
        **values,
        "frontend_part": part.substitute(values),
        "example_input": "int16_t g_window[kWindowSamples];  // the example window (silence): "
        "replace with microphone samples",
        "example_predict": "predict_audio(g_window, g_scores)",
    }


def write_frontend_files(frontend: bytes | None, src: Path, espidf: bool = True) -> list[Path]:
    """``frontend_data.cc/.h`` and ``frontend_ops.h`` beside ``main.cpp`` (none without one).

    Not ESP-IDF (a Cortex-M Arduino project): the signal kernels go into ``src/signal/``
    after the graph is checked against them.

    Raises:
        UserError: the graph has an op or option mcunas's signal kernels refuse.
    """
    from mcunas.frontend.csource import write_frontend_sources

    if not frontend:
        return []
    if espidf:
        return write_frontend_sources(frontend, src)
    from mcunas.frontend.kernels.graph import check_kernel_graph

    check_kernel_graph(frontend)
    return write_frontend_sources(frontend, src, Path(src) / "signal")


KERNELS_NOTE = """
On this board the signal ops are mcunas's own kernels in `src/signal/`
(portable C++, the integer arithmetic of TFLite Micro's signal library, equal
bit for bit to the host runtime that made the training features), registered as
custom ops by `frontend_ops.h`: the Arduino TFLite Micro library `platformio.ini`
pins has no signal ops.
"""


def readme_section(values: dict[str, Any], espidf: bool) -> str:
    """The README's front-end section: what it computes and the exact call sequence."""
    if not values.get("fe_crc"):
        return ""
    v = values
    return f"""
## The front end, then the model

`frontend.tflite` ({values["fe_description"]}, CRC-32 {values["fe_crc"]}) runs
before the model, as in training: the same bytes made the training features in
the host TFLite Micro runtime. Its ops are TFLite Micro's signal ops
(registered by `frontend_ops.h`): esp-tflite-micro's on an ESP32 board,
mcunas's signal kernels (`src/signal/`) on a Cortex-M board.

    model_init();                      // the model's interpreter
    frontend_init();                   // the front end's (arena kFrontendArenaBytes)
    int16_t window[kWindowSamples];    // {v["fe_window_samples"]} samples at {v["fe_rate"]} Hz
    float scores[kNumClasses];
    predict_audio(window, scores);     // reset, {v["fe_frames"]} front-end invokes, a model invoke
    size_t c = top_class(scores);

`predict_audio` resets the front end (PCAN's noise estimate starts afresh per
window), invokes it once per hop ({values["fe_hop_samples"]} samples) on
{values["fe_frame_samples"]}-sample frames, writes each frame's
{values["fe_bands"]} features into the model's input row by row
(`round((feature / 2^{values["fe_bits"]}) / kInputScale) + kInputZeroPoint`,
halves to even, as mcunas's host pipeline), then invokes the model.
`mcunas predict best/ clip.wav` runs the same sequence on the host.
""" + ("" if espidf else KERNELS_NOTE)
