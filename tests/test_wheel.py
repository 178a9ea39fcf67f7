"""The built wheel works on its own: installed into a fresh virtual environment outside
the checkout, it lists every board, profiles a shipped model and writes complete
firmware and deployment projects.

The fresh environment borrows this environment's dependencies through a ``.pth``
file (a path line adds the folder to ``sys.path`` without running the editable
install's hook there), and the wheel is installed with ``--no-deps``: seconds, not a
TensorFlow download.
"""

from __future__ import annotations

import json
import os
import shutil
import site
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BOARDS = sorted(p.stem for p in (ROOT / "boards").glob("*.toml"))
FIRMWARE = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "firmware").rglob("*") if p.is_file())


def _run(cmd: list[str], cwd: Path, env: dict[str, str], timeout: float = 300) -> str:
    proc = subprocess.run(
        cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )
    assert proc.returncode == 0, f"{cmd}\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout


# Not copied into the build's source tree: environments, caches, outputs.
_NOT_SOURCES = shutil.ignore_patterns(
    ".git", ".venv*", "build", "dist", "*.egg-info", "__pycache__", ".*_cache", "runs", "mcunas-out"
)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """``python -m build`` (sdist, then the wheel from the sdist), as a user builds it.

    It builds from a copy of the checkout (links kept), so parallel test processes
    and the checkout's own files never meet the build's egg-info and temporary files.
    """
    src = tmp_path_factory.mktemp("src") / "mcunas"
    shutil.copytree(ROOT, src, symlinks=True, ignore=_NOT_SOURCES)
    out = tmp_path_factory.mktemp("dist")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    _run(
        [sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out), str(src)],
        cwd=out,
        env=env,
        timeout=600,
    )
    (found,) = out.glob("mcunas-*.whl")
    return found


@pytest.fixture(scope="module")
def installed(wheel: Path, tmp_path_factory) -> dict:
    """A fresh venv outside the checkout with only the wheel installed in it."""
    base = tmp_path_factory.mktemp("fresh")
    venv = base / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    ours = {sysconfig.get_paths()["purelib"], *site.getsitepackages()}
    Path(purelib, "_test_dependencies.pth").write_text("\n".join(sorted(ours)) + "\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "MCUNAS_"))}
    env.update(MCUNAS_HOME=str(base / "home"), PLATFORMIO_CORE_DIR=str(base / "pio-core"))
    work = base / "work"
    work.mkdir()
    pip = [sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps"]
    _run([*pip, "--no-index", "--quiet", str(wheel)], cwd=work, env=env)
    return {"venv": venv, "python": python, "env": env, "work": work}


def test_wheel_ships_boards_firmware_and_the_platformio_template(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    for board in BOARDS:
        assert f"mcunas/bundled/boards/{board}.toml" in names
    for path in FIRMWARE:
        if not Path(path).name.startswith("."):
            assert f"mcunas/bundled/{path}" in names, path
    assert "mcunas/bundled/platformio.ini" in names
    assert "mcunas/templates/model_ops.h.in" in names
    assert "mcunas/distributed/chief.py" in names  # a folder without __init__.py


def test_installed_wheel_runs_outside_the_checkout(installed: dict) -> None:
    python, env, work = installed["python"], installed["env"], installed["work"]
    where = _run(
        [
            str(python),
            "-c",
            "import mcunas; from mcunas.paths import package_path; "
            "print(mcunas.__file__); print(package_path('calibration', 'models'))",
        ],
        cwd=work,
        env=env,
    ).split()
    venv = str(installed["venv"])
    assert all(p.startswith(venv) for p in where), where
    mcunas = str(installed["venv"] / "bin" / "mcunas")
    listing = _run([mcunas, "boards"], cwd=work, env=env)
    for board in BOARDS:
        assert board in listing, board
    model = Path(where[1]) / "ad01_int8.tflite"
    profile = json.loads(
        _run([mcunas, "profile", str(model), "--board", "nucleo_f746zg", "--json"], work, env)
    )
    assert profile["fits"] is True and profile["arena_bytes"] > 0


@pytest.mark.parametrize("board", ["esp32s3", "nucleo_f746zg"])
def test_installed_wheel_writes_a_complete_firmware_project(installed: dict, board) -> None:
    env, work = installed["env"], installed["work"]
    fw = work / f"fw-{board}"
    model = ROOT / "mcunas" / "calibration" / "models" / "ad01_int8.tflite"
    mcunas = str(installed["venv"] / "bin" / "mcunas")
    out = _run(
        [mcunas, "bench", str(model), "--board", board, "--dry-run", "--project-dir", str(fw)],
        work,
        env,
    )
    assert "not built" in out and f"pio run -e {board}" in out
    for path in FIRMWARE:
        if not Path(path).name.startswith(".") and path != "firmware/README.md":
            assert (fw / path).is_file(), path
    for name in ("model_data.cc", "model_data.h", "model_ops.h", "mcunas_config.h"):
        assert (fw / "firmware" / "src" / "generated" / name).is_file(), name
    assert (fw / "CMakeLists.txt").is_file() == board.startswith("esp32")
    config = _pio_config(fw, env, work)
    assert config[f"env:{board}"]["board"]


def _pio_config(project: Path, env: dict, cwd: Path) -> dict[str, dict]:
    pio = Path(sys.executable).with_name("pio")
    pio_cmd = str(pio) if pio.exists() else shutil.which("pio") or "pio"
    text = _run([pio_cmd, "project", "config", "-d", str(project), "--json-output"], cwd, env)
    return {section: dict(items) for section, items in json.loads(text)}


def test_installed_wheel_exports_a_deployable_project(installed: dict, tmp_path: Path) -> None:
    from tests.deploy.test_deploy import search_out

    out = search_out(tmp_path, "esp32s3")
    shutil.rmtree(out / "best" / "project")
    mcunas = str(installed["venv"] / "bin" / "mcunas")
    text = _run([mcunas, "export", str(out), "--json"], installed["work"], installed["env"])
    files = json.loads(text)["files"]
    assert {"platformio.ini", "main/main.cpp", "main/model_ops.h", "sdkconfig.defaults"} <= set(
        files
    )
    assert (out / "best" / "project" / "main" / "idf_component.yml").is_file()


def test_wheel_carries_no_bench_code(wheel: Path) -> None:
    """The bench package (bench/) stays in the checkout: only the benchmarks call it."""
    names = zipfile.ZipFile(wheel).namelist()
    assert not [n for n in names if n.startswith(("bench/", "scripts/", "tests/"))]
    assert "mcunas/cost/core_fit.py" not in names
