"""A deployable PlatformIO project for one INT8 model on one board.

``write_project`` writes a folder that builds with one command
(``pio run -e ENV -t upload``): ``platformio.ini`` with the board's
environment and the measurement firmware's pinned platform and TFLite Micro
port; the model as a C array and its exact op resolver
(:mod:`mcunas.tflite.csource`); ``main.cpp`` with the tensor arena (the measured or
estimated figure plus a stated margin), the input and output quantisation, a
documented ``predict()`` (float input, class scores out) and an example loop
printing the class and the latency; a ``README.md``. For an ESP-IDF board the
folder is also an ESP-IDF project (root ``CMakeLists.txt``, ``main/``
component with the esp-tflite-micro dependency, ``sdkconfig.defaults``,
partition table), so ``idf.py build`` works as well.

Example::

    write_project(model_bytes, load_board("esp32s3"), Path("deploy"),
                  ArenaFigure(41_000, measured=False, source="simulator"))
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from string import Template
from typing import Any

from mcunas.boards.catalog import BoardProfile
from mcunas.deploy.frontend_part import (
    EXAMPLE_PLAIN,
    frontend_values,
    readme_section,
    write_frontend_files,
)
from mcunas.deploy.pioenv import env_options, platformio_ini
from mcunas.errors import ModelError
from mcunas.files import storage_errors, write_file
from mcunas.paths import firmware_template_dir, package_path
from mcunas.tflite.csource import model_crc32, write_model_sources
from mcunas.tflite.reader import Graph, Tensor, read_graph

__all__ = [
    "ARENA_MARGIN_ESTIMATED",
    "ARENA_MARGIN_MEASURED",
    "ArenaFigure",
    "arena_size",
    "write_project",
]

# Margins on the arena figure: a board's measured arena_used_bytes moves only
# with the TFLM version; an estimate carries the memory model's error.
ARENA_MARGIN_MEASURED = 0.10
ARENA_MARGIN_ESTIMATED = 0.25
ARENA_ROUND_BYTES = 1024
MIN_TASK_STACK_BYTES = 16384  # ESP-IDF predict task: TFLM kernels use a few KiB of stack


@dataclass(frozen=True)
class ArenaFigure:
    """The tensor arena a model needs on a board, and where the figure came from."""

    bytes: int
    measured: bool
    source: str


def arena_size(figure: ArenaFigure, budget_bytes: int) -> tuple[int, str]:
    """The arena to allocate (figure + margin, rounded up to 1 KiB) and a note saying how.

    Args:
        figure: ArenaFigure, the measured or estimated arena.
        budget_bytes: int, the board's model SRAM budget (0: none); the margin
            stops there when the figure itself fits.
    """
    margin = ARENA_MARGIN_MEASURED if figure.measured else ARENA_MARGIN_ESTIMATED
    size = math.ceil(figure.bytes * (1 + margin) / ARENA_ROUND_BYTES) * ARENA_ROUND_BYTES
    kind = "measured" if figure.measured else "estimated"
    note = (
        f"{kind} {figure.bytes} bytes ({figure.source}) + {margin:.0%} margin, rounded up to 1 KiB"
    )
    if 0 < budget_bytes < size and figure.bytes <= budget_bytes:
        size = budget_bytes & ~15
        note += f", capped at the board's model SRAM budget ({budget_bytes} bytes)"
    return size, note


def _io_tensor(tensors: tuple[Tensor, ...], what: str) -> Tensor:
    if len(tensors) != 1:
        raise ModelError(f"The model has {len(tensors)} {what} tensors: export needs one.")
    tensor = tensors[0]
    if tensor.dtype.upper() != "INT8" or tensor.scale is None or tensor.zero_point is None:
        raise ModelError(
            f"The model's {what} is {tensor.dtype}, not quantised int8: export needs a "
            "full-integer model (int8 input and output, as mcunas search writes)."
        )
    return tensor


def _c_float(value: float) -> str:
    return f"{float(value)!r}f"


def _c_string(text: str) -> str:
    clean = "".join(c if c.isprintable() else "?" for c in str(text))
    return '"' + clean.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _values(model_bytes: bytes, graph: Graph, board: BoardProfile, arena: ArenaFigure, meta: dict):
    """Every ``${name}`` of the templates."""
    inp = _io_tensor(graph.inputs, "input")
    out = _io_tensor(graph.outputs, "output")
    classes = out.elements
    names = list(meta.get("class_names") or ())
    if len(names) != classes:
        names = [f"class {i}" for i in range(classes)]
    size, note = arena_size(arena, board.model_sram_budget_bytes)
    prep = meta.get("preprocessing")
    prep_text = json.dumps(prep, sort_keys=True) if isinstance(prep, dict | list) else prep
    return {
        "board": board.name,
        "env": board.pio_env,
        "baud": board.baud,
        "model_title": meta.get("title") or "model",
        "model_bytes": len(model_bytes),
        "crc": model_crc32(model_bytes),
        "arena_bytes": size,
        "arena_note": note,
        "input_shape": ", ".join(str(d) for d in inp.shape),
        "input_len": inp.elements,
        "input_scale": _c_float(inp.scale),
        "input_zero_point": int(inp.zero_point),
        "num_classes": classes,
        "output_scale": _c_float(out.scale),
        "output_zero_point": int(out.zero_point),
        "class_names": "".join(f"\n    {_c_string(n)}," for n in names) + "\n",
        "preprocessing": f" ({str(prep_text)[:160]})" if prep_text else "",
        "stack_bytes": max(board.firmware_stack_bytes, MIN_TASK_STACK_BYTES),
    }


def _template(name: str) -> Template:
    return Template(package_path("templates", name).read_text("utf-8"))


def write_project(
    model_bytes: bytes,
    board: BoardProfile,
    out_dir: Path,
    arena: ArenaFigure,
    meta: dict[str, Any] | None = None,
    frontend: bytes | None = None,
) -> list[Path]:
    """Write the deployable project for ``model_bytes`` on ``board`` into ``out_dir``.

    Args:
        model_bytes: bytes, a full-integer INT8 ``.tflite`` (one input, one output).
        board: BoardProfile, with a ``[platformio] env`` in the package's template.
        out_dir: Path, the project folder (created; files of an earlier export replaced).
        arena: ArenaFigure, the arena figure the margin is added to.
        meta: dict | None, optional ``title``, ``class_names``, ``preprocessing``.
        frontend: bytes | None, the front end the model was trained on, run before it
            (:mod:`mcunas.deploy.frontend_part`).

    Returns:
        The files written.

    Raises:
        ModelError: the model is not int8 in and out, or uses an op TFLM cannot register.
        BoardProfileError: the board has no PlatformIO environment in the template.
        UserError: the front end has an op or option the Cortex-M signal kernels refuse.
        DiskFull: the disk filled up.
    """
    graph = read_graph(model_bytes)
    options = env_options(firmware_template_dir() / "platformio.ini", board.pio_env)
    values = _values(model_bytes, graph, board, arena, dict(meta or {}))
    values |= frontend_values(frontend, model_bytes) if frontend else EXAMPLE_PLAIN
    espidf = options.get("framework") == "espidf"
    out_dir = Path(out_dir)
    src = out_dir / ("main" if espidf else "src")
    platform = _template("deploy_espidf.in" if espidf else "deploy_arduino.in")
    main = _template("deploy_main.cpp.in").substitute(
        values, platform_main=platform.substitute(values)
    )
    written = [write_file(src / "main.cpp", main, inside=out_dir)]
    with storage_errors(src):
        written += write_model_sources(model_bytes, src, graph.op_names())
        written += write_frontend_files(frontend, src, espidf)
    extra: dict[str, dict[str, str]] = {}
    if espidf:
        extra = {
            "platformio": {"src_dir": "main"},
            "env": {"board_build.partitions": "partitions.csv"},
        }
        written += _write_idf_files(out_dir, values, frontend is not None)
    text = _ini_text(board, options, values, extra)
    written.append(write_file(out_dir / "platformio.ini", text, inside=out_dir))
    text = _readme(values, out_dir, written, espidf)
    written.append(write_file(out_dir / "README.md", text, inside=out_dir))
    return written


def _ini_text(
    board: BoardProfile, options: dict[str, str], values: dict[str, Any], extra: dict[str, Any]
) -> str:
    """The project's ``platformio.ini``: the board's pinned environment, with a header."""
    header = (
        f"Generated by mcunas: {values['model_title']} on {board.name}.\n"
        f"Build, flash, watch: pio run -e {board.pio_env} -t upload && "
        f"pio device monitor -b {board.baud}\n"
        "Platform and TFLite Micro port pinned as in mcunas's measurement firmware."
    )
    return platformio_ini(board.pio_env, options, header, extra)


_MEASURE_PARTITIONS = "firmware/esp-idf/partitions.csv"  # its path in the measurement project
_IDF_ROOT_CMAKE = """\
# ESP-IDF project: `idf.py build` here, or `pio run` (platformio.ini: src_dir = main).
cmake_minimum_required(VERSION 3.16.0)
include($$ENV{IDF_PATH}/tools/cmake/project.cmake)
project(${name})
"""
_IDF_MAIN_CMAKE = """\
# The main component: the model, its op resolver and the example.
# esp-tflite-micro (TFLite Micro with ESP-NN kernels) comes from idf_component.yml.
idf_component_register(
    SRCS "main.cpp" "model_data.cc"${frontend_src}
    INCLUDE_DIRS "."
    PRIV_REQUIRES esp_timer)
