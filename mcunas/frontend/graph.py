"""Write the audio front end as a TFLite Micro graph of signal-library custom ops.

One invoke turns one frame of int16 samples into ``mel_bands`` int16 features:

    SignalWindow (Hann, int16) -> SignalFftAutoScale -> SignalRfft (int16)
    -> SignalEnergy -> SignalFilterBank (mel) -> SignalFilterBankSquareRoot
    [-> SignalFilterBankSpectralSubtraction -> SignalPCAN]   (FrontendConfig.pcan)
    -> SignalFilterBankLog

the chain of TFLite Micro's micro_speech audio preprocessor. Framing is the
caller's: the board keeps the last frame of samples and invokes once per hop.
The ops' options are flexbuffer maps keyed by the attribute names the kernels
read (``signal/micro/kernels/*.cc``); the kernels index them in key order.

Example::

    model_bytes = frontend_model(FrontendConfig(mel_bands=32))
"""

from __future__ import annotations

import json
from typing import Any

from mcunas.frontend.config import FrontendConfig, filter_bank_tables, hann_weights, pcan_lut
from mcunas.frontend.kernels.graph import CHAIN
from mcunas.tflite.writer import build_model

__all__ = [
    "DESCRIPTION_PREFIX",
    "SIGNAL_OPS",
    "config_of_model",
    "flexbuffer",
    "frontend_model",
    "readme",
]

DESCRIPTION_PREFIX = "mcunas audio front end "
SIGNAL_OPS = CHAIN  # the signal ops a front-end graph holds, in their order
INT16_TYPE = 7  # tflite::TensorType_INT16, the Rfft's 'T'

# micro_speech's noise reduction and gain control settings (FeatureParams)
SMOOTHING_BITS = 10
SPECTRAL_SUBTRACTION_BITS = 14
EVEN_SMOOTHING, ODD_SMOOTHING, MIN_SIGNAL_REMAINING = 0.025, 0.06, 0.05
PCAN_STRENGTH, PCAN_OFFSET, PCAN_GAIN_BITS = 0.95, 80.0, 21


def flexbuffer(options: dict[str, int | bool]) -> bytes:
    """A flexbuffer map of integer and boolean options (keys sorted, as the kernels read)."""
    from flatbuffers import flexbuffers

    fbb = flexbuffers.Builder()
    with fbb.Map():
        for key in sorted(options):
            value = options[key]
            if isinstance(value, bool):
                fbb.Bool(key, value)
            else:
                fbb.Int(key, int(value))
    return bytes(fbb.Finish())


def _subtraction_options(bands: int) -> dict[str, int | bool]:
    one = 1 << SPECTRAL_SUBTRACTION_BITS
    even, odd = int(EVEN_SMOOTHING * one), int(ODD_SMOOTHING * one)
    return {
        "alternate_one_minus_smoothing": one - odd,
        "alternate_smoothing": odd,
        "clamping": False,
        "min_signal_remaining": int(MIN_SIGNAL_REMAINING * one),
        "num_channels": bands,
        "one_minus_smoothing": one - even,
        "smoothing": even,
        "smoothing_bits": SMOOTHING_BITS,
        "spectral_subtraction_bits": SPECTRAL_SUBTRACTION_BITS,
    }


class _Graph:
    """Tensors and ops collected in order for :func:`build_model`."""

    def __init__(self) -> None:
        self.tensors: list[dict[str, Any]] = []
        self.ops: list[tuple[Any, ...]] = []

    def tensor(self, name: str, dtype: str, shape: list[int], data: Any = None) -> int:
        self.tensors.append({"name": name, "dtype": dtype, "shape": shape, "data": data})
        return len(self.tensors) - 1

    def op(self, name: str, ins: list[int], outs: list[int], **options: int | bool) -> None:
        self.ops.append((name, ins, outs, "custom", flexbuffer(options)))


