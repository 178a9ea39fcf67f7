"""The C sources of ``frontend.tflite`` for a firmware, beside the model's.

The same templates as the model's (:func:`mcunas.tflite.csource.model_sources`), with
every name moved from ``model`` to ``frontend`` so both fit in one firmware:
``frontend_data.h``/``.cc`` (``g_frontend_data``, ``MCUNAS_FRONTEND_CRC32``,
``MCUNAS_FRONTEND_LEN``) and ``frontend_ops.h`` (``McunasFrontendOpResolver``,
``McunasRegisterFrontendOps(resolver)``: the signal ops, by the resolver's own
``AddWindow()``, ``AddRfft()`` ... methods).
"""

from __future__ import annotations

from pathlib import Path

from mcunas.files import write_file
from mcunas.tflite.csource import model_sources

__all__ = ["frontend_sources", "write_frontend_sources"]

_RENAMES = (
    ("MCUNAS_MODEL_", "MCUNAS_FRONTEND_"),
    ("g_model_data", "g_frontend_data"),
    ("model_data.h", "frontend_data.h"),
    ("McunasOpResolver", "McunasFrontendOpResolver"),
    ("McunasRegisterOps", "McunasRegisterFrontendOps"),
    ("Ops used by the model", "Ops used by the front end"),
    ("the model's ops", "the front end's ops"),
)


def frontend_sources(model_bytes: bytes) -> dict[str, str]:
    """File name -> C text of ``frontend_data.h``, ``frontend_data.cc`` and ``frontend_ops.h``."""
    from mcunas.tflite.reader import read_graph

    texts = model_sources(model_bytes, read_graph(model_bytes).op_names())
    out = {}
    for name, text in texts.items():
        for old, new in _RENAMES:
            text = text.replace(old, new)
        out[name.replace("model_", "frontend_")] = text
    return out


def write_frontend_sources(model_bytes: bytes, out_dir: Path) -> list[Path]:
    """Write the three files into ``out_dir`` (no link there followed); returns their paths."""
    paths = []
    for name, text in frontend_sources(model_bytes).items():
        paths.append(write_file(Path(out_dir) / name, text, inside=Path(out_dir)))
    return paths
