"""An option that would do nothing in the combination given is refused or named in one line."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcunas.commands.cli import main


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    with pytest.raises(SystemExit) as exc:
        main(argv)
    return exc.value.code, capsys.readouterr().err


@pytest.mark.parametrize(
    ("extra", "words"),
    [
        (["--ensemble", "3", "--refit", "off"], "--refit off makes none"),
        (["--no-rescore", "--finalists", "2"], "--no-rescore is --finalists 0"),
    ],
)
def test_options_that_cancel_each_other_are_refused(extra, words, tmp_path: Path, capsys) -> None:
    argv = ["search", "--board", "nucleo_f746zg", "--out", str(tmp_path / "o"), *extra]
    code, err = _run(argv, capsys)
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and words in lines[0], err
    assert not (tmp_path / "o").exists()


def test_the_tflm_front_end_on_images_is_named(tmp_path: Path, capsys) -> None:
    from mcunas.boards.catalog import load_board
    from mcunas.search.run_setup import load_run_data
    from mcunas.search.settings.config import SearchConfig

    cfg = SearchConfig(board="nucleo_f746zg", frontend="tflm")
    data, _, fronts = load_run_data(cfg, load_board("nucleo_f746zg"), tmp_path)
    assert fronts is None and data.kind == "image"
    assert "--frontend tflm makes the features of WAV clips" in capsys.readouterr().err