def frontend_model(cfg: FrontendConfig) -> bytes:
    """The front end's ``.tflite`` bytes: int16 [frame_samples] in, int16 [mel_bands] out.

    The description string holds the configuration as JSON (after
    :data:`DESCRIPTION_PREFIX`), so the file alone says what it computes.
    """
    tables = filter_bank_tables(cfg)
    bands, n, bins = cfg.mel_bands, cfg.frame_samples, cfg.fft_length // 2 + 1
    g = _Graph()
    audio = g.tensor("audio", "int16", [n])
    weights = g.tensor("hann_weights", "int16", [n], hann_weights(n, cfg.window_bits))
    windowed = g.tensor("windowed", "int16", [n])
    g.op("SignalWindow", [audio, weights], [windowed], shift=cfg.window_bits)
    scaled, shift = g.tensor("scaled", "int16", [n]), g.tensor("scale_shift", "int32", [])
    g.op("SignalFftAutoScale", [windowed], [scaled, shift])
    spectrum = g.tensor("spectrum", "int16", [2 * bins])
    g.op("SignalRfft", [scaled], [spectrum], T=INT16_TYPE, fft_length=cfg.fft_length)
    energy = g.tensor("energy", "uint32", [bins])
    g.op(
        "SignalEnergy",
        [spectrum],
        [energy],
        end_index=tables.end_index,
        start_index=tables.start_index,
    )
    consts = [
        g.tensor(name, "int16", [len(getattr(tables, name))], getattr(tables, name))
        for name in (
            "weights",
            "unweights",
            "channel_frequency_starts",
            "channel_weight_starts",
            "channel_widths",
        )
    ]
    mel = g.tensor("mel", "uint64", [bands])
    g.op("SignalFilterBank", [energy, *consts], [mel], num_channels=bands)
    root = g.tensor("mel_root", "uint32", [bands])
    g.op("SignalFilterBankSquareRoot", [mel, shift], [root])
    if cfg.pcan:
        root = _noise_and_gain(g, cfg, root)
    features = g.tensor("features", "int16", [bands])
    g.op(
        "SignalFilterBankLog",
        [root],
        [features],
        input_correction_bits=cfg.correction_bits,
        output_scale=1 << cfg.output_bits,
    )
    description = DESCRIPTION_PREFIX + json.dumps(cfg.to_dict(), sort_keys=True)
    return build_model(g.ops, g.tensors, [audio], [features], description)


def _noise_and_gain(g: _Graph, cfg: FrontendConfig, root: int) -> int:
    bands = cfg.mel_bands
    clean, noise = g.tensor("clean", "uint32", [bands]), g.tensor("noise", "uint32", [bands])
    g.op(
        "SignalFilterBankSpectralSubtraction", [root], [clean, noise], **_subtraction_options(bands)
    )
    lut = pcan_lut(PCAN_STRENGTH, PCAN_OFFSET, PCAN_GAIN_BITS, SMOOTHING_BITS, cfg.correction_bits)
    table = g.tensor("pcan_gain_lut", "int16", [len(lut)], lut)
    gained = g.tensor("gained", "uint32", [bands])
    g.op("SignalPCAN", [clean, noise, table], [gained], snr_shift=6)
    return gained


def config_of_model(model_bytes: bytes) -> FrontendConfig | None:
    """The :class:`FrontendConfig` a front-end model's description holds, or None."""
    from tflite_micro.tensorflow.lite.micro.python import schema_py_generated as fb

    try:
        raw = fb.Model.GetRootAs(model_bytes, 0).Description() or b""
    except Exception:  # noqa: BLE001 - not a flatbuffer at all (the reader raises many kinds)
        return None
    description = raw.decode("utf-8", "replace")
    if not description.startswith(DESCRIPTION_PREFIX):
        return None
    return FrontendConfig.from_dict(json.loads(description[len(DESCRIPTION_PREFIX) :]))


def readme(cfg: FrontendConfig) -> str:
    """The ``best/README.md`` of a model with this front end: the board's call sequence."""
    n, hop, bands = cfg.frame_samples, cfg.hop_samples, cfg.mel_bands
    return f"""# The exported model and its audio front end

`frontend.tflite` turns {n} int16 samples ({cfg.frame_ms:g} ms at {cfg.sample_rate} Hz)
into {bands} int16 features; `model.tflite` classifies the features of a clip.
Both run in TensorFlow Lite Micro; `mcunas predict best/ clip.wav` runs them
on the host the same way.

    // once: two interpreters, two op resolvers (frontend_ops.h, model_ops.h)
    McunasFrontendOpResolver front_ops;  McunasRegisterFrontendOps(front_ops);
    McunasOpResolver model_ops;          McunasRegisterOps(model_ops);
    tflite::MicroInterpreter front(tflite::GetModel(g_frontend_data), front_ops, ...);
    tflite::MicroInterpreter model(tflite::GetModel(g_model_data), model_ops, ...);
    front.Reset();                       // at the start of each clip
    // every {hop} new samples ({cfg.hop_ms:g} ms): the last {n} samples in, one feature row out
    memcpy(front.input(0)->data.i16, last_frame, {n} * sizeof(int16_t));
    front.Invoke();
    //   row[i] = front.output(0)->data.i16[i] / {1 << cfg.output_bits}.0f   (i < {bands})
    // when the clip's rows are complete: quantise each value with the model's
    // input scale and zero point into model.input(0), then
    model.Invoke();                      // class = argmax of model.output(0)

Front-end parameters: {json.dumps(cfg.to_dict(), sort_keys=True)}.
"""
