"""A hidden "ground truth" device for the virtual board: a test device, not a real one.

The virtual board normally reports the simulator's own estimate, so calibrating
against it would only give the predictor back to itself. With a ground truth
(``VirtualBoard(figures=truth_figures(seed))`` or ``--truth SEED``), it reports
latencies from a cost model that *differs* from the predictor's, and that the
predictor must recover from measurements:

- every (code path, kernel variant) costs its prior cycles per unit times a
  seeded factor of 1.25x to 1.8x up or down;
- requantization per output, dispatch per op and the per-invoke overhead are
  seeded multiples of the priors (overheads 1.5x to 4x);
- MAC kernels pay :data:`PIXEL_CYCLES` per output pixel (loop set-up per row of
  the im2col / per spatial position) and :data:`MISS_CYCLES` per weight byte
  beyond :data:`CACHE_BYTES` (flash cache misses): terms the latency model
  does not have;
- each op's time has a deterministic +-1.5% jitter (seeded by model and op).

Memory figures stay the simulator's. The base costs are the built-in defaults
of the board's core and kernel library (its profile's ``[latency]`` table is
ignored), so fitting the profile never moves the truth.

Example::

    provider = truth_figures(seed=0)
    provider(model_bytes, load_board("esp32s3")).latency_ms
"""

from __future__ import annotations

import math
import random
import zlib
from dataclasses import dataclass, replace
from typing import Any

from mcunas.boards.catalog import BoardProfile
from mcunas.testing.virtual_board.figures import (
    FiguresProvider,
    FirmwareFigures,
    simulator_figures,
)

__all__ = ["PIXEL_CYCLES", "GroundTruth", "truth_figures"]

PIXEL_CYCLES = 20.0  # anchor-core cycles per output pixel of a MAC op (unmodelled by design)
CACHE_BYTES = 32 * 1024  # weights beyond this miss the flash cache (unmodelled by design)
MISS_CYCLES = 0.5  # anchor-core cycles per weight byte beyond CACHE_BYTES
JITTER = 0.015  # +- relative noise of one op's time


@dataclass(frozen=True)
class GroundTruth:
    """Seeded cost multipliers of one virtual device."""

    seed: int
    variant_factor: dict[tuple[str, str], float]
    requant_factor: float
    op_overhead_factor: float
    invoke_overhead_factor: float

    @classmethod
    def from_seed(cls, seed: int) -> GroundTruth:
        """Draw the multipliers: each variant 1.25x-1.8x slower or faster than its prior."""
        from mcunas.cost.op_features import VARIANTS

        rng = random.Random(seed)
        factors = {}
        for lib in ("main", "reference"):
            for variant in VARIANTS:
                size = math.exp(rng.uniform(math.log(1.25), math.log(1.8)))
                factors[(lib, variant)] = size if rng.random() < 0.5 else 1.0 / size
        return cls(
            seed=seed,
            variant_factor=factors,
            requant_factor=rng.uniform(0.6, 1.6),
            op_overhead_factor=rng.uniform(1.5, 4.0),
            invoke_overhead_factor=rng.uniform(1.5, 4.0),
        )

    def op_ms(self, graph: Any, board: BoardProfile) -> list[float]:
        """True time of every op of ``graph`` on ``board``, in ms."""
        from mcunas.cost.latency import resolve
        from mcunas.cost.op_features import MAC_VARIANTS, op_features
        from mcunas.tflite.kernels import is_accelerated

        base = replace(board, latency={})
        out = []
        for op, feat in zip(graph.ops, op_features(graph), strict=True):
            fast = board.kernels != "reference" and is_accelerated(op, board.kernels)
            coef = resolve(base, board.kernels if fast else "reference")
            t = coef.table
            mac = t.mac.get(feat.variant, t.mac.get("other", 40.0))
            cycles = (
                mac
                * self.variant_factor[("main" if fast else "reference", feat.variant)]
                * feat.units
                + t.requant * self.requant_factor * feat.outputs
                + t.byte * feat.bytes_moved
            )
            if feat.variant in MAC_VARIANTS and op.outputs:
                shape = op.outputs[0].shape or (1,)
                cycles += PIXEL_CYCLES * math.prod(max(int(d), 1) for d in shape[:-1])
                cycles += MISS_CYCLES * max(feat.weight_bytes - CACHE_BYTES, 0)
            key = f"{self.seed}:{graph.model_size_bytes}:{graph.total_macs}:{feat.index}"
            noise = random.Random(zlib.crc32(key.encode()))
            cycles *= coef.scale  # the kernels' work scales; the dispatch does not
            cycles += t.op_overhead * self.op_overhead_factor
            cycles *= coef.factor * (1 + JITTER * (2 * noise.random() - 1))
            out.append(cycles / board.clock_hz * 1000.0)
        return out

    def invoke_overhead_ms(self, board: BoardProfile) -> float:
        """True per-invoke overhead on ``board``, in ms."""
        from mcunas.cost.latency import resolve

        coef = resolve(replace(board, latency={}), board.kernels)
        cycles = coef.table.invoke_overhead * self.invoke_overhead_factor * coef.factor
        return cycles / board.clock_hz * 1000.0

    def latency_ms(self, graph: Any, board: BoardProfile) -> float:
        """True whole-model latency (ops + invoke overhead), in ms."""
        return sum(self.op_ms(graph, board)) + self.invoke_overhead_ms(board)


def truth_figures(seed: int = 0) -> FiguresProvider:
    """A figures provider for :class:`VirtualBoard` that reports the ground truth's times."""
    truth = GroundTruth.from_seed(seed)

    def provider(model_bytes: bytes, board: BoardProfile) -> FirmwareFigures:
        from mcunas.tflite.reader import read_graph

        sim = simulator_figures(model_bytes, board)
        if sim.error is not None:
            return sim
        graph = read_graph(model_bytes)
        ops = truth.op_ms(graph, board)
        total = sum(ops) + truth.invoke_overhead_ms(board)
        named = tuple((op.name, ms) for op, ms in zip(graph.ops, ops, strict=True))
        return replace(sim, latency_ms=total, ops=named)

    return provider
