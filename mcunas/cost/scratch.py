"""Scratch buffers the optimized int8 conv kernels request from the arena.

The host runtime runs TFLM's reference kernels, which request no scratch; the
optimized libraries do (im2col, padded or realigned copies of input and
filter). The memory model adds the largest one to the planned head, an upper
bound: a scratch buffer only lives during its own op.

Formulas mirror the libraries' ``*_get_buffer_size`` / ``*_scratch_size``:
- CMSIS-NN (DSP cores, no MVE): ``arm_convolve_s8_get_buffer_size`` =
  2 * kh * kw * cin int16 values, none for the 1x1 stride-1 fast path;
  ``arm_depthwise_conv_s8_opt_get_buffer_size`` = cin * kh * kw int16 values,
  none for the 3x3 (multiplier 1) path.
- ESP-NN on ESP32-S3 (espressif/esp-nn src/convolution/esp_nn_conv_esp32s3.c,
  esp_nn_depthwise_conv_s8_esp32s3.c): ``esp_nn_get_conv_scratch_size_esp32s3``
  and ``esp_nn_get_depthwise_conv_scratch_size_esp32s3``. The ESP32 and
  ESP32-C3 builds use ESP-NN's generic C kernels, whose conv needs none.
"""

from __future__ import annotations

from mcunas.tflite.reader import Graph, Op

__all__ = ["largest_scratch_bytes", "op_scratch_bytes"]


def _same_pad(size_in: int, size_out: int, stride: int, k: int, padding: str) -> int:
    if padding != "SAME":
        return 0
    return max(0, (size_out - 1) * stride + k - size_in) // 2


def _dims(op: Op) -> tuple[int, int, int, int, int, int, int, int] | None:
    """(in_h, in_w, cin, kh, kw, out_h, out_w, cout) of a 2-D conv op, if NHWC."""
    if len(op.inputs) < 2 or op.inputs[0] is None or op.inputs[1] is None or not op.outputs:
        return None
    x, w, y = op.inputs[0].shape, op.inputs[1].shape, op.outputs[0].shape
    if len(x) != 4 or len(w) != 4 or len(y) != 4:
        return None
    return x[1], x[2], x[3], w[1], w[2], y[1], y[2], y[3]


def _cmsis(op: Op) -> int:
    d = _dims(op)
    if d is None:
        return 0
    _, _, cin, kh, kw, _, _, _ = d
    if op.name == "CONV_2D":
        fast = kh == kw == 1 and op.options.get("stride_h", 1) == op.options.get("stride_w", 1) == 1
        return 0 if fast else 2 * kh * kw * cin * 2
    three = kh == kw == 3 and op.options.get("depth_multiplier", 1) == 1
    return 0 if three else cin * kh * kw * 2


def _esp32s3_conv(op: Op, d: tuple[int, ...]) -> int:
    in_h, in_w, cin, kh, kw, out_h, out_w, cout = d
    sh, sw = op.options.get("stride_h", 1), op.options.get("stride_w", 1)
    padding = op.options.get("padding", "VALID")
    pad_h, pad_w = _same_pad(in_h, out_h, sh, kh, padding), _same_pad(in_w, out_w, sw, kw, padding)
    align = 32
    if kh == kw == 1 and pad_h == pad_w == 0 and sh == sw == 1:
        ch8 = (cin + 7) & ~7
        transpose = 0 if in_w * in_h < 8 else 2 * 8 * ch8
        inp = in_w * in_h * ch8 if cin % 8 else 0
        return inp + ch8 * cout + transpose + align
    row, window = kw * cin, kw * kh * cin
    if row < 16 <= window:  # im2col path
        aligned = (window + 15) & ~15
        return cout * 4 + 16 + cout * aligned + 16 + aligned + align
    ch16 = (cin + 15) & ~15
    inp = 0 if pad_h == pad_w == 0 else (in_w + 2 * pad_w) * (in_h + 2 * pad_h) * cin
    filt = kw * kh * ch16 * cout
    filt_align = ((row + 15) // 16 * 16) * kh * cout
    pad_r = max(0, out_w * sw + kw - 1 - in_w)
    pad_b = max(0, out_h * sh + kh - 1 - in_h)
    boundary = (in_w + pad_r) * (in_h + pad_b) * cin if (pad_r or pad_b) else 0
    return inp + filt + filt_align + boundary + align + cout * 4


def _esp32s3_depthwise(op: Op, d: tuple[int, ...]) -> int:
    in_h, in_w, cin, kh, kw, out_h, out_w, _ = d
    mult = op.options.get("depth_multiplier", 1)
    sh, sw = op.options.get("stride_h", 1), op.options.get("stride_w", 1)
    padding = op.options.get("padding", "VALID")
    pad_h, pad_w = _same_pad(in_h, out_h, sh, kh, padding), _same_pad(in_w, out_w, sw, kw, padding)
    filt = kw * kh * cin * mult
    if mult == 1 and cin % 8 == 0 and kw == kh == 3:
        if cin % 16 == 0:
            if pad_w or pad_h:
                extra_w, extra_h = 2 * pad_w, 2 * pad_h
            else:
                extra_w = out_w * sw + kw - 1 - in_w
                extra_h = out_h * sh + kh - 1 - in_h
            if extra_w or extra_h:
                return filt + (in_w + extra_w) * (in_h + extra_h) * cin + 16
            return filt + 16
        return 2 * (filt + in_w * in_h * cin) + 16
    if mult % 4 == 0:
        return 2 * (filt + in_w * in_h * cin) + 16
    return 32


def op_scratch_bytes(op: Op, kernels: str, core: str) -> int:
    """Scratch bytes one op's optimized kernel requests (0 if none or not accelerated)."""
    if op.name not in ("CONV_2D", "DEPTHWISE_CONV_2D") or op.dtype != "int8":
        return 0
    if kernels == "cmsis-nn":
        return _cmsis(op)
    if kernels == "esp-nn" and core == "xtensa-lx7":
        d = _dims(op)
        if d is None:
            return 0
        return _esp32s3_conv(op, d) if op.name == "CONV_2D" else _esp32s3_depthwise(op, d)
    return 0


def largest_scratch_bytes(graph: Graph, kernels: str, core: str) -> int:
    """The largest scratch buffer any op of the graph requests."""
    return max((op_scratch_bytes(op, kernels, core) for op in graph.ops), default=0)
