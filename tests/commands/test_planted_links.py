"""A link planted at every name mcunas keeps in a folder it manages: replaced, or refused.

The folders: a search's ``--out`` (the lock, the store and its sidecars,
``tuner/``, ``models/``, ``best/`` and ``best/project/``, the report), the
project ``mcunas export`` writes, and ``bench --dry-run --project-dir``. A file's
link is replaced by the file (its target untouched); a sub-folder's link, or a
file SQLite or Keras Tuner would open by path, is refused in one line, exit 2.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mcunas.files import FolderLock
from tests.cli_helpers import one_line_exit_2
from tests.commands.test_search_cli import fake_runner_fixture, run
from tests.vboard_helpers import MODEL

fake_runner = pytest.fixture(fake_runner_fixture)
SEARCH = ("--board", "esp32s3", "--max-trials", "3", "--no-rescore", "--json")


@pytest.fixture
def victim(tmp_path: Path) -> Path:
    """A file of the user's outside every managed folder."""
    path = tmp_path / "victim.txt"
    path.write_text("precious\n")
    return path


def plant(path: Path, target: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.symlink_to(target)


# Files a search writes whole: a link there is replaced by the file.
REPLACED = (
    "report.html",
    "pareto.json",
    "pareto.png",
    "energy.png",
    "best/model.tflite",
    "best/best.json",
    "best/model_data.cc",
    "best/model_data.h",
    "best/model_ops.h",
    "best/project/platformio.ini",
    "best/project/README.md",
    "best/project/main/model_data.cc",
    "best/project/main/main.cpp",
)


def test_a_search_replaces_a_link_at_each_file_it_writes(capsys, tmp_path, victim, fake_runner):
    out = tmp_path / "run"
    elsewhere = tmp_path / "PWNED"
    for name in REPLACED:
        plant(out / name, victim)
    plant(out / "models" / "trial_0.tflite", elsewhere)  # dangling: would create a file there
    code, stdout, err = run(capsys, *SEARCH, "--out", str(out))
    assert code == 0, err
    assert victim.read_text() == "precious\n" and not elsewhere.exists()
    for name in REPLACED:
        assert not (out / name).is_symlink() and (out / name).stat().st_size > 0, name
    assert json.loads(stdout)["best"] is not None


@pytest.mark.parametrize(
    "name",
    [
        FolderLock.NAME,
        "trials.sqlite",
        "trials.sqlite-wal",
        "trials.sqlite-shm",
        "tuner",
        "tuner/mcunas/oracle.json",
        "models",
        "best",
        "report.html/..",  # a link at the folder itself: the user's own --out, followed
    ],
)
def test_a_search_refuses_a_link_at_a_folder_or_a_file_opened_by_path(
    capsys, tmp_path, victim, fake_runner, name
):
    out = tmp_path / "run"
    out.mkdir()
    if name == "report.html/..":  # --out itself a link: the user named it, so it is used
        real = tmp_path / "real"
        real.mkdir()
        out.rmdir()
        out.symlink_to(real)
        code, _, err = run(capsys, *SEARCH, "--out", str(out))
        assert code == 0, err
        assert (real / "report.html").is_file()
        return
    target = victim if "." in Path(name).name else tmp_path
    plant(out / name, target)
    before = sorted(p.name for p in tmp_path.iterdir())
    err = one_line_exit_2(capsys, "search", *SEARCH, "--out", str(out))
    assert "symlink" in err and str(out / name) in err
    assert victim.read_text() == "precious\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # nothing made beside


def test_a_resume_refuses_a_planted_lock(capsys, tmp_path, victim, fake_runner):
    out = tmp_path / "run"
    code, _, err = run(capsys, *SEARCH, "--out", str(out))
    assert code == 0, err
    (out / FolderLock.NAME).unlink()
    plant(out / FolderLock.NAME, victim)
    err = one_line_exit_2(capsys, "search", "--out", str(out), "--resume", "--max-trials", "4")
    assert "symlink" in err and victim.read_text() == "precious\n"


def test_export_replaces_links_in_the_project_and_refuses_a_linked_folder(
    capsys, tmp_path, victim, fake_runner
):
    out = tmp_path / "run"
    code, _, err = run(capsys, *SEARCH, "--out", str(out))
    assert code == 0, err
    project = out / "best" / "project"
    for name in ("main/model_data.cc", "platformio.ini", "CMakeLists.txt"):
        (project / name).unlink()
        plant(project / name, victim)
    with pytest.raises(SystemExit) as done:
        from mcunas.commands.cli import main

        main(["export", str(out)])
    assert done.value.code == 0, capsys.readouterr().err
    assert victim.read_text() == "precious\n"
    assert not (project / "main" / "model_data.cc").is_symlink()
    other = out / "best" / "project-nucleo_f746zg"
    plant(other, tmp_path)
    err = one_line_exit_2(capsys, "export", str(out), "--board", "nucleo_f746zg")
    assert "symlink" in err and str(other) in err


def test_bench_dry_run_replaces_links_in_its_project_folder(capsys, tmp_path, victim):
    model, fw = tmp_path / "m.tflite", tmp_path / "fw"
    model.write_bytes(MODEL)
    for name in ("platformio.ini", "CMakeLists.txt", "firmware/src/runner.cc"):
        plant(fw / name, victim)
    plant(fw / "firmware" / "src" / "generated" / "model_data.cc", tmp_path / "PWNED")
    argv = ["bench", str(model), "--board", "esp32s3", "--port", "/dev/none", "--dry-run"]
    with pytest.raises(SystemExit) as done:
        from mcunas.commands.cli import main

        main([*argv, "--project-dir", str(fw)])
    assert done.value.code == 0, capsys.readouterr().err
    assert victim.read_text() == "precious\n" and not (tmp_path / "PWNED").exists()
    assert "[env:esp32s3]" in (fw / "platformio.ini").read_text()
    assert not (fw / "firmware" / "src" / "runner.cc").is_symlink()
    plant(fw / "firmware" / "esp-idf-link", tmp_path)  # not the template's: left alone
    (fw / "firmware" / "src" / "generated").rename(tmp_path / "gen")
    plant(fw / "firmware" / "src" / "generated", tmp_path / "gen")
    err = one_line_exit_2(capsys, *argv, "--project-dir", str(fw))
    assert "symlink" in err and "generated" in err
    assert (tmp_path / "gen" / "model_data.cc").is_file()  # not emptied through the link
