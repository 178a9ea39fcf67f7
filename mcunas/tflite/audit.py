"""Op audit: can TFLite Micro run this graph, in integers, with the board's fast kernels.

Three findings, each a tuple of distinct op names in graph order:

- ``unsupported``: ops the installed TFLM runtime has no kernel for (GELU,
  REDUCE_PROD, custom ops...). The model cannot run.
- ``float_ops``: ops that read or write float tensors in what should be an
  INT8 model (e.g. the DEQUANTIZE -> RSQRT -> QUANTIZE of a LayerNorm): they
  run, but as float code on the device.
- ``unaccelerated``: ops the board's kernel library has no optimized int8
  kernel for; they run TFLM's reference kernels.

Example::

    report = audit_graph(read_graph("model.tflite"), load_board("esp32s3"))
    if not report.runnable:
        print(report.messages())
"""

from __future__ import annotations

from dataclasses import dataclass

from mcunas.tflite.kernels import is_accelerated, is_supported
from mcunas.tflite.reader import Graph, Op

__all__ = ["HEAVY_OPS", "AuditReport", "audit_graph", "is_float_model"]

# Ops that carry the model's arithmetic; a model whose heavy ops are float is a float model.
HEAVY_OPS = frozenset(
    {"CONV_2D", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED", "BATCH_MATMUL", "TRANSPOSE_CONV"}
)
# Ops that cost nothing worth accelerating: TFLM only rewrites the shape.
_FREE_OPS = frozenset({"RESHAPE", "SQUEEZE", "EXPAND_DIMS", "SHAPE"})


@dataclass(frozen=True)
class AuditReport:
    """What the audit found for one graph on one kernel library."""

    kernels: str
    unsupported: tuple[str, ...]
    float_ops: tuple[str, ...]
    unaccelerated: tuple[str, ...]

    @property
    def runnable(self) -> bool:
        """True if every op has a TFLM kernel."""
        return not self.unsupported

    def messages(self) -> list[str]:
        """One line per finding, for people."""
        lines = []
        if self.unsupported:
            lines.append(
                "TFLite Micro has no kernel for: "
                + ", ".join(self.unsupported)
                + " (the model cannot run; replace these layers)"
            )
        if self.float_ops:
            lines.append(
                "float ops in an INT8 model: "
                + ", ".join(self.float_ops)
                + " (they run as float code on the device)"
            )
        if self.unaccelerated:
            lines.append(
                f"not accelerated by {self.kernels}: "
                + ", ".join(self.unaccelerated)
                + " (reference kernels)"
            )
        return lines

    def to_dict(self) -> dict[str, object]:
        """Plain dict for JSON output."""
        return {
            "kernels": self.kernels,
            "runnable": self.runnable,
            "unsupported": list(self.unsupported),
            "float_ops": list(self.float_ops),
            "unaccelerated": list(self.unaccelerated),
        }


def _is_float_op(op: Op) -> bool:
    tensors = (*op.inputs, *op.outputs)
    return any(t is not None and not t.is_constant and t.is_float for t in tensors) or any(
        t is not None and t.is_constant and t.is_float and op.name in HEAVY_OPS for t in op.inputs
    )


def is_float_model(graph: Graph) -> bool:
    """True if the model is not INT8-quantized: its heavy ops (or, lacking any, all ops) are float.

    An INT8 model with a few float ops (LayerNorm's RSQRT) is not a float model.
    """
    heavy = [op for op in graph.ops if op.name in HEAVY_OPS]
    ops = heavy or list(graph.ops)
    return bool(ops) and sum(_is_float_op(op) for op in ops) * 2 > len(ops)


def audit_graph(graph: Graph, board: object, kernels: str | None = None) -> AuditReport:
    """Audit every op of ``graph`` against TFLM and the board's kernel library.

    Args:
        graph: the model graph.
        board: a ``BoardProfile`` (its ``kernels`` attribute is used).
        kernels: override of the kernel library; default the board's.

    Returns:
        An :class:`AuditReport`; ``runnable`` is False if any op has no kernel.
    """
    library = kernels or getattr(board, "kernels", "reference")
    unsupported: dict[str, None] = {}
    float_ops: dict[str, None] = {}
    slow: dict[str, None] = {}
    for op in graph.ops:
        if not is_supported(op.name):
            unsupported[op.name] = None
            continue
        if _is_float_op(op):
            float_ops[op.name] = None
        if op.name not in _FREE_OPS and not is_accelerated(op, library):
            slow[op.name] = None
    return AuditReport(library, tuple(unsupported), tuple(float_ops), tuple(slow))
