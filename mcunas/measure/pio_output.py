"""What PlatformIO's output says went wrong: the causes read from a build or upload log.

:mod:`mcunas.measure.pio` runs ``pio`` and writes its output to a log; this module
reads that text. A build failure becomes :class:`FatalError` when PlatformIO cannot
fetch what it needs, :class:`CandidateError` when the model is the cause (does not
fit, op missing from the runtime), :class:`MeasurementError` otherwise; an upload
failure gets a hint on what to check.

Example::

    raise build_error(log, log_path, "nucleo_f746zg", work_dir, "nucleo_f746zg")
"""

from __future__ import annotations

import re
from pathlib import Path

from mcunas.errors import CandidateError, FatalError, MeasurementError

__all__ = ["build_error", "log_tail", "upload_hint"]

# Lines of PlatformIO output quoted in an error (the full log is on disk).
LOG_TAIL_LINES = 25

# Build output that means the model is the cause: a failed trial, not a broken setup.
CANDIDATE_PATTERNS = (
    (re.compile(r"region [`']?([\w.]+)'? overflowed by (\d+) bytes"), "does not fit"),
    (re.compile(r"will not fit in region [`']?([\w.]+)"), "does not fit"),
    (re.compile(r"program size \(\d+ bytes\) is greater than maximum allowed"), "too large"),
    (
        re.compile(r"is too large for (?:the )?(?:app )?partition|app partition is too small"),
        "too large",
    ),
    (re.compile(r"has no member named '(Add\w+)'"), "op missing from this TFLite Micro"),
)
# Build output that means PlatformIO cannot fetch what it needs: stop the search.
FATAL_PATTERN = re.compile(
    r"HTTPClientError|InternetIsOffline|Could not resolve host|UnknownPlatform|"
    r"Unknown board ID|UnknownPackageError|PackageException|Could not install"
)
# Upload output -> what to check (first match wins: specific causes first).
UPLOAD_HINTS = (
    (
        re.compile(r"Permission denied|Access is denied"),
        "no permission on the port: add yourself to the dialout/uucp group or install "
        "PlatformIO's udev rules, then log in again",
    ),
    (
        re.compile(r"port is busy|Resource busy|Device or resource busy"),
        "the port is in use: close serial monitors (and `mcunas rack`) using it",
    ),
    (
        re.compile(r"could not open port|No such file or directory: '/dev/|FileNotFoundError"),
        "the port does not exist: check the cable and `pio device list`",
    ),
    (
        re.compile(r"Failed to connect to ESP|Wrong boot mode|No serial data received"),
        "the ESP32 is not in download mode: hold BOOT, press and release RESET, release BOOT, "
        "then retry",
    ),
    (
        re.compile(r"No ST-?LINK|ST-LINK.*not found|open failed|Error: init mode failed"),
        "no ST-LINK found: use the Nucleo's ST-LINK USB port and check its driver/firmware",
    ),
    (
        re.compile(r"no accessible RP-series devices|BOOTSEL|picotool"),
        "the RP2040 is not in BOOTSEL mode: hold BOOTSEL while plugging it in, then retry",
    ),
    (
        re.compile(r"No device found on|bossac|double-?tap", re.IGNORECASE),
        "the Nano 33 BLE bootloader did not answer: double-tap its reset button, then retry",
    ),
)


# An upload failure none of UPLOAD_HINTS names.
DEFAULT_UPLOAD_HINT = (
    "check the port (`pio device list`), the USB cable (data, not charge-only) "
    "and the board's driver"
)


def log_tail(text: str, lines: int = LOG_TAIL_LINES) -> str:
    """The last ``lines`` lines of a log, quoted in an error.

    Args:
        text (str): the log.
        lines (int): how many lines, default :data:`LOG_TAIL_LINES`.

    Returns:
        str: those lines, joined.
    """
    return "\n".join(text.rstrip().splitlines()[-lines:])


def build_error(log: str, log_path: Path, env: str, work_dir: Path, board_name: str) -> Exception:
    """The error a failed ``pio run`` stands for, read from its output.

    Args:
        log (str): the build's output.
        log_path (Path): where that output is on disk (named in the message).
        env (str): the PlatformIO environment built.
        work_dir (Path): the project folder (named in the command to re-run).
        board_name (str): the board profile's name.

    Returns:
        Exception: :class:`FatalError` (PlatformIO cannot install what it needs),
        :class:`CandidateError` (the model is the cause) or :class:`MeasurementError`.
    """
    tail = log_tail(log)
    if FATAL_PATTERN.search(log):
        return FatalError(
            f"PlatformIO could not install the platform or libraries for env '{env}' "
            f"(no internet?). Run `pio run -e {env} -d {work_dir}` once with "
            f"internet access. Log: {log_path}\n{tail}"
        )
    for pattern, what in CANDIDATE_PATTERNS:
        match = pattern.search(log)
        if match:
            return CandidateError(
                f"Model {what} on {board_name}: {match.group(0)}. Log: {log_path}"
            )
    return MeasurementError(
        f"Firmware build failed for env '{env}'. Re-run "
        f"`pio run -e {env} -d {work_dir} -v` to see why. Log: {log_path}\n{tail}"
    )


def upload_hint(log: str) -> str:
    """What to check after a failed upload: the first of :data:`UPLOAD_HINTS` its output matches.

    Args:
        log (str): the upload's output.

    Returns:
        str: the hint, or :data:`DEFAULT_UPLOAD_HINT` when no pattern matches.
    """
    for pattern, hint in UPLOAD_HINTS:
        if pattern.search(log):
            return hint
    return DEFAULT_UPLOAD_HINT
