"""`mcunas search`: no folder left behind by a refused run; wall time summed over resumes."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from mcunas.search.results.store import TrialStatus, TrialStore
from tests.commands.test_search_cli import fake_runner, run  # noqa: F401 - fake_runner is a fixture


def _one_line(err: str) -> None:
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err


@pytest.mark.parametrize(
    "args",
    [
        ["--dataset", "{tmp}/missing.npz"],
        ["--dataset", "{tmp}/bad.npz"],
        ["--families", "dsconv,nosuchfamily"],
        ["--measure", "board", "--port", "{tmp}/no-such-port"],
    ],
)
def test_refused_run_leaves_no_folder(capsys, tmp_path: Path, args: list[str]) -> None:
    (tmp_path / "bad.npz").write_bytes(b"not a zip")
    out = tmp_path / "new" / "run"  # neither folder exists yet
    args = [a.format(tmp=tmp_path) for a in args]
    code, _, err = run(capsys, "--board", "esp32s3", "--out", str(out), *args)
    assert code == 2
    _one_line(err)
    assert not (tmp_path / "new").exists()


def test_refused_run_keeps_a_folder_that_existed(capsys, tmp_path: Path) -> None:
    out = tmp_path / "mine"
    out.mkdir()
    (out / "notes.txt").write_text("the user's own file")
    code, _, err = run(
        capsys, "--board", "esp32s3", "--out", str(out), "--dataset", str(tmp_path / "missing.npz")
    )
    assert code == 2 and "Dataset not found" in err
    assert (out / "notes.txt").read_text() == "the user's own file"


@pytest.mark.usefixtures("fake_runner")
def test_failed_resume_keeps_the_earlier_run(capsys, tmp_path: Path) -> None:
    data = tmp_path / "d.npz"
    out = tmp_path / "run"
    code, _, err = run(capsys, "--board", "esp32s3", "--out", str(out), "--max-trials", "2")
    assert code == 0, err
    store = TrialStore.open(out)
    config = store.get_meta("config")
    store.set_meta("config", {**config, "dataset": str(data)})  # a dataset since deleted
    store.close()
    code, _, err = run(capsys, "--out", str(out), "--resume", "--max-trials", "4")
    assert code == 2 and "Dataset not found" in err
    assert len(TrialStore.open(out).trials()) == 2


def test_unusable_out_is_one_line_and_creates_nothing(capsys, tmp_path: Path) -> None:
    (tmp_path / "afile").write_text("x")
    code, _, err = run(capsys, "--board", "esp32s3", "--out", str(tmp_path / "afile" / "run"))
    assert code == 2 and "Cannot create output folder" in err
    _one_line(err)


@pytest.mark.usefixtures("fake_runner")
def test_wall_time_is_summed_over_resumes(capsys, tmp_path: Path) -> None:
    out = tmp_path / "run"
    code, stdout, err = run(
        capsys, "--board", "esp32s3", "--out", str(out), "--max-trials", "2", "--json"
    )
    assert code == 0, err
    first = json.loads(stdout)
    store = TrialStore.open(out)
    assert store.get_meta("wall_s") == pytest.approx(first["wall_s"], abs=0.05)
    assert first["sessions"] == 1 and first["session_wall_s"] == first["wall_s"]
    store.set_meta("wall_s", 1000.0)  # as if the first session had run for 1000 s
    store.close()

    code, stdout, err = run(capsys, "--out", str(out), "--resume", "--max-trials", "4", "--json")
    assert code == 0, err
    second = json.loads(stdout)
    assert "Reloading Tuner" not in err + stdout  # keras-tuner's own chatter stays out
    assert second["sessions"] == 2
    assert 0 < second["session_wall_s"] < 100
    assert second["wall_s"] == pytest.approx(1000.0 + second["session_wall_s"], abs=0.05)
    assert json.loads((out / "pareto.json").read_text())["wall_s"] == second["wall_s"]
    assert "wall time 100" in (out / "report.html").read_text()

    store = TrialStore.open(out)
    store.set_meta("wall_s", 2000.0)
    store.close()
    code, stdout, err = run(capsys, "--out", str(out), "--resume", "--max-trials", "5")
    assert code == 0, err
    assert "in 200" in stdout and "resumes (this one" in stdout


def test_wall_time_is_kept_after_every_trial(tmp_path: Path) -> None:
    store = TrialStore.open(tmp_path)
    store.set_meta("wall_s", 50.0)  # an earlier session
    store.begin_resume()
    store.start_trial("0", {})
    time.sleep(0.02)
    store.finish_trial("0", TrialStatus.OK)
    store.close()  # then killed: nothing else is written
    kept = TrialStore.open(tmp_path).get_meta("wall_s")
    assert 50.0 < kept < 60.0
