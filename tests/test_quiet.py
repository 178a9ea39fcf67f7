"""The terminal holds mcunas's own lines only: native log lines and dependency warnings dropped."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from mcunas.quiet import is_native_log

# Real lines, as TensorFlow and gRPC print them.
NATIVE = [
    "E0000 00:00:1795666189.015950   17479 node_def_util.cc:682] NodeDef mentions attribute "
    "use_unbounded_threadpool which is not in the op definition: Op<name=MapDataset; ...>",
    "2026-11-26 04:05:00.123456: I tensorflow/core/util/port.cc:153] oneDNN custom operations",
    "I0000 00:00:1795666189.015950   17479 cpu_feature_guard.cc:210] This TensorFlow binary",
    "W1126 04:05:00.123456   123 chttp2_transport.cc:1234] ping timeout",
    "WARNING: All log messages before absl::InitializeLog() is called are written to STDERR",
]
# Lines of mcunas and of Python itself, which must pass.
OURS = [
    "[ 3/15] trial 02 ok         int8  96.4%     3.21 ms~    41.2 KB SRAM~ | best 96.4% | 0:45",
    "Data: 1438 training, 359 validation samples of (8, 8, 1) (image), 10 classes.",
    "Error: unknown board 'nope'. Run `mcunas boards` to list them.",
    'Traceback (most recent call last):\n  File "x.py", line 1, in <module>',
    "F0000 00:00:1795666189.015950   17479 check.cc:12] Check failed: the reason for an abort",
]

# A line of mcunas's own during a search: a note ("Data: ...") or a trial's progress line.
MCUNAS_LINE = re.compile(
    r"^(?:Data: .+|Seed: .+|\[\s*\d+/\d+\] trial \S+ .+|Refit(?:ting|ted) .+)$"
)


@pytest.mark.parametrize("line", NATIVE)
def test_native_log_lines_are_recognised(line: str) -> None:
    assert is_native_log(line)


@pytest.mark.parametrize("line", OURS)
def test_other_lines_are_not(line: str) -> None:
    assert not is_native_log(line)


_NOISY = textwrap.dedent(
    """
    import os, subprocess, sys, warnings
    from mcunas.quiet import quiet_terminal

    child = (
        "import os, sys; os.write(2, b'E0000 00:00:17.1   9 x.cc:1] child native\\\\n'); "
        "sys.stderr.write('child line\\\\n')"
    )
    with quiet_terminal(enabled=sys.argv[1] == "quiet"):
        os.write(2, b"I0000 00:00:1795666189.01   17479 port.cc:153] native, ")
        os.write(2, b"in two writes\\n")
        sys.stderr.write("ours, partial ")
        sys.stderr.flush()
        sys.stderr.write("then done\\n")
        warnings.warn("a dependency's deprecation", DeprecationWarning, stacklevel=1)
        warnings.warn("a dependency's warning", UserWarning, stacklevel=1)
        subprocess.run([sys.executable, "-c", child], check=True)
        subprocess.run([sys.executable, "-c", "import warnings; warnings.warn('child warns')"])
    sys.stderr.write("after the block\\n")
    """
)


def _noisy(mode: str) -> str:
    proc = subprocess.run(
        [sys.executable, "-c", _NOISY, mode], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stderr


def test_quiet_terminal_keeps_only_our_lines_from_this_process_and_its_children() -> None:
    assert _noisy("quiet") == "ours, partial then done\nchild line\nafter the block\n"


def test_without_it_everything_shows() -> None:
    err = _noisy("debug")
    for text in ("native, in two writes", "child native", "a dependency's warning", "child warns"):
        assert text in err


@pytest.mark.slow
def test_a_search_prints_only_mcunas_lines_on_stderr(tmp_path: Path) -> None:
    # A fresh install: none of the variables scripts/_venv.sh or a user may set.
    unset = ("TF_CPP_MIN_LOG_LEVEL", "PYTHONWARNINGS", "MCUNAS_DEBUG")
    env = {k: v for k, v in os.environ.items() if k not in unset}
    env["MCUNAS_HOME"] = str(tmp_path / "home")
    # Two epochs: TensorFlow's tf.data logs its use_unbounded_threadpool line from the second on.
    # No re-scoring of finalists: five more trainings would only repeat the same lines.
    cmd = [sys.executable, "-m", "mcunas", "search", "--board", "esp32s3", "--max-trials", "1"]
    cmd += ["--epochs", "2", "--no-rescore", "--out", str(tmp_path / "run")]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert any(ln.startswith("[1/1] trial") for ln in lines), proc.stderr
    assert [ln for ln in lines if not MCUNAS_LINE.match(ln)] == []
