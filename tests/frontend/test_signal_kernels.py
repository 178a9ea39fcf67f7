"""mcunas's signal kernels give the host TFLite Micro runtime's features bit for bit.

Every front end of the searched space runs over the spoken-word dataset's clips
(>= 2,000 frames each) and the edge cases of ``signal_cases``: once with the
kernels built by the host ``g++``, once built by ``arm-none-eabi-g++`` for a
Cortex-M4F and run under QEMU (mps2-an386; skipped with the install line where
the tools are missing). Both builds are cached by source hash for the session.
"""

from __future__ import annotations

import re
import shutil

import numpy as np
import pytest

from mcunas.frontend.kernels.build import arm_harness, arm_tools_missing, host_harness, run_harness
from mcunas.frontend.kernels.counts import OP_NAMES, load_counts
from mcunas.frontend.kernels.graph import harness_input
from mcunas.paths import BUNDLED, package_path
from tests.frontend.signal_cases import edge_clips, frames_of, real_clips, reference, variants

HAVE_AUDIO_TOOLS = bool(shutil.which("espeak-ng") and shutil.which("sox"))
MIN_REAL_FRAMES = 2000


@pytest.fixture(scope="module")
def cases(tmp_path_factory):
    """The harness's input for all variants, the runtime's features, real frames per variant."""
    if not HAVE_AUDIO_TOOLS:
        pytest.skip("needs espeak-ng and sox: apt-get install espeak-ng sox")
    real = real_clips(tmp_path_factory.mktemp("signal") / "kws")
    speech = max(real[:-3], key=lambda c: int(np.abs(c.astype(np.int32)).max()))
    clips = real + edge_clips(speech)
    graphs, expected, real_frames = [], [], []
    for cfg in variants():
        model, features = reference(cfg, clips)
        graphs.append((model, [frames_of(cfg, c) for c in clips]))
        expected.append(np.concatenate([f.reshape(-1) for f in features]))
        real_frames.append(sum(len(f) for f in features[: len(real)]))
    return harness_input(graphs), expected, real_frames


def _compare(got: np.ndarray, expected: list[np.ndarray]) -> None:
    want = np.concatenate(expected)
    assert got.shape == want.shape
    mismatch = np.nonzero(got != want)[0]
    assert len(mismatch) == 0, f"{len(mismatch)} features differ, first at {mismatch[:5]}"
    assert np.abs(got.astype(np.int64) - want).max() == 0


def test_the_cases_are_real_and_vary(cases):
    _, expected, real_frames = cases
    assert len(expected) == 18
    assert min(real_frames) >= MIN_REAL_FRAMES
    for features in expected:  # speech and noise make many distinct feature values
        assert len(np.unique(features)) > 100


def test_host_build_matches_the_runtime_bit_for_bit(cases, tmp_path_factory):
    blob, expected, _ = cases
    exe = host_harness(tmp_path_factory.getbasetemp() / "signal_build")
    got, report = run_harness(exe, blob, tmp_path_factory.mktemp("host_run"))
    frames = [len(e) // cfg.mel_bands for e, cfg in zip(expected, variants(), strict=True)]
    assert report.frames == sum(frames)
    _compare(got, expected)


def test_cortex_m4f_build_under_qemu_matches_bit_for_bit(cases, tmp_path_factory):
    missing = arm_tools_missing()
    if missing:
        pytest.skip(missing)
    blob, expected, _ = cases
    elf = arm_harness(tmp_path_factory.getbasetemp() / "signal_build")
    got, report = run_harness(elf, blob, tmp_path_factory.mktemp("qemu_run"))
    _compare(got, expected)
    # -icount shift=0: one instruction a nanosecond, SysTick at 25 MHz: 40 a tick
    assert report.instructions_per_tick == pytest.approx(40.0, rel=0.01)
    assert len(report.ticks) == 18 and all(sum(t) > 0 for t in report.ticks)
    # the stored counts the cost model reads are this code's (scripts/signal_counts.py)
    stored = {(r.frame_ms, r.hop_ms, r.bands, r.pcan, r.op): r.instructions for r in load_counts()}
    for cfg, want, kinds, ticks in zip(variants(), expected, report.ops, report.ticks, strict=True):
        frames = len(want) // cfg.mel_bands
        for kind, t in zip(kinds, ticks, strict=True):
            key = (cfg.frame_ms, cfg.hop_ms, cfg.mel_bands, cfg.pcan, OP_NAMES[kind])
            assert t * 40.0 / frames == pytest.approx(stored[key], rel=0.25), key


def test_log_table_is_the_formula_it_states():
    text = (package_path(BUNDLED, "firmware", "src", "signal") / "signal_kernels.cc").read_text()
    body = re.search(r"kLog2Correction\[130\] = \{([^}]*)\}", text)
    assert body is not None
    table = [int(v) for v in body.group(1).replace("\n", " ").split(",") if v.strip()]
    k = np.arange(129)
    formula = np.round((np.log2(1 + k / 128) - k / 128) * 65536).astype(int)
    assert table == [*formula.tolist(), 0]
