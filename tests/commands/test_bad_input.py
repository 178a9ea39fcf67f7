"""Bad input anywhere in the CLI: one line naming the problem, exit 2, no traceback."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcunas.commands.cli import main
from tests.cli_helpers import one_line_exit_2
from tests.repo import REPO

MODEL = REPO / "mcunas" / "calibration" / "models"


def test_resume_without_a_search(tmp_path, capsys):
    err = one_line_exit_2(capsys, "search", "--out", str(tmp_path / "empty"), "--resume")
    assert "Nothing to resume" in err


def test_resume_on_a_corrupt_store(tmp_path, capsys):
    (tmp_path / "trials.sqlite").write_bytes(b"this is not sqlite" * 100)
    err = one_line_exit_2(capsys, "search", "--out", str(tmp_path), "--resume")
    assert "not an mcunas trial store" in err


def test_trace_into_a_missing_folder(tmp_path, capsys):
    model = str(MODEL / "ad01_int8.tflite")
    err = one_line_exit_2(
        capsys,
        "bench",
        model,
        "--board",
        "esp32s3",
        "--port",
        "/dev/null",
        "--no-flash",
        "--timeout",
        "1",
        "--trace",
        str(tmp_path / "no" / "dir" / "log"),
    )
    assert "serial trace" in err


@pytest.mark.parametrize(
    "text", ['board = ["esp32s3"]\n', 'rack = 3\n[[board]]\nprofile = "esp32s3"\nport = "/dev/x"\n']
)
def test_malformed_rack_file(tmp_path, capsys, text):
    rack = tmp_path / "rack.toml"
    rack.write_text(text)
    err = one_line_exit_2(capsys, "rack", "list", "--rack", str(rack))
    assert str(rack) in err


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (("search", "--bogus"), "No such option '--bogus'"),
        (("search", "--max-trials", "abc"), "'abc' is not a valid integer"),
        (("calibrate",), "Missing option '--board'"),
        (("nosuch",), "No such command 'nosuch'"),
    ],
)
def test_click_usage_errors_are_one_line(capsys, args, expected):
    err = one_line_exit_2(capsys, *args)
    assert expected in err and "--help" in err


@pytest.mark.parametrize(
    "args",
    [
        ("bench", str(MODEL / "ad01_int8.tflite"), "--board", "esp32s3"),
        ("calibrate", "--board", "esp32s3"),
        ("search", "--board", "esp32s3", "--measure", "board"),
    ],
)
def test_a_missing_serial_port_is_named_before_any_build(tmp_path, capsys, args):
    missing = str(tmp_path / "ttyUSB9")
    err = one_line_exit_2(
        capsys,
        *args,
        "--port",
        missing,
        *(("--out", str(tmp_path / "r")) if args[0] == "search" else ()),
    )
    assert f"serial port {missing} does not exist" in err
    assert not (tmp_path / "r").exists()


def test_interrupted_search_is_one_line_and_exit_130(tmp_path, capsys, monkeypatch):
    import mcunas.search.api
    import mcunas.tflite.convert

    def interrupted(config, *_planned, **_options):
        Path(config.out).mkdir()
        raise KeyboardInterrupt

    monkeypatch.setattr(mcunas.tflite.convert, "import_tensorflow", lambda: None)
    monkeypatch.setattr(mcunas.search.api, "run_planned", interrupted)
    out = tmp_path / "run"
    with pytest.raises(SystemExit) as exc:
        main(["search", "--board", "esp32s3", "--out", str(out)])
    err = capsys.readouterr().err
    assert exc.value.code == 130
    assert err.strip().splitlines() == [
        f"Interrupted. Finished trials are kept; continue with: mcunas search --out {out} --resume"
    ]


def test_a_stopped_search_run_as_the_process_leaves_without_teardown(tmp_path, capsys, monkeypatch):
    """``mcunas`` as its own process exits 130 at once (``os._exit``), the line flushed first."""
    import mcunas.search.api
    import mcunas.tflite.convert

    def interrupted(config, *_planned, **_options):
        Path(config.out).mkdir()
        raise KeyboardInterrupt

    class Left(BaseException):  # passes main's handlers, as os._exit would
        pass

    def no_teardown(code: int) -> None:
        raise Left(code)

    monkeypatch.setattr(mcunas.tflite.convert, "import_tensorflow", lambda: None)
    monkeypatch.setattr(mcunas.search.api, "run_planned", interrupted)
    monkeypatch.setattr("mcunas.commands.cli.os._exit", no_teardown)
    out = tmp_path / "run"
    monkeypatch.setattr("sys.argv", ["mcunas", "search", "--board", "esp32s3", "--out", str(out)])
    with pytest.raises(Left) as left:
        main()
    assert left.value.args == (130,)
    assert "continue with: mcunas search --out" in capsys.readouterr().err
    monkeypatch.setattr("sys.argv", ["mcunas", "boards", "show", "no-such-board"])
    with pytest.raises(SystemExit) as exc:  # other exits keep the usual teardown
        main()
    assert exc.value.code != 130


def _mcunas(args: list[str], **kwargs):
    import subprocess
    import sys

    return subprocess.run(
        [sys.executable, "-m", "mcunas", *args],
        capture_output=True,
        text=True,
        timeout=120,
        **kwargs,
    )


def test_output_to_a_full_device_is_one_line():
    import subprocess
    import sys

    with open("/dev/full", "w") as full:
        proc = subprocess.run(
            [sys.executable, "-m", "mcunas", "boards", "--json"],
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
        )
    assert proc.returncode == 2 and "No space left on device" in proc.stderr
    assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


def test_closed_stdout_is_one_line():
    import subprocess
    import sys

    proc = subprocess.run(
        [sys.executable, "-m", "mcunas", "boards", "--json"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        timeout=120,
        preexec_fn=lambda: __import__("os").close(1),
    )
    assert proc.returncode == 2 and "standard output is closed" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_an_overlong_model_path_is_one_line():
    proc = _mcunas(["profile", "a/" * 2500 + "x.tflite", "--board", "esp32s3"])
    assert proc.returncode == 2 and "File name too long" in proc.stderr
    assert "Traceback" not in proc.stderr and len(proc.stderr) < 400
