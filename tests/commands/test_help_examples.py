"""Every example in every ``--help`` text is run, and does what its help says.

The examples are read from the commands' own epilogs (nothing is copied here),
so a new or changed example is tested without touching this file. How each is
run, since this machine has no boards and no chief:

- ``refused`` (its comment says so): exit 2 in one line, and its ``--out`` is not written;
- no board or chief here (a serial port, a rack, ``bench``, ``calibrate`` on a board, a
  ``worker``): exit 2 in one line, no traceback (a worker waits ``--wait 1``, not 60 s);
- ``search``: the real command with fake candidates (no training), ``--max-trials 2``;
- ``export``: run as written on the folder of a search made first with fake candidates;
- ``make-dataset``: run as written where its tools (espeak-ng, sox) are installed, else
  exit 2 in one line naming the install line, with nothing written;
- ``predict``: run as written on a ``best/`` with a keyword-spotting model and its front end;
  the examples that need real training (``--seed-arch``, ``--strategy supernet``) or
  serve until workers come (``--serve``) are checked up to the start of the search;
- everything else: run as written, exit 0.
"""

from __future__ import annotations

import importlib
import shlex
import wave
from dataclasses import dataclass
from pathlib import Path

import click
import numpy as np
import pytest

from mcunas.commands.cli import COMMANDS, cli, main
from mcunas.frontend.config import FrontendConfig
from mcunas.frontend.graph import frontend_model
from tests.commands.test_search_cli import MODEL, fake_runner_fixture
from tests.repo import REPO

REPO = REPO
fake_runner = pytest.fixture(fake_runner_fixture)
NO_HARDWARE = ("/dev/tty", "--rack", "--measure board", "--power")
STOPS_AT_START = ("--seed-arch", "--strategy supernet", "--serve")


@dataclass(frozen=True)
class Example:
    """One example line of a help text: its words and the comment beside or below it."""

    where: str
    args: tuple[str, ...]
    comment: str

    @property
    def kind(self) -> str:
        text = " ".join(self.args)
        if "refused" in self.comment:
            return "refused"
        if self.args[0] == "make-dataset":  # needs espeak-ng and sox
            return "needs tools"
        if self.args[0] in ("export", "predict"):  # need a finished search's folder
            return "needs a search"
        if "--dry-run" in self.args:  # builds nothing, needs no board
            return "runs"
        if self.args[0] in ("bench", "worker") or any(w in text for w in NO_HARDWARE):
            return "no hardware"
        if self.args[0] == "calibrate" and "--virtual" not in self.args:
            return "no hardware"
        if self.args[0] == "search":
            return "checked" if any(w in text for w in STOPS_AT_START) else "search"
        return "runs"


def _epilogs(name: str, command: click.Command) -> list[tuple[str, str]]:
    found = [(name, command.epilog or "")]
    if isinstance(command, click.Group):
        for sub_name, sub in command.commands.items():
            found += _epilogs(f"{name} {sub_name}", sub)
    return found


def examples() -> list[Example]:
    """Every ``mcunas ...`` line of every command's epilog, in order, once."""
    texts = [("mcunas", cli.epilog or "")]
    for name, (module, _) in COMMANDS.items():
        texts += _epilogs(name, importlib.import_module(module).cli)
    seen: dict[str, Example] = {}
    for where, text in texts:
        lines = [line.strip() for line in text.splitlines()] + [""]
        for i, line in enumerate(lines[:-1]):
            start = line.find("mcunas ")
            if start < 0 or line[:start].strip(" :").lower() not in ("", "example"):
                continue
            command, _, comment = line[start:].partition("#")
            if lines[i + 1].startswith("("):
                comment += lines[i + 1]
            args = tuple(shlex.split(command))[1:]
            if not args or args[0] not in COMMANDS:  # prose that wraps to "mcunas ..."
                continue
            seen.setdefault(" ".join(args), Example(where, args, comment.strip()))
    return list(seen.values())


