"""Reading a user's files: one guarded opener, bounded parsing, shape checks.

Every file mcunas reads that a user gave or could have replaced (datasets, WAV
clips, images, ``best/``, models, token and TLS files, board profiles, rack
files, stores, checkpoints, calibration tables) is opened here:

- :mod:`mcunas.inputs.opener`: regular files only (a folder, FIFO, socket or
  device is refused in one line, without blocking), a size bound per kind
  (:data:`mcunas.limits.READ_BOUNDS`) checked before a byte is read;
- :mod:`mcunas.inputs.formats`: JSON, TOML, ``.npz`` and WAV through the opener,
  with their own damage turned into one line;
- :mod:`mcunas.inputs.shapes`: what was parsed has the shape its reader needs
  (``best.json``'s schema, labels as whole class indices as long as the samples);
- :mod:`mcunas.inputs.text`: strings a user writes are bounded before conversion.

Foundation layer: imports only ``mcunas.errors``, ``mcunas.limits`` and ``mcunas.files``.
"""

from __future__ import annotations

from mcunas.inputs.opener import check_input, open_input, read_input, read_input_text
from mcunas.inputs.text import bounded_float, bounded_int, bounded_text

__all__ = [
    "bounded_float",
    "bounded_int",
    "bounded_text",
    "check_input",
    "open_input",
    "read_input",
    "read_input_text",
]
