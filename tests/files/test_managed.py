"""Writing inside a managed folder: a planted link is replaced or refused, never written through."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from mcunas.errors import UserError
from mcunas.files import (
    FolderLock,
    managed_folder,
    open_managed,
    plain_name,
    refuse_links,
    write_file,
)


@pytest.fixture
def victim(tmp_path: Path) -> Path:
    """A file of the user's outside the managed folder, which no write may touch."""
    path = tmp_path / "victim.txt"
    path.write_text("precious\n")
    return path


def untouched(victim: Path) -> bool:
    return victim.read_text() == "precious\n"


def test_a_link_at_the_files_name_is_replaced_and_its_target_untouched(tmp_path, victim):
    root = tmp_path / "run"
    root.mkdir()
    (root / "report.html").symlink_to(victim)
    write_file(root / "report.html", "<html>", inside=root)
    assert (
        not (root / "report.html").is_symlink() and (root / "report.html").read_text() == "<html>"
    )
    assert untouched(victim)
    assert sorted(p.name for p in root.iterdir()) == ["report.html"]  # no temporary left


def test_a_dangling_link_makes_no_file_where_it_points(tmp_path):
    root, elsewhere = tmp_path / "run", tmp_path / "PWNED"
    root.mkdir()
    (root / "best.json").symlink_to(elsewhere)
    write_file(root / "best.json", "{}", inside=root)
    assert not elsewhere.exists() and (root / "best.json").read_text() == "{}"


@pytest.mark.parametrize("depth", [1, 2])
def test_a_managed_sub_folder_that_is_a_link_is_refused_in_one_line(tmp_path, depth):
    root, elsewhere = tmp_path / "run", tmp_path / "elsewhere"
    elsewhere.mkdir()
    parts = ["best", "project"][:depth]
    Path(root, *parts[:-1]).mkdir(parents=True)
    Path(root, *parts).symlink_to(elsewhere)
    with pytest.raises(UserError) as refused:
        write_file(Path(root, *parts, "main", "model_data.cc"), "x", inside=root)
    line = str(refused.value)
    assert "\n" not in line and "is a symlink" in line and str(Path(root, *parts)) in line
    assert list(elsewhere.iterdir()) == []
    with pytest.raises(UserError, match="is a symlink"):
        managed_folder(root, Path(root, *parts))


def test_the_users_own_folder_may_be_a_link(tmp_path):
    real, named = tmp_path / "real", tmp_path / "named"
    real.mkdir()
    named.symlink_to(real)
    write_file(named / "models" / "trial_1.tflite", b"m", inside=named)
    assert (real / "models" / "trial_1.tflite").read_bytes() == b"m"


def test_a_folder_at_the_files_name_is_refused(tmp_path):
    (tmp_path / "pareto.json").mkdir()
    with pytest.raises(UserError, match="it is a folder"):
        write_file(tmp_path / "pareto.json", "{}", inside=tmp_path)


def test_a_path_that_leaves_its_folder_is_refused(tmp_path):
    for path in (tmp_path / ".." / "x", tmp_path.parent / "x", Path("/etc/x")):
        with pytest.raises(UserError, match="not inside"):
            write_file(path, "x", inside=tmp_path)


@pytest.mark.parametrize(
    "name", ["", ".", "..", "../../PWNED", "/abs", "a/b", "a\\b", "a\nb", "x" * 201, 7, None]
)
def test_names_built_from_data_must_be_plain(name):
    with pytest.raises(UserError) as refused:
        plain_name(name, "trial id")
    assert "\n" not in str(refused.value) and "trial id" in str(refused.value)


@pytest.mark.parametrize("name", ["0", "007", "s0001", "r2", "esp32s3", "word-1_x.y"])
def test_plain_names_pass(name):
    assert plain_name(name) == name


def test_the_folder_lock_refuses_a_symlink_and_never_writes_a_shared_file(tmp_path, victim):
    run = tmp_path / "run"
    run.mkdir()
    (run / FolderLock.NAME).symlink_to(victim)
    with pytest.raises(UserError) as refused, FolderLock(run, "mcunas search"):
        pass
    assert "\n" not in str(refused.value) and "symlink" in str(refused.value)
    (run / FolderLock.NAME).unlink()
    os.link(victim, run / FolderLock.NAME)  # planted, or a backup made of hard links
    with FolderLock(run, "mcunas search"):  # locked, but nothing written into it
        assert untouched(victim)
    (run / FolderLock.NAME).unlink()
    with FolderLock(run, "mcunas search"):  # its own file: made, and the pid written
        assert (run / FolderLock.NAME).read_text() == f"{os.getpid()}\n"


def test_a_fresh_file_replaces_whatever_was_planted_at_its_name(tmp_path, victim):
    logs = tmp_path / "logs"
    logs.mkdir()
    os.link(victim, logs / "build.log")
    fd = open_managed(tmp_path, logs / "build.log", os.O_WRONLY, "build log", fresh=True)
    os.write(fd, b"$ pio run\n")
    os.close(fd)
    assert untouched(victim) and (logs / "build.log").read_text() == "$ pio run\n"
    (logs / "build.log").unlink()
    (logs / "build.log").symlink_to(victim)
    fd = open_managed(tmp_path, logs / "build.log", os.O_WRONLY, "build log", fresh=True)
    os.close(fd)
    assert untouched(victim) and not (logs / "build.log").is_symlink()


def test_open_managed_refuses_a_link_below_its_root(tmp_path, victim):
    (tmp_path / "logs").symlink_to(tmp_path)
    with pytest.raises(UserError, match="is a symlink"):
        open_managed(tmp_path, tmp_path / "logs" / "victim.txt", os.O_WRONLY, "build log")
    assert untouched(victim)


def test_refuse_links_finds_a_link_deep_inside_a_folder(tmp_path, victim):
    deep = tmp_path / "tuner" / "project" / "trial_0"
    deep.mkdir(parents=True)
    refuse_links(
        tmp_path, ["trials.sqlite", "tuner"], "search folder", deep=True
    )  # nothing planted
    (deep / "trial.json").symlink_to(victim)
    with pytest.raises(UserError) as refused:
        refuse_links(tmp_path, ["trials.sqlite", "tuner"], "search folder", deep=True)
    assert str(deep / "trial.json") in str(refused.value)
    (tmp_path / "trials.sqlite-wal").symlink_to(victim)
    with pytest.raises(UserError, match="trials.sqlite-wal"):
        refuse_links(tmp_path, ["trials.sqlite-wal"], "trial store")
    os.link(victim, tmp_path / "trials.sqlite-shm")  # SQLite would rewrite it in place
    with pytest.raises(UserError, match="hard links"):
        refuse_links(tmp_path, ["trials.sqlite-shm"], "trial store")
    os.link(victim, tmp_path / "trials.sqlite")  # a store in a hard-linked backup: the user's
    refuse_links(tmp_path, ["trials.sqlite"], "trial store", linked_ok=True)
