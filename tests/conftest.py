"""Test tiers and shared fixtures.

Default tier: no boards, no network. ``-m hardware --port PORT --board NAME``
runs the hardware tier against a real board.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import mcunas.engine  # noqa: F401  (the strategies registered, as every entry point has them)

REPO = Path(__file__).resolve().parent.parent
CALIBRATION = REPO / "mcunas" / "calibration"  # the project's own copy: tests read only the repo


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--port", default=None, help="serial port of a real board")
    parser.addoption("--board", default=None, help="board profile of the real board")
    parser.addoption("--baud", default=None, type=int, help="baud rate override")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption("--port"):
        return
    skip = pytest.mark.skip(reason="hardware test: give --port and --board")
    for item in items:
        if "hardware" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(autouse=True)
def isolated_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Point the user folder (boards, caches) at a fresh temporary folder."""
    home = tmp_path / "mcunas-home"
    monkeypatch.setenv("MCUNAS_HOME", str(home))
    monkeypatch.delenv("MCUNAS_DEBUG", raising=False)
    return home


@pytest.fixture(scope="session")
def calibration_dir() -> Path:
    """The project's calibration folder (published measurements and their models)."""
    return CALIBRATION
