"""Outputs go only to regular files or new paths: special files are refused, never replaced."""

from __future__ import annotations

import os
import socket
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from mcunas.cost.fit.records import RecordStore
from mcunas.errors import UserError
from mcunas.files import FolderLock, output_path, write_file
from mcunas.search.results.store import TrialStore
from tests.cli_helpers import one_line_exit_2
from tests.repo import REPO

MODEL = REPO / "mcunas" / "calibration" / "models"


def _is_char_device(path: str) -> bool:
    return stat.S_ISCHR(os.stat(path).st_mode)


@pytest.fixture
def fifo(tmp_path: Path) -> Path:
    path = tmp_path / "pipe"
    os.mkfifo(path)
    return path


@pytest.fixture
def unix_socket(tmp_path: Path) -> Iterator[Path]:
    path = tmp_path / "sock"
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.bind(str(path))
    yield path
    sock.close()


def test_dev_null_is_refused_before_any_write(capsys) -> None:
    assert _is_char_device("/dev/null")
    err = one_line_exit_2(capsys, "space", "reference", "kws-dscnn", "--out", "/dev/null")
    assert "/dev/null" in err and "character device" in err
    assert _is_char_device("/dev/null")


def test_the_refusal_comes_before_the_file_writer() -> None:
    """``output_path`` alone refuses a device: no temporary file is made beside it."""
    with pytest.raises(UserError, match="character device"):
        output_path("/dev/null")
    with pytest.raises(UserError, match="character device"):
        write_file(Path("/dev/full"), b"x")
    assert _is_char_device("/dev/null") and _is_char_device("/dev/full")


def test_a_named_pipe_is_refused(capsys, fifo: Path) -> None:
    err = one_line_exit_2(capsys, "space", "reference", "kws-dscnn", "--out", str(fifo))
    assert "named pipe" in err
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_a_socket_is_refused(capsys, unix_socket: Path) -> None:
    err = one_line_exit_2(capsys, "space", "reference", "kws-dscnn", "--out", str(unix_socket))
    assert "socket" in err
    assert stat.S_ISSOCK(os.lstat(unix_socket).st_mode)


def test_a_folder_is_refused(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="a folder"):
        write_file(tmp_path, b"x")
    assert tmp_path.is_dir()


def test_a_symlink_is_written_through_and_kept(tmp_path: Path, capsys) -> None:
    target = tmp_path / "real.json"
    target.write_text("old")
    link = tmp_path / "link.json"
    link.symlink_to(target)
    written = write_file(link, "new")
    assert written == target.resolve()
    assert link.is_symlink() and target.read_text() == "new"
    assert "is a symlink; writing its target" in capsys.readouterr().err


def test_a_dangling_symlink_creates_its_target(tmp_path: Path) -> None:
    link = tmp_path / "link"
    link.symlink_to(tmp_path / "new.bin")
    write_file(link, b"abc")
    assert (tmp_path / "new.bin").read_bytes() == b"abc" and link.is_symlink()


@pytest.mark.parametrize("special", ["/dev/null", "fifo", "loop"])
def test_a_symlink_to_a_special_file_or_a_loop_is_refused(tmp_path, fifo, special) -> None:
    link = tmp_path / "link"
    if special == "loop":
        other = tmp_path / "other"
        other.symlink_to(link)
        link.symlink_to(other)
    else:
        link.symlink_to(fifo if special == "fifo" else special)
    with pytest.raises(UserError, match="symlink"):
        write_file(link, b"x")
    assert _is_char_device("/dev/null") and link.is_symlink()


def test_search_out_on_a_device_is_one_line(capsys) -> None:
    err = one_line_exit_2(capsys, "search", "--board", "esp32s3", "--out", "/dev/null")
    assert "character device" in err


def test_stores_and_the_lock_refuse_special_files(tmp_path: Path, fifo: Path) -> None:
    with pytest.raises(UserError, match="named pipe"):
        TrialStore(fifo)
    with pytest.raises(UserError, match="named pipe"):
        RecordStore(fifo)
    folder = tmp_path / "run"
    folder.mkdir()
    os.mkfifo(folder / FolderLock.NAME)
    with pytest.raises(UserError, match="named pipe"), FolderLock(folder, "mcunas search"):
        pass


@pytest.mark.parametrize("kind", ["device", "fifo"])
def test_plot_and_trace_refuse_special_files(capsys, fifo: Path, kind: str) -> None:
    path = "/dev/null" if kind == "device" else str(fifo)
    err = one_line_exit_2(capsys, "latency-model", "report", "--board", "esp32s3", "--plot", path)
    assert "plot" in err and "not a regular file" in err
    model = str(MODEL / "ad01_int8.tflite")
    args = ["bench", model, "--board", "esp32s3", "--port", "/dev/null", "--no-flash"]
    err = one_line_exit_2(capsys, *args, "--timeout", "1", "--trace", path)
    assert "serial trace" in err and "not a regular file" in err
    assert _is_char_device("/dev/null")
