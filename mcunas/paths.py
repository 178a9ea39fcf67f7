"""Where mcunas keeps things: the user folder (``MCUNAS_HOME``) and the built-in folders.

Every module asks here instead of reading the environment itself.

- ``MCUNAS_HOME`` (default ``~/.mcunas``): user board profiles (``boards/``),
  the predictor's measurement store, the calibration-suite cache, firmware
  build folders.
- ``MCUNAS_BOARDS_DIR``: the built-in board profiles (default: the checkout's
  ``boards/``).
- ``MCUNAS_FIRMWARE_DIR``: the folder holding ``platformio.ini`` and
  ``firmware/`` (default: the checkout).
"""

from __future__ import annotations

import os
from pathlib import Path

from mcunas.errors import UserError

__all__ = [
    "builtin_boards_dir",
    "firmware_template_dir",
    "mcunas_home",
    "predictor_store_path",
    "user_boards_dir",
    "user_path",
]

_CHECKOUT = Path(__file__).resolve().parent.parent


def mcunas_home() -> Path:
    """The user folder: ``$MCUNAS_HOME``, else ``~/.mcunas`` (it may not exist yet).

    Raises:
        UserError: ``MCUNAS_HOME`` names a file, not a folder.
    """
    env = os.environ.get("MCUNAS_HOME")
    home = Path(env).expanduser() if env else Path.home() / ".mcunas"
    if home.exists() and not home.is_dir():
        raise UserError(
            f"MCUNAS_HOME={home} is a file, not a folder: point it at a folder "
            "(or unset it to use ~/.mcunas)."
        )
    return home


def user_path(*parts: str) -> Path:
    """A path inside the user folder, e.g. ``user_path("build", "esp32s3-ttyUSB0")``."""
    return mcunas_home().joinpath(*parts)


def user_boards_dir() -> Path:
    """The user's board profiles, searched before the built-in ones."""
    return user_path("boards")


def predictor_store_path() -> Path:
    """The predictor's measurement store: ``$MCUNAS_HOME/predictor.sqlite``."""
    return user_path("predictor.sqlite")


def builtin_boards_dir() -> Path:
    """The built-in board profiles (``MCUNAS_BOARDS_DIR`` overrides)."""
    env = os.environ.get("MCUNAS_BOARDS_DIR")
    return Path(env).expanduser() if env else _CHECKOUT / "boards"


def firmware_template_dir() -> Path:
    """The folder of ``platformio.ini`` and ``firmware/`` (``MCUNAS_FIRMWARE_DIR`` overrides)."""
    env = os.environ.get("MCUNAS_FIRMWARE_DIR")
    return Path(env).expanduser() if env else _CHECKOUT
