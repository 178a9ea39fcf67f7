"""scripts/project_host_check.py: which TFLM sources it compiles, and its refusal without them.

The check itself needs a TFLM source tree with the signal library (not in CI);
docs/benchmarks/audio.md gives its result on esp-tflite-micro v1.3.4.
"""

from __future__ import annotations

import pytest
from script_helpers import loaded_script


@pytest.fixture(scope="module")
def check():
    yield from loaded_script("project_host_check")


def _tree(root, names):
    for name in names:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text("")


def test_sources_are_the_core_the_models_kernels_and_the_signal_library(check, tmp_path):
    k = "tensorflow/lite/micro/kernels/"
    files = [f"{k}{n}.cc" for n in ("conv", "conv_common", "softmax", "add", "conv_test")]
    files += ["signal/micro/kernels/window.cc", "signal/src/log.cc", "signal/src/log_test.cc"]
    _tree(tmp_path, [*files, "tensorflow/lite/micro/micro_interpreter.cc"])
    names = {p.relative_to(tmp_path).as_posix() for p in check.sources(tmp_path, ["CONV_2D"])}
    assert {f"{k}conv.cc", f"{k}conv_common.cc", "signal/micro/kernels/window.cc"} <= names
    assert {"signal/src/log.cc", "tensorflow/lite/micro/micro_interpreter.cc"} <= names
    assert f"{k}softmax.cc" not in names and f"{k}add.cc" not in names  # ops the model lacks
    assert not any(n.endswith("_test.cc") for n in names)


def test_refuses_a_tree_without_the_signal_library(check, tmp_path, capsys):
    from test_frontend_bench import _best

    best = _best(tmp_path / "run")
    args = ["--tflm", str(tmp_path), "--best", str(best), "--clips", str(tmp_path)]
    assert check.main(args) == 2
    assert "TFLM tree with signal/" in capsys.readouterr().out
