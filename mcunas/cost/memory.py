"""Memory model: tensor arena from the real TFLM planner, corrected to a 32-bit MCU.

How each figure is obtained (also returned in ``MemoryEstimate.methods``):

- **Arena head** (planned, non-persistent tensor memory): from the host TFLM
  runtime's ``RecordingMicroAllocator``. Tensor sizes and the greedy plan do
  not depend on pointer width, so it is the same on the MCU. The largest
  scratch buffer of the optimized kernels (CMSIS-NN im2col, ESP-NN padded and
  realigned copies; :mod:`mcunas.cost.scratch`) is added, since the host
  runs reference kernels that ask for none.
- **Arena tail** (persistent structs): the host figure, corrected by
  allocation kind and count from 64-bit to 32-bit struct sizes (see
  :data:`STRUCT_BYTES`).
- **Planner headroom**: when the smallest arena that allocates on the host is
  larger than the reported total (the planner's working memory during
  ``AllocateTensors``), the difference is added as is.
- Check against a published figure: Espressif's person_detection example
  (esp-tflite-micro) gives its arena 81 KiB (plus an ESP-NN scratch allowance
  on the ESP32-S3); this model estimates 80.96 KiB without scratch.
- **Peak SRAM** = arena + the board's firmware static RAM + stack.
- **Flash** = model bytes + kernel code for the ops used
  (:data:`KERNEL_CODE_BYTES`, estimates) + the board's firmware flash.
"""

from __future__ import annotations

import math
import re
from dataclasses import asdict, dataclass, field
from typing import Any

from mcunas.cost.scratch import largest_scratch_bytes
from mcunas.tflite.kernels import is_accelerated
from mcunas.tflite.reader import Graph
from mcunas.tflite.runtime import (
    ArenaReport,
    NativeCrash,
    arena_report,
    create_interpreter,
    missing_ops_in_log,
    run_forked,
)

__all__ = [
    "KERNEL_CODE_BYTES",
    "STRUCT_BYTES",
    "MemoryEstimate",
    "estimate_memory",
    "live_bytes_per_op",
]

# Per allocation kind of the RecordingMicroAllocator report:
# (bytes per struct on a 64-bit host, on a 32-bit MCU, allocations per struct).
# Derived from the TFLM struct definitions (tensorflow/lite/core/c/common.h built
# with TF_LITE_STATIC_MEMORY, tensorflow/lite/micro/micro_allocator.h):
# - TfLiteEvalTensor {TfLitePtrUnion data; TfLiteIntArray* dims; TfLiteType type}:
#   8+8+4 -> 24 with padding on 64-bit; 4+4+4 = 12 on 32-bit (host report: 24 each).
# - TfLiteTensor (micro variant) {TfLiteQuantization{type, void*}; params{float, int32};
#   data ptr; dims ptr; size_t bytes; type; allocation_type; bool is_variable}:
#   16+8+8+8+8+4+4+1 -> 64 on 64-bit; 8+8+4+4+4+4+4+1 -> 40 on 32-bit (host: 64 each).
# - Persistent TfLiteTensor quantization data: per tensor a TfLiteAffineQuantization
#   {TfLiteFloatArray* scale; TfLiteIntArray* zero_point; int32 dim}: 24 vs 12, plus a
#   zero-point TfLiteIntArray (ints only: same size) -> 2 allocations per struct.
# - NodeAndRegistration {TfLiteNode (6 pointers + int); const TFLMRegistration*}:
#   6*8+4 -> 56 + 8 = 64 on 64-bit; 6*4+4+4 = 32 on 32-bit (host: 64 each).
STRUCT_BYTES: dict[str, tuple[int, int, int]] = {
    "TfLiteEvalTensor data": (24, 12, 1),
    "Persistent TfLiteTensor data": (64, 40, 1),
    "Persistent TfLiteTensor quantization data": (24, 12, 2),
    "NodeAndRegistration struct": (64, 32, 1),
}
# 'Persistent buffer data' is what kernels allocate: int32 per-channel multiplier and
# shift arrays (width-independent) and each kernel's OpData. The OpData of conv,
# depthwise, fully connected and transpose conv hold two pointers (per-channel
# multiplier and shift): 4 bytes less each on 32-bit. Other OpData are ints/floats.
_OPDATA_POINTER_SAVING = {
    "CONV_2D": 8,
    "DEPTHWISE_CONV_2D": 8,
    "FULLY_CONNECTED": 8,
    "TRANSPOSE_CONV": 8,
}

