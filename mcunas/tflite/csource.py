"""The C sources that put a model into a TFLite Micro firmware.

- ``model_data.h`` / ``model_data.cc``: the ``.tflite`` as a 16-byte aligned C
  array ``g_model_data`` with its length and CRC-32;
- ``model_ops.h``: a ``tflite::MicroMutableOpResolver`` type sized to the
  model and ``McunasRegisterOps(resolver)``, registering exactly its ops.

The C text lives in ``mcunas/templates/*.in`` (``string.Template``); this
module only fills it in. No TensorFlow.

Example::

    write_model_sources(Path("model.tflite").read_bytes(), Path("firmware/generated"))
"""

from __future__ import annotations

import zlib
from pathlib import Path
from string import Template

from mcunas.errors import CandidateError
from mcunas.files import write_file
from mcunas.paths import package_path
from mcunas.tflite.resolver_ops import RESOLVER_METHODS

__all__ = ["ARRAY_NAME", "model_crc32", "resolver_methods", "write_model_sources"]

ARRAY_NAME = "g_model_data"
BYTES_PER_ROW = 12  # bytes per line of the C array


def model_crc32(model_bytes: bytes) -> str:
    """CRC-32 (zlib) of the ``.tflite`` bytes as 8 lowercase hex digits."""
    return f"{zlib.crc32(model_bytes) & 0xFFFFFFFF:08x}"


def resolver_methods(op_names: list[str]) -> list[str]:
    """``MicroMutableOpResolver`` method for each op name, in order, without duplicates.

    Args:
        op_names: list[str], builtin op names such as "CONV_2D".

    Returns:
        Method names such as "AddConv2D".

    Raises:
        CandidateError: An op has no TFLite Micro resolver method (custom or unknown op).
    """
    methods: list[str] = []
    for name in op_names:
        if name not in RESOLVER_METHODS:
            raise CandidateError(f"Op {name} has no TFLite Micro kernel to register")
        if RESOLVER_METHODS[name] not in methods:
            methods.append(RESOLVER_METHODS[name])
    return methods


def _template(name: str) -> Template:
    return Template(package_path("templates", name).read_text("utf-8"))


def model_sources(model_bytes: bytes, op_names: list[str]) -> dict[str, str]:
    """The three files' names and texts for a model whose ops are ``op_names``.

    Raises:
        CandidateError: The model uses an op TFLite Micro cannot register.
    """
    methods = resolver_methods(list(op_names))
    crc = model_crc32(model_bytes)
    rows = "\n".join(
        "  " + ", ".join(f"0x{b:02x}" for b in model_bytes[i : i + BYTES_PER_ROW]) + ","
        for i in range(0, len(model_bytes), BYTES_PER_ROW)
    )
    common = {"crc": crc, "array": ARRAY_NAME, "length": len(model_bytes)}
    calls = "".join(f"  if (resolver.{m}() != kTfLiteOk) return kTfLiteError;\n" for m in methods)
    return {
        "model_data.h": _template("model_data.h.in").substitute(common),
        "model_data.cc": _template("model_data.cc.in").substitute(common, rows=rows),
        "model_ops.h": _template("model_ops.h.in").substitute(
            common, op_names=", ".join(op_names), op_count=len(methods), calls=calls
        ),
    }


def write_model_sources(
    model_bytes: bytes, out_dir: Path, op_names: list[str] | None = None
) -> list[Path]:
    """Write model_data.cc, model_data.h and model_ops.h for a TFLite Micro firmware.

    ``model_data.h`` declares ``extern const unsigned char g_model_data[]`` (16-byte
    aligned) and ``g_model_data_len``, and defines ``MCUNAS_MODEL_CRC32`` (string of
    8 hex digits), ``MCUNAS_MODEL_CRC32_U32`` and ``MCUNAS_MODEL_LEN``. ``model_ops.h``
    defines ``MCUNAS_MODEL_OP_COUNT``, the ``McunasOpResolver`` type and
    ``McunasRegisterOps(resolver)`` registering exactly the model's ops.

    Args:
        model_bytes: bytes, the .tflite model.
        out_dir: Path, folder to write into (created if missing).
        op_names: list[str] | None, the model's op names; read from the model when None.

    Returns:
        The three paths written (header, source, op header).

    Raises:
        CandidateError: The model uses an op TFLite Micro cannot register.
    """
    if op_names is None:
        from mcunas.tflite.reader import read_graph

        op_names = read_graph(model_bytes).op_names()
    texts = model_sources(model_bytes, list(op_names))
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = [out_dir / name for name in ("model_data.h", "model_data.cc", "model_ops.h")]
    for path in paths:
        write_file(path, texts[path.name], "C source", inside=out_dir)
    return paths
