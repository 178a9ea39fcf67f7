"""The audio front end's parameters and the constant tables its graph holds.

:class:`FrontendConfig` names what a user chooses (sample rate, frame and hop,
mel bands and their frequency range, noise reduction with PCAN gain control,
output scaling); the functions below compute the int16 tables TFLite Micro's
signal ops read (window weights, mel filter bank, PCAN gain table). They follow
the signal library's own Python helpers (``tflite-micro``,
``python/tflite_micro/signal/ops/window_op.py``, ``filter_bank_ops.py`` and
``signal/utils/wide_dynamic_func_lut_wrapper.cc``, Apache-2.0), ported to
numpy so no TensorFlow is needed; the defaults are the micro_speech example's
``FeatureParams``.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, replace
from typing import Any

import numpy as np

from mcunas.errors import UserError

__all__ = ["FilterBankTables", "FrontendConfig", "filter_bank_tables", "hann_weights", "pcan_lut"]

FILTER_BANK_WEIGHT_BITS = 12
PCAN_SNR_BITS = 12
PCAN_SNR_SHIFT = 6  # what the signal library's pcan() passes, whatever it computes first
LUT_BITS = 32


@dataclass(frozen=True)
class FrontendConfig:
    """One audio front end: int16 samples of one frame in, ``mel_bands`` int16 features out.

    Attributes:
        sample_rate: samples per second of the input.
        frame_ms: window length (truncated to whole samples, as micro_speech does).
        hop_ms: step between frames.
        mel_bands: filter bank channels (the feature count per frame).
        lower_hz, upper_hz: the filter bank's frequency range (the upper limit
            must stay below the Nyquist frequency).
        pcan: noise estimate by spectral subtraction and per-channel gain
            normalisation (PCAN) before the log, as micro_speech; off: the log of
            the filter bank's square-rooted energies.
        output_bits: the log's output scale is 2**output_bits (features are
            ln(x) * 2**output_bits as int16).
        window_bits: fixed-point bits of the Hann window weights.
    """

    sample_rate: int = 16000
    frame_ms: float = 30.0
    hop_ms: float = 20.0
    mel_bands: int = 40
    lower_hz: float = 125.0
    upper_hz: float = 7500.0
    pcan: bool = False
    output_bits: int = 6
    window_bits: int = 12

    def __post_init__(self) -> None:
        self.check()

    def check(self) -> None:
        """Refuse parameters the signal ops cannot run.

        Raises:
            UserError: one line naming the parameter.
        """
        if not 1000 <= self.sample_rate <= 384000:
            raise UserError(f"front end: sample rate {self.sample_rate} Hz is out of range")
        if self.frame_samples < 16 or self.fft_length > 4096:
            raise UserError(f"front end: a {self.frame_ms:g} ms frame needs 16 to 4096 samples")
        if not 0 < self.hop_samples <= self.frame_samples:
            raise UserError(f"front end: hop {self.hop_ms:g} ms must be within the frame")
        if not 0 <= self.lower_hz < self.upper_hz < self.sample_rate / 2:
            raise UserError(
                f"front end: band {self.lower_hz:g}-{self.upper_hz:g} Hz must lie below "
                f"the Nyquist frequency {self.sample_rate / 2:g} Hz"
            )
        if not 1 <= self.mel_bands <= 128:
            raise UserError(f"front end: {self.mel_bands} mel bands (1 to 128)")
        if not 0 <= self.output_bits <= 10 or not 1 <= self.window_bits <= 14:
            raise UserError("front end: output_bits 0-10 and window_bits 1-14")

    @property
    def frame_samples(self) -> int:
        """Samples per frame."""
        return int(self.frame_ms * self.sample_rate / 1000)

    @property
    def hop_samples(self) -> int:
        """Samples between frame starts."""
        return int(self.hop_ms * self.sample_rate / 1000)

    @property
    def fft_length(self) -> int:
        """The FFT size: the next power of two of the frame."""
        return 1 << (self.frame_samples - 1).bit_length()

    @property
    def correction_bits(self) -> int:
        """Bits the log (and PCAN) shift their input up: log2(FFT) - weight bits / 2."""
        return int(math.log2(self.fft_length)) - FILTER_BANK_WEIGHT_BITS // 2

    def frames(self, n_samples: int) -> int:
        """Frames in a clip of ``n_samples`` (one at least: a short clip is zero-padded)."""
        return 1 + max(0, n_samples - self.frame_samples) // self.hop_samples

    def at_rate(self, rate: int) -> FrontendConfig:
        """The same front end for audio at ``rate`` Hz (the band's top kept below 0.47 x rate)."""
        if rate == self.sample_rate:
            return self
        upper = min(self.upper_hz, 0.47 * rate)
        return replace(
            self, sample_rate=rate, upper_hz=upper, lower_hz=min(self.lower_hz, upper / 2)
        )

    def to_dict(self) -> dict[str, Any]:
        """The parameters as JSON-ready values."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> FrontendConfig:
        """The inverse of :meth:`to_dict`; unknown keys are refused.

        Raises:
            UserError: a key is not a parameter.
        """
        unknown = set(data) - set(cls.__dataclass_fields__)
        if unknown:
            raise UserError(f"front end: unknown parameters {sorted(unknown)}")
        return cls(**data)


def hann_weights(length: int, bits: int) -> np.ndarray:
    """Hann window (centred samples, ``index + 0.5``) as int16 with ``bits`` fraction bits."""
    index = np.arange(length)
    weights = 0.5 - 0.5 * np.cos(np.pi * 2 / length * (index + 0.5))
    return np.round(weights * (1 << bits)).astype(np.int16)


def freq_to_mel(freq: float) -> np.float32:
    """HTK mel in float32, as the signal library's ``FreqToMel``: 1127 ln(1 + f / 700)."""
    return np.float32(1127.0) * np.log1p(np.float32(freq) / np.float32(700.0))


@dataclass(frozen=True)
class FilterBankTables:
    """The mel filter bank's constant inputs and the FFT bins it reads."""

    start_index: int
    end_index: int
    weights: np.ndarray
    unweights: np.ndarray
    channel_frequency_starts: np.ndarray
    channel_weight_starts: np.ndarray
    channel_widths: np.ndarray


def filter_bank_tables(cfg: FrontendConfig) -> FilterBankTables:
    """Filter bank tables (alignment 1, block size 1) of ``filter_bank_ops.py``.

    Raises:
        UserError: the band reaches the last FFT bin.
    """
    spectrum_size = cfg.fft_length // 2 + 1
    n = cfg.mel_bands + 1
    mel_lower, mel_upper = freq_to_mel(cfg.lower_hz), freq_to_mel(cfg.upper_hz)
    spacing = (mel_upper - mel_lower) / np.float32(n)
    centres = mel_lower + spacing * np.arange(1, n + 1, dtype=np.float32)
    hz_per_bin = (cfg.sample_rate / 2) / (spectrum_size - 1)
    start_index = round(1 + cfg.lower_hz / hz_per_bin)
    starts, widths = np.zeros(n, np.int16), np.zeros(n, np.int16)
    freq_starts, weight_starts = np.zeros(n, np.int16), np.zeros(n, np.int16)
    chan_start, weight_index, zeros_added = start_index, 0, False
    for chan in range(n):
        freq = chan_start
        while freq_to_mel(freq * hz_per_bin) <= centres[chan]:
            freq += 1
        starts[chan], widths[chan] = chan_start, freq - chan_start
        if widths[chan] == 0:  # an empty channel reads one zero weight at the front
            freq_starts[chan], weight_starts[chan] = 0, 0
            if not zeros_added:
                zeros_added = True
                weight_starts[:chan] += 1
                weight_index += 1
        else:
            freq_starts[chan], weight_starts[chan] = chan_start, weight_index
            weight_index += int(widths[chan])
        chan_start = freq
    weights, unweights, end_index = _weights(
        cfg, centres, starts, widths, weight_starts, weight_index
    )
    if end_index >= spectrum_size:
        raise UserError(f"front end: the band's upper limit {cfg.upper_hz:g} Hz is too high")
    chan_widths = np.where(widths == 0, 1, widths).astype(np.int16)
    return FilterBankTables(
        start_index, end_index, weights, unweights, freq_starts, weight_starts, chan_widths
    )


def _weights(
    cfg: FrontendConfig,
    centres: np.ndarray,
    starts: np.ndarray,
    widths: np.ndarray,
    weight_starts: np.ndarray,
    count: int,
) -> tuple[np.ndarray, np.ndarray, int]:
    hz_per_bin = (cfg.sample_rate / 2) / (cfg.fft_length // 2)
    weights, unweights = np.zeros(count, np.int16), np.zeros(count, np.int16)
    mel_low, end_index, scale = freq_to_mel(cfg.lower_hz), 0, 1 << FILTER_BANK_WEIGHT_BITS
    for chan in range(len(centres)):
        low = mel_low if chan == 0 else centres[chan - 1]
        for j in range(int(widths[chan])):
            freq = int(starts[chan]) + j
            w = np.float32(centres[chan] - freq_to_mel(freq * hz_per_bin)) / np.float32(
                centres[chan] - low
            )
            weights[weight_starts[chan] + j] = int(w * scale)
            unweights[weight_starts[chan] + j] = int((1 - w) * scale)
        end_index = max(end_index, int(starts[chan]) + int(widths[chan]))
    return weights, unweights, end_index


def _gain(strength: float, offset: float, gain_bits: int, input_bits: int, x: int) -> int:
    xf = np.float32(x) / np.float32(1 << input_bits)
    g = np.float32(1 << gain_bits) * np.power(xf + np.float32(offset), np.float32(-strength))
    return 32767 if g > 32767 else int(np.float32(g + np.float32(0.5)))


def pcan_lut(
    strength: float = 0.95,
    offset: float = 80.0,
    gain_bits: int = 21,
    smoothing_bits: int = 10,
    correction_bits: int = 3,
) -> np.ndarray:
    """PCAN's piecewise-quadratic gain table (``WideDynamicFuncLut``), 125 int16 values."""
    input_bits = smoothing_bits - correction_bits
    lut = np.zeros(4 * LUT_BITS + 4, np.int32)  # index i + 6 holds table entry i
    lut[6] = _gain(strength, offset, gain_bits, input_bits, 0)
    lut[7] = _gain(strength, offset, gain_bits, input_bits, 1)
    for interval in range(2, LUT_BITS + 1):
        x0 = 1 << (interval - 1)
        x1 = x0 + (x0 >> 1)
        x2 = x0 + (x0 - 1) if interval == LUT_BITS else 2 * x0
        y0, y1, y2 = (_gain(strength, offset, gain_bits, input_bits, x) for x in (x0, x1, x2))
        a1 = 4 * (y1 - y0) - (y2 - y0)
        lut[4 * interval : 4 * interval + 4] = (y0, a1, (y2 - y0) - a1, 0)
    return lut[6 : 6 + 4 * LUT_BITS - 3].astype(np.int16)