# Flash taken by each op's kernel code, in bytes, per kernel library. ESTIMATES for
# -Os builds (TFLM kernel + the library functions it pulls in; CMSIS-NN and ESP-NN
# kernels carry several specialised variants each). Refine with `mcunas bench`,
# which reads the real ELF size. Ops not listed cost _DEFAULT_KERNEL_CODE.
_REFERENCE_CODE = {
    "CONV_2D": 4608,
    "DEPTHWISE_CONV_2D": 4608,
    "FULLY_CONNECTED": 2560,
    "AVERAGE_POOL_2D": 2048,
    "MAX_POOL_2D": 2048,
    "SOFTMAX": 3072,
    "ADD": 3072,
    "MUL": 2560,
    "SUB": 2560,
    "RESHAPE": 512,
    "SQUEEZE": 512,
    "EXPAND_DIMS": 512,
    "BATCH_MATMUL": 4096,
    "TRANSPOSE": 1536,
    "MEAN": 4096,
    "QUANTIZE": 2048,
    "DEQUANTIZE": 1536,
    "RSQRT": 2048,
    "CONCATENATION": 1536,
    "PAD": 1536,
    "TRANSPOSE_CONV": 4096,
}
_DEFAULT_KERNEL_CODE = 2048
KERNEL_CODE_BYTES: dict[str, dict[str, int]] = {
    "reference": _REFERENCE_CODE,
    "cmsis-nn": {
        **_REFERENCE_CODE,
        "CONV_2D": 10240,
        "DEPTHWISE_CONV_2D": 9216,
        "FULLY_CONNECTED": 3584,
        "AVERAGE_POOL_2D": 3072,
        "MAX_POOL_2D": 3072,
        "SOFTMAX": 3584,
        "ADD": 3584,
        "MUL": 3072,
        "BATCH_MATMUL": 5120,
        "TRANSPOSE": 2048,
        "TRANSPOSE_CONV": 8192,
        "SVDF": 5120,
        "UNIDIRECTIONAL_SEQUENCE_LSTM": 10240,
    },
    "esp-nn": {
        **_REFERENCE_CODE,
        "CONV_2D": 14336,
        "DEPTHWISE_CONV_2D": 14336,
        "FULLY_CONNECTED": 4096,
        "AVERAGE_POOL_2D": 4096,
        "MAX_POOL_2D": 4096,
        "SOFTMAX": 4096,
        "ADD": 4096,
        "MUL": 4096,
    },
}

_ARENA_FAILURE_RE = re.compile(r"Failed to allocate|too small|missing: \d+")
_MAX_ARENA = 512 * 1024 * 1024


@dataclass(frozen=True)
class MemoryEstimate:
    """SRAM and flash of one model on one board; each figure says how it was obtained."""

    arena_bytes: int
    arena_head_bytes: int
    arena_tail_bytes: int
    peak_sram_bytes: int
    flash_bytes: int
    model_bytes: int
    kernel_code_bytes: int
    methods: dict[str, str] = field(default_factory=dict)
    host_arena_bytes: int = 0
    planner_headroom_bytes: int = 0
    scratch_bytes: int = 0
    runtime_error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """Plain dict for JSON output."""
        return asdict(self)


