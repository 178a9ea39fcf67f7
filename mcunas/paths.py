"""Where mcunas keeps things: the user folder (``MCUNAS_HOME``) and the built-in folders.

Every module asks here instead of reading the environment itself.

- ``MCUNAS_HOME`` (default ``~/.mcunas``): user board profiles (``boards/``),
  the predictor's measurement store, the calibration-suite cache, firmware
  build folders.
- ``MCUNAS_BOARDS_DIR``: the built-in board profiles (default: the ``boards/``
  shipped in the package).
- ``MCUNAS_FIRMWARE_DIR``: the folder holding ``platformio.ini`` and
  ``firmware/`` (default: the copy shipped in the package).

Files that ship with mcunas (board profiles, firmware sources, the PlatformIO
template, C templates, calibration data) are found one way, through
:func:`package_path` (``importlib.resources``), the same from a source
checkout, an editable install and a wheel. The repository keeps ``boards/``,
``firmware/`` and ``platformio.ini`` at its top level; ``mcunas/bundled/``
links to them, and a built wheel holds their copies there.
"""

from __future__ import annotations

import os
from importlib import resources
from pathlib import Path

from mcunas.errors import FatalError, UserError

__all__ = [
    "builtin_boards_dir",
    "firmware_template_dir",
    "mcunas_home",
    "package_path",
    "predictor_store_path",
    "user_boards_dir",
    "user_path",
]

# The folder inside the package that holds boards/, firmware/ and platformio.ini.
BUNDLED = "bundled"


def package_path(*parts: str) -> Path:
    """A file or folder shipped inside the mcunas package, e.g. ``package_path("templates")``.

    Args:
        *parts: str, path components below the package folder.

    Returns:
        The path on disk (it may not exist: callers check).

    Raises:
        FatalError: mcunas is installed in a form that is not plain files (a zip).
    """
    root = resources.files("mcunas")
    if not isinstance(root, Path):
        raise FatalError(
            f"mcunas is installed as {root!r}, not as files on disk: reinstall it with pip "
            "(the firmware build copies the package's files)."
        )
    return root.joinpath(*parts)


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
    return Path(env).expanduser() if env else package_path(BUNDLED, "boards")


def firmware_template_dir() -> Path:
    """The folder of ``platformio.ini`` and ``firmware/`` (``MCUNAS_FIRMWARE_DIR`` overrides)."""
    env = os.environ.get("MCUNAS_FIRMWARE_DIR")
    return Path(env).expanduser() if env else package_path(BUNDLED)