target_compile_options($${COMPONENT_LIB} PRIVATE -O2)
"""


def _write_idf_files(out_dir: Path, values: dict[str, Any], frontend: bool) -> list[Path]:
    """Root CMakeLists.txt, main/ component files, sdkconfig defaults, partition table."""
    fw = firmware_template_dir() / "firmware"
    name = f"mcunas_{values['board']}"
    main_cmake = Template(_IDF_MAIN_CMAKE).substitute(
        frontend_src=' "frontend_data.cc"' if frontend else ""
    )
    root_cmake = Template(_IDF_ROOT_CMAKE).substitute(name=name)
    written = [
        write_file(out_dir / "CMakeLists.txt", root_cmake, inside=out_dir),
        write_file(out_dir / "main" / "CMakeLists.txt", main_cmake, inside=out_dir),
    ]
    with storage_errors(out_dir):
        for source, target in (
            (fw / "src" / "idf_component.yml", out_dir / "main" / "idf_component.yml"),
            (fw / "esp-idf" / "partitions.csv", out_dir / "partitions.csv"),
        ):
            written.append(write_file(target, source.read_bytes(), inside=out_dir))
        for defaults in sorted((fw / "esp-idf").glob("sdkconfig.defaults*")):
            text = defaults.read_text("utf-8").replace(
                "firmware/esp-idf/partitions.csv", "partitions.csv"
            )
            written.append(write_file(out_dir / defaults.name, text, inside=out_dir))
    return written


_FILE_ROLES = {
    "platformio.ini": "the board's environment, platform and libraries (pinned)",
    "main.cpp": "arena, quantisation, `model_init()`, `predict()`, the example loop",
    "model_data.cc": "the model as a 16-byte aligned C array",
    "model_data.h": "its declaration, length and CRC-32",
    "model_ops.h": "the op resolver registering exactly the model's ops",
    "frontend_data.cc": "the front end (frontend.tflite) as a 16-byte aligned C array",
    "frontend_data.h": "its declaration, length and CRC-32",
    "frontend_ops.h": "the op resolver registering the front end's signal ops",
    "signal_kernels.h": "mcunas's signal kernels (the front end's ops, portable C++)",
    "signal_kernels.cc": "window, energy, filter bank, square root, noise, PCAN, log",
    "signal_fft.cc": "the int16 real FFT",
    "signal_options.cc": "the ops' options (flexbuffer) and their ranges",
    "tflm_signal_ops.h": "the kernels as TFLite Micro custom ops",
    "tflm_signal_ops.cc": "their Init, Prepare and Eval",
    "CMakeLists.txt": "the ESP-IDF build (root: project; main/: component)",
    "idf_component.yml": "the esp-tflite-micro dependency (ESP-NN kernels), pinned",
    "partitions.csv": "the partition table",
}


def _readme(values: dict[str, Any], out_dir: Path, written: list[Path], espidf: bool) -> str:
    rows = []
    for path in sorted(written, key=lambda p: str(p.relative_to(out_dir))):
        role = _FILE_ROLES.get(path.name, "ESP-IDF settings (the target's file wins)")
        rows.append(f"| `{path.relative_to(out_dir)}` | {role} |")
    idf_note = (
        "\nIt is also an ESP-IDF project: `idf.py set-target <chip> build flash monitor`.\n"
        if espidf
        else ""
    )
    return _template("deploy_README.md.in").substitute(
        values, file_rows="\n".join(rows), idf_note=idf_note
    ) + readme_section(values, espidf)
