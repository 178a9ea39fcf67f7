"""`mcunas calibrate` option checks: one line and exit 2 before any board is opened."""

from __future__ import annotations

import pytest

from mcunas.commands.cli import main


def _refused(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    with pytest.raises(SystemExit) as exc:
        main(["calibrate", "--board", "esp32s3", *args])
    out, err = capsys.readouterr()
    assert exc.value.code == 2, out + err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert "Calibrating" not in out  # refused before measuring anything
    return err


@pytest.mark.parametrize("value", ["-1", "0", "nan", "inf", "-inf"])
def test_timeout_must_be_positive_and_finite(capsys, value):
    err = _refused(capsys, "--virtual", "--timeout", value)
    assert "--timeout" in err and "finite number of seconds above 0" in err


@pytest.mark.parametrize("seed", ["0", "7", "-1"])
def test_truth_seed_needs_virtual(capsys, seed):
    # 0 is the default: giving it explicitly without --virtual is still an error
    err = _refused(capsys, "--port", "/dev/nonexistent", "--truth-seed", seed)
    assert "--truth-seed only applies with --virtual" in err


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (["--virtual", "--port", "/dev/x"], "--port and --virtual"),
        (["--virtual", "--port", "auto"], "--port and --virtual"),
        (["--virtual", "--rack", "rack.toml"], "--rack and --virtual"),
        (["--port", "/dev/x", "--rack", "rack.toml"], "--port and --rack"),
        (["--port", "/dev/x", "--rack", "r.toml", "--virtual"], "--port and --rack and --virtual"),
    ],
)
def test_targets_are_mutually_exclusive(capsys, args, named):
    err = _refused(capsys, *args)
    assert f"give one of --port, --rack and --virtual, not {named}" in err


def test_no_flash_on_virtual_board(capsys):
    err = _refused(capsys, "--virtual", "--no-flash")
    assert "--no-flash" in err


def test_no_board_attached_is_one_line_before_the_header(capsys, monkeypatch, isolated_home):
    from mcunas.measure import ports

    monkeypatch.setattr(ports, "serial_ports", lambda: [])
    err = _refused(capsys)  # --port auto by default
    assert "no serial port matches esp32s3's USB ids" in err
    assert not (isolated_home / "predictor.sqlite").exists()