def estimate_memory(
    model_bytes: bytes, graph: Graph, board: Any, kernels: str | None = None
) -> MemoryEstimate:
    """Estimate the arena, peak SRAM and flash of a model on a board.

    Args:
        model_bytes: the ``.tflite`` bytes.
        graph: ``read_graph(model_bytes)``.
        board: a ``BoardProfile``.
        kernels: kernel library override; default the board's.

    Returns:
        A :class:`MemoryEstimate`. If the runtime cannot allocate the model at
        all (an op without kernel, a kernel that rejects its tensors), the arena
        is a static estimate and ``runtime_error`` says why.
    """
    library = kernels or board.kernels
    methods: dict[str, str] = {}
    head, tail, headroom, host_total, error = _arena_parts(model_bytes, graph, methods)
    scratch = largest_scratch_bytes(graph, library, board.core)
    if scratch:
        methods["arena_bytes"] += (
            f"; + {scratch} B {library} kernel scratch (largest per-op buffer, upper bound)"
        )
    arena = head + scratch + tail + headroom
    code = kernel_code_bytes(graph, library)
    _describe_totals(methods, arena, len(model_bytes), code, library, board)
    return MemoryEstimate(
        arena_bytes=arena,
        arena_head_bytes=head + scratch,
        arena_tail_bytes=tail + headroom,
        peak_sram_bytes=arena + board.firmware_ram_bytes + board.firmware_stack_bytes,
        flash_bytes=len(model_bytes) + code + board.firmware_flash_bytes,
        model_bytes=len(model_bytes),
        kernel_code_bytes=code,
        methods=methods,
        host_arena_bytes=host_total,
        planner_headroom_bytes=headroom,
        scratch_bytes=scratch,
        runtime_error=error,
    )


def _arena_parts(
    model_bytes: bytes, graph: Graph, methods: dict[str, str]
) -> tuple[int, int, int, int, str | None]:
    """Planned head, 32-bit tail, planner headroom, host total and runtime error (if any)."""
    host = _host_arena(model_bytes, graph)
    if isinstance(host, str):
        methods["arena_bytes"] = (
            "static estimate (the host TFLM runtime could not allocate the model: "
            f"{host}): peak of live tensor bytes in graph order + 32-bit struct sizes"
        )
        return _static_head(graph), _static_tail(graph), 0, 0, host
    report, smallest = host
    tail = _mcu_tail(report, graph)
    headroom = max(0, smallest - report.total_bytes)
    methods["arena_bytes"] = (
        f"TFLM planner on the host (reference kernels): head {report.head_bytes} B "
        f"as is; tail {report.tail_bytes} B (64-bit) corrected to {tail} B for a "
        f"32-bit MCU by allocation kind and count; planner headroom {headroom} B "
        f"(smallest host arena that allocates {smallest} B - reported total)"
    )
    return report.head_bytes, tail, headroom, report.total_bytes, None


def _describe_totals(
    methods: dict[str, str], arena: int, model_len: int, code: int, library: str, board: Any
) -> None:
    """How peak SRAM, kernel code and flash were made up, for ``profile --json``."""
    methods["peak_sram_bytes"] = (
        f"arena {arena} B + firmware static RAM {board.firmware_ram_bytes} B + stack "
        f"{board.firmware_stack_bytes} B (board profile baseline)"
    )
    methods["kernel_code_bytes"] = (
        f"estimate: per-op kernel code sizes for {library} (-Os), summed over distinct ops"
    )
    methods["flash_bytes"] = (
        f"model {model_len} B + kernel code {code} B (estimate) "
        f"+ firmware {board.firmware_flash_bytes} B (board profile baseline)"
    )


def kernel_code_bytes(graph: Graph, kernels: str) -> int:
    """Estimated flash of the kernels for the distinct ops of ``graph``."""
    table = KERNEL_CODE_BYTES.get(kernels, _REFERENCE_CODE)
    total = 0
    for name in graph.op_names():
        fast = any(is_accelerated(op, kernels) for op in graph.ops if op.name == name)
        source = table if fast else _REFERENCE_CODE
        total += source.get(name, _DEFAULT_KERNEL_CODE)
    return total


def _mcu_tail(report: ArenaReport, graph: Graph) -> int:
    saving = 0
    for kind, (host_size, mcu_size, per_struct) in STRUCT_BYTES.items():
        if kind in report.kinds:
            saving += report.kinds[kind].count // per_struct * (host_size - mcu_size)
    if "Persistent buffer data" in report.kinds:
        saving += sum(_OPDATA_POINTER_SAVING.get(op.name, 0) for op in graph.ops)
    return max(0, report.tail_bytes - saving)


def _initial_arena(graph: Graph) -> int:
    activations = sum(t.nbytes for t in graph.tensors if not t.is_constant)
    guess = 2 * activations + 2048 * len(graph.ops) + 256 * len(graph.tensors) + 65536
    return 1 << max(20, math.ceil(math.log2(guess)))


