"""The audio front end as a TFLM graph of signal ops: it runs, it is bit-exact, it is log-mel."""

from __future__ import annotations

import numpy as np
import pytest

from mcunas.data.audio import log_mel
from mcunas.errors import ModelError, UserError
from mcunas.frontend.config import FrontendConfig, filter_bank_tables, hann_weights, pcan_lut
from mcunas.frontend.graph import SIGNAL_OPS, config_of_model, flexbuffer, frontend_model
from mcunas.frontend.host import FrontendRunner, scaled, to_int16
from mcunas.tflite.reader import read_graph

RATE = 16000


def _clips(n: int, seed: int = 0) -> list[np.ndarray]:
    """Chirps in noise, amplitudes over 45 dB, switched on and off: 49 frames each."""
    rng = np.random.default_rng(seed)
    t = np.arange(RATE) / RATE
    out = []
    for _ in range(n):
        f0, f1 = rng.uniform(100, 6000, 2)
        amp = 10 ** rng.uniform(-2.5, -0.3)
        x = amp * np.sin(2 * np.pi * (f0 * t + (f1 - f0) * t * t / 2))
        x += rng.normal(0, amp * 10 ** rng.uniform(-2, -0.5), RATE)
        x *= np.clip(np.sin(np.pi * t * rng.uniform(1, 4)), 0, 1) + 0.05
        out.append(np.clip(x, -1, 1))
    return out


def _float_reference(x16: np.ndarray, cfg: FrontendConfig) -> np.ndarray:
    """The same chain in float64 numpy (FFT, the same filter bank tables): 0.5 ln(mel power)."""
    tab = filter_bank_tables(cfg)
    n, hop = cfg.frame_samples, cfg.hop_samples
    window = hann_weights(n, cfg.window_bits) / float(1 << cfg.window_bits)
    w, uw = tab.weights / 4096.0, tab.unweights / 4096.0
    rows = []
    for i in range(cfg.frames(len(x16))):
        power = np.abs(np.fft.rfft(x16[i * hop : i * hop + n] * window, cfg.fft_length)) ** 2
        acc, carry = np.zeros(cfg.mel_bands + 1), 0.0
        for c in range(cfg.mel_bands + 1):
            s, ws = tab.channel_frequency_starts[c], tab.channel_weight_starts[c]
            width = tab.channel_widths[c]
            bins = power[s : s + width]
            acc[c], carry = (
                carry + (w[ws : ws + width] * bins).sum(),
                (uw[ws : ws + width] * bins).sum(),
            )
        rows.append(0.5 * np.log(acc[1:] + 1e-30))
    return np.array(rows)


def test_graph_is_signal_ops_and_says_its_config() -> None:
    cfg = FrontendConfig(mel_bands=32, pcan=True)
    model = frontend_model(cfg)
    ops = [op.name.removeprefix("CUSTOM:") for op in read_graph(model).ops]
    assert ops == list(SIGNAL_OPS)
    assert config_of_model(model) == cfg
    assert config_of_model(frontend_model(FrontendConfig()))
    assert "CUSTOM:SignalPCAN" not in [
        op.name for op in read_graph(frontend_model(FrontendConfig())).ops
    ]


def test_flexbuffer_options_are_sorted_maps() -> None:
    from flatbuffers import flexbuffers

    data = flexbuffers.Loads(flexbuffer({"start_index": 4, "end_index": 9, "clamping": False}))
    assert list(data) == ["clamping", "end_index", "start_index"]
    assert data["end_index"] == 9 and data["clamping"] is False


@pytest.mark.parametrize("pcan", [False, True])
def test_features_are_bit_exact_between_runs_and_paths(pcan: bool) -> None:
    """2,940 frames: the same bytes in two interpreters, whole clips against a board's stream."""
    cfg = FrontendConfig(pcan=pcan)
    model = frontend_model(cfg)
    first, second = FrontendRunner(model), FrontendRunner(model)
    clips = [to_int16(c) for c in _clips(60)]
    whole = [first.clip(c) for c in clips]
    n, hop = cfg.frame_samples, cfg.hop_samples
    for clip, feats in zip(clips, whole, strict=True):
        second.reset()  # a board: the last frame in a buffer, one invoke per hop of audio
        buffer, streamed = clip[: n - hop], []
        for start in range(n - hop, len(clip) - hop + 1, hop):
            buffer = np.concatenate([buffer, clip[start : start + hop]])[-n:]
            streamed.append(second.frame(buffer))
        assert np.array_equal(np.stack(streamed), feats)
    assert sum(len(f) for f in whole) == 2940
    again = [FrontendRunner(model).clip(c) for c in clips[:5]]
    assert all(np.array_equal(a, b) for a, b in zip(again, whole, strict=False))


