"""Where mcunas keeps things: one module reads MCUNAS_HOME and the folder overrides."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcunas import paths
from mcunas.commands.cli import main


def test_user_folders_follow_mcunas_home(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("MCUNAS_HOME", str(tmp_path / "home"))
    assert paths.user_boards_dir() == tmp_path / "home" / "boards"
    assert paths.predictor_store_path() == tmp_path / "home" / "predictor.sqlite"
    assert paths.user_path("build", "x") == tmp_path / "home" / "build" / "x"
    monkeypatch.delenv("MCUNAS_HOME")
    assert paths.mcunas_home() == Path.home() / ".mcunas"


def test_builtin_folder_overrides(tmp_path: Path, monkeypatch) -> None:
    assert (paths.builtin_boards_dir() / "esp32s3.toml").is_file()
    assert (paths.firmware_template_dir() / "platformio.ini").is_file()
    # found through the package, the same as from a wheel (tests/test_wheel.py)
    assert paths.builtin_boards_dir() == paths.package_path("bundled", "boards")
    repo = Path(__file__).resolve().parents[1]
    assert paths.builtin_boards_dir().resolve() == repo / "boards"
    assert (paths.firmware_template_dir() / "firmware").resolve() == repo / "firmware"
    monkeypatch.setenv("MCUNAS_BOARDS_DIR", str(tmp_path))
    monkeypatch.setenv("MCUNAS_FIRMWARE_DIR", str(tmp_path))
    assert paths.builtin_boards_dir() == paths.firmware_template_dir() == tmp_path


def test_mcunas_home_on_a_file_is_one_line(tmp_path: Path, monkeypatch, capsys) -> None:
    home = tmp_path / "not-a-folder"
    home.write_text("x")
    monkeypatch.setenv("MCUNAS_HOME", str(home))
    with pytest.raises(SystemExit) as info:
        main(["boards"])
    err = capsys.readouterr().err
    assert info.value.code == 2 and "MCUNAS_HOME" in err and "is a file" in err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_json_output_is_standard_json() -> None:
    import json

    from mcunas.jsontext import dumps

    text = dumps({"a": float("nan"), "b": [float("inf"), 1.5], "c": Path("x")})
    assert json.loads(text) == {"a": None, "b": [None, 1.5], "c": "x"}
    assert "NaN" not in text and "Infinity" not in text