EXAMPLES = examples()


def _by_kind(kind: str) -> list[Example]:
    return [e for e in EXAMPLES if e.kind == kind]


def _ids(examples: list[Example]) -> list[str]:
    return [" ".join(e.args)[:60] for e in examples]


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A folder holding the files the examples name (model.tflite, frontend.tflite, data/, ...)."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "model.tflite").write_bytes(MODEL.read_bytes())
    (tmp_path / "frontend.tflite").write_bytes(frontend_model(FrontendConfig()))
    (tmp_path / "mcunas").symlink_to(REPO / "mcunas")  # mcunas/calibration/measurements.csv
    (tmp_path / "models").symlink_to(REPO / "mcunas" / "calibration" / "models")
    measurements = REPO / "mcunas" / "calibration" / "measurements.csv"
    (tmp_path / "my_boards.csv").write_text(measurements.read_text())  # the user's own rows
    (tmp_path / "my_board.toml").write_text(
        'name = "my_board"\ncore = "cortex-m4f"\nclock_hz = 80_000_000\n'
        'sram_bytes = 262_144\nflash_bytes = 1_048_576\nkernels = "cmsis-nn"\n'
    )
    data = tmp_path / "data"
    rng = np.random.default_rng(0)
    x = rng.random((60, 16, 1, 3), dtype=np.float32)
    data.mkdir()
    np.savez(data / "gestures.npz", x_train=x, y_train=np.arange(60) % 3)
    for label in ("yes", "no"):
        (data / "kws" / label).mkdir(parents=True)
        for i in range(6):
            with wave.open(str(data / "kws" / label / f"{i}.wav"), "wb") as w:
                w.setnchannels(1)
                w.setsampwidth(2)
                w.setframerate(16000)
                w.writeframes((rng.normal(0, 3000, 16000)).astype(np.int16).tobytes())
    return tmp_path


def _run(capsys: pytest.CaptureFixture[str], args: tuple[str, ...]) -> tuple[int, str]:
    with pytest.raises(SystemExit) as exc:
        main(list(args))
    err = capsys.readouterr().err
    assert "Traceback" not in err, err
    return exc.value.code, err


def _one_error_line(err: str) -> bool:
    return len([line for line in err.splitlines() if line.startswith("Error")]) == 1


def test_the_examples_are_found() -> None:
    kinds = {e.kind for e in EXAMPLES}
    assert len(EXAMPLES) >= 40
    assert kinds == {
        "refused", "no hardware", "search", "checked", "runs", "needs a search", "needs tools"
    }  # fmt: skip
    assert any("vww-mobilenet" in e.args and e.kind == "refused" for e in EXAMPLES)


@pytest.mark.slow
@pytest.mark.parametrize("example", _by_kind("refused"), ids=_ids(_by_kind("refused")))
def test_refused_examples_are_refused(capsys, workdir, example: Example) -> None:
    code, err = _run(capsys, example.args)
    assert code == 2 and _one_error_line(err), err
    out = example.args[example.args.index("--out") + 1] if "--out" in example.args else None
    assert out is None or not (workdir / out).exists()


@pytest.mark.parametrize("example", _by_kind("no hardware"), ids=_ids(_by_kind("no hardware")))
def test_hardware_examples_end_in_one_line_without_hardware(capsys, workdir, example) -> None:
    args = (*example.args, "--wait", "1") if example.args[0] == "worker" else example.args
    code, err = _run(capsys, args)
    assert code == 2 and _one_error_line(err), err


@pytest.mark.slow
@pytest.mark.parametrize("example", _by_kind("runs"), ids=_ids(_by_kind("runs")))
def test_examples_run(capsys, workdir, example: Example) -> None:
    if example.args[0] == "latency-model" and example.args[1] != "import":  # a store to work on
        assert (
            _run(capsys, ("latency-model", "import", "mcunas/calibration/measurements.csv"))[0] == 0
        )
        assert (
            _run(capsys, ("latency-model", "import", "my_boards.csv", "--store", "lab.sqlite"))[0]
            == 0
        )
    code, err = _run(capsys, example.args)
    assert code == 0, err


