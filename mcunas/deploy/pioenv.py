"""A board's PlatformIO environment, read from the measurement firmware's ``platformio.ini``.

The deployable project pins the same platform, framework and TFLite Micro port
as the measurement firmware, so the model runs with the kernels it was measured
with. This module resolves one ``[env:NAME]`` (its ``extends`` chain, the common
``[env]`` section, ``${section.key}`` references) into plain options and writes
them back as a stand-alone ``platformio.ini``.
"""

from __future__ import annotations

import configparser
import re
from pathlib import Path

from mcunas.errors import BoardProfileError
from mcunas.inputs.opener import read_input_text

__all__ = ["DEPLOY_KEYS", "env_options", "platformio_ini"]

# The options a deployed project keeps: what to build with. The measurement
# firmware's source filter, partition and sdkconfig paths are its own.
DEPLOY_KEYS = (
    "platform",
    "board",
    "framework",
    "board_upload.flash_size",
    "monitor_speed",
    "monitor_filters",
    "lib_deps",
    "lib_compat_mode",
    "lib_ldf_mode",
    "build_unflags",
    "build_flags",
)
_REFERENCE = re.compile(r"\$\{([\w:.-]+)\.([\w.-]+)\}")
_MAX_DEPTH = 8  # extends / reference chains deeper than this are a loop


def _parser(ini: Path) -> configparser.ConfigParser:
    parser = configparser.ConfigParser(interpolation=None, comment_prefixes=(";", "#"))
    parser.optionxform = str  # keep option names as written
    text = read_input_text(ini, "text", "PlatformIO template", BoardProfileError)
    try:
        parser.read_string(text, source=str(ini))
    except configparser.Error as exc:
        raise BoardProfileError(f"Cannot read the PlatformIO template {ini}: {exc}") from exc
    return parser


def _raw_options(parser: configparser.ConfigParser, section: str, depth: int = 0) -> dict:
    if depth > _MAX_DEPTH or not parser.has_section(section):
        return {}
    options: dict[str, str] = {}
    for base in parser.get(section, "extends", fallback="").split(","):
        if base.strip():
            options.update(_raw_options(parser, base.strip(), depth + 1))
    options.update(parser.items(section))
    return options


def _expand(parser: configparser.ConfigParser, value: str) -> str:
    def lookup(match: re.Match) -> str:
        section, key = match.group(1), match.group(2)
        return parser.get(section, key, fallback="") if parser.has_section(section) else ""

    for _ in range(_MAX_DEPTH):
        expanded = _REFERENCE.sub(lookup, value)
        if expanded == value:
            break
        value = expanded
    return value


def env_options(ini: Path, env: str) -> dict[str, str]:
    """The resolved options of ``[env:ENV]`` in ``ini``, limited to :data:`DEPLOY_KEYS`.

    Args:
        ini: Path, a ``platformio.ini`` (the package's measurement template).
        env: str, the environment name (a board profile's ``[platformio] env``).

    Returns:
        Option name -> value; a multi-line value keeps one item per line.

    Raises:
        BoardProfileError: ``ini`` is unreadable or has no ``[env:ENV]``.
    """
    parser = _parser(ini)
    if not parser.has_section(f"env:{env}"):
        raise BoardProfileError(
            f"{ini} has no [env:{env}]: the board profile's [platformio] env must name one."
        )
    options = _raw_options(parser, "env") if parser.has_section("env") else {}
    options.update(_raw_options(parser, f"env:{env}"))
    resolved = {}
    for key in DEPLOY_KEYS:
        if key in options:
            lines = _expand(parser, options[key]).split("\n")
            resolved[key] = "\n".join(line.strip() for line in lines if line.strip())
    return resolved


def platformio_ini(env: str, options: dict[str, str], header: str, extra: dict) -> str:
    """Text of a stand-alone ``platformio.ini`` with one environment.

    Args:
        env: str, the environment name (also the default one).
        options: dict, the environment's options (:func:`env_options`).
        header: str, the comment at the top (one or more lines, without ``;``).
        extra: dict, ``{"platformio": {...}, "env": {...}}`` options added to those sections.
    """
    lines = [f"; {line}".rstrip() for line in header.splitlines()]
    lines += ["", "[platformio]", f"default_envs = {env}"]
    lines += [f"{k} = {v}" for k, v in extra.get("platformio", {}).items()]
    lines += ["", f"[env:{env}]"]
    for key, value in {**options, **extra.get("env", {})}.items():
        if "\n" in value:
            lines.append(f"{key} =")
            lines += [f"    {item}" for item in value.split("\n")]
        else:
            lines.append(f"{key} = {value}")
    return "\n".join(lines) + "\n"
