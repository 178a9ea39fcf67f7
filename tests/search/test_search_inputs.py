"""`mcunas search` bad input: one line, exit 2, no folder created, before TensorFlow loads."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcunas.commands.cli import main
from mcunas.tflite import convert


def _no_tensorflow() -> None:
    raise AssertionError("TensorFlow was loaded before the input was checked")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--max-trials", "0"], "'--max-trials': must be a whole number 1 to 100000"),
        (["--epochs", "-3"], "'--epochs': must be a whole number 1 to 10000"),
        (["--time-budget", "-5"], "'--time-budget': must be a number above 0"),
        (["--seed", "-1"], "'--seed': must be a whole number 0 to 4294967295"),
        (["--seed", str(2**32)], "'--seed': must be a whole number 0 to 4294967295"),
        (["--families", ","], "--families lists no family"),
        (["--out", " "], "--out is empty"),
        (["--resume"], "--resume needs --out"),
        (["--measure", "board", "--port", "/dev/x", "--rack", "r.toml"], "not both"),
        (["--measure", "board", "--rack", "{tmp}/none.toml"], "rack file not found"),
        (["--out", "{tmp}/afile/run"], "Cannot create output folder"),
        (["--dataset", "{tmp}/none.npz"], "Dataset not found"),
    ],
)
def test_bad_search_input(capsys, tmp_path: Path, monkeypatch, args, message) -> None:
    monkeypatch.chdir(tmp_path)  # the default --out (runs/...) would land here
    (tmp_path / "afile").write_text("x")
    before = set(tmp_path.iterdir())
    monkeypatch.setattr(convert, "import_tensorflow", _no_tensorflow)
    args = [a.format(tmp=tmp_path) for a in args]
    with pytest.raises(SystemExit) as exc:
        main(["search", "--board", "esp32s3", *args])
    err = capsys.readouterr().err
    assert exc.value.code == 2, err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert message in err
    assert set(tmp_path.iterdir()) == before  # no output folder, not even runs/