def test_features_match_a_float_computation() -> None:
    """Against float64 numpy over the same tables: 0.06 nats mean error (0.5 dB of power)."""
    cfg = FrontendConfig()
    runner = FrontendRunner(frontend_model(cfg))
    clips = [to_int16(c) for c in _clips(60, seed=1)]
    graph = np.concatenate([scaled(runner.clip(c), cfg) for c in clips])
    ref = np.concatenate([_float_reference(c, cfg) for c in clips])
    keep = graph > 0  # the log's floor: ln(x) for x <= 1 is 0
    assert keep.mean() > 0.99
    diff = graph[keep] - ref[keep]
    assert abs(np.median(diff)) < 0.05  # no offset: the fixed-point scalings cancel
    assert np.abs(diff).mean() < 0.1
    assert np.corrcoef(graph[keep], ref[keep])[0, 1] > 0.995


def test_features_match_todays_numpy_log_mel() -> None:
    """Over today's band (20 Hz to Nyquist): correlation 0.995, median error 0.2 dB."""
    cfg = FrontendConfig(lower_hz=20.0, upper_hz=7999.0)
    runner = FrontendRunner(frontend_model(cfg))
    clips = _clips(30, seed=2)
    graph = np.concatenate([2 * scaled(runner.clip(to_int16(c)), cfg) for c in clips])
    numpy_mel = np.concatenate([log_mel(c, RATE) for c in clips])
    keep = graph > 0
    diff = graph[keep] - numpy_mel[keep]
    db = 10 / np.log(10) * np.abs(diff - np.median(diff))  # one offset: PCM scale 2 ln 32768
    assert np.corrcoef(graph[keep], numpy_mel[keep])[0, 1] > 0.99
    assert np.median(db) < 0.5 and db.mean() < 2.0


def test_short_clip_is_padded_to_one_frame() -> None:
    runner = FrontendRunner(frontend_model(FrontendConfig()))
    assert runner.clip(np.ones(100, np.int16) * 1000).shape == (1, 40)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"upper_hz": 8000.0},
        {"lower_hz": 900.0, "upper_hz": 800.0},
        {"hop_ms": 40.0},
        {"frame_ms": 0.5},
        {"mel_bands": 0},
        {"sample_rate": 10},
    ],
)
def test_bad_parameters_are_one_line_errors(kwargs: dict[str, float]) -> None:
    with pytest.raises(UserError, match="front end"):
        FrontendConfig(**kwargs)


def test_from_dict_refuses_unknown_keys_and_a_runner_refuses_other_models() -> None:
    with pytest.raises(UserError, match="unknown"):
        FrontendConfig.from_dict({"mels": 40})
    from mcunas.tflite.writer import one_op_model

    with pytest.raises(ModelError, match="not an mcunas audio front end"):
        FrontendRunner(one_op_model("RELU"))


def test_pcan_table_has_the_librarys_size_and_falls() -> None:
    lut = pcan_lut(correction_bits=3)
    assert lut.shape == (125,) and lut.dtype == np.int16
    y0 = lut[[0, 1, *range(2, 125, 4)]]  # the gain at 0, 1 and each power of two
    assert np.all(np.diff(y0.astype(int)) <= 0) and y0[0] > y0[20] > 0


def test_c_sources_register_the_signal_ops_under_their_own_names() -> None:
    from mcunas.frontend.csource import frontend_sources
    from mcunas.tflite.csource import model_crc32

    model = frontend_model(FrontendConfig(pcan=True))
    texts = frontend_sources(model)
    assert sorted(texts) == ["frontend_data.cc", "frontend_data.h", "frontend_ops.h"]
    ops = texts["frontend_ops.h"]
    assert "MCUNAS_FRONTEND_OP_COUNT 9" in ops and "resolver.AddPCAN()" in ops
    assert "McunasRegisterFrontendOps" in ops and "McunasRegisterOps(" not in ops
    assert f'MCUNAS_FRONTEND_CRC32 "{model_crc32(model)}"' in texts["frontend_data.h"]
    assert (
        "g_frontend_data[]" in texts["frontend_data.cc"]
        and "g_model" not in texts["frontend_data.cc"]
    )