def _host_arena(model_bytes: bytes, graph: Graph) -> tuple[ArenaReport, int] | str:
    """(report, smallest arena that allocates) from the host runtime, or why it failed.

    Every use of the runtime runs in a forked child (:func:`run_forked`): the
    host build has crashed (SIGSEGV) on arenas just at the reported total, and
    a native crash must not kill the caller nor discard a good report.
    """
    try:
        report = run_forked(_host_report, model_bytes, _initial_arena(graph))
    except NativeCrash as exc:
        return f"the TFLM runtime crashed ({exc})"
    if isinstance(report, str):
        return report
    return report, _smallest_arena(model_bytes, report.total_bytes)


def _host_report(model_bytes: bytes, size: int) -> ArenaReport | str:
    """The arena report at the first size (x4 steps) that allocates, or why none did."""
    while True:
        interp, log = create_interpreter(model_bytes, size)
        if interp is not None:
            return arena_report(interp)
        if missing_ops_in_log(log) or not _ARENA_FAILURE_RE.search(log) or size >= _MAX_ARENA:
            return _failure_line(log)
        size *= 4


def _allocates(model_bytes: bytes, size: int) -> bool:
    """True if the runtime allocates the model in ``size`` bytes; a crash counts as no."""
    try:
        return run_forked(_allocates_here, model_bytes, size)
    except NativeCrash:
        return False


def _allocates_here(model_bytes: bytes, size: int) -> bool:
    return create_interpreter(model_bytes, size)[0] is not None


def _smallest_arena(model_bytes: bytes, total: int) -> int:
    """Smallest arena (16-byte steps) at or above the reported total that allocates.

    One construction when the total suffices (the usual case); otherwise a
    doubling probe then a bisection: about a dozen small constructions.
    """
    if _allocates(model_bytes, total):
        return total
    low, step = total, 1024
    while not _allocates(model_bytes, total + step):
        low, step = total + step, step * 2
        if step > _MAX_ARENA:
            return total
    high = total + step
    while high - low > 16:
        mid = (low + high) // 2 // 16 * 16
        if mid <= low:
            break
        low, high = (low, mid) if _allocates(model_bytes, mid) else (mid, high)
    return high


def _failure_line(log: str) -> str:
    missing = missing_ops_in_log(log)
    if missing:
        return "no kernel for " + ", ".join(missing)
    lines = [ln.strip() for ln in log.splitlines() if ln.strip()]
    return lines[0] if lines else "the runtime gave no reason"


def _static_head(graph: Graph) -> int:
    """Peak bytes of tensors alive at once, walking ops in order (greedy-planner lower bound)."""
    return max([sum(t.nbytes for t in graph.inputs), *live_bytes_per_op(graph)])


def live_bytes_per_op(graph: Graph) -> list[int]:
    """Bytes of activation tensors alive while each op runs, in graph order.

    Counts the op's inputs and outputs and every earlier output still needed
    later: the arena's load per op (its maximum is the planner's lower bound).
    """
    last_use: dict[int, int] = {t.index: len(graph.ops) for t in graph.outputs}
    for i, op in enumerate(graph.ops):
        for t in op.inputs:
            if t is not None and not t.is_constant:
                last_use[t.index] = max(last_use.get(t.index, i), i)
    live = {t.index: t.nbytes for t in graph.inputs}
    per_op = []
    for i, op in enumerate(graph.ops):
        for t in op.outputs:
            live[t.index] = t.nbytes
        per_op.append(sum(live.values()))
        live = {k: v for k, v in live.items() if last_use.get(k, i) > i}
    return per_op


def _static_tail(graph: Graph) -> int:
    """32-bit persistent structs: eval tensors, nodes, I/O tensors, kernel OpData."""
    per_channel = sum(
        8 * op.outputs[0].shape[-1]
        for op in graph.ops
        if op.name in _OPDATA_POINTER_SAVING and op.outputs and op.outputs[0].shape
    )
    return (
        12 * len(graph.tensors)
        + 32 * len(graph.ops)
        + 2 * (40 + 20)
        + 64 * len(graph.ops)
        + per_channel
    )
