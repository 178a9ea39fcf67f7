"""The front-end graph as mcunas's own signal kernels see it (``firmware/src/signal/``).

On Cortex-M boards ``frontend.tflite`` runs on the signal kernels written in
this repository (the pinned Arduino TFLite Micro library has none), registered
as custom ops under the graph's op names. They implement the ops of
:data:`mcunas.frontend.graph.SIGNAL_OPS` in the chain :func:`frontend_model`
writes, with the option ranges of :data:`OPTION_RANGES` (the same ranges the C
parsers in ``signal_options.cc`` enforce). :func:`check_kernel_graph` refuses
anything else in one line naming the op, before a firmware is built.

:func:`harness_input` packs graphs and clips for the kernels' test harness
(``firmware/signal_harness/``), which runs them on the host or on an emulated
Cortex-M4F.

Example::

    check_kernel_graph(frontend_bytes)          # UserError naming the op, or None
    blob = harness_input([(frontend_bytes, [clip_int16, ...])])
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any

import numpy as np

from mcunas.errors import UserError

__all__ = [
    "CHAIN",
    "OPTION_RANGES",
    "GraphOp",
    "check_kernel_graph",
    "graph_ops",
    "harness_input",
]

# The chain the kernels run, in order; the two noise ops only with PCAN (both or neither).
CHAIN = (
    "SignalWindow",
    "SignalFftAutoScale",
    "SignalRfft",
    "SignalEnergy",
    "SignalFilterBank",
    "SignalFilterBankSquareRoot",
    "SignalFilterBankSpectralSubtraction",
    "SignalPCAN",
    "SignalFilterBankLog",
)
_NOISE_OPS = ("SignalFilterBankSpectralSubtraction", "SignalPCAN")
_BIT16 = 1 << 16
# Each op's options and their inclusive ranges, as signal_options.cc checks them
# (Rfft: T 7 is int16; fft_length also a power of two; Energy: end_index >= start_index).
OPTION_RANGES: dict[str, dict[str, tuple[int, int]]] = {
    "SignalWindow": {"shift": (0, 30)},
    "SignalFftAutoScale": {},
    "SignalRfft": {"T": (7, 7), "fft_length": (8, 4096)},
    "SignalEnergy": {"start_index": (0, 2049), "end_index": (0, 2049)},
    "SignalFilterBank": {"num_channels": (1, 128)},
    "SignalFilterBankSquareRoot": {},
    "SignalFilterBankSpectralSubtraction": {
        "num_channels": (1, 128),
        "smoothing_bits": (0, 16),
        "spectral_subtraction_bits": (0, 16),
        "smoothing": (0, _BIT16),
        "one_minus_smoothing": (0, _BIT16),
        "alternate_smoothing": (0, _BIT16),
        "alternate_one_minus_smoothing": (0, _BIT16),
        "min_signal_remaining": (0, _BIT16),
        "clamping": (0, 1),
    },
    "SignalPCAN": {"snr_shift": (0, 31)},
    "SignalFilterBankLog": {"input_correction_bits": (0, 31), "output_scale": (1, _BIT16)},
}


@dataclass(frozen=True)
class GraphOp:
    """One op of a front-end graph: its custom name, options and constant inputs."""

    name: str
    options: bytes
    constants: tuple[np.ndarray, ...]


def graph_ops(model_bytes: bytes) -> list[GraphOp]:
    """The ops of a ``.tflite`` in order (a builtin op is named ``BUILTIN_<code>``).

    Raises:
        UserError: the bytes are not a flatbuffer model.
    """
    from tflite_micro.tensorflow.lite.micro.python import schema_py_generated as fb

    try:
        model = fb.ModelT.InitFromObj(fb.Model.GetRootAs(model_bytes, 0))
    except Exception:  # noqa: BLE001 - not a flatbuffer at all (the reader raises many kinds)
        raise UserError("front end: the file is not a .tflite model") from None
    sub = model.subgraphs[0]
    ops = []
    for op in sub.operators or []:
        code = model.operatorCodes[op.opcodeIndex]
        builtin = max(code.builtinCode, code.deprecatedBuiltinCode)
        custom = code.customCode.decode() if code.customCode else ""
        name = custom if builtin == fb.BuiltinOperator.CUSTOM else f"BUILTIN_{builtin}"
        consts = []
        for index in op.inputs if op.inputs is not None else []:
            tensor = sub.tensors[index]
            data = model.buffers[tensor.buffer].data if tensor.buffer > 0 else None
            if data is not None and len(data):
                consts.append(np.frombuffer(bytes(np.asarray(data, np.uint8)), "<i2"))
        options = (
            bytes(np.asarray(op.customOptions, np.uint8)) if op.customOptions is not None else b""
        )
        ops.append(GraphOp(name, options, tuple(consts)))
    return ops


def _options(op: GraphOp) -> dict[str, Any]:
    from flatbuffers import flexbuffers

    try:
        value = flexbuffers.Loads(op.options) if op.options else {}
    except Exception:  # noqa: BLE001 - a malformed flexbuffer raises many kinds
        raise UserError(f"front end: {op.name}: its options are not a flexbuffer map") from None
    if not isinstance(value, dict):
        raise UserError(f"front end: {op.name}: its options are not a flexbuffer map")
    return value


def _check_options(op: GraphOp) -> None:
    values = _options(op)
    for key, (lo, hi) in OPTION_RANGES[op.name].items():
        value = values.get(key)
        if value is None:
            raise UserError(f"front end: {op.name}: option {key} is missing")
        if isinstance(value, float) or not lo <= int(value) <= hi:
            raise UserError(
                f"front end: {op.name}: option {key}={value} is outside {lo}..{hi} "
                "for mcunas's signal kernels"
            )
    if op.name == "SignalRfft" and int(values["fft_length"]) & (int(values["fft_length"]) - 1):
        raise UserError(
            f"front end: SignalRfft: fft_length={values['fft_length']} is no power of two"
        )
    if op.name == "SignalEnergy" and int(values["end_index"]) < int(values["start_index"]):
        raise UserError("front end: SignalEnergy: end_index is below start_index")


def check_kernel_graph(model_bytes: bytes) -> None:
    """Refuse a front end mcunas's signal kernels cannot run (the Cortex-M boards' build).

    Raises:
        UserError: one line naming the op the library lacks, the option out of
            range, or the op out of the chain's order.
    """
    ops = graph_ops(model_bytes)
    for op in ops:
        if op.name not in OPTION_RANGES:
            raise UserError(
                f"front end: op {op.name} is not in mcunas's signal kernel library "
                f"(it has {', '.join(CHAIN)})"
            )
        _check_options(op)
    names = [op.name for op in ops]
    pcan = _NOISE_OPS[0] in names or _NOISE_OPS[1] in names
    expected = [n for n in CHAIN if pcan or n not in _NOISE_OPS]
    if names != expected:
        wrong = next((a for a, b in zip(names, expected, strict=False) if a != b), names[-1])
        raise UserError(
            f"front end: op {wrong} is out of place: mcunas's signal kernels run the chain "
            f"{' -> '.join(expected)}"
        )


def _pack_graph(model_bytes: bytes, clips: list[np.ndarray]) -> bytes:
    ops = graph_ops(model_bytes)
    bank = next((op for op in ops if op.name == "SignalFilterBank"), None)
    bands = int(_options(bank).get("num_channels", 0)) if bank else 0
    samples = int(np.asarray(clips[0]).shape[-1]) if clips else 0
    out = [struct.pack("<I", len(ops))]
    for op in ops:
        name = op.name.encode()
        out.append(struct.pack("<I", len(name)) + name)
        out.append(struct.pack("<I", len(op.options)) + op.options)
        out.append(struct.pack("<I", len(op.constants)))
        out.extend(struct.pack("<I", len(c)) + c.astype("<i2").tobytes() for c in op.constants)
    out.append(struct.pack("<III", samples, bands, len(clips)))
    for frames in clips:
        frames = np.asarray(frames, "<i2").reshape(-1, samples)
        out.append(struct.pack("<I", len(frames)) + frames.tobytes())
    return b"".join(out)


def harness_input(graphs: list[tuple[bytes, list[np.ndarray]]]) -> bytes:
    """The harness's input: each front end with its clips, each clip int16 (frames, samples).

    The frame length is the clips'; the band count the filter bank's ``num_channels``.

    Each clip starts from the reset state, as :meth:`FrontendRunner.clip` does.
    """
    parts = [b"MSIG", struct.pack("<I", len(graphs))]
    parts.extend(_pack_graph(model, clips) for model, clips in graphs)
    return b"".join(parts)
