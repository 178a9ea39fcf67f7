"""`mcunas search --frontend tflm`: WAV features from the graph, best/ exports frontend.tflite."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mcunas.frontend.config import FrontendConfig
from mcunas.frontend.graph import config_of_model, frontend_model
from tests.commands.test_search_cli import fake_runner_fixture, run
from tests.frontend.test_frontend_features import make_tones

fake_runner = pytest.fixture(fake_runner_fixture)


def test_search_with_the_graph_front_end_exports_it(capsys, tmp_path: Path, fake_runner) -> None:
    make_tones(tmp_path / "data", per_class=6)
    out = tmp_path / "run"
    args = ["--board", "esp32s3", "--out", str(out), "--dataset", str(tmp_path / "data")]
    code, stdout, err = run(
        capsys, *args, "--frontend", "tflm", "--max-trials", "2", "--strategy", "random", "--json"
    )
    assert code == 0, err
    best = out / "best"
    info = json.loads((best / "best.json").read_text())
    assert info["frontend"] == FrontendConfig().to_dict()
    assert "front-end graph" in info["preprocessing"]
    assert info["files"][:5] == [
        "frontend.tflite",
        "frontend_data.cc",
        "frontend_data.h",
        "frontend_ops.h",
        "README.md",
    ]
    assert all((best / name).exists() for name in info["files"])
    assert "McunasRegisterFrontendOps(front_ops)" in (best / "README.md").read_text()
    front = (best / "frontend.tflite").read_bytes()
    assert front == frontend_model(FrontendConfig()) and config_of_model(front) is not None
    assert list((out / "cache").glob("frontend-features-*.npz"))
    assert json.loads(stdout)["config"]["frontend"] == "tflm"
    code, _, err = run(capsys, "--out", str(out), "--resume", "--frontend", "numpy")
    assert code == 2 and "frontend" in err  # the features are part of the search's identity
