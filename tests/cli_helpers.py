"""Running the ``mcunas`` command line in-process and checking how it refuses."""

from __future__ import annotations

import pytest

from mcunas.commands.cli import main


def one_line_exit_2(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    """Run ``mcunas ARGS``: it must exit 2 with one stderr line and no traceback; that line."""
    with pytest.raises(SystemExit) as exc:
        main(list(args))
    err = capsys.readouterr().err
    assert exc.value.code == 2, err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    return err