@pytest.mark.slow
@pytest.mark.parametrize("example", _by_kind("needs tools"), ids=_ids(_by_kind("needs tools")))
def test_dataset_examples_make_the_dataset_or_name_the_tools(capsys, workdir, example) -> None:
    import shutil

    out = workdir / example.args[2]
    code, err = _run(capsys, example.args)
    if shutil.which("espeak-ng") and shutil.which("sox"):
        assert code == 0, err
        assert (out / "manifest.json").is_file() and any((out / "test").rglob("*.wav"))
    else:
        assert code == 2 and _one_error_line(err), err
        assert "apt-get install espeak-ng sox" in err and not out.exists()


def test_search_examples_run_in_order(capsys, workdir, fake_runner, monkeypatch) -> None:
    """One folder for all: ``--resume`` and ``--overwrite`` act on the earlier examples' runs."""
    for i, example in enumerate(_by_kind("search")):
        args = list(example.args)
        if "--out" not in args:  # the default runs/<board>-<time> is per second: own folder
            (workdir / f"default{i}").mkdir()
            (workdir / f"default{i}" / "data").symlink_to(workdir / "data")
            monkeypatch.chdir(workdir / f"default{i}")
        else:
            monkeypatch.chdir(workdir)
        if "--max-trials" in args:
            args[args.index("--max-trials") + 1] = "2"
        else:
            args += ["--max-trials", "2"]
        code, err = _run(capsys, tuple(args))
        assert code == 0, (example.args, err)


def test_examples_that_train_or_serve_pass_every_check(capsys, workdir, monkeypatch) -> None:
    from mcunas.search import api

    started = []

    def stop_at_start(config, *planned, **kwargs):  # everything before this point ran for real
        started.append(config)
        raise SystemExit(0)

    monkeypatch.setattr(api, "run_planned", stop_at_start)
    for example in _by_kind("checked"):
        code, err = _run(capsys, example.args)
        assert code == 0 and not err.strip(), (example.args, err)
    assert len(started) == len(_by_kind("checked")) >= 3


def test_export_examples_run_on_a_finished_search(capsys, workdir, fake_runner) -> None:
    """The search folder the examples name is made first (fake candidates), then exported."""
    exports = [e for e in _by_kind("needs a search") if e.args[0] == "export"]
    folder = exports[0].args[1].split("/")[0]
    args = ("search", "--board", "esp32s3", "--out", folder, "--max-trials", "2", "--no-rescore")
    assert _run(capsys, args)[0] == 0
    for example in exports:
        code, err = _run(capsys, example.args)
        assert code == 0, (example.args, err)
        out = example.args[example.args.index("--out") + 1] if "--out" in example.args else None
        assert out is None or (workdir / out / "platformio.ini").is_file()


def test_predict_examples_run_on_a_best_folder(capsys, workdir) -> None:
    """The examples' best/ holds a KWS model and a front end; their clips are tones."""
    from tests.commands.test_predict_command import kws_best_folder
    from tests.frontend.test_frontend_features import make_tones

    examples = [e for e in _by_kind("needs a search") if e.args[0] == "predict"]
    best = Path(examples[0].args[1])
    kws_best_folder(workdir / best.parent)
    make_tones(workdir / "clips", per_class=2)
    for i, wav in enumerate(sorted((workdir / "clips").rglob("*.wav"))[:2]):
        (workdir / f"clip{i + 1}.wav").write_bytes(wav.read_bytes())
    x = np.random.default_rng(0).normal(0, 1, (4, 49, 10)).astype(np.float32)
    np.savez(workdir / "test.npz", x_test=x, y_test=np.arange(4) % 12)
    for example in examples:
        code, err = _run(capsys, example.args)
        assert code == 0, (example.args, err)
